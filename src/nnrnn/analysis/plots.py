"""Publication-quality figures (Agg canvas, no pyplot state): Figure 1(b, c), Propositions 1 and 2,
and the per-model inspection plots used by :func:`nnrnn.analysis.trained.analyze_model`.

Every function writes one PNG and returns its path.  Figures are sized for a page
width of ~7 in (one panel row ≈ 3 in high) with fonts ≥ 9 pt.
"""
from __future__ import annotations

import math
import os
import warnings
from contextlib import contextmanager

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from . import claim_numbers, fisher, polynomial_growth, proposition1, theta_example
from ._blas import single_threaded_blas

__all__ = ["figure1b", "figure1c", "figure_proposition1", "figure_proposition2", "plot_gradients",
           "plot_linear_recurrence", "plot_schur", "plot_spectrum"]

DPI = 200
STYLE = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9.5, "legend.fontsize": 8.5,
    "xtick.labelsize": 8.5, "ytick.labelsize": 8.5, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5, "lines.linewidth": 1.4,
    "figure.dpi": 100, "savefig.dpi": DPI, "mathtext.fontset": "dejavusans",
}
ALPHA_COLORS = {0.95: "#1f77b4", 1.0: "#2ca02c", 1.05: "#d62728"}
BETA_STYLES = {0.0: "-", 0.005: "--"}


@contextmanager
def _figure(width: float, height: float, **subplot_kw):
    with rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def _save(fig: Figure, path) -> str:
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with rc_context(STYLE):
        fig.savefig(path, dpi=DPI)
    return path


def _color(alpha: float, i: int) -> str:
    return ALPHA_COLORS.get(alpha, f"C{i}")


def _label(alpha: float, beta: float) -> str:
    return rf"$\alpha={alpha:g}$, $\beta={beta:g}$"


def _tick_text(value: float, _position=None) -> str:
    """A log axis's tick label: plain digits from 0.001 to 9999 ('0.02', '50'), a power of ten otherwise."""
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return rf"${mantissa}\times10^{{{int(exponent)}}}$" if mantissa != "1" else rf"$10^{{{int(exponent)}}}$"


def _label_short_log_axis(ax) -> None:
    """On a log y axis that shows fewer than three powers of ten, ticks at 1, 2 and 5 × 10ᵏ with plain labels
    ('20', '50'): matplotlib's default labels there only one or two values, or writes '4×10¹'."""
    low, high = ax.get_ylim()
    if ax.get_yscale() == "log" and 0 < low < high and math.floor(math.log10(high)) - math.ceil(math.log10(low)) < 2:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(_tick_text))
        ax.yaxis.set_minor_formatter(NullFormatter())


# ------------------------------------------------------------------------------------------------
# Figure 1(b): transients
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def figure1b(path, n: int = 100, alphas=(0.95, 1.0, 1.05), betas=(0.0, 0.005), d: float = 0.0,
             n_init: int = 1000, steps: int | None = None, seed: int = 0) -> str:
    """Fig. 1(b): mean ± std over ``n_init`` unit-sphere initial conditions of the std across units
    of h_t (top) and of ‖h_t‖ (bottom) for h_{t+1} = Θ(α, β, d) h_t."""
    steps = n + 20 if steps is None else steps
    with _figure(7.0, 5.4) as fig:
        ax_std, ax_norm = fig.subplots(2, 1, sharex=True)
        # shared with the report's claims
        runs = claim_numbers.figure1b_transients(n, alphas, betas, d, n_init, steps, seed)
        for i, a in enumerate(alphas):
            for b in betas:
                res = runs[a, b]
                t = res["t"]
                for ax, key in ((ax_std, "unit_std"), (ax_norm, "norm")):
                    mean, std = res[key + "_mean"], res[key + "_std"]
                    keep = mean > 0  # Θᴺ = 0 for d = 0: the trajectory is exactly zero from t = N on
                    lo = np.maximum(mean - std, mean * 1e-3)
                    ax.plot(t[keep], mean[keep], BETA_STYLES.get(b, ":"), color=_color(a, i), label=_label(a, b))
                    ax.fill_between(t[keep], lo[keep], (mean + std)[keep], color=_color(a, i), alpha=0.15, lw=0)
        for ax in (ax_std, ax_norm):
            ax.set_yscale("log")
            if d == 0:
                ax.axvline(n, color="0.3", lw=0.8, ls=":")
        if d == 0:
            for ax in (ax_std, ax_norm):
                ax.text(n + 1.5, 0.5, rf"$\Theta^N=0$:" "\n" rf"$h_t=0$ for" "\n" rf"$t\geq N={n}$",
                        transform=ax.get_xaxis_transform(), ha="left", va="center", fontsize=8.5, color="0.3")
        ax_std.set_ylabel(r"std across units of $h_t$")
        ax_norm.set_ylabel(r"$\|h_t\|_2$")
        ax_norm.set_xlabel(r"time step $t$")
        ax_norm.set_xlim(0, steps)
        ax_std.set_title(rf"Transients of $h_{{t+1}}=\Theta h_t$, $N={n}$, $d={d:g}$" "\n"
                         rf"(line: mean, band: $\pm$ std over {n_init} initial conditions on the unit sphere)")
        ax_std.legend(ncol=3, loc="lower left", frameon=False)
        return _save(fig, path)


# ------------------------------------------------------------------------------------------------
# Figure 1(c): Fisher memory curves
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def figure1c(path, n: int = 100, alphas=(0.95, 1.0, 1.05), betas=(0.0, 0.005), ds=(0.0, 0.2),
             steps: int | None = None, noise: float = 1.0) -> str:
    """Fig. 1(c): J(k) of Θ(α, β, d), one panel per d (■ d = 0, ▲ d = 0.2 as in the paper),
    with J_tot = Σ_k J(k) of every curve in the legend."""
    steps = int(1.7 * n) if steps is None else steps
    markers = {0.0: "s", 0.2: "^"}
    with _figure(7.0, 4.0) as fig:
        axes = fig.subplots(1, len(ds), sharey=True, squeeze=False)[0]
        floor = 1e-12
        totals = {}
        memory = claim_numbers.figure1c_memory(n, alphas, betas, ds, noise)  # shared with the report's claims
        for ax, d in zip(axes, ds):
            for i, a in enumerate(alphas):
                for b in betas:
                    fm = memory[a, b, d]
                    totals[a, b, d] = fm.total
                    curve = np.concatenate([fm.curve, np.zeros(max(0, steps - len(fm.curve)))])[:steps]
                    k = np.arange(steps)
                    keep = curve > floor
                    ax.plot(k[keep], curve[keep], BETA_STYLES.get(b, ":"), color=_color(a, i),
                            marker=markers.get(d, "o"), markevery=max(1, steps // 12), ms=3.5)
            ax.axvline(n, color="0.3", lw=0.8, ls=":")
            ax.set_yscale("log")
            ax.set_ylim(1e-6, 2)
            ax.set_xlim(0, steps)
            ax.set_xlabel(r"time lag $k$ (steps)")
            kind = r"$\Theta$ nilpotent" if d == 0 else rf"single eigenvalue {d:g}, Jordan block"
            ax.set_title(rf"$d={d:g}$ ({kind})")
        axes[0].set_ylabel(r"Fisher memory $J(k)$  [$1/\varepsilon$]")
        handles = [Line2D([], [], color=_color(a, i), ls=BETA_STYLES.get(b, ":"),
                          label=_label(a, b) + r": $J_{tot}=$" + " / ".join(f"{totals[a, b, d]:.2f}" for d in ds))
                   for b in betas for i, a in enumerate(alphas)]
        handles += [Line2D([], [], color="0.3", ls="none", marker=markers.get(d, "o"), label=rf"$d={d:g}$")
                    for d in ds]
        fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False, fontsize=8,
                   title=r"$J_{tot}=\sum_k J(k)$ for $d=" + " / ".join(f"{d:g}" for d in ds) + "$",
                   title_fontsize=8.5)
        fig.suptitle(rf"Fisher memory curves, $N={n}$, $u=e_1$, $\varepsilon={noise:g}$", fontsize=10)
        return _save(fig, path)


# ------------------------------------------------------------------------------------------------
# Proposition 2
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def proposition1_theta(n: int, alpha: float, beta: float) -> np.ndarray:
    """Θ for Proposition 1: √α on the first sub-diagonal, β on every entry below it (Eq. simpletheta with
    the sub-diagonal √α, d = 0)."""
    return theta_example.schur_example(n, math.sqrt(alpha), beta, 0.0)


@single_threaded_blas()
def figure_proposition1(path, n: int = 20, alpha: float = 1.05, beta: float = 0.005) -> tuple[str, dict]:
    """Proposition 1: the Fisher memory curve J(k) (``fisher_memory_curve``) against its lower bound
    (``fisher_memory_lower_bound``), k < N, for the delay line (left: the two coincide) and for the same
    line with β on every entry below the sub-diagonal (right: J stays above the bound).  Returns the path
    and, per panel, J, the bound and σ_max."""
    curves = {}
    for key, b in (("delay", 0.0), ("beta", beta)):
        theta = proposition1_theta(n, alpha, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            j = fisher.fisher_memory_curve(theta, n)
        sigma = float(np.linalg.svd(proposition1.gram_schmidt_triangle(theta), compute_uv=False)[0])
        curves[key] = {"beta": b, "J": j, "bound": proposition1.fisher_memory_lower_bound(theta, n), "sigma_max": sigma}
    k = np.arange(n)
    with _figure(7.0, 3.2) as fig:
        axes = fig.subplots(1, 2)
        for ax, (key, c) in zip(axes, curves.items()):
            ax.semilogy(k, c["J"], "-", color="C0", label=r"$J(k)$")
            # hollow markers on the delay line, where the bound lies exactly on J
            ax.semilogy(k, c["bound"], "--" if key == "beta" else "o", ms=3.5, mfc="none", color="C3",
                        label=r"bound $\alpha^k\frac{\alpha-1}{\alpha^{k+1}-1}\,/\,\sigma_{\max}^{2(N-1)}$")
            ax.set_xlabel(r"time step $k$")
            ax.set_title((r"delay line ($\beta=0$): $\sigma_{\max}=1$" if key == "delay" else
                          rf"$\beta={c['beta']:g}$: $\sigma_{{\max}}={c['sigma_max']:.4g}$"))
            ax.legend(frameon=False, loc="best")
            _label_short_log_axis(ax)
        axes[0].set_ylabel(r"Fisher memory $J(k)$")
        fig.suptitle(rf"Proposition 1: $N={n}$, $\sqrt{{\alpha}}$ on the sub-diagonal, $\alpha={alpha:g}$", fontsize=10)
        return _save(fig, path), curves


def figure_proposition2(path, ns=(2, 4, 6, 8), x: float = 0.5, t_max: int = 100_000) -> tuple[str, list]:
    """Proposition 2: max_ij |(Aᵗ)_ij| against t, log-log (left, with the fitted degree) and
    semi-log (right, where exponential growth would be a straight line)."""
    results = [polynomial_growth.proposition2(n, x, t_max) for n in ns]
    with _figure(7.0, 3.2) as fig:
        ax_ll, ax_sl = fig.subplots(1, 2)
        for i, r in enumerate(results):
            color = f"C{i}"
            ax_ll.loglog(r.t, r.max_entry, "o", ms=2.5, color=color,
                         label=rf"$n={r.n}$: fit $\propto t^{{{r.degree:.2f}}}$, bound {r.bound}")
            tail = r.t >= t_max / 10
            coef = np.polyfit(np.log(r.t[tail]), np.log(r.max_entry[tail]), 1)
            tt = r.t[r.t >= 10]
            ax_ll.loglog(tt, np.exp(np.polyval(coef, np.log(tt))), "-", lw=0.9, color=color)
            ax_sl.semilogy(r.t, r.max_entry, "-", color=color)
        ax_ll.set_xlabel(r"power $t$")
        ax_ll.set_ylabel(r"$\max_{ij}\,|(A^t)_{ij}|$")
        ax_ll.set_title("log-log: straight line = polynomial")
        ax_ll.legend(frameon=False, fontsize=7.5, loc="upper left", title="degree bound $n-1$", title_fontsize=7.5)
        rate = math.exp(math.log(max(r.max_entry[-1] for r in results)) / t_max)
        tt = np.linspace(0, t_max, 200)
        ax_sl.semilogy(tt, rate ** tt, color="0.45", ls="--", lw=1.0, label=rf"exponential ${rate:.5f}^t$")
        ax_sl.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax_sl.set_xlabel(r"power $t$")
        ax_sl.set_ylabel(r"$\max_{ij}\,|(A^t)_{ij}|$")
        ax_sl.set_title("semi-log: exponential = straight line")
        ax_sl.legend(frameon=False, loc="lower right")
        fig.suptitle(rf"Proposition 2: $A_{{ii}}=1$, $A_{{ij}}={x:g}$ ($i<j$): polynomial growth of $A^t$",
                     fontsize=10)
        return _save(fig, path), results


# ------------------------------------------------------------------------------------------------
# Model inspection
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def plot_spectrum(matrix: np.ndarray, path, title: str = "") -> str:
    """Eigenvalues in the complex plane with the unit circle (left); singular values and
    eigenvalue moduli, sorted (right)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    eig = np.linalg.eigvals(matrix)
    sv = np.linalg.svd(matrix, compute_uv=False)
    with _figure(7.0, 3.2) as fig:
        ax_e, ax_s = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
        phi = np.linspace(0, 2 * math.pi, 400)
        ax_e.plot(np.cos(phi), np.sin(phi), color="0.4", lw=0.9)
        ax_e.scatter(eig.real, eig.imag, s=9, color="C3", alpha=0.75, lw=0)
        lim = max(1.15, 1.1 * float(np.abs(eig).max()))
        ax_e.set_xlim(-lim, lim)
        ax_e.set_ylim(-lim, lim)
        ax_e.set_aspect("equal")
        ax_e.set_xlabel(r"Re $\lambda$")
        ax_e.set_ylabel(r"Im $\lambda$")
        ax_e.set_title(r"eigenvalues $\lambda_i(V)$, unit circle")
        idx = np.arange(1, len(sv) + 1)
        ax_s.plot(idx, sv, color="C0", label=r"singular values $\sigma_i(V)$")
        ax_s.plot(idx, np.sort(np.abs(eig))[::-1], color="C3", ls="--", label=r"$|\lambda_i(V)|$")
        ax_s.axhline(1.0, color="0.4", lw=0.8, ls=":")
        ax_s.set_xlabel("index $i$ (sorted, descending)")
        ax_s.set_ylabel("value")
        ax_s.set_title("singular values vs eigenvalue moduli")
        if sv[-1] > 0 and sv[0] / sv[-1] > 30:
            ax_s.set_yscale("log")
            _label_short_log_axis(ax_s)
        ax_s.legend(frameon=False)
        if title:
            fig.suptitle(title, fontsize=10)
        return _save(fig, path)


def _moduli_panel(ax, moduli: np.ndarray, factors: bool, eigen_moduli: np.ndarray | None = None) -> None:
    """schur.png's panel (d): the histogram of Λ's block scales γ_i (``factors``), with V's eigenvalue moduli |λ_i|
    beside them when given, or of V's eigenvalue moduli alone; each labelled with its mean."""
    # γ_i are Λ's block parameters; they are V's eigenvalue moduli |λ_i| only when T is 0 inside the blocks
    both = factors and eigen_moduli is not None
    values = np.concatenate([moduli, eigen_moduli]) if both else np.asarray(moduli)
    low, high = float(values.min()), float(values.max())
    low, high = (low, high) if high - low > 1e-6 else (low - 0.05, high + 0.05)  # all equal: a readable axis
    bins = np.linspace(low, high, 16)  # wide enough for two bars side by side
    symbol = r"\gamma_i" if factors else r"|\lambda_i|"
    series = [(moduli, rf"${symbol}$" + (r" of $\Lambda$" if both else ""), "C3")]
    if both:
        series.append((eigen_moduli, r"$|\lambda_i|$ of $V$", "C0"))
    # bars side by side in each bin (two series never blend into a third colour), each named in the legend, with
    # a dashed line at its mean
    ax.hist([data for data, _, _ in series], bins=bins, color=[color for _, _, color in series],
            label=[f"{name} (dashed: mean {np.mean(data):.3f})" for data, name, _ in series], edgecolor="white",
            linewidth=0.3)
    for data, _, color in series:
        ax.axvline(float(np.mean(data)), color=color, lw=1.2, ls="--")
    ax.axvline(1.0, color="0.3", ls=":", lw=0.9, label="1 (the unit circle)")
    if both:
        ax.set_xlabel(r"$\gamma_i$ of $\Lambda$, $|\lambda_i|$ of $V$" "\n" r"(differ where T is non-zero in a block)")
        ax.set_title(r"(d) block scales $\gamma_i$ and moduli $|\lambda_i|$")
    else:
        ax.set_xlabel(r"scale $\gamma_i$ of $\Lambda$'s blocks" "\n" r"($=|\lambda_i|$ only if T is 0 inside them)"
                      if factors else r"eigenvalue modulus $|\lambda_i|$")
        ax.set_title(rf"(d) {'block scales' if factors else 'moduli'} ${symbol}$")
    ax.set_ylabel("count")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, ax.get_ylim()[1] * 1.5)  # room above the bars for the legend
    ax.legend(frameon=True, framealpha=0.9, edgecolor="none", fontsize=7.5, loc="upper left")


@single_threaded_blas()
def plot_schur(theta: np.ndarray, angles: np.ndarray, moduli: np.ndarray, profile: dict, path,
               title: str = "", source: str = "", eigen_moduli: np.ndarray | None = None) -> str:
    """The lower (quasi-)triangular Schur form Θ = Λ + T of V = P Θ Pᵀ: heatmap of Θ (a), angles θ_i (b),
    mean |Θ_{i+k,i}| along the k-th sub-diagonal (c, the paper's Fig. 3c), and moduli γ_i (d).

    With ``source="parametrized"`` (nnRNN's trained factors) θ_i and γ_i are Λ's block parameters; V's
    eigenvalues are then γ_i e^{±iθ_i} only when T has no entries inside the 2×2 blocks (the paper's strict T
    has them), and the axes say so; ``eigen_moduli`` (V's |λ_i|) are then drawn beside the γ_i in (d), each
    labelled.  Otherwise θ_i and the moduli are those of V's eigenvalues."""
    factors = source == "parametrized"
    theta = np.asarray(theta, dtype=np.float64)
    n = theta.shape[0]
    with _figure(7.0, 6.0) as fig:
        (ax_h, ax_a), (ax_p, ax_g) = fig.subplots(2, 2)
        nz = np.abs(theta[theta != 0])
        vmax = float(np.percentile(nz, 99)) if nz.size else 1.0
        vmax = vmax if vmax > 0 else 1.0
        im = ax_h.imshow(theta, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest",
                         extent=(0.5, n + 0.5, n + 0.5, 0.5))
        cb = fig.colorbar(im, ax=ax_h, shrink=0.9, extend="both")
        cb.set_label(r"$\Theta_{ij}$ (clipped at 99th pct of $|\Theta_{ij}|$)", fontsize=8)
        ax_h.set_xlabel("column $j$ (Schur mode)")
        ax_h.set_ylabel("row $i$ (Schur mode)")
        ax_h.grid(False)
        ax_h.set_title(r"(a) Schur form $\Theta=\Lambda+T$" + (f" [{source}]" if source else ""))

        bins = np.linspace(0, math.pi, 31)
        ax_a.hist(angles, bins=bins, color="C0", alpha=0.85, edgecolor="white", linewidth=0.5)
        ax_a.set_xlim(0, math.pi)
        ax_a.set_xticks([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4, math.pi],
                        ["0", r"$\pi/4$", r"$\pi/2$", r"$3\pi/4$", r"$\pi$"])
        ax_a.set_xlabel(r"angle $\theta_i$ of $\Lambda$'s $2\times2$ blocks (rad)" if factors else
                        r"eigenvalue angle $\theta_i$ (rad), $\lambda=|\lambda| e^{\pm i\theta}$")
        ax_a.set_ylabel("count")
        ax_a.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_a.set_title(r"(b) angles $\theta_i$")

        k = profile["k"]
        ax_p.plot(k, profile["theta"], "-", color="C0", label=r"$\Theta$ (incl. $2\times2$ blocks)")
        ax_p.plot(k, profile["T"], "--", color="C1", label=r"$T$ only")
        vals = np.concatenate([profile["theta"], profile["T"]])
        pos = vals[vals > 0]
        if pos.size and pos.max() / max(pos.min(), 1e-300) > 100 and np.all(profile["theta"] > 0):
            ax_p.set_yscale("log")
            _label_short_log_axis(ax_p)
        ax_p.set_xscale("log")
        ax_p.set_xlabel(r"sub-diagonal $k$ (entries $\Theta_{i+k,i}$)")
        ax_p.set_ylabel(r"mean $|\Theta_{i+k,i}|$")
        ax_p.set_title("(c) mean magnitude along sub-diagonals")
        ax_p.legend(frameon=False)

        _moduli_panel(ax_g, moduli, factors, eigen_moduli)
        if title:
            fig.suptitle(title, fontsize=10)
        return _save(fig, path)


def _not_finite_words(values: np.ndarray, unit: str) -> str:
    """'NaN or inf at 3 of 100 steps': how many of ``values`` are not finite, in words."""
    return f"NaN or inf at {int(np.sum(~np.isfinite(values)))} of {len(values)} {unit}"


def gradient_direction(norms: np.ndarray) -> str:
    """How ‖∂L/∂h_t‖ changes going back in time, from the last step T (where the loss is read) to t = 1: the
    factor between the two, in words; NaN or inf norms are said as such (never as a zero gradient)."""
    norms = np.asarray(norms, dtype=np.float64)
    first, last = norms[0], norms[-1]
    if not (np.isfinite(first) and np.isfinite(last)):
        return f"the gradient is {_not_finite_words(norms, 'steps')}"
    if not (first > 0 and last > 0):
        return "the gradient reaches zero on its way back"
    note = f"; {_not_finite_words(norms, 'steps')}" if not np.all(np.isfinite(norms)) else ""
    ratio = first / last
    if 0.9 < ratio < 1.1:
        return f"going back from t = {len(norms)} to t = 1 the gradient keeps its size ({ratio:.2g}×){note}"
    verb, factor = ("grows", ratio) if ratio > 1 else ("shrinks", 1 / ratio)
    shown = f"{factor:,.0f}" if factor < 1e6 else f"{factor:.2g}"
    return f"going back from t = {len(norms)} to t = 1 the gradient {verb} {shown}×{note}"


def _drawable(values: np.ndarray) -> np.ndarray:
    """``values`` with every entry a log axis cannot draw (≤ 0, NaN, ±inf) set to NaN, so the line breaks there
    instead of joining its neighbours straight across."""
    return np.where(np.isfinite(values) & (values > 0), values, np.nan)


def _mark_not_finite(ax, x: np.ndarray, values: np.ndarray, color: str, label: str, height: float = 0.97) -> bool:
    """× markers in ``color`` near the top of ``ax`` (at ``height``, in axes units, so that two series' markers do
    not hide each other) at the x of every NaN or ±inf in ``values``, which no axis can place, with ``label`` for
    the legend; whether there were any."""
    bad = ~np.isfinite(values)
    if bad.any():
        ax.plot(x[bad], np.full(int(bad.sum()), height), "x", color=color, ms=6, mew=1.5, clip_on=False,
                transform=ax.get_xaxis_transform(), label=label)
    return bool(bad.any())


def plot_gradients(norms: np.ndarray, path, title: str = "", subtitle: str = "",
                   reference: np.ndarray | None = None, reference_label: str = "untrained") -> str:
    """‖∂L/∂h_t‖ against t on a log axis; the loss is read at the last step, so the gradient flows from right to
    left, which the axis label and an arrow say, and the title says by how much it grows or shrinks on the way
    back.  ``reference`` (e.g. the same architecture untrained, on the same probe) is drawn in gray beside it."""
    norms = np.asarray(norms, dtype=np.float64)
    t = np.arange(1, len(norms) + 1)
    with _figure(7.0, 3.4) as fig:
        ax = fig.subplots()
        ax.plot(t, _drawable(norms), color="C0", label=f"trained: {gradient_direction(norms)}")
        _mark_not_finite(ax, t, norms, "C0", "trained: NaN or inf (× near the top)")
        drawn = [norms]
        if reference is not None:
            reference = np.asarray(reference, dtype=np.float64)
            ax.plot(t, _drawable(reference), color="0.5", ls="--",
                    label=f"{reference_label}: {gradient_direction(reference)}")
            _mark_not_finite(ax, t, reference, "0.5", f"{reference_label.split(' ')[0]}: NaN or inf (× near the top)",
                             height=0.91)
            drawn.append(reference)
        if np.isfinite(_drawable(np.concatenate(drawn))).any():
            ax.set_yscale("log")
            _label_short_log_axis(ax)
        ax.set_xlabel(rf"time step $t$ (the loss is read at $t=T={len(norms)}$; backpropagation runs "
                      r"$\leftarrow$ from right to left)")
        ax.set_ylabel(r"$\|\partial L/\partial h_t\|_2$ (log scale)")
        ax.set_xlim(0, len(norms) + 1)
        fig.legend(loc="outside lower center", frameon=False, fontsize=8)
        ax.set_title((title or "gradient propagation") + ("\n" + subtitle if subtitle else ""))
        return _save(fig, path)


def plot_training_gradients(steps, norms, path, title: str = "") -> str:
    """The gradient norm the trainer logged (mean over each logging window) against updates, on a log axis where
    its finite values span more than a decade; NaN or inf windows (a diverging run) are marked with × near the
    top and named in a legend, since no axis can place them."""
    steps, norms = np.asarray(steps), np.asarray(norms, dtype=np.float64)
    with _figure(7.0, 3.0) as fig:
        ax = fig.subplots()
        # a marker on each point: a run logs few windows, and a line alone hides where they are
        ax.plot(steps, np.where(np.isfinite(norms), norms, np.nan), color="C1", marker="o", ms=2.5)
        finite = norms[np.isfinite(norms)]
        if finite.size and finite.min() > 0 and finite.max() / finite.min() > 10:
            ax.set_yscale("log")
            _label_short_log_axis(ax)
        if _mark_not_finite(ax, steps, norms, "C3", f"× near the top: {_not_finite_words(norms, 'logged windows')}"):
            fig.legend(loc="outside lower center", frameon=False, fontsize=8)
        ax.set_xlabel("update")
        ax.set_ylabel(r"$\|\nabla_\theta L\|_2$ (window mean)")
        ax.set_title(title or "gradient norm during training")
        return _save(fig, path)


def plot_linear_recurrence(eigenvalues: np.ndarray, t_abs: np.ndarray, curve: np.ndarray | None, path,
                           title: str = "") -> str:
    """A linear recurrence A = Λ + T in complex Schur form (the nnlru's): Λ's eigenvalues with the unit circle
    (left), |T| (middle) and its Fisher memory curve J(k) (right; left blank when there is none, ρ(A) = 1)."""
    eigenvalues = np.asarray(eigenvalues)
    with _figure(9.0, 3.0) as fig:
        ax_e, ax_t, ax_j = fig.subplots(1, 3)
        phi = np.linspace(0, 2 * math.pi, 400)
        ax_e.plot(np.cos(phi), np.sin(phi), color="0.4", lw=0.9)
        ax_e.scatter(eigenvalues.real, eigenvalues.imag, s=9, color="C3", alpha=0.75, lw=0)
        ax_e.set_xlim(-1.15, 1.15)
        ax_e.set_ylim(-1.15, 1.15)
        ax_e.set_aspect("equal")
        ax_e.set_title(r"eigenvalues $\lambda_j$ (diag $\Lambda$)")
        image = ax_t.imshow(t_abs, cmap="magma", interpolation="nearest")
        fig.colorbar(image, ax=ax_t, shrink=0.8)
        ax_t.set_title(r"$|T|$ (strictly upper)")
        ax_t.grid(False)
        if curve is not None and len(curve):
            # shown down to a millionth of its peak: the long geometric tail below says nothing more
            kept = np.flatnonzero(curve >= 1e-6 * curve.max())
            shown = curve[:max(2, kept[-1] + 1 if kept.size else len(curve))]
            ax_j.semilogy(np.arange(len(shown)), np.maximum(shown, np.finfo(float).tiny), color="C0")
        ax_j.set_xlabel("k (steps ago)")
        ax_j.set_title("Fisher memory $J(k)$")
        if title:
            fig.suptitle(title, fontsize=10)
        return _save(fig, path)
