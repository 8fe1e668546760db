"""nnrnn.experiments.planning.declaration: a grid is declared by types, checked as its module is imported, each
error naming the grid, the setting and the field."""
import dataclasses
import importlib.util

import pytest

from nnrnn.experiments import grids
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.planning.declaration import JointSearch, Scale, Search, Setting, Variant

COPY = {"T": 5, "batch_size": 4, "steps": 4}


def scale(setting: Setting | None = None, **fields) -> Scale:
    return Scale(**{"name": "toy", "seeds": (0,), "report": paper_grid.REPORT,
                    "settings": {"copy": setting or Setting(task="copy", hidden=8, options=COPY)}, **fields})


def test_every_grid_is_declared_by_types():
    assert grids.SCALES and all(isinstance(s, Scale) and s.name == name for name, s in grids.SCALES.items())
    for spec in grids.SCALES.values():
        assert all(isinstance(s, Setting) for s in spec.settings.values())
        assert all(isinstance(v, Variant) for s in spec.settings.values() for v in s.variants.values())
        assert spec.tune is None or isinstance(spec.tune, Search)
        assert spec.joint is None or isinstance(spec.joint, JointSearch)


def test_a_declaration_is_frozen_and_an_unknown_field_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="hiden"):
        Setting(task="copy", hiden=8, options=COPY)
    with pytest.raises(TypeError, match="trails"):
        Search(trails=3, share=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        scale().seeds = (1,)


@pytest.mark.parametrize("setting, kind, words", [
    (dict(task="cpoy"), LookupError, "unknown task 'cpoy'"),
    (dict(models=("nnrnn", "lsmt")), LookupError, "unknown model(s) 'lsmt'"),
    (dict(columns=("hidden", "tunned")), LookupError, "unknown column(s) 'tunned'"),
    (dict(preset="paper-param"), LookupError, "unknown preset 'paper-param'"),
    (dict(options={**COPY, "stepz": 3}), LookupError, "unknown training option(s) in options 'stepz'"),
    (dict(options={**COPY, "hidden": 3}), ValueError, "options must not set hidden"),
    (dict(hidden=0), ValueError, "hidden must be positive; got 0"),
    (dict(hidden=8.5), TypeError, "hidden must be a whole number"),
    (dict(columns=()), ValueError, "columns must not be empty"),
    (dict(columns=["hidden"]), TypeError, "columns must be a tuple"),
    (dict(variants={"x": {"model": "nnrnn"}}), TypeError, "variant 'x' must be a Variant"),
    (dict(variants={"x": Variant(model="nnrn")}), LookupError, "variant 'x': unknown model 'nnrn'"),
    (dict(variants={"x": Variant(model="nnrnn", columns=("tuned",))}), LookupError,
     "variant 'x': unknown column(s) (not among its setting's columns) 'tuned'"),
])
def test_a_bad_setting_fails_naming_the_grid_the_setting_and_the_field(setting, kind, words):
    given = {"task": "copy", "hidden": 8, "options": COPY, **setting}
    with pytest.raises(kind) as caught:
        scale(Setting(**given))
    assert str(caught.value).startswith("grid 'toy', setting 'copy'") and words in str(caught.value)


@pytest.mark.parametrize("fields, kind, words", [
    (dict(seeds=()), ValueError, "grid 'toy': seeds must not be empty"),
    (dict(seeds=(0, 0)), ValueError, "grid 'toy': seeds repeats an entry"),
    (dict(seeds=(-1,)), ValueError, "grid 'toy': seeds must not be negative"),
    (dict(settings={}), ValueError, "grid 'toy': settings must be a non-empty mapping"),
    (dict(tune=Search(trials=0, share=1.0)), ValueError, "grid 'toy', tune: trials must be at least 1; got 0"),
    (dict(tune=Search(trials=2, share=1.5)), ValueError, "grid 'toy', tune: share must be in (0, 1]; got 1.5"),
    (dict(tune=Search(trials=2, share=1.0)), ValueError, "grid 'toy': tune is given, but no setting has the "
                                                          "'tuned' column"),
    (dict(climb="climb"), TypeError, "grid 'toy': climb must be callable"),
])
def test_a_bad_scale_fails_naming_the_grid_and_the_field(fields, kind, words):
    with pytest.raises(kind, match="^" + words.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        scale(**fields)


def test_a_search_at_a_setting_the_scale_has_not_fails_naming_it():
    tuned = Setting(task="copy", hidden=8, columns=("tuned",), options=COPY)
    with pytest.raises(LookupError, match="grid 'toy', tune: unknown setting\\(s\\) 'copy-50'"):
        scale(tuned, tune=Search(trials=2, share=1.0, settings=("copy-50",)))


def test_a_grid_module_with_a_bad_declaration_fails_when_it_is_imported(tmp_path):
    module = tmp_path / "badgrid.py"
    module.write_text("from nnrnn.experiments.grids.paper import REPORT\n"
                      "from nnrnn.experiments.planning.declaration import Scale, Setting\n"
                      "NAME = 'bad'\n"
                      "SCALE = Scale(name=NAME, seeds=(0,), report=REPORT, settings={\n"
                      "    'copy': Setting(task='copy', hidden=-4, options={'T': 5, 'steps': 4})})\n")
    spec = importlib.util.spec_from_file_location("badgrid", module)
    with pytest.raises(ValueError, match="grid 'bad', setting 'copy': hidden must be positive; got -4"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_search_is_recorded_as_before_it_was_a_type_and_read_back():
    search = Search(trials=5, share=1.0, seed=100, startup=3, settings=("copy-50",))
    assert search.as_record() == {"trials": 5, "share": 1.0, "seed": 100, "startup": 3, "settings": ["copy-50"]}
    assert Search(trials=5, share=0.2, seed=100).as_record() == {"trials": 5, "share": 0.2, "seed": 100}
    assert Search.from_record(search.as_record()) == search
    assert Search.from_record({"trials": 4, "share": 1.0}).startup == 10  # a record of before startup was given


TUNED = Setting(task="copy", hidden=8, columns=("tuned",), options=COPY)
SPACE = {"lr": ("log", 1e-5, 1e-2), "alpha": ("choices", (0.9, 0.99))}


def joint(**fields) -> JointSearch:
    return JointSearch(**{"setting": "copy", "space": SPACE, "first": {"lr": 1e-3, "alpha": 0.99},
                          "measure": lambda config, records: 0.0, "trials": 2, "seed": 100, **fields})


@pytest.mark.parametrize("fields, kind, words", [
    (dict(joint=joint(first={"lr": 1.0, "alpha": 0.99})), ValueError,
     "grid 'toy', joint: first is not a point of space: lr = 1.0"),
    (dict(joint=joint(first={"lr": 1e-3})), ValueError, "grid 'toy', joint: first must give every dimension"),
    (dict(joint=joint(space={**SPACE, "lrr": ("log", 1e-5, 1e-2)})), LookupError,
     "grid 'toy', joint: unknown training option(s) in space 'lrr'"),
    (dict(joint=joint(space={**SPACE, "lr": ("uniform", 0, 1)})), TypeError,
     "grid 'toy', joint, space 'lr': a dimension is"),
    (dict(joint=joint(space={**SPACE, "lr": ("log", 1e-2, 1e-5)})), ValueError,
     "grid 'toy', joint, space 'lr': a log-uniform range needs 0 < low < high"),
    (dict(joint=joint(space={**SPACE, "alpha": ("choices", ())})), ValueError,
     "grid 'toy', joint, space 'alpha': its choices must be at least one"),
    (dict(joint=joint(measure="mean")), TypeError, "grid 'toy', joint: measure must be callable"),
    (dict(joint=joint(trials=0)), ValueError, "grid 'toy', joint: trials must be at least 1"),
    (dict(joint=joint(seed=0)), ValueError, "grid 'toy', joint: seed 0 is one of the grid's seeds"),
    (dict(joint=joint(setting="copy-50")), LookupError, "grid 'toy', joint: unknown setting 'copy-50'"),
    (dict(joint=joint(), tune=Search(trials=2, share=1.0)), ValueError,
     "grid 'toy': give tune (a search per label) or joint (one for all), not both"),
    (dict(joint={"trials": 2}), TypeError, "grid 'toy': joint must be a JointSearch"),
])
def test_a_bad_joint_search_fails_naming_the_grid_and_the_field(fields, kind, words):
    with pytest.raises(kind) as caught:
        scale(TUNED, **fields)
    assert str(caught.value).startswith(words), str(caught.value)


def test_a_joint_search_needs_a_tuned_column_for_its_pick():
    with pytest.raises(ValueError, match="grid 'toy', joint: setting 'copy' has no 'tuned' column for its pick"):
        scale(joint=joint())


def test_a_joint_search_is_recorded_without_its_measure_and_read_back_in_its_order():
    search = joint()
    record = search.as_record()
    assert "measure" not in record and record["space"] == {"lr": ["log", 1e-5, 1e-2], "alpha": ["choices", [0.9, 0.99]]}
    sorted_record = {**record, "space": dict(sorted(record["space"].items())), "trials": 5}
    again = search.recorded(sorted_record)
    assert again == dataclasses.replace(search, trials=5) and list(again.space) == ["lr", "alpha"]
