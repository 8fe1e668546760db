"""argparse glue: ``nnrnn theory {table3,figure1,prop2}`` and ``nnrnn analyze PATH``.

Both ``add_*`` functions take the ``subparsers`` object of the main parser; every
leaf parser sets ``func=callable(args) -> int`` (the exit code).
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

from ..errors import OptionError, UserError

DEFAULT_THEORY_OUT = "figures/theory"


def add_theory_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "theory", help="reproduce the paper's theory: Table 3, Figure 1(b, c), Proposition 2",
        description="Section 3 of Kerg, Goyette et al. (2019) and its supplement; see docs/theory.md.")
    sub = p.add_subparsers(dest="theory_command", required=True, parser_class=type(p))

    t = sub.add_parser("table3", help="J_tot of the Fisher memory curve, beside the paper's values",
                       description="Table 3 of the supplement: J_tot = sum_t J(t) for Theta(alpha, beta, d), N = 100, "
                                   "eps = 1, u = e_1, summed to convergence.")
    t.add_argument("--json", action="store_true", help="print the rows as JSON")
    t.add_argument("--method", default="sqrt", choices=["sqrt", "lyapunov", "mpmath"],
                   help="sqrt (default; square-root Lyapunov factor), lyapunov (scipy solve_discrete_lyapunov, "
                        "inaccurate for d = 0.2) or mpmath (60 digits, minutes)")
    t.add_argument("--n", type=int, default=100, help="matrix size N (default 100, as in the paper)")
    t.set_defaults(func=run_table3)

    f = sub.add_parser("figure1", help="Figure 1(b) transients and 1(c) Fisher memory curves (PNG)")
    f.add_argument("--out", default=DEFAULT_THEORY_OUT, help=f"output folder (default {DEFAULT_THEORY_OUT})")
    f.add_argument("--n-init", dest="n_init", type=int, default=1000,
                   help="initial conditions for 1(b) (default 1000)")
    f.add_argument("--seed", type=int, default=0)
    f.set_defaults(func=run_figure1)

    q = sub.add_parser("prop2", help="Proposition 2: polynomial growth of A^t, fitted degree (PNG)")
    q.add_argument("--out", default=DEFAULT_THEORY_OUT, help=f"output folder (default {DEFAULT_THEORY_OUT})")
    q.add_argument("--n", type=int, nargs="+", default=[2, 4, 6, 8], help="matrix sizes (default 2 4 6 8)")
    q.add_argument("--x", type=float, default=0.5, help="off-diagonal value x (default 0.5)")
    q.add_argument("--t-max", dest="t_max", type=int, default=100_000, help="largest power t (default 1e5)")
    q.add_argument("--json", action="store_true", help="print the fits as JSON")
    q.set_defaults(func=run_prop2)


def format_table3(rows: list[dict]) -> str:
    lines = [f"{'alpha':>5} {'beta':>6} {'d':>4} | {'J_tot':>9} {'paper':>6} {'diff':>7} | "
             f"{'exact':>9} {'lyapunov':>9} | {'cond(C)':>8} {'steps':>5}"]
    lines.append("-" * len(lines[0]))
    for r in rows:
        exact = f"{r['exact']:9.4f}" if r.get("exact") is not None else f"{'-':>9}"
        lyap = f"{r['j_tot_lyapunov']:9.4f}" if r.get("j_tot_lyapunov") is not None else f"{'-':>9}"
        lines.append(f"{r['alpha']:5.2f} {r['beta']:6.3f} {r['d']:4.1f} | {r['j_tot']:9.4f} {r['paper']:6.2f} "
                     f"{100 * r['rel_diff_paper']:+6.2f}% | {exact} {lyap} | {r['cond_C']:8.1e} {r['steps']:5d}")
    lines.append("J_tot: this package (--method); paper: supplement Table 3; diff: J_tot/paper - 1; exact: 80-digit "
                 "reference; lyapunov: float64 solve_discrete_lyapunov route; cond(C): condition number of the "
                 "stationary covariance. See docs/theory.md for the d = 0.2 rows.")
    return "\n".join(lines)


def run_table3(args) -> int:
    from .theory import table3
    if args.n < 2:
        raise OptionError(f"--n must be >= 2; got {args.n}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = table3(n=args.n, method=args.method, compare_lyapunov=args.method != "lyapunov")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(format_table3(rows))
    return 0


def run_figure1(args) -> int:
    from . import plots
    if args.n_init < 2:
        raise OptionError(f"--n-init must be >= 2; got {args.n_init}")
    out = Path(args.out)
    print(plots.figure1b(out / "figure1b.png", n_init=args.n_init, seed=args.seed))
    print(plots.figure1c(out / "figure1c.png"))
    return 0


def run_prop2(args) -> int:
    from . import plots
    if min(args.n) < 2 or args.t_max < 10:
        raise OptionError("--n values must be >= 2 and --t-max >= 10")
    path, results = plots.figure_proposition2(Path(args.out) / "proposition2.png", ns=args.n, x=args.x,
                                              t_max=args.t_max)
    fits = [{"n": r.n, "x": r.x, "degree": r.degree, "bound": r.bound, "loglog_r2": r.loglog_r2,
             "semilog_r2": r.semilog_r2, "is_polynomial": r.is_polynomial} for r in results]
    if args.json:
        print(json.dumps({"figure": path, "fits": fits}, indent=2))
    else:
        for f in fits:
            print(f"n={f['n']}: fitted degree {f['degree']:.3f} (bound n-1 = {f['bound']}), "
                  f"log-log R^2 {f['loglog_r2']:.6f} vs semi-log R^2 {f['semilog_r2']:.4f}: "
                  f"{'polynomial' if f['is_polynomial'] else 'NOT polynomial'}")
        print(path)
    return 0 if all(f["is_polynomial"] for f in fits) else 1


def add_analyze_parser(subparsers) -> None:
    """``nnrnn analyze PATH [--out DIR] [--no-gradients]``."""
    p = subparsers.add_parser(
        "analyze", help="figures and summary.json of a trained model's recurrent matrix",
        description="Schur form, spectrum, departure from normality and gradient propagation of the recurrent "
                    "layer of a run folder or checkpoint; see docs/theory.md.")
    p.add_argument("path", help="run folder or checkpoint file")
    p.add_argument("--out", help="output folder (default: PATH/analysis for a run folder, "
                                 "<checkpoint>-analysis beside a checkpoint file)")
    p.add_argument("--no-gradients", dest="gradients", action="store_false",
                   help="skip the gradient-propagation probe")
    p.set_defaults(func=run_analyze)


def default_analysis_dir(path) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / "analysis"
    return path.with_name(path.stem + "-analysis")


def training_gradient_norms(path) -> list[tuple[int, float]]:
    """(update, gradient norm) points the trainer logged in a run folder's metrics.jsonl."""
    from ..runlog import read_metrics
    return [(r["step"], r["grad_norm"]) for r in read_metrics(path) if r.get("split") == "train" and "grad_norm" in r]


def run_analyze(args) -> int:
    from ..network import load_model
    from ..runlock import hold
    from .trained import analyze_model
    if not os.path.exists(args.path):
        raise UserError(f"no run folder or checkpoint at {args.path}")
    model, config = load_model(args.path)
    from ..models import ComplexNonNormalRNN
    if isinstance(getattr(model, "rnn", model), ComplexNonNormalRNN):
        raise UserError(f"nnrnn analyze reads real recurrent matrices and {args.path} holds a complex nnRNN, whose V "
                        f"is complex; its eigenvalues are its factors' γ·e^(iθ) exactly (schur_form().eigenvalues())")
    out = Path(args.out) if args.out else default_analysis_dir(args.path)
    extra = {"source": str(args.path)}
    if isinstance(config, dict):
        extra["config"] = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool, type(None)))}
    with hold(out):  # one analysis writes this folder at a time (training may go on beside it)
        summary = analyze_model(model, out, batch=None if args.gradients else False, extra=extra)
        logged = training_gradient_norms(args.path)
        if logged:
            from .plots import plot_training_gradients
            plot_training_gradients(*zip(*logged), out / "gradient_norm_training.png",
                                    title=f"gradient norm during training ({Path(args.path).name})")
            summary["files"].append("gradient_norm_training.png")
    keys = ("model", "primary", "spectral_radius", "max_singular_value", "departure_from_normality",
            "departure_from_normality_normalized", "mean_gamma", "triangular_fraction")
    for k in keys:
        v = summary.get(k)
        print(f"{k:36s} {v:.6g}" if isinstance(v, float) else f"{k:36s} {v}")
    print(f"{'written to':36s} {out}")
    for f in summary["files"]:
        print(f"  {out / f}")
    sys.stdout.flush()
    return 0
