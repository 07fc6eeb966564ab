"""The softmax's backward pass, flowing through one query row and one key (notebook 11).

Six queries and six keys of size d_k (seeded, standard normal), with values V and an upstream
gradient dO (4 numbers per row). Two rows of maps, the forward pass on top and the backward
pass below, everything computed by the package (``attn.functional.scaled_dot_product_attention``
forward, ``attn.functional.attention_backward_steps`` for dW, dS, dQ, dK, dV):

    forward (top, left to right):      V,  S = scale Q Kᵀ  ->  W = softmax(S)  ->  O = W V
    backward (bottom, right to left):  dO  ->  dW = dO Vᵀ  ->  dS = W ⊙ (dW − rowsum(dW ⊙ W))
                                       ->  dQ = scale dS K,  dK = scale dSᵀ Q

Each backward map sits under its forward one (dS under S, dW under W, dO under O). Pick a
query row i and a key j: every map frames what the gradient passes through on its way. Row i
of O and dO (the output and its gradient), row i of dW and dS (which the softmax mixes: the
row sum), the cell (i, j) marked; column j of dS, which reaches key j; row i of dQ and row j
of dK (what arrives). V's row j is what dW[i, j] = dO_i · V_j reads. In the maps that print
no numbers (``SIGN_BARS``), a short bar marks a negative cell, as the figure's key says. The
readout writes the entry's path out with its numbers (and |dV_j|, dV = Wᵀ dO). The d_k
drop-down and the scale switch show what notebook 02 claimed: without the 1/sqrt(d_k) scale,
a large d_k saturates each row of W, and dS, dQ and dK fade to almost nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from .._checks import check_bool, check_choice, check_int
from ..functional import attention_backward_steps, scaled_dot_product_attention
from ..language import mark, tr
from ..drawing.plotting import new_figure, text_font
from ._base import Explorer
from ._mapview import MapView

__all__ = ["N", "D_V", "D_K_CHOICES", "SHOWN_COLUMNS", "SIGN_BARS", "CellGradient", "cell_gradient",
           "backward_explorer"]

N = 6
D_V = 4
D_K_CHOICES = (2, 8, 32, 128, 512)
#: dQ and dK have d_k columns; the picture shows at most the first 8.
SHOWN_COLUMNS = 8


@lru_cache(maxsize=32, typed=True)
def _pass(d_k: int, scaled: bool) -> dict[str, np.ndarray]:
    """Every tensor of the forward and backward pass, as read-only (N, ·) arrays."""
    g = torch.Generator().manual_seed(11)
    q, k = (torch.randn(N, d_k, dtype=torch.float64, generator=g) for _ in range(2))
    v, d_out = (torch.randn(N, D_V, dtype=torch.float64, generator=g) for _ in range(2))
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    out, w = scaled_dot_product_attention(q, k, v, scale=scale)  # (N, D_V), (N, N)
    back = attention_backward_steps(q, k, v, d_out, scale=scale)  # dW, dS (N, N); dQ, dK, dV
    arrays = {"Q": q, "K": k, "V": v, "S": scale * q @ k.T, "W": w, "O": out, "dO": d_out,
              "dW": back.grad_weights, "dS": back.grad_scores, "dQ": back.grad_query,
              "dK": back.grad_key, "dV": back.grad_value}
    result = {}
    for name, t in arrays.items():
        a = t.numpy().copy()
        a.setflags(write=False)  # cached and shared
        result[name] = a
    return result


@dataclass(frozen=True)
class CellGradient:
    """dS[i, j] = W[i, j] * (dW[i, j] - row_term), with row_term = sum_k dW[i, k] W[i, k], and
    where it goes: scale * dS[i, j] K_j into dQ_i, scale * dS[i, j] Q_i into dK_j.

    Attributes:
        row, key, d_k, scaled: the inputs; scale: 1/sqrt(d_k) or 1.
        S, W, dW, dS: (N, N) maps; V, O, dO, dV: (N, D_V); Q, K, dQ, dK: (N, d_k).
        row_term: the row's sum; value: dS[row, key];
        row_size: sum_k |dS[row, k]|; row_max_weight: max_k W[row, k];
        dq_norm: |dQ[row]|; dk_norm: |dK[key]|; dv_norm: |dV[key]|.
    """

    row: int
    key: int
    d_k: int
    scaled: bool
    scale: float
    S: np.ndarray
    W: np.ndarray
    dW: np.ndarray
    dS: np.ndarray
    V: np.ndarray
    O: np.ndarray
    dO: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    dQ: np.ndarray
    dK: np.ndarray
    dV: np.ndarray
    row_term: float
    value: float
    row_size: float
    row_max_weight: float
    dq_norm: float
    dk_norm: float
    dv_norm: float


def cell_gradient(row: int = 0, key: int = 0, d_k: int = 8, scaled: bool = True) -> CellGradient:
    """The forward and backward pass of one seeded head, and the path of entry (row, key).

    Args:
        row: the query row i, 0..N-1.
        key: the key j, 0..N-1.
        d_k: the size of queries and keys, one of ``D_K_CHOICES``.
        scaled: scale the scores by 1/sqrt(d_k) (else by 1).

    Returns:
        A ``CellGradient``.
    """
    row = check_int("row", row, low=0, high=N - 1)
    key = check_int("key", key, low=0, high=N - 1)
    check_choice("d_k", d_k, D_K_CHOICES)
    check_bool("scaled", scaled)
    a = _pass(d_k, scaled)
    w, d_w, d_s = a["W"], a["dW"], a["dS"]
    return CellGradient(
        row, key, d_k, scaled, 1 / math.sqrt(d_k) if scaled else 1.0,
        a["S"], w, d_w, d_s, a["V"], a["O"], a["dO"], a["Q"], a["K"], a["dQ"], a["dK"], a["dV"],
        row_term=float((d_w[row] * w[row]).sum()), value=float(d_s[row, key]),
        row_size=float(np.abs(d_s[row]).sum()), row_max_weight=float(w[row].max()),
        dq_norm=float(np.linalg.norm(a["dQ"][row])), dk_norm=float(np.linalg.norm(a["dK"][key])),
        dv_norm=float(np.linalg.norm(a["dV"][key])))


def _signed(x: float) -> str:
    """x to 3 decimals, in brackets when negative (so that "a − (−b)" reads right)."""
    return f"({x:.3f})" if x < 0 else f"{x:.3f}"


def _readout(c: CellGradient) -> str:
    i, j = c.row, c.key
    scale = f"1/√{c.d_k}" if c.scaled else "1"
    forward = tr("Forward: S[{i}, {j}] = {scale} · Q<sub>{i}</sub>·K<sub>{j}</sub> = {score:.3f}, "
                 "W[{i}, {j}] = {weight:.3f} (row {i}'s largest weight {top:.3f}).", i=i, j=j,
                 scale=scale, score=c.S[i, j], weight=c.W[i, j], top=c.row_max_weight)
    backward = tr("Backward: dW[{i}, {j}] = dO<sub>{i}</sub>·V<sub>{j}</sub> = {dw:.3f}; "
                  "<b>dS[{i}, {j}]</b> = W[{i}, {j}] × (dW[{i}, {j}] − Σ<sub>k</sub> dW[{i}, k] W[{i}, k]) = "
                  "{weight:.3f} × ({dw:.3f} − {row_term}) = <b>{value:.4f}</b>; it sends {scale} · "
                  "dS[{i}, {j}] · K<sub>{j}</sub> into dQ<sub>{i}</sub> and {scale} · dS[{i}, {j}] · "
                  "Q<sub>{i}</sub> into dK<sub>{j}</sub>.", i=i, j=j, dw=c.dW[i, j], weight=c.W[i, j],
                  row_term=_signed(c.row_term), value=c.value, scale=scale)
    arrives = tr("What arrives: |dQ<sub>{i}</sub>| = {dq:.3f}, |dK<sub>{j}</sub>| = {dk:.3f}, "
                 "|dV<sub>{j}</sub>| = {dv:.3f}; row {i}: Σ|dS| = {size:.3f} (d_k = {d_k}, {scaling}).",
                 i=i, j=j, dq=c.dq_norm, dk=c.dk_norm, dv=c.dv_norm, size=c.row_size, d_k=c.d_k,
                 scaling=tr("scaled by 1/√d_k") if c.scaled else tr("not scaled"))
    return f"<p>{forward}<br>{backward}<br>{arrives}</p>"


#: name -> (grid position (row, column), title, colour map, clim, numbers format or None, what it
#: frames: "cell" row i and the entry, "cell+key" also column j, "row" row i, "key" row j).
def _no_leading_zero(value: float) -> str:
    """dS's entries in the width of its cells ("+0.04" is wider): two decimals without the
    leading zero below 1 ("+.04", "−.20"), one decimal from 1 on ("+1.2")."""
    return f"{value:+.2f}".replace("0.", ".", 1) if abs(value) < 0.995 else f"{value:+.1f}"


#: Each backward map sits under its forward map (dS under S, dW under W, dO under O).
_PANELS = {
    "V": ((0, 1), mark("values V (row j)"), "PuOr", (-2.5, 2.5), None, "key"),
    "S": ((0, 2), mark("scores S = scale·Q Kᵀ"), "PuOr", (-3.0, 3.0), None, "cell"),
    "W": ((0, 3), mark("weights W = softmax(S)"), "Blues", (0.0, 1.0), "{:.2f}", "cell"),
    "O": ((0, 4), mark("output O = W V (row i)"), "PuOr", (-2.5, 2.5), None, "row"),
    "dO": ((1, 4), mark("dO, given (row i)"), "PuOr", (-2.5, 2.5), None, "row"),
    "dW": ((1, 3), mark("dW = dO Vᵀ"), "PuOr", (-4.0, 4.0), "{:+.1f}", "cell"),
    "dS": ((1, 2), mark("dS = W ⊙ (dW − rowsum(dW ⊙ W))"), "PuOr", (-0.5, 0.5), _no_leading_zero, "cell+key"),
    "dQ": ((1, 1), mark("dQ = scale·dS K (row i)"), "PuOr", (-0.3, 0.3), None, "row"),
    "dK": ((1, 0), mark("dK = scale·dSᵀ Q (row j)"), "PuOr", (-0.3, 0.3), None, "key"),
}
#: The maps that print no numbers: on their diverging colours (PuOr), a short bar marks each
#: negative cell (``MapView``'s sign bars), for readers who cannot tell purple from orange.
SIGN_BARS = tuple(name for name, (_pos, _title, _cmap, _clim, fmt, _frames) in _PANELS.items() if fmt is None)


def backward_explorer(row: int = 0, key: int = 0, d_k: int = 8, scaled: bool = True) -> Explorer:
    """Sliders for the query row and the key, d_k and the scale; the forward pass on top, the
    backward pass below (right to left, as the gradient flows), each map framing the row or key
    the chosen entry's gradient passes through.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` (S, W, V, O, dO, dW, dS, dQ, dK, dV;
        dQ and dK show their first ``SHOWN_COLUMNS`` columns); ``.key`` is the figure's key,
        which also says what a bar in a cell means.
    """
    first = cell_gradient(row, key, d_k, scaled)
    fig = new_figure(13, 6, dpi=72)
    labels = [str(t) for t in range(N)]
    left, width, gap, bottom, height = 0.035, 0.15, 0.045, (0.55, 0.1), 0.33
    maps = {}
    for name, ((r, col), _title, cmap, clim, fmt, _frames) in _PANELS.items():
        ax = fig.add_axes((left + col * (width + gap), bottom[r], width, height))
        maps[name] = MapView(ax, cmap=cmap, clim=clim, numbers=fmt is not None, number_size=7,
                             fmt=fmt or "{:.2f}", box_color="tab:orange" if r == 0 else "tab:green",
                             title_font=text_font(9))
    fig.text(0.005, 0.9, tr("forward"), rotation=90, fontproperties=text_font(10), va="top")
    fig.text(0.005, 0.42, tr("backward"), rotation=90, fontproperties=text_font(10), va="top")
    key_text = tr("i = the query row, j = the key\n\nframed: what the gradient of\nentry (i, j) passes "
                  "through;\ndot: the entry (i, j)\n\ntop: forward, left to right\nbottom: backward, "
                  "right to left\n\nbar (−) in a cell: a negative\nentry, in the maps without\nnumbers "
                  "({maps})", maps=", ".join(SIGN_BARS))
    key = fig.text(0.04, 0.78, key_text, fontproperties=text_font(8), va="top", color="0.2")
    x = [left + col * (width + gap) for col in range(5)]  # each column's left edge
    for col in (2, 3):  # S -> W -> O
        fig.patches.append(_arrow(fig, (x[col] + width + 0.005, 0.72), (x[col + 1] - 0.005, 0.72)))
    for col in (4, 3, 2):  # dO -> dW -> dS -> dQ
        fig.patches.append(_arrow(fig, (x[col] - 0.005, 0.24), (x[col - 1] + width + 0.005, 0.24)))
    fig.patches.append(_arrow(fig, (x[2] + width / 2, 0.035), (x[0] + width / 2, 0.035), rad=-0.12))  # dS -> dK

    def update(row: int, key: int, d_k: int, scaled: bool) -> tuple[CellGradient, str]:
        """New numbers into every map; the frames and the dot follow row i and key j."""
        c = cell_gradient(row, key, d_k, scaled)
        i, j = c.row, c.key
        cell = np.zeros((N, N), dtype=bool)
        cell[i, j] = True
        for name, (_pos, english, _cmap, _clim, _fmt, frames) in _PANELS.items():
            title = tr(english)
            full = getattr(c, name)  # (N, N), (N, D_V) or (N, d_k)
            values = full[:, :SHOWN_COLUMNS]  # dQ, dK: their first columns
            cols = values.shape[1]
            marks, boxes = None, []
            if frames.startswith("cell"):
                marks, boxes = cell, [(i, i + 1, 0, cols)]
                if frames.endswith("+key"):
                    boxes.append((0, N, j, j + 1))  # column j: to key j
            elif frames == "row":
                boxes = [(i, i + 1, 0, cols)]
            else:  # "key"
                boxes = [(j, j + 1, 0, cols)]
            shown = (title if cols == full.shape[1] else
                     tr("{title}, first {shown} of {total}", title=title, shown=cols, total=full.shape[1]))
            maps[name].set(values, x_tokens=[str(t) for t in range(cols)], y_tokens=labels, marks=marks,
                           boxes=boxes, title=shown)
        return c, _readout(c)

    def live() -> list:
        return [a for m in maps.values() for a in m.artists()]

    controls = {
        "row": widgets.IntSlider(value=first.row, min=0, max=N - 1, description=tr("query row")),
        "key": widgets.IntSlider(value=first.key, min=0, max=N - 1, description=tr("key")),
        "d_k": widgets.Dropdown(options=D_K_CHOICES, value=first.d_k, description="d_k"),
        "scaled": widgets.Checkbox(value=first.scaled, description=tr("divide by √d_k")),
    }
    explorer = Explorer(controls, fig, update, live,
                        title=tr("The softmax's backward pass: one entry's gradient, from dO to dQ and dK"),
                        maps=maps)
    explorer.key = key  # the figure's key (a matplotlib Text), which a test reads
    return explorer


def _arrow(fig: Figure, start: tuple[float, float], end: tuple[float, float], *, rad: float = 0.0) -> FancyArrowPatch:
    """A grey arrow from ``start`` to ``end`` (figure coordinates; static: part of the background)."""
    return FancyArrowPatch(start, end, transform=fig.transFigure, arrowstyle="-|>", mutation_scale=14,
                           color="0.4", lw=1.5, connectionstyle=f"arc3,rad={rad}")
