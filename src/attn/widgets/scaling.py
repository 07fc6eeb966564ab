"""Why divide by sqrt(d_k): the d_k explorer and the numbers behind it.

With q, k of d_k independent N(0, 1) entries, q . k has variance d_k. Unscaled, the scores
spread out as d_k grows, the softmax saturates towards one-hot, and its Jacobian (the
gradient that flows back through it) shrinks towards zero. Divided by sqrt(d_k), the
variance stays 1 and the softmax stays soft at every d_k.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.ticker import FuncFormatter, NullFormatter

from .._checks import check_positive_int
from ..functional import masked_softmax
from ..plotting import new_figure, power_of_ten_label
from ._base import Explorer

__all__ = ["ScalingStats", "scaling_stats", "scaling_curves", "scaling_explorer", "D_K_GRID"]

D_K_GRID: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class ScalingStats:
    """Averages over random rows for one d_k; ``raw`` = unscaled, ``scaled`` = / sqrt(d_k)."""

    d_k: int
    score_var_raw: float
    score_var_scaled: float
    max_weight_raw: float  # mean of a row's largest softmax weight (1/n_keys = flat, 1 = one-hot)
    max_weight_scaled: float
    grad_norm_raw: float  # mean Frobenius norm of the softmax Jacobian diag(p) - p p^T
    grad_norm_scaled: float
    example_raw: tuple[float, ...]  # one row of weights, to look at
    example_scaled: tuple[float, ...]


def _softmax_stats(scores: np.ndarray) -> tuple[float, float, np.ndarray]:
    """scores (N, n) -> mean largest weight, mean softmax-Jacobian norm, weights p (N, n)."""
    p = masked_softmax(torch.from_numpy(scores)).numpy()  # (N, n), softmax over the keys
    # ||diag(p) - p p^T||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2
    s2, s3 = (p**2).sum(-1), (p**3).sum(-1)  # (N,)
    jac = np.sqrt(np.clip(s2 - 2 * s3 + s2**2, 0, None))  # (N,)
    return float(p.max(-1).mean()), float(jac.mean()), p


@lru_cache(maxsize=2)
def _score_table(d_max: int, n_keys: int, n_rows: int, seed: int) -> torch.Tensor:
    """Unscaled scores for every d_k in 1..d_max at once: (D, N, n), entry [d-1] uses d dims.

    Draw n_rows queries q (N, 1, D) and n_keys keys per query k (N, n, D) with N(0, 1)
    entries, once (float32: fast to draw). The score with d_k dims is the sum of the first
    d_k coordinate products, so one cumulative sum gives the scores for every d_k, and every
    d_k <= D shares the same vectors.
    """
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_rows, 1, d_max, generator=g)  # (N, 1, D)
    k = torch.randn(n_rows, n_keys, d_max, generator=g)  # (N, n, D)
    return (q * k).cumsum(-1).permute(2, 0, 1).contiguous()  # (N, n, D) -> (D, N, n)


@lru_cache(maxsize=1024)
def _stats(d_k: int, n_keys: int, n_rows: int, seed: int) -> ScalingStats:
    table = _score_table(max(512, d_k), n_keys, n_rows, seed)
    raw = table[d_k - 1].numpy().astype(np.float64)  # (N, n)
    scaled = raw / math.sqrt(d_k)
    max_raw, jac_raw, p_raw = _softmax_stats(raw)
    max_sc, jac_sc, p_sc = _softmax_stats(scaled)
    return ScalingStats(
        d_k=d_k,
        score_var_raw=float(raw.var(ddof=1)),
        score_var_scaled=float(scaled.var(ddof=1)),
        max_weight_raw=max_raw,
        max_weight_scaled=max_sc,
        grad_norm_raw=jac_raw,
        grad_norm_scaled=jac_sc,
        example_raw=tuple(p_raw[0].tolist()),
        example_scaled=tuple(p_sc[0].tolist()),
    )


def scaling_stats(d_k: int, *, n_keys: int = 16, n_rows: int = 1000, seed: int = 0) -> ScalingStats:
    """Draw n_rows queries and n_keys keys per query with N(0, 1) entries; measure both ways.

    Args:
        d_k: the query/key size, >= 1.
        n_keys: keys per query (the softmax width).
        n_rows: how many query rows to average over.
        seed: the random generator's seed (same seed, same numbers).

    Returns:
        ``ScalingStats``: variance of the n_rows x n_keys scores, the mean over rows of the
        largest softmax weight, and the mean over rows of the Frobenius norm of the softmax
        Jacobian diag(p) - p p^T, each unscaled (``_raw``) and divided by sqrt(d_k)
        (``_scaled``); plus the weights of the first row both ways.

    The vectors for every d_k <= 512 come from one draw (the first d_k coordinates of the
    same vectors), so neighbouring d_k values differ only by the added dimensions.
    """
    check_positive_int("d_k", d_k)
    check_positive_int("n_keys", n_keys)
    check_positive_int("n_rows", n_rows)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    return _stats(d_k, n_keys, n_rows, seed)


def scaling_curves(d_ks: tuple[int, ...] = D_K_GRID, **kwargs: int) -> list[ScalingStats]:
    """``scaling_stats`` over a grid of d_k values (the explorer's background curves)."""
    return [scaling_stats(d, **kwargs) for d in d_ks]


def _readout(s: ScalingStats) -> str:
    notes = []
    if s.d_k == 1:
        notes.append("At d_k = 1, √d_k = 1: scaling changes nothing, both columns are equal.")
    else:
        notes.append(
            f"Unscaled, the variance of the scores is {s.score_var_raw / s.score_var_scaled:.1f} times "
            f"the scaled one (d_k = {s.d_k}); the largest weight averages {s.max_weight_raw:.2f} "
            f"against {s.max_weight_scaled:.2f}, and the gradient through the softmax is "
            f"{s.grad_norm_raw / s.grad_norm_scaled:.2f} times the scaled one."
        )
    return (
        f"<table><tr><th>d_k = {s.d_k}</th><th>unscaled q·k</th><th>q·k / √d_k</th></tr>"
        f"<tr><td>variance of scores</td><td>{s.score_var_raw:.2f}</td><td>{s.score_var_scaled:.2f}</td></tr>"
        f"<tr><td>mean largest weight</td><td>{s.max_weight_raw:.3f}</td><td>{s.max_weight_scaled:.3f}</td></tr>"
        f"<tr><td>softmax gradient size ‖J‖</td><td>{s.grad_norm_raw:.4f}</td><td>{s.grad_norm_scaled:.4f}</td></tr>"
        "</table><p>" + " ".join(notes) + "</p>"
    )


def scaling_explorer(d_k: int = 64, *, n_keys: int = 16) -> Explorer:
    """A d_k slider (1 to 512): variance, peakedness and gradient, scaled vs unscaled.

    Three panels plot ``scaling_stats`` over d_k = 1, 2, 4, ..., 512 (both ways) with a
    marker at the slider's d_k; the fourth shows one query's softmax weights both ways.
    """
    check_positive_int("d_k", d_k)
    check_positive_int("n_keys", n_keys)
    d_k = min(d_k, 512)
    curves = scaling_curves(n_keys=n_keys)
    xs = [c.d_k for c in curves]
    fig = new_figure(10, 2.8, dpi=72)
    # Fixed positions instead of a layout engine: the figure is built once, quickly.
    fig.subplots_adjust(left=0.045, right=0.99, bottom=0.17, top=0.9, wspace=0.3)
    axes = fig.subplots(1, 4)
    panels = (
        ("variance of scores", "score_var", "log"),
        ("mean largest weight", "max_weight", "linear"),
        ("softmax gradient ‖J‖", "grad_norm", "log"),
    )
    markers = []
    for ax, (title, attr, yscale) in zip(axes, panels):
        ax.plot(xs, [getattr(c, attr + "_raw") for c in curves], "o-", color="tab:red", ms=3,
                label="unscaled q·k")
        ax.plot(xs, [getattr(c, attr + "_scaled") for c in curves], "o-", color="tab:blue", ms=3,
                label="q·k / √d_k")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 8, 64, 512], ["1", "8", "64", "512"])
        ax.set_yscale(yscale)
        if yscale == "log":  # plain-text ticks (10⁻¹): no mathtext parser to build on first draw
            ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten_label))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("d_k", labelpad=1)
        (m_raw,) = ax.plot([d_k], [1], "s", color="tab:red", ms=8, mfc="none")
        (m_sc,) = ax.plot([d_k], [1], "s", color="tab:blue", ms=8, mfc="none")
        markers.append((attr, m_raw, m_sc))
    axes[1].set_ylim(0, 1.02)
    axes[0].legend(fontsize=8, loc="upper left")
    ax_bar = axes[3]
    pos = np.arange(n_keys)
    # Bars as two line collections (one artist each): far cheaper to redraw than 2 x n_keys
    # rectangles.
    bars_raw = ax_bar.vlines(pos - 0.2, 0, np.zeros(n_keys), colors="tab:red", lw=4,
                             capstyle="butt")
    bars_sc = ax_bar.vlines(pos + 0.2, 0, np.zeros(n_keys), colors="tab:blue", lw=4,
                            capstyle="butt")
    ax_bar.set_xlim(-0.7, n_keys - 0.3)
    ax_bar.set_ylim(0, 1)
    ax_bar.set_xticks([])
    ax_bar.set_xlabel(f"weights of one query ({n_keys} keys)", labelpad=1)
    ax_bar.set_title("one query's softmax weights", fontsize=10)

    def update(d_k: int) -> tuple[ScalingStats, str]:
        s = scaling_stats(d_k, n_keys=n_keys)
        for attr, m_raw, m_sc in markers:
            m_raw.set_data([d_k], [getattr(s, attr + "_raw")])
            m_sc.set_data([d_k], [getattr(s, attr + "_scaled")])
        bars_raw.set_segments([[(x, 0.0), (x, v)] for x, v in zip(pos - 0.2, s.example_raw)])
        bars_sc.set_segments([[(x, 0.0), (x, v)] for x, v in zip(pos + 0.2, s.example_scaled)])
        return s, _readout(s)

    def live() -> list:
        return [a for _, m_raw, m_sc in markers for a in (m_raw, m_sc)] + [bars_raw, bars_sc]

    slider = widgets.IntSlider(value=d_k, min=1, max=512, step=1, description="d_k",
                               continuous_update=True)
    return Explorer({"d_k": slider}, fig, update, live, title="Scaled vs unscaled dot products")
