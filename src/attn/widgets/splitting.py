"""Notebook 04's explorer of splitting d_model into heads (``splitting_explorer``; notebook 06's
heads are drawn by ``attn.widgets.patterns``): why several heads. One head against two when
each word needs two sources.

The input is the chapter's sentence (``attn.examples.SENTENCE``, 6 tokens) with seeded random
embeddings X, fed to one ``attn.MultiHeadAttention`` per d_model. Two choices of its W^Q, W^K:

* "two sources": they are set so that X W^Q and X W^K are the hand-built queries and keys of
  two patterns side by side (``attn.lessons.handbuilt.heads``): the first half of the columns aims
  each word at the word before it, the second half aims every word at 小明 (the subject).
  Each word needs both. Cut into 2 heads, each head takes one source and puts most of its
  weight there. Kept as 1 head, the two halves' scores add up in one softmax: the word's
  weight is split between the two sources, and its output is their average.
  The task is section 3's: word i (from the second word on) must output the first half of
  the word before it and the second half of 小明. W^V and W^O are the identity, so each head
  passes its own columns of the words through and the output is the concatenation; the
  readout and the bar panel give the share of the target's variance left in the error
  (``error_left``, the measure of notebook 04's experiment): about 0.4 with 1 head, 0.0 with 2.
* "random": seeded random weights (an untrained layer): maps without structure, and an
  output far from the task's target (more error than the target has variance).

For a given d_model and input the projections do not depend on the number of heads: changing
it cuts the *same* Q, K, V into a different number of column blocks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_positive_int
from ..lessons.cost.counts import multi_head_cost, trace_multi_head, valid_num_heads
from ..examples import SENTENCE, glossed
from ..lessons.handbuilt.heads import diagonal_qk, vertical_qk
from ..language import mark, tr
from ..modules import MultiHeadAttention
from ..drawing.plotting import new_figure, text_font, token_font
from ..lessons.two_sources import error_left, two_source_target
from ._base import Explorer, listing
from ._bitmaps import AxesTitle
from ._mapview import MapView

__all__ = ["D_MODELS", "MAX_HEADS", "INPUTS", "HEAD_SLOTS", "HeadsState",
           "heads_state", "splitting_explorer"]

#: d_model choices of the explorer (the chapter's 512 included); each is at least the 6 tokens,
#: so X W^Q can be any (6, d_model) matrix.
D_MODELS: tuple[int, ...] = (6, 8, 12, 16, 24, 32, 64, 128, 512)
#: The grid holds 2 x 4 maps, like the chapter's figure.
MAX_HEADS: int = 8
#: The choices of W^Q and W^K (see the module docstring).
INPUTS: tuple[str, ...] = ("two sources", "random")
_INPUT_LABELS = {"two sources": mark("two sources (W^Q, W^K set by hand)"),
                 "random": mark("random (untrained)")}
#: The scaled score of a word and its source when each pattern has a head of its own.
SOURCE_SCORE: float = 4.0
_SUBJECT = 0  # 小明, the second source of every word
#: Every head count the heads drop-down can offer, over all of ``D_MODELS`` (the bar panel's slots).
HEAD_SLOTS: tuple[int, ...] = tuple(sorted({h for d in D_MODELS for h in valid_num_heads(d, max_heads=MAX_HEADS)}))
_BAR, _BAR_CHOSEN = "#c6dbef", "#08519c"  # light and dark blue (Blues), told apart by lightness

#: The steps of ``attn.lessons.cost.counts.trace_multi_head`` (their names, marked here for the
#: catalogue) -> the chapter's notation of each.
_NOTATION = {
    mark("X"): mark("X (n, d_model)"),
    mark("Q = X W^Q"): mark("Q = [Q_1 … Q_h] (n, h·d_k)"),
    mark("K = X W^K"): mark("K (n, h·d_k)"),
    mark("V = X W^V"): mark("V (n, h·d_v)"),
    mark("Q split into heads"): mark("Q_i (n, d_k) for each i"),
    mark("K split into heads"): mark("K_i (n, d_k)"),
    mark("V split into heads"): mark("V_i (n, d_v)"),
    mark("weights per head"): mark("softmax(Q_i K_iᵀ/√d_k) (n, n)"),
    mark("head outputs"): mark("head_i (n, d_v)"),
    mark("concat(heads)"): mark("Concat(head_1..head_h) (n, h·d_v)"),
    mark("concat W^O"): mark("MultiHead (n, d_model)"),
}


@dataclass(frozen=True)
class HeadsState:
    """What the explorer shows for one (d_model, num_heads, inputs).

    Attributes:
        d_model, num_heads, head_dim: E, H and D = E // H; inputs: one of ``INPUTS``.
        tokens: the n token labels.
        shapes: [(step, shape)] of every intermediate tensor, batch dim included (B = 1).
        weights: (H, n, n) attention maps, one per head.
        sources: (n, n) bool, the two cells each word needs ("two sources"; else None).
        source_weights: (H, 2) mean weight of each head on the previous word and on 小明,
            over the words whose two sources differ (3rd to last); None for "random".
        params, macs, softmax_entries: the layer's counts (``attn.lessons.cost.counts.multi_head_cost``).
        error: the share of the target's variance left in the output's error
            (``error_left`` against ``two_source_target``, every word after 小明), with these heads.
        errors: ((h, error), ...) for every head count the drop-down offers at this d_model
            and input (the bar panel).
    """

    d_model: int
    num_heads: int
    head_dim: int
    inputs: str
    tokens: tuple[str, ...]
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    weights: np.ndarray
    sources: np.ndarray | None
    source_weights: np.ndarray | None
    params: int
    macs: int
    softmax_entries: int
    error: float
    errors: tuple[tuple[int, float], ...]


def _two_source_qk(n: int, d_model: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Hand-built Q, K (n, E): columns 0..E/2-1 aim at the previous word, the rest at 小明.

    The strength makes a word's score for its source SOURCE_SCORE after scaling by
    sqrt(E / 2), the size of one half (``attn.lessons.handbuilt.heads``' size convention)."""
    half = d_model // 2
    strength = SOURCE_SCORE / half**0.5
    q_prev, k_prev = diagonal_qk(n, half, strength=strength, offset=-1)  # (n, E/2) each
    q_subj, k_subj = vertical_qk(n, half, strength=strength, key=_SUBJECT)
    return torch.cat([q_prev, q_subj], -1), torch.cat([k_prev, k_subj], -1)  # (n, E/2) x 2 -> (n, E)


@lru_cache(maxsize=32, typed=True)
def _inputs(d_model: int, inputs: str, seed: int) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """Seeded embeddings (1, n, E) and the four (E, E) projection weights (nn.Linear layout).

    Random weights are N(0, 1/E), so each entry of Q and K has variance about 1. For "two
    sources", W^Q and W^K solve X W = the hand-built Q, K exactly (pinv: X has n <= E
    independent rows), and W^V = W^O = I (the output is the concatenated heads, comparable
    with ``two_source_target(X)``). A private generator: the global random state is untouched.
    """
    g = torch.Generator().manual_seed(seed)
    n = len(SENTENCE)
    x = torch.randn(1, n, d_model, generator=g, dtype=torch.float64)  # (1, n, E)
    ws = [torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / d_model**0.5
          for _ in range(4)]  # W_q, W_k, W_v, W_o as nn.Linear weights (out, in)
    if inputs == "two sources":
        q, k = _two_source_qk(n, d_model)  # (n, E) each
        x_pinv = torch.linalg.pinv(x[0])  # (n, E) -> (E, n)
        ws[0], ws[1] = (x_pinv @ q).T, (x_pinv @ k).T  # x @ W.T = q: (E, E) as (out, in)
        eye = torch.eye(d_model, dtype=torch.float64)
        ws[2], ws[3] = eye, eye.clone()  # V = X; MultiHead = Concat(heads)
    return x, tuple(ws)


def _module(d_model: int, num_heads: int, inputs: str, seed: int) -> MultiHeadAttention:
    _, ws = _inputs(d_model, inputs, seed)
    with torch.random.fork_rng(devices=[]):  # nn.Linear's own init draws from the global RNG
        mha = MultiHeadAttention(d_model, num_heads).to(torch.float64)
    with torch.no_grad():
        for lin, w in zip((mha.W_q, mha.W_k, mha.W_v, mha.W_o), ws):
            lin.weight.copy_(w)
    return mha


def heads_state(d_model: int, num_heads: int, *, inputs: str = "two sources",
                seed: int = 0) -> HeadsState:
    """Run a seeded multi-head layer on the chapter's sentence and record shapes and maps.

    Args:
        d_model: E, one of ``D_MODELS``.
        num_heads: H, a divisor of E.
        inputs: "two sources" (hand-set W^Q, W^K) or "random" (``INPUTS``).
        seed: seeds the embeddings and the random projections (same seed, same numbers).

    Returns:
        A ``HeadsState``; ``weights`` has shape (H, n, n) with n = len(SENTENCE).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model not in D_MODELS:
        raise ValueError(f"d_model: expected one of {D_MODELS}, got {d_model}")
    if d_model % num_heads:
        raise ValueError(f"num_heads: expected a divisor of d_model={d_model} "
                         f"(one of {valid_num_heads(d_model)}), got {num_heads}")
    if inputs not in INPUTS:
        raise ValueError(f"inputs: expected one of {INPUTS}, got {inputs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    return _cached_state(d_model, num_heads, inputs, seed)


def _sources(n: int) -> np.ndarray:
    """(n, n) bool: each word's previous word and 小明 (row 0: 小明 itself)."""
    cells = np.zeros((n, n), dtype=bool)
    cells[np.arange(1, n), np.arange(n - 1)] = True  # the previous word
    cells[:, _SUBJECT] = True
    cells.setflags(write=False)
    return cells


@lru_cache(maxsize=256, typed=True)
def _error(d_model: int, num_heads: int, inputs: str, seed: int) -> float:
    """``error_left`` of the layer's output on words 1..n-1 against ``two_source_target``."""
    x, _ = _inputs(d_model, inputs, seed)
    mha = _module(d_model, num_heads, inputs, seed)
    with torch.no_grad():
        out, _ = mha(x)  # (1, n, E)
    return error_left(out[:, 1:], two_source_target(x))


@lru_cache(maxsize=64, typed=True)
def _cached_state(d_model: int, num_heads: int, inputs: str, seed: int) -> HeadsState:
    x, _ = _inputs(d_model, inputs, seed)
    mha = _module(d_model, num_heads, inputs, seed)
    with torch.no_grad():
        steps = trace_multi_head(mha, x)
    shapes = tuple((name, tuple(t.shape)) for name, t in steps)
    weights = dict(steps)["weights per head"][0].numpy().copy()  # (1, H, n, n) -> (H, n, n)
    weights.setflags(write=False)  # cached and shared: read-only
    n = len(SENTENCE)
    sources = source_weights = None
    if inputs == "two sources":
        sources = _sources(n)
        rows = np.arange(2, n)  # words whose previous word is not 小明
        source_weights = np.stack([weights[:, rows, rows - 1].mean(-1),
                                   weights[:, rows, _SUBJECT].mean(-1)], -1)  # (H, 2)
        source_weights.setflags(write=False)
    cost = multi_head_cost(n, d_model, num_heads)
    return HeadsState(d_model=d_model, num_heads=num_heads, head_dim=d_model // num_heads,
                      inputs=inputs, tokens=SENTENCE, shapes=shapes, weights=weights,
                      sources=sources, source_weights=source_weights, params=cost.params,
                      macs=cost.macs, softmax_entries=cost.softmax_entries,
                      error=_error(d_model, num_heads, inputs, seed),
                      errors=tuple((h, _error(d_model, h, inputs, seed))
                                   for h in valid_num_heads(d_model, max_heads=MAX_HEADS)))


def _heads(h: int) -> str:
    """How many heads, in words: "1 head", "2 heads"."""
    return tr("1 head") if h == 1 else tr("{heads} heads", heads=h)


def _readout(s: HeadsState) -> str:
    n = len(s.tokens)
    heads = _heads(s.num_heads)
    out = ["<p>" + tr("d_model = {d_model}, {heads} of d_k = d_v = {d_model} / {h} = {d_k}; n = {n} "
                      "tokens, batch B = 1.", d_model=s.d_model, heads=heads, h=s.num_heads,
                      d_k=s.head_dim, n=n) + "</p>"]
    if s.source_weights is not None:
        rows = "".join(f"<tr><td>{tr('head {h}', h=h + 1)}</td><td>{a:.2f}</td><td>{b:.2f}</td></tr>"
                       for h, (a, b) in enumerate(s.source_weights))
        out.append(
            "<p>" + tr("Each word needs two sources (dots): the word before it and {subject}. Mean "
                       "weight on each, over {first} … {last}:", subject=glossed(s.tokens[_SUBJECT]),
                       first=s.tokens[2], last=s.tokens[-1])
            + f"</p><table><tr><th></th><th>{tr('previous word')}</th>"
            f"<th>{s.tokens[_SUBJECT]}</th></tr>{rows}</table>")
    others = listing(tr("{heads}: {error:.2f}", heads=_heads(h), error=e)
                     for h, e in s.errors if h != s.num_heads)
    task = (tr("hand-set heads, W^V = W^O = identity") if s.inputs == "two sources"
            else tr("random weights, never trained for it"))
    out.append(
        "<p>" + tr("The task of section 3 (each word from {second} on: the first half of the word "
                   "before it, the second half of {subject}), {task}: error left <b>{error:.2f}</b> "
                   "of the target's variance with {heads} (the bars; {others}).",
                   second=s.tokens[1], subject=s.tokens[_SUBJECT], task=task, error=s.error,
                   heads=heads, others=others) + "</p>")
    steps = "".join(f"<tr><td>{tr(name)}</td><td>{tr(_NOTATION[name])}</td><td><code>{shape}</code></td></tr>"
                    for name, shape in s.shapes)
    notation = tr("the chapter's notation")
    out.append(
        f"<table><tr><th>{tr('step')}</th><th>{notation}</th><th>{tr('shape (B, …)')}</th></tr>"
        f"{steps}</table>"
        "<p>" + tr("parameters 4·d_model² = {params:,} (the same for every h); multiply-adds "
                   "{macs:,} (the same for every h); softmax entries h·n² = {entries:,}.",
                   params=s.params, macs=s.macs, entries=s.softmax_entries) + "</p>")
    return "".join(out)


def splitting_explorer(d_model: int = 16, num_heads: int = 2, *, inputs: str = "two sources",
                       seed: int = 0) -> Explorer:
    """Drop-downs for the input (``INPUTS``), d_model and the number of heads (divisors of
    d_model, at most 8): one map per head with a colour bar, dots on the two sources.

    Changing d_model refreshes the heads drop-down to that d_model's divisors, keeping the
    current count when it still divides, else the largest valid count below it.

    Beside the maps, the error left on section 3's task (``HeadsState.error``): one bar per
    head count this d_model allows, the chosen one dark, its value written above the panel.

    Returns:
        An ``Explorer``; ``.maps`` are the 8 ``MapView``s (the first ``num_heads`` drawn);
        ``.error_bars`` the bars (one per ``HEAD_SLOTS``, a triangle above the chosen one),
        ``.error_axes`` their axes.
    """
    heads_state(d_model, num_heads, inputs=inputs, seed=seed)  # validates every argument
    valid = valid_num_heads(d_model, max_heads=MAX_HEADS)
    if num_heads not in valid:
        raise ValueError(f"num_heads: expected one of {valid} for d_model={d_model}, got {num_heads!r}")
    in_box = widgets.Dropdown(options=[(tr(_INPUT_LABELS[i]), i) for i in INPUTS],
                              value=inputs, description=tr("input"), layout=widgets.Layout(width="320px"))
    d_box = widgets.Dropdown(options=D_MODELS, value=d_model, description="d_model",
                             layout=widgets.Layout(width="180px"))
    h_box = widgets.Dropdown(options=valid, value=num_heads, description=tr("heads"),
                             layout=widgets.Layout(width="160px"))
    holder: dict[str, Explorer] = {}

    def retarget(change: dict) -> None:
        """New d_model: new head options. Runs before the explorer redraws (observed first);
        the explorer's own observer on ``h_box`` is paused so the move redraws once."""
        options = valid_num_heads(change["new"], max_heads=MAX_HEADS)
        keep = max(h for h in options if h <= h_box.value)
        explorer = holder.get("explorer")
        if explorer is not None:
            h_box.unobserve(explorer.redraw, names="value")
        try:
            h_box.options = options  # resets the value to the first option
            h_box.value = keep
        finally:
            if explorer is not None:
                h_box.observe(explorer.redraw, names="value")

    d_box.observe(retarget, names="value")

    fig = new_figure(13, 5, dpi=72)
    fig.suptitle(tr("Attention weights per head (rows: queries, columns: keys), and the error left"),
                 fontproperties=text_font(11))
    # Fixed margins: room for the stood-up Chinese labels under each map and the colour bar.
    fig.subplots_adjust(left=0.055, right=0.7, bottom=0.13, top=0.88, wspace=0.45, hspace=0.6)
    maps = [MapView(ax, font=token_font(8), rotate=True, title_size=10, title_font=text_font(10))
            for ax in fig.subplots(2, 4).ravel()]
    # The error panel: one bar per head count (HEAD_SLOTS), the chosen one dark; static axes.
    ax_err = fig.add_axes((0.83, 0.2, 0.155, 0.6))
    slots = range(len(HEAD_SLOTS))
    bars = list(ax_err.bar(slots, [0.0] * len(HEAD_SLOTS), width=0.7, color=_BAR))
    ax_err.set_xticks(list(slots), [str(h) for h in HEAD_SLOTS], fontsize=8)
    ax_err.set_xlabel(tr("heads"), fontproperties=text_font(9))
    ax_err.set_ylabel(tr("share of the target's variance"), fontproperties=text_font(8))
    ax_err.set_ylim(0, 1.5)  # a random layer's bars run off the top: far more than the variance
    ax_err.axhline(1.0, color="0.5", lw=0.8, ls=":")  # no better than the target's mean
    ax_err.tick_params(labelsize=8)
    (pointer,) = ax_err.plot([0], [0.1], "v", color=_BAR_CHOSEN, ms=8)  # above the chosen bar
    err_title = AxesTitle(ax_err, size=10, font=text_font(10))
    maps[0].colorbar(fig.add_axes((0.72, 0.13, 0.012, 0.75))).set_label(tr("weight"),
                                                                        fontproperties=text_font(10))
    shown = {"heads": num_heads}

    def update(inputs: str, d_model: int, num_heads: int) -> tuple[HeadsState, str]:
        s = heads_state(d_model, num_heads, inputs=inputs, seed=seed)
        for h in range(s.num_heads):
            maps[h].set(s.weights[h], x_tokens=s.tokens, marks=s.sources,
                        title=tr("head {h} (d_k = {d_k})", h=h + 1, d_k=s.head_dim))
        shown["heads"] = s.num_heads
        errors = dict(s.errors)
        for h, bar in zip(HEAD_SLOTS, bars):
            bar.set_height(min(errors.get(h, 0.0), 1.5))  # no bar: not a divisor of d_model
            bar.set_color(_BAR_CHOSEN if h == s.num_heads else _BAR)
        pointer.set_data([HEAD_SLOTS.index(s.num_heads)], [min(s.error, 1.5) + 0.08])
        err_title.set_text(tr("error left: {error:.2f} with {heads}", error=s.error, heads=_heads(s.num_heads)))
        return s, _readout(s)

    def live() -> list:
        return [a for m in maps[:shown["heads"]] for a in m.artists()] + bars + [pointer, err_title]

    explorer = Explorer({"inputs": in_box, "d_model": d_box, "num_heads": h_box}, fig, update, live,
                        title=tr("Multi-head attention: one head or several, shapes and maps"), maps=maps)
    explorer.error_bars, explorer.error_axes = bars, ax_err
    holder["explorer"] = explorer
    return explorer
