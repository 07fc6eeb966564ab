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
from ..scaling import D_K_GRID, ScalingStats, scaling_curves, scaling_stats
from ..plotting import new_figure, power_of_ten_label
from ._base import Explorer

__all__ = ["ScalingStats", "scaling_stats", "scaling_curves", "scaling_explorer", "D_K_GRID"]

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
