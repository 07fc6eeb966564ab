"""Generate one position at a time and watch the KV cache grow (notebook 10).

A seeded one-layer causal decoder (``attn.decoding.Decoder``, E = 16, 2 heads) runs over 12
positions. The step slider picks the position being generated. Left: the keys the cache holds
after the step (one row per position; rows not generated yet are grey), the rows this step
computes framed. Right: head 1's attention weights, rows of earlier steps shown, the row(s) this
step computes framed, later rows grey. With the cache a step computes one new row; without it,
every row up to the new one again.

What moving it shows: with the cache, each step adds one key row and one weight row and the
work grows with the number of cached keys; without it, the framed block (all the work of the
step) grows like a triangle.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_choice, check_int
from ..decoding import Decoder, step_cost
from ..plotting import new_figure
from ._base import Explorer
from ._mapview import MapView

__all__ = ["POSITIONS", "MODES", "DecodeView", "decode_view", "decoding_explorer"]

POSITIONS = 12
MODES = ("with cache", "without cache")
_E, _H, _N = 16, 2, 1


@lru_cache(maxsize=1)
def _run() -> tuple[np.ndarray, np.ndarray]:
    """Keys (T, E) of the cache after the last step, and head 1's weights (T, T), computed step
    by step with the cache (the full pass gives the same numbers: tests/test_decoding.py)."""
    torch.manual_seed(4)
    decoder = Decoder(_E, _H, _N).double().eval()
    x = torch.randn(1, POSITIONS, _E, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    caches = decoder.new_caches()
    rows = []
    with torch.no_grad():
        for t in range(POSITIONS):
            _, weights = decoder(x[:, t:t + 1], caches)
            row = np.zeros(POSITIONS)
            row[: t + 1] = weights[0][0, 0, 0].numpy()  # head 1's one new row, over keys 0..t
            rows.append(row)
    keys = caches[0].key[0].transpose(0, 1).reshape(POSITIONS, _E).numpy()  # (B, H, T, D) -> (T, E)
    return keys, np.array(rows)


@dataclass(frozen=True)
class DecodeView:
    """The numbers behind the picture at one step.

    Attributes:
        step: the position generated (0-based); mode: with or without the cache.
        keys: (T, E) the cached keys; weights: (T, T) head 1's weights;
        computed_rows: how many rows this step computes (1 with the cache, step + 1 without);
        cache_numbers: numbers in the cache after the step (keys and values, every layer);
        macs: multiply-adds of this step; macs_other: of the other mode.
    """

    step: int
    mode: str
    keys: np.ndarray
    weights: np.ndarray
    computed_rows: int
    cache_numbers: int
    macs: int
    macs_other: int


def decode_view(step: int = 5, mode: str = "with cache") -> DecodeView:
    step = check_int("step", step, low=0, high=POSITIONS - 1)
    check_choice("mode", mode, MODES)
    keys, weights = _run()
    cost = step_cost(step, _E, _N)
    cached = mode == "with cache"
    return DecodeView(step, mode, keys, weights, 1 if cached else step + 1,
                      2 * _N * (step + 1) * _E if cached else 0,
                      cost.with_cache if cached else cost.without_cache,
                      cost.without_cache if cached else cost.with_cache)


def _readout(v: DecodeView) -> str:
    other = "without" if v.mode == "with cache" else "with"
    memory = (f"The cache now holds {v.cache_numbers} numbers (2 x layers x positions x E)."
              if v.mode == "with cache" else "Nothing is kept between steps.")
    return (f"<p><b>Step {v.step}</b> ({v.mode}): computes {v.computed_rows} row(s) of queries, keys "
            f"and values; {v.macs:,} multiply-adds ({other} the cache: {v.macs_other:,}). {memory}</p>")


def decoding_explorer(step: int = 5, mode: str = "with cache") -> Explorer:
    """A step slider and a cache switch; the cache's keys and the attention weights.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` ("keys", "weights").
    """
    first = decode_view(step, mode)
    fig = new_figure(10, 4.2, dpi=72)
    keys = MapView(fig.add_axes((0.06, 0.1, 0.36, 0.78)), cmap="PuOr", clim=(-2.0, 2.0), x_labels=False,
                   box_color="tab:green")
    weights = MapView(fig.add_axes((0.54, 0.1, 0.36, 0.78)), cmap="Blues", box_color="tab:orange")
    weights.colorbar(fig.add_axes((0.92, 0.1, 0.012, 0.78)), label="weight")
    positions = [str(t) for t in range(POSITIONS)]

    def update(step: int, mode: str) -> tuple[DecodeView, str]:
        v = decode_view(step, mode)
        first_row = v.step + 1 - v.computed_rows  # the rows this step computes: first_row..step
        later = np.zeros((POSITIONS, 1), dtype=bool)
        later[v.step + 1:] = True
        keys.set(v.keys, y_tokens=positions, blocked=np.broadcast_to(later, v.keys.shape),
                 boxes=[(first_row, v.step + 1, 0, _E)],
                 title=f"keys in the cache after step {v.step}" if v.mode == "with cache"
                 else f"keys recomputed at step {v.step}")
        future = np.triu(np.ones((POSITIONS, POSITIONS), dtype=bool), 1) | later  # not seen, or not yet
        weights.set(v.weights, x_tokens=positions, y_tokens=positions, blocked=future,
                    boxes=[(first_row, v.step + 1, 0, v.step + 1)],
                    title=f"attention weights (head 1): {v.computed_rows} row(s) computed now")
        return v, _readout(v)

    def live() -> list:
        return [*keys.artists(), *weights.artists()]

    controls = {
        "step": widgets.IntSlider(value=first.step, min=0, max=POSITIONS - 1, description="step",
                                  continuous_update=True),
        "mode": widgets.ToggleButtons(options=MODES, value=first.mode, description="cache"),
    }
    explorer = Explorer(controls, fig, update, live, title="Generating one position at a time")
    explorer.maps = {"keys": keys, "weights": weights}
    return explorer
