"""``nnrnn analyze PATH [--out DIR] [--no-gradients]``: figures and summary.json of a trained model's recurrent
matrix."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from ..analysis.linear import analyze_nnlru
from ..analysis.mechanism import measure
from ..analysis.outputs import output_folder
from ..analysis.plots import plot_training_gradients
from ..analysis.trained import analyze_model, model_name, recurrent_layer
from ..errors import UserError
from ..training import runfolder
from ..models import MODELS
from ..training.network import initial_network, initial_of, load_saved
from ..training.runlock import hold
from ..training.runlog import read_metrics


def add_arguments(p) -> None:
    p.description = ("Schur form, spectrum, departure from normality and gradient propagation of the recurrent "
                     "layer of a run folder or checkpoint; see docs/theory.md.")
    p.add_argument("path", help="run folder or checkpoint file")
    p.add_argument("--out", help="output folder (default: PATH/analysis for a run folder, "
                                 "<checkpoint>-analysis beside a checkpoint file)")
    p.add_argument("--no-gradients", dest="gradients", action="store_false",
                   help="skip the gradient-propagation probe")


def default_analysis_dir(path) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / runfolder.ANALYSIS
    return path.with_name(path.stem + "-analysis")


def run_name(path) -> str:
    """The name a run is shown by in figure titles: its folder's, also for a checkpoint inside it."""
    path = Path(path).absolute()
    if path.is_dir():
        return path.name
    return path.parent.parent.name if path.parent.name == "checkpoints" else path.stem


def training_gradient_norms(path) -> list[tuple[int, float]]:
    """(update, gradient norm) points the trainer logged in a run folder's metrics.jsonl."""
    return [(r["step"], r["grad_norm"]) for r in read_metrics(path) if r.get("split") == "train" and "grad_norm" in r]


def analysable_models() -> list[str]:
    """The models whose runs analyze reads: those with a recurrent matrix, and the nnLRU (its own figures)."""
    return [name for name, cls in MODELS.items()
            if (hasattr(cls, "recurrent_matrix") or issubclass(cls, torch.nn.RNNBase) or cls.LINEAR_ANALYSIS)
            and not cls.COMPLEX_RECURRENCE]  # refused: its V is complex


def main(args) -> int:
    loaded = load_saved(args.path)
    model, config, saved, source = loaded
    step = saved.get("step")
    layer = getattr(model, "rnn", model)
    if getattr(type(layer), "COMPLEX_RECURRENCE", False):
        raise UserError(f"nnrnn analyze reads real recurrent matrices and {args.path} holds a complex nnRNN, whose V "
                        f"is complex; its eigenvalues are its factors' γ·e^(iθ) exactly (schur_form().eigenvalues())")
    if not getattr(type(layer), "LINEAR_ANALYSIS", False):
        try:
            recurrent_layer(model)
        except TypeError:  # before "analysed" is printed: nothing here would be
            what = config.get("model") if isinstance(config, dict) else None
            raise UserError(f"nnrnn analyze reads a recurrent weight matrix, and {args.path} holds a "
                            f"{what or type(layer).__name__} network, which has none (its recurrence is "
                            f"elementwise); analyze a run of {', '.join(analysable_models())}") from None
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise UserError(f"{source} holds NaN or inf parameters (a diverged run?), which have no spectrum or Schur "
                        f"form; analyze a checkpoint saved before it diverged")
    print(f"{'analysed':36s} {source}" + (f" (after update {step})" if step is not None else ""))  # not refused
    out = output_folder(Path(args.out) if args.out else default_analysis_dir(args.path))
    extra = {"source": str(args.path), "checkpoint": str(source), "step": step}
    if isinstance(config, dict):
        extra["config"] = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool, type(None)))}
        # what a run's mechanism.json holds (of its last update), here of the checkpoint analysed
        extra["mechanism"] = measure(layer, initial_of(loaded).rnn, config)
    name = run_name(args.path)
    try:
        return _analyse(args, model, layer, out, name, extra)
    except OSError as error:  # a full disk, above all: the figures and summary are all this writes, into --out
        raise UserError(f"cannot write the analysis into {out} ({error.strerror or error}); free some space or choose "
                        f"another --out, then run nnrnn analyze again (the run itself is unchanged)") from None


def _analyse(args, model, layer, out: Path, name: str, extra: dict) -> int:
    """The figures and summary.json of ``model`` (its recurrent ``layer``) written into ``out``, and the lines saying
    what they show."""
    if getattr(type(layer), "LINEAR_ANALYSIS", False):
        return _linear(layer, out, name, extra)
    with hold(out):  # one analysis writes this folder at a time (training may go on beside it)
        summary = analyze_model(model, out, batch=None if args.gradients else False, extra=extra,
                                title=f"{name} ({model_name(recurrent_layer(model))})",
                                reference=initial_network(args.path) if args.gradients else None)
        logged = training_gradient_norms(args.path)
        if logged:
            plot_training_gradients(*zip(*logged), out / "gradient_norm_training.png",
                                    title=f"gradient norm during training ({name})")
            summary["files"].append("gradient_norm_training.png")
    keys = ("model", "primary", "spectral_radius", "max_singular_value", "departure_from_normality",
            "departure_from_normality_normalized", "mean_gamma", "triangular_fraction")
    for k in keys:
        v = summary.get(k)
        print(f"{k:36s} {v:.6g}" if isinstance(v, float) else f"{k:36s} {v}")
    _mechanism_lines(summary.get("mechanism"))
    _written(out, summary["files"])
    return 0


def _mechanism_lines(record: dict | None) -> None:
    """The first cell's ‖T‖/‖Λ‖, basis drift and Fisher memory (nnrnn.analysis.mechanism), or why it has none."""
    if record is None:
        return
    if not record["measured"]:
        print(f"{'mechanism':36s} not measured: {record['why']}")
        return
    cell = record["cells"]["l0"]
    for key in ("t_over_lambda", "basis_drift"):
        if cell[key] is not None:
            print(f"{key:36s} {cell[key]:.6g}")
    memory = cell.get("fisher")
    if memory is None:
        return
    epsilon = record["noise"]["epsilon"]
    for kind, what in (("from_rest", f"{record['length']} steps from rest"), ("stationary", "stationary")):
        entry = memory[kind]
        shown = (f"none: {entry['why']}" if "why" in entry else f"{entry['total']:.6g} ({what}, ε = {epsilon:g})"
                 if entry["total_normalized"] is None else  # no input reaches the layer (W = 0)
                 f"{entry['total_normalized']:.6g} ({what}, ε = {epsilon:g}; 1 for a normal V)")
        print(f"{'fisher_memory_' + kind:36s} {shown}")


def _linear(layer: torch.nn.Module, out: Path, name: str, extra: dict) -> int:
    """An nnlru's recurrence is linear: its eigenvalues, |T| and exact Fisher memory curve (nnrnn.analysis.linear);
    the Schur-form and gradient figures of the other models do not apply to its block."""
    with hold(out):
        summary = analyze_nnlru(layer, out, title=f"{name} (NonNormalLRU)", extra=extra)
    for k in ("model", "spectral_radius", "departure_from_normality", "triangular_fraction", "fisher_memory_total"):
        v = summary.get(k)
        print(f"{k:36s} {v:.6g}" if isinstance(v, float) else f"{k:36s} {v}")
    _mechanism_lines(summary.get("mechanism"))
    _written(out, summary["files"])
    return 0


def _written(out: Path, files: list[str]) -> None:
    print(f"{'written to':36s} {out}")
    for f in files:
        print(f"  {out / f}")
    sys.stdout.flush()
