"""nnrnn.training.runfolder: a run folder is claimed only when nnrnn made it; nothing a user has is overwritten
(a folder of the user's, a finished run without --overwrite, the user's files beside a run)."""
from helpers import TINY, one_line, run_cli, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnrnn.training import checkpoint
from nnrnn.training.runlog import read_metrics

OTHER_FILES = [("config.json", "{}"), ("metrics.jsonl", "my notes\n"), ("curves.png", "mine"), ("notes.txt", "x"),
               ("checkpoints/best.pt", "mine"), ("tensorboard/events", "mine")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.sampled_from(OTHER_FILES), min_size=1, max_size=3, unique=True),
       resume=st.booleans(), overwrite=st.booleans())
def test_a_folder_nnrnn_did_not_make_is_never_written(files, resume, overwrite, capsys, tmp_path_factory):
    folder = tmp_path_factory.mktemp("user") / "mine"
    for name, text in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    before = snapshot(folder)
    argv = ["train", "copy", "--steps", "2", "--out", folder, *TINY]
    argv += ["--resume"] if resume else ["--overwrite"] if overwrite else []
    code, err = run_cli(capsys, *argv)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(folder) == before



def test_a_run_is_replaced_only_with_overwrite_and_its_user_files_stay(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "notes.txt").write_text("mine")
    (run / "analysis").mkdir()  # what `nnrnn analyze` wrote of the run being replaced
    (run / "analysis" / "summary.json").write_text("{}")
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", run, *TINY), "already holds a run",
             "--overwrite")
    assert snapshot(run) == before
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--overwrite", *TINY),
             "--resume or --overwrite, not both")
    assert run_cli(capsys, "train", "copy", "--steps", "3", "--out", run, "--overwrite", *TINY)[0] == 0
    assert (run / "notes.txt").read_text() == "mine"
    assert not (run / "analysis").exists()  # an analysis of the replaced run would read as this one's
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 3
    assert [r["step"] for r in read_metrics(run) if r["split"] == "test"] == [3]



def test_a_run_whose_checkpoints_were_deleted_keeps_its_metrics(capsys, finished, tmp_path):
    """The run's metrics and best checkpoint stay when its last.pt was deleted to save space."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "checkpoints" / "last.pt").unlink()
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", run, *TINY), "already holds a run")
    assert snapshot(run) == before



def test_a_refused_run_leaves_a_folder_of_the_users_exactly_as_it_was(capsys, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "data.csv").write_text("mine")
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", folder, *TINY),
             "holds files nnrnn did not write")
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv"]  # not even a lock file



def test_resuming_a_folder_of_the_users_own_says_to_choose_another_out(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    code, err = run_cli(capsys, "train", "copy", "--out", tmp_path, "--resume", *TINY)
    one_line(code, err, "did not write", "another --out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
