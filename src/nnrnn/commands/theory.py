"""``nnrnn theory {table3,figure1,prop1,prop2}``: the paper's theory from the command line.

Sizes.  The theory commands refuse, before allocating anything, sizes whose working set would pass
:data:`MEMORY_LIMIT` (4 GiB) by the estimates below, and ``prop2`` settings whose entries of Aᵗ would
overflow float64: a wrong size is one line, never a MemoryError or an overflow deep in NumPy.
Output folders: :func:`nnrnn.analysis.outputs.output_folder`.
"""
from __future__ import annotations

import json
import math
import warnings

from ..analysis import plots
from ..analysis.outputs import output_folder
from ..analysis.theta_example import table3
from ..errors import OptionError

DEFAULT_THEORY_OUT = "figures/theory"
MEMORY_LIMIT = 4 * 2 ** 30     # bytes: the largest working set a theory command may estimate for itself
FIGURE1_N, FIGURE1_STEPS = 100, 120  # Figure 1(b): N and the steps plots.figure1b iterates (n + 20)
PROP2_T_MAX = 10 ** 12         # --t-max above this: int64 powers and the fit's logarithms lose meaning
FLOAT64_LOG_MAX = math.log(1e300)


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2 ** 30:,.1f} GiB"


def _within_memory(what: str, nbytes: float, fix: str) -> None:
    if nbytes > MEMORY_LIMIT:
        raise OptionError(f"{what} needs about {_gib(nbytes)} of memory, more than the theory commands' limit of "
                          f"{_gib(MEMORY_LIMIT)}; {fix}")


def table3_bytes(n: int) -> int:
    """Working set of ``table3(n)``: about 16 N×N float64 arrays (Θ, its powers, the square-root factor and
    the stacked QR input, the Lyapunov route's C and Cholesky factor, and their temporaries)."""
    return 16 * 8 * n * n


def figure1_bytes(n_init: int) -> int:
    """Working set of Figure 1(b): the N × n_init states (three, with Θh and h.std's temporary) and the two
    (steps + 1) × n_init records of plots.figure1b / transient_growth.transients."""
    return 8 * n_init * (3 * FIGURE1_N + 2 * (FIGURE1_STEPS + 1))


def prop2_bytes(n: int) -> int:
    """Working set of ``proposition2(n)``: the n powers of the nilpotent part (n³ floats) and a few n×n sums."""
    return 8 * (n ** 3 + 4 * n * n)


def prop2_log_max_entry(n: int, x: float, t_max: int) -> float:
    """An upper bound on log max_ij |(Aᵗ)_ij| over t ≤ t_max, and on the binomials C(t, l) NumPy converts to
    float64: Aᵗ = Σ_(l<n) C(t, l) (xN)ˡ with N's powers' entries at most C(n-1, l) ≤ 2ⁿ⁻¹."""
    def log_comb(t, l):
        return math.lgamma(t + 1) - math.lgamma(l + 1) - math.lgamma(t - l + 1)
    top = max(log_comb(t_max, l) for l in range(min(n, t_max + 1)))
    return top + math.log(n) + (n - 1) * (math.log(2) + math.log(max(abs(x), 1.0)))


def add_arguments(p) -> None:
    p.description = "Section 3 of Kerg, Goyette et al. (2019) and its supplement; see docs/theory.md."
    sub = p.add_subparsers(dest="theory_command", required=True, parser_class=type(p))

    t = sub.add_parser("table3", help="J_tot of the Fisher memory curve, beside the paper's values",
                       description="Table 3 of the supplement: J_tot = sum_t J(t) for Theta(alpha, beta, d), N = 100, "
                                   "eps = 1, u = e_1, summed to convergence.")
    t.add_argument("--json", action="store_true", help="print the rows as JSON")
    t.add_argument("--method", default="sqrt", choices=["sqrt", "lyapunov", "mpmath"],
                   help="sqrt (default; square-root Lyapunov factor), lyapunov (scipy solve_discrete_lyapunov, "
                        "inaccurate for d = 0.2) or mpmath (60 digits, minutes)")
    t.add_argument("--n", type=int, default=100, help="matrix size N (default 100, as in the paper)")
    t.set_defaults(subcommand=run_table3)

    f = sub.add_parser("figure1", help="Figure 1(b) transients and 1(c) Fisher memory curves (PNG)")
    f.add_argument("--out", default=DEFAULT_THEORY_OUT, help=f"output folder (default {DEFAULT_THEORY_OUT})")
    f.add_argument("--n-init", dest="n_init", type=int, default=1000,
                   help="initial conditions for 1(b) (default 1000)")
    f.add_argument("--seed", type=int, default=0, help="seed of the initial conditions")
    f.set_defaults(subcommand=run_figure1)

    o = sub.add_parser("prop1", help="Proposition 1: the Fisher memory curve against its lower bound (PNG)",
                       description="J(k) of a strictly lower-triangular Theta with sqrt(alpha) on the sub-diagonal "
                                   "against the bound alpha^k (alpha-1)/(alpha^(k+1)-1) / sigma_max^(2(N-1)), for the "
                                   "delay line (they coincide) and with beta below the sub-diagonal.")
    o.add_argument("--out", default=DEFAULT_THEORY_OUT, help=f"output folder (default {DEFAULT_THEORY_OUT})")
    o.add_argument("--n", type=int, default=20, help="matrix size N (default 20)")
    o.add_argument("--alpha", type=float, default=1.05,
                   help="alpha > 0; sqrt(alpha) on the sub-diagonal (default 1.05)")
    o.add_argument("--beta", type=float, default=0.005, help="beta > 0 below the sub-diagonal (default 0.005)")
    o.add_argument("--json", action="store_true", help="print the curves as JSON")
    o.set_defaults(subcommand=run_prop1)

    q = sub.add_parser("prop2", help="Proposition 2: polynomial growth of A^t, fitted degree (PNG)")
    q.add_argument("--out", default=DEFAULT_THEORY_OUT, help=f"output folder (default {DEFAULT_THEORY_OUT})")
    q.add_argument("--n", type=int, nargs="+", default=[2, 4, 6, 8], help="matrix sizes (default 2 4 6 8)")
    q.add_argument("--x", type=float, default=0.5, help="off-diagonal value x (default 0.5)")
    q.add_argument("--t-max", dest="t_max", type=int, default=100_000, help="largest power t (default 1e5)")
    q.add_argument("--json", action="store_true", help="print the fits as JSON")
    q.set_defaults(subcommand=run_prop2)
    sub.metavar = "{" + ",".join(sub.choices) + "}"  # a missing subcommand is named by its choices, not by dest


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
    if args.n < 2:
        raise OptionError(f"--n must be >= 2; got {args.n}")
    _within_memory(f"theory table3 --n {args.n}", table3_bytes(args.n),
                   f"choose --n <= {math.isqrt(MEMORY_LIMIT // table3_bytes(1))}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = table3(n=args.n, method=args.method, compare_lyapunov=args.method != "lyapunov")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(format_table3(rows))
    return 0


def run_figure1(args) -> int:
    if args.n_init < 2:
        raise OptionError(f"--n-init must be >= 2; got {args.n_init}")
    if args.seed < 0:
        raise OptionError(f"--seed must be >= 0; got {args.seed}")
    _within_memory(f"theory figure1 --n-init {args.n_init}", figure1_bytes(args.n_init),
                   f"choose --n-init <= {MEMORY_LIMIT // figure1_bytes(1):,}")
    out = output_folder(args.out)
    print(plots.figure1b(out / "figure1b.png", n_init=args.n_init, seed=args.seed))
    print(plots.figure1c(out / "figure1c.png"))
    return 0


def run_prop1(args) -> int:
    if args.n < 2:
        raise OptionError(f"--n must be >= 2; got {args.n}")
    for name, value in (("--alpha", args.alpha), ("--beta", args.beta)):
        if not (math.isfinite(value) and value > 0):
            raise OptionError(f"{name} must be a positive finite number; got {value}")
    # C sums α^k (Θᵏ)(Θᵏ)ᵀ up to k = N - 1: past about α^{±300} its float64 entries overflow or vanish
    if (args.n - 1) * abs(math.log(args.alpha)) > 300:
        raise OptionError(f"--n {args.n} with --alpha {args.alpha} overflows float64 (alpha^(N-1) beyond 1e+-130); "
                          f"lower --n or bring --alpha closer to 1")
    out = output_folder(args.out)
    path, curves = plots.figure_proposition1(out / "proposition1.png", n=args.n, alpha=args.alpha,
                                             beta=args.beta)
    if not all(math.isfinite(x) for c in curves.values() for x in (*c["J"], *c["bound"])):
        raise OptionError(f"--n {args.n} with --alpha {args.alpha} and --beta {args.beta} overflows float64 "
                          f"(alpha^N or sigma_max^(2(N-1)) is too large); lower --n, --alpha or --beta")
    # the bound holds to rounding: on the delay line J and the bound are the same number computed two ways
    holds = {key: bool((c["J"] >= c["bound"] * (1 - 1e-9)).all()) for key, c in curves.items()}
    if args.json:
        print(json.dumps({"figure": path, "n": args.n, "alpha": args.alpha, "beta": args.beta, "holds": holds,
                          "curves": {key: {"beta": c["beta"], "sigma_max": c["sigma_max"], "J": c["J"].tolist(),
                                           "bound": c["bound"].tolist()} for key, c in curves.items()}}, indent=2))
    else:
        for key, c in curves.items():
            gap = float((c["J"] / c["bound"]).max())
            print(f"beta={c['beta']:g}: sigma_max {c['sigma_max']:.6g}, J(k) / bound in "
                  f"[{float((c['J'] / c['bound']).min()):.6g}, {gap:.6g}] for k < {args.n}: "
                  f"{'bound holds' if holds[key] else 'BOUND VIOLATED'}")
        print(path)
    return 0 if all(holds.values()) else 1


def run_prop2(args) -> int:
    if min(args.n) < 2 or args.t_max < 10:
        raise OptionError("--n values must be >= 2 and --t-max >= 10")
    if args.t_max > PROP2_T_MAX:
        raise OptionError(f"--t-max must be at most {PROP2_T_MAX:.0e}; got {args.t_max}")
    if not math.isfinite(args.x) or args.x == 0:
        raise OptionError(f"--x must be a non-zero finite number (A's entries above the diagonal); got {args.x}")
    n = max(args.n)
    _within_memory(f"theory prop2 --n {n}", prop2_bytes(n),
                   f"choose --n values <= {max(k for k in range(2, 5000) if prop2_bytes(k) <= MEMORY_LIMIT)}")
    for n in args.n:
        if prop2_log_max_entry(n, args.x, args.t_max) > FLOAT64_LOG_MAX:
            raise OptionError(f"theory prop2 --n {n} --x {args.x:g} --t-max {args.t_max}: the entries of A^t could "
                              f"pass float64's range (about 1e300); choose a smaller --n, --t-max or |--x|")
    out = output_folder(args.out)
    path, results = plots.figure_proposition2(out / "proposition2.png", ns=args.n, x=args.x,
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


def main(args) -> int:
    """The subcommand given: ``table3``, ``figure1``, ``prop1`` or ``prop2``."""
    return args.subcommand(args)
