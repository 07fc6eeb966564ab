"""Generate one position at a time and watch the KV cache grow (notebook 10).

A seeded one-layer causal decoder (``attn.decoding.Decoder``, E = 16, 2 heads) runs over 12
positions. The step slider picks the position being generated. Left: the keys the cache holds
after the step (one row per position; rows not generated yet are grey), the rows this step
computes framed. Right: head 1's attention weights, rows of earlier steps shown, the row(s) this
step computes framed, later rows grey. With the cache a step computes one new row; without it,
every row up to the new one again.

A third panel counts the work: the multiply-adds of every step so far (``attn.decoding.step_cost``),
with the cache and without, drawn up to the chosen step. Counts, not timings: the same picture
on every machine.

What moving the step shows, one step at a time: the cache fills by one key row (and one value
row) per step; the cost of a step with the cache stays almost flat (its projections and
feed-forward are for one position; only the 2 (T + 1) E of the scores and the weighted sum
grow); without the cache each step recomputes the whole prefix and its cost climbs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_choice, check_int
from ..decoding import Decoder, step_cost
from ..language import mark, tr
from ..drawing.plotting import new_figure, text_font
from ._base import Explorer, options
from ._mapview import MapView

__all__ = ["POSITIONS", "MODES", "DecodeView", "decode_view", "decoding_explorer"]

POSITIONS = 12
MODES = (mark("with cache"), mark("without cache"))
_E, _H, _N = 16, 2, 1
_COST_COLORS = {"with cache": "tab:green", "without cache": "tab:red"}


@lru_cache(maxsize=1, typed=True)
def _run() -> tuple[np.ndarray, np.ndarray]:
    """Keys (T, E) of the cache after the last step, and head 1's weights (T, T), computed step
    by step with the cache (the full pass gives the same numbers: tests/attn/test_decoding.py)."""
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
        with_cache, without_cache: (step + 1,) multiply-adds of steps 0..step, each mode
            (``step_cost``); total_with, total_without: their sums.
    """

    step: int
    mode: str
    keys: np.ndarray
    weights: np.ndarray
    computed_rows: int
    cache_numbers: int
    macs: int
    macs_other: int
    with_cache: tuple[int, ...]
    without_cache: tuple[int, ...]
    total_with: int
    total_without: int


def decode_view(step: int = 5, mode: str = "with cache") -> DecodeView:
    """What the explorer shows after generating position ``step``.

    Args:
        step: the position generated, 0..POSITIONS - 1.
        mode: one of ``MODES``.

    Returns:
        A ``DecodeView``.
    """
    step = check_int("step", step, low=0, high=POSITIONS - 1)
    check_choice("mode", mode, MODES)
    keys, weights = _run()
    costs = [step_cost(t, _E, _N) for t in range(step + 1)]  # steps 0..step
    cost = costs[-1]
    cached = mode == "with cache"
    with_cache = tuple(c.with_cache for c in costs)
    without_cache = tuple(c.without_cache for c in costs)
    return DecodeView(step, mode, keys, weights, 1 if cached else step + 1,
                      2 * _N * (step + 1) * _E if cached else 0,
                      cost.with_cache if cached else cost.without_cache,
                      cost.without_cache if cached else cost.with_cache,
                      with_cache, without_cache, sum(with_cache), sum(without_cache))


def _readout(v: DecodeView) -> str:
    if v.mode == "with cache":
        other = tr("without the cache: {macs:,}", macs=v.macs_other)
        memory = tr("The cache now holds {numbers} numbers (2 x layers x positions x E).",
                    numbers=v.cache_numbers)
    else:
        other = tr("with the cache: {macs:,}", macs=v.macs_other)
        memory = tr("Nothing is kept between steps.")
    return ("<p>" + tr("<b>Step {step}</b> ({mode}): computes {rows} row(s) of queries, keys and "
                       "values; {macs:,} multiply-adds ({other}). {memory}", step=v.step,
                       mode=tr(v.mode), rows=v.computed_rows, macs=v.macs, other=other,
                       memory=memory) + "</p>"
            "<p>" + tr("Multiply-adds per step, step 0 to {step}: with the cache {with_first:,} to "
                       "{with_last:,} (almost flat), without it {without_first:,} to "
                       "{without_last:,} (climbing). All {steps} steps: {total_with:,} with the "
                       "cache, {total_without:,} without.", step=v.step,
                       with_first=v.with_cache[0], with_last=v.with_cache[-1],
                       without_first=v.without_cache[0], without_last=v.without_cache[-1],
                       steps=v.step + 1, total_with=v.total_with,
                       total_without=v.total_without) + "</p>")


def decoding_explorer(step: int = 5, mode: str = "with cache") -> Explorer:
    """A step slider and a cache switch; the cache's keys, the attention weights and the work
    of every step so far.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` ("keys", "weights"); ``.cost_lines``
        is mode -> the cost panel's ``Line2D`` (multiply-adds of steps 0..step), ``.cost_axes``
        its axes.
    """
    first = decode_view(step, mode)
    fig = new_figure(13, 4.2, dpi=72)
    keys = MapView(fig.add_axes((0.05, 0.1, 0.26, 0.78)), cmap="PuOr", clim=(-2.0, 2.0), x_labels=False,
                   box_color="tab:green", title_font=text_font(9))
    weights = MapView(fig.add_axes((0.35, 0.1, 0.26, 0.78)), cmap="Blues", box_color="tab:orange",
                      title_font=text_font(9))
    weights.colorbar(fig.add_axes((0.625, 0.1, 0.01, 0.78))).set_label(tr("weight"),
                                                                       fontproperties=text_font(10))
    positions = [str(t) for t in range(POSITIONS)]
    # The cost panel: static axes and two live lines, one point per step from 0 to the chosen one.
    ax_cost = fig.add_axes((0.75, 0.16, 0.235, 0.68))
    every = decode_view(POSITIONS - 1)
    ax_cost.set_xlim(-0.5, POSITIONS - 0.5)
    ax_cost.set_ylim(0, every.without_cache[-1] * 1.08)
    ax_cost.set_xticks(range(0, POSITIONS, 2))
    ax_cost.set_xlabel(tr("step"), fontproperties=text_font(9))
    ax_cost.set_ylabel(tr("multiply-adds of the step"), fontproperties=text_font(9))
    ax_cost.set_title(tr("work per step"), fontproperties=text_font(10))
    ax_cost.tick_params(labelsize=8)
    lines = {
        "with cache": ax_cost.plot([], [], "o-", color=_COST_COLORS["with cache"], ms=3,
                                   label=tr("with the cache"))[0],
        "without cache": ax_cost.plot([], [], "s--", color=_COST_COLORS["without cache"], ms=3,
                                      label=tr("without: the whole prefix again"))[0],
    }
    ax_cost.legend(prop=text_font(8), loc="upper left")

    def update(step: int, mode: str) -> tuple[DecodeView, str]:
        v = decode_view(step, mode)
        first_row = v.step + 1 - v.computed_rows  # the rows this step computes: first_row..step
        later = np.zeros((POSITIONS, 1), dtype=bool)
        later[v.step + 1:] = True
        keys.set(v.keys, y_tokens=positions, blocked=np.broadcast_to(later, v.keys.shape),
                 boxes=[(first_row, v.step + 1, 0, _E)],
                 title=tr("keys in the cache after step {step}", step=v.step) if v.mode == "with cache"
                 else tr("keys recomputed at step {step}", step=v.step))
        future = np.triu(np.ones((POSITIONS, POSITIONS), dtype=bool), 1) | later  # not seen, or not yet
        weights.set(v.weights, x_tokens=positions, y_tokens=positions, blocked=future,
                    boxes=[(first_row, v.step + 1, 0, v.step + 1)],
                    title=tr("attention weights (head 1): {rows} row(s) computed now", rows=v.computed_rows))
        steps = list(range(v.step + 1))
        for name, line in lines.items():
            line.set_data(steps, v.with_cache if name == "with cache" else v.without_cache)
            line.set_linewidth(2.5 if name == v.mode else 1.0)  # the mode the maps show
        return v, _readout(v)

    def live() -> list:
        return [*keys.artists(), *weights.artists(), *lines.values()]

    controls = {
        "step": widgets.IntSlider(value=first.step, min=0, max=POSITIONS - 1, description=tr("decoding step"),
                                  continuous_update=True),
        "mode": widgets.ToggleButtons(options=options(MODES), value=first.mode, description=tr("cache")),
    }
    explorer = Explorer(controls, fig, update, live, title=tr("Generating one position at a time"),
                        maps={"keys": keys, "weights": weights})
    explorer.cost_lines, explorer.cost_axes = lines, ax_cost
    return explorer
