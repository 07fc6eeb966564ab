"""One entry of the softmax's backward pass, computed in front of you (notebook 11).

Six queries and six keys of size d_k (seeded, standard normal), with values and an upstream
gradient dO. Three maps: the weights W, the gradient dW = dO V^T that reaches them, and the
gradient dS = W * (dW - rowsum(dW * W)) that reaches the scores. Pick a query row and a key: the
cell is marked in every map and the readout writes the formula out with its numbers. The d_k
drop-down and the scale switch show what notebook 02 claimed: without the 1/sqrt(d_k) scale, a
large d_k saturates each row of W and dS fades to almost nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_bool, check_choice, check_int
from ..functional import scaled_dot_product_attention
from ..plotting import new_figure
from ._base import Explorer
from ._mapview import MapView

__all__ = ["N", "D_K_CHOICES", "CellGradient", "cell_gradient", "backward_explorer"]

N = 6
D_K_CHOICES = (2, 8, 32, 128, 512)


@lru_cache(maxsize=32)
def _maps(d_k: int, scaled: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = torch.Generator().manual_seed(11)
    q, k = (torch.randn(N, d_k, dtype=torch.float64, generator=g) for _ in range(2))
    v, d_out = (torch.randn(N, 4, dtype=torch.float64, generator=g) for _ in range(2))
    _, w = scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d_k) if scaled else 1.0)  # (N, N)
    d_w = d_out @ v.T  # (N, 4) @ (4, N) -> (N, N)
    d_s = w * (d_w - (d_w * w).sum(dim=-1, keepdim=True))  # (N, N)
    return w.numpy(), d_w.numpy(), d_s.numpy()


@dataclass(frozen=True)
class CellGradient:
    """dS[i, j] = W[i, j] * (dW[i, j] - row_term), with row_term = sum_k dW[i, k] W[i, k].

    Attributes:
        row, key, d_k, scaled: the inputs.
        W, dW, dS: (N, N) maps; row_term: the row's sum; value: dS[row, key];
        row_size: sum_k |dS[row, k]|; row_max_weight: max_k W[row, k].
    """

    row: int
    key: int
    d_k: int
    scaled: bool
    W: np.ndarray
    dW: np.ndarray
    dS: np.ndarray
    row_term: float
    value: float
    row_size: float
    row_max_weight: float


def cell_gradient(row: int = 0, key: int = 0, d_k: int = 8, scaled: bool = True) -> CellGradient:
    row = check_int("row", row, low=0, high=N - 1)
    key = check_int("key", key, low=0, high=N - 1)
    check_choice("d_k", d_k, D_K_CHOICES)
    check_bool("scaled", scaled)
    w, d_w, d_s = _maps(d_k, scaled)
    row_term = float((d_w[row] * w[row]).sum())
    return CellGradient(row, key, d_k, scaled, w, d_w, d_s, row_term, float(d_s[row, key]),
                        float(np.abs(d_s[row]).sum()), float(w[row].max()))


def _readout(c: CellGradient) -> str:
    i, j = c.row, c.key
    return (f"<p><b>dS[{i}, {j}]</b> = W[{i}, {j}] × (dW[{i}, {j}] − Σ<sub>k</sub> dW[{i}, k] W[{i}, k]) = "
            f"{c.W[i, j]:.3f} × ({c.dW[i, j]:.3f} − {c.row_term:.3f}) = <b>{c.value:.4f}</b><br>"
            f"Row {i}: largest weight {c.row_max_weight:.3f}, Σ|dS| = {c.row_size:.3f} "
            f"(d_k = {c.d_k}, {'scaled by 1/√d_k' if c.scaled else 'not scaled'}).</p>")


def backward_explorer(row: int = 0, key: int = 0, d_k: int = 8, scaled: bool = True) -> Explorer:
    """Sliders for the query row and the key, d_k and the scale; maps W, dW and dS.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` ("W", "dW", "dS").
    """
    first = cell_gradient(row, key, d_k, scaled)
    fig = new_figure(10, 3.6, dpi=72)
    labels = [str(t) for t in range(N)]
    maps = {
        "W": MapView(fig.add_axes((0.04, 0.12, 0.27, 0.72)), numbers=True, number_size=7, box_color="tab:orange"),
        "dW": MapView(fig.add_axes((0.37, 0.12, 0.27, 0.72)), cmap="PuOr", clim=(-4.0, 4.0), numbers=True,
                      number_size=7, fmt="{:+.1f}", box_color="tab:green"),
        "dS": MapView(fig.add_axes((0.70, 0.12, 0.27, 0.72)), cmap="PuOr", clim=(-0.5, 0.5), numbers=True,
                      number_size=7, fmt="{:+.2f}", box_color="tab:green"),
    }
    titles = {"W": "weights W", "dW": "dW = dO Vᵀ", "dS": "dS = W ⊙ (dW − rowsum(dW ⊙ W))"}

    def update(row: int, key: int, d_k: int, scaled: bool) -> tuple[CellGradient, str]:
        c = cell_gradient(row, key, d_k, scaled)
        cell = np.zeros((N, N), dtype=bool)
        cell[c.row, c.key] = True
        for name, values in (("W", c.W), ("dW", c.dW), ("dS", c.dS)):
            maps[name].set(values, x_tokens=labels, y_tokens=labels, marks=cell,
                           boxes=[(c.row, c.row + 1, 0, N)], title=titles[name])
        return c, _readout(c)

    def live() -> list:
        return [a for m in maps.values() for a in m.artists()]

    controls = {
        "row": widgets.IntSlider(value=first.row, min=0, max=N - 1, description="query row"),
        "key": widgets.IntSlider(value=first.key, min=0, max=N - 1, description="key"),
        "d_k": widgets.Dropdown(options=D_K_CHOICES, value=first.d_k, description="d_k"),
        "scaled": widgets.Checkbox(value=first.scaled, description="divide by √d_k"),
    }
    explorer = Explorer(controls, fig, update, live, title="The softmax's backward pass, one entry at a time")
    explorer.maps = maps
    return explorer
