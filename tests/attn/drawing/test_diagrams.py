"""attn.drawing.diagrams: the four schematic figures (notebooks 04, 10 and 12).

Each figure is checked against numbers computed here, independently of the module: the split
and merge against X W^Q cut by hand into heads and each head's attention; the encoder-decoder's
grids against the causal and padding masks; the KV-cache step against a full causal pass over
every position; the residual stream's boxes against the formulas of post-LN and pre-LN. Then
for all four, in English and in Chinese: no two texts overlap, none
leaves the figure or covers a heatmap's cells, every number is inside its own cell in 4.5:1
contrast, and in Chinese every word is in the CJK font with no glyph missing.
"""
from __future__ import annotations

import re
import warnings

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib.text import Text

from attn import MultiHeadAttention, padding_mask, scaled_dot_product_attention
from attn.drawing.diagrams import (ALLOWED, BLOCKED, CMAP, Step, block_steps, encoder_decoder_diagram,
                                   encoder_decoder_flow, kv_cache_diagram, number, residual_stream_diagram,
                                   split_merge_diagram)
from attn.examples import SENTENCE
from attn.drawing.figures import check_alt
from attn.language import language, missing_messages
from attn.drawing.plotting import _font_path, contrast_ratio, new_figure, relative_luminance

CJK = re.compile(r"[\u4e00-\u9fff]")
#: code and names a Chinese figure keeps (docs/translating.md: code is not translated)
CODE_WORDS = {"view", "transpose", "reshape", "softmax", "d_model", "Concat", "memory", "norm"}


# --- the examples, seeded ---------------------------------------------------------------------


def split_example(E: int = 8, H: int = 2, L: int = 6) -> tuple[MultiHeadAttention, torch.Tensor]:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        mha = MultiHeadAttention(E, H)
    x = torch.randn(1, L, E, generator=torch.Generator().manual_seed(0))
    return mha, x


def kv_example(E: int = 8, H: int = 2, T: int = 4, H_kv: int | None = None
               ) -> tuple[MultiHeadAttention, torch.Tensor, torch.Tensor]:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        mha = MultiHeadAttention(E, H, num_kv_heads=H_kv)
    g = torch.Generator().manual_seed(0)
    return mha, torch.randn(1, T, E, generator=g), torch.randn(1, 1, E, generator=g)


def draw_split(**kw):
    mha, x = split_example()
    return split_merge_diagram(mha, x, tokens=SENTENCE, token=2, **kw)


def draw_kv(**kw):
    return kv_cache_diagram(*kv_example(), **kw)


DRAW = {"split_merge": draw_split, "encoder_decoder": encoder_decoder_diagram, "kv_cache": draw_kv,
        "residual_stream": residual_stream_diagram}


def strings(texts: list[Text]) -> list[str]:
    return [t.get_text() for t in texts]


# --- 04: the split and the merge ------------------------------------------------------------


def test_number_is_two_decimals_with_the_minus_sign_and_no_negative_zero():
    assert number(-1.5) == "\u22121.50" and number(0.125) == "0.12" and number(-0.004) == "0.00"


@pytest.mark.parametrize("E, H, L, token", [(8, 2, 6, 2), (8, 4, 5, 4), (6, 3, 4, 0), (4, 2, 8, 7)])
def test_split_merge_writes_the_token_numbers_computed_by_hand(E, H, L, token):
    mha, x = split_example(E, H, L)
    d = split_merge_diagram(mha, x, token=token)
    D = E // H
    with torch.no_grad():
        q, k, v = (x[0] @ W.weight.T for W in (mha.W_q, mha.W_k, mha.W_v))  # (L, E), no bias
        outputs = [scaled_dot_product_attention(q[:, h * D:(h + 1) * D], k[:, h * D:(h + 1) * D],
                                                v[:, h * D:(h + 1) * D])[0] for h in range(H)]  # H x (L, D)
    query_row = q[token]  # (E,): head h's numbers are columns h*D .. (h+1)*D - 1
    output_row = torch.cat([o[token] for o in outputs])  # (E,): head 1's output first
    expected = [query_row] * 3 + [output_row] * 3
    assert [p.shape for p in d.panels] == [(1, L, E), (1, L, H, D), (1, H, L, D), (1, H, L, D),
                                           (1, L, H, D), (1, L, E)]
    for panel, row in zip(d.panels, expected):
        assert strings(panel.token_texts()) == [number(v) for v in row.tolist()], panel.step
        np.testing.assert_allclose(panel.token_values.ravel(), row.numpy(), atol=1e-6)


def cell_centre(grid, r, c):
    return grid.col_x(c), grid.row_y(r)


@pytest.mark.parametrize("E, H, L, token", [(8, 2, 6, 2), (8, 4, 5, 4)])
def test_split_merge_draws_each_number_in_the_cell_of_its_layout(E, H, L, token):
    """(B, L, E): one block, the token's E numbers along its row; (B, L, H, D): H blocks side by
    side, one row each; (B, H, L, D): H blocks stacked, head h's D numbers in block h's row."""
    mha, x = split_example(E, H, L)
    d = split_merge_diagram(mha, x, token=token)
    D = E // H
    for i, panel in enumerate(d.panels):
        blocks, texts = panel.blocks, panel.token_texts()
        if i in (0, 5):
            assert len(blocks) == 1 and blocks[0].values.shape == (L, E)
            where = [cell_centre(blocks[0], token, e) for e in range(E)]
        else:
            assert len(blocks) == H and all(b.values.shape == (L, D) for b in blocks)
            where = [cell_centre(blocks[h], token, c) for h in range(H) for c in range(D)]
            pairs = list(zip(blocks, blocks[1:]))
            if i in (1, 4):  # (B, L, H, D): side by side, head 1 on the left
                assert all(a.top == b.top and b.left > a.right for a, b in pairs), panel.step
            else:  # (B, H, L, D): stacked, head 1 on top
                assert all(b.top < a.bottom and a.left == b.left for a, b in pairs), panel.step
        np.testing.assert_allclose([t.get_position() for t in texts], where, err_msg=panel.step)


# --- 10: the encoder-decoder ------------------------------------------------------------------


@pytest.mark.parametrize("lengths, L", [((5, 3), 4), ((2, 6, 4), 3), ((8, 8), 8), ((1, 3), 1)])
def test_encoder_decoder_masks_are_causal_in_the_decoder_and_padding_in_cross_attention(lengths, L):
    d = encoder_decoder_diagram(lengths, L)
    flow = d.flow
    b = lengths.index(min(lengths))
    S = max(lengths)
    pad = padding_mask(list(lengths), S)[b, 0, 0].numpy()  # (S,) True on real tokens
    expected = {
        "the encoder's self-attention": np.broadcast_to(pad, (S, S)),
        "the decoder's self-attention": np.tril(np.ones((L, L), dtype=bool)),
        "cross-attention": np.broadcast_to(pad, (L, S)),
    }
    assert flow.sequence == b
    for use, grid in zip(flow.uses, d.grids):
        np.testing.assert_array_equal(use.allowed, expected[use.name], err_msg=use.name)
        faces = np.array([[cell.get_facecolor() for cell in row] for row in grid.cells])  # (R, C, 4)
        want = np.where(expected[use.name][..., None], to_rgba(ALLOWED), to_rgba(BLOCKED))
        np.testing.assert_allclose(faces, want, err_msg=f"{use.name}: the grid drawn")
    encoder, decoder, cross = flow.uses
    assert (cross.query_shape, cross.key_shape) == ((len(lengths), L, 8), (len(lengths), S, 8))
    assert (encoder.query_shape, decoder.query_shape) == ((len(lengths), S, 8), (len(lengths), L, 8))


def test_encoder_decoder_writes_where_cross_attention_reads_from():
    d = encoder_decoder_diagram((5, 3), 4)
    text = "\n".join(strings(d.texts))
    assert "queries: the decoder (2, 4, 8)" in text
    assert "keys, values: the encoder's output (2, 5, 8)" in text
    assert "mask: causal (4, 4)" in text and text.count("mask: the source's padding (2, 1, 1, 5)") == 2
    assert strings(d.texts).count("pad") == 2 + 2 + 2 + 2  # the tokens, the grids' rows and columns


# --- 10: one step with the KV cache -----------------------------------------------------------


@pytest.mark.parametrize("E, H, T, head, H_kv", [(8, 2, 4, 0, None), (8, 2, 4, 1, None), (8, 4, 7, 3, None),
                                                (4, 2, 1, 0, None), (8, 4, 4, 1, 2), (8, 4, 4, 2, 1)])
def test_kv_cache_step_draws_what_a_full_causal_pass_computes(E, H, T, head, H_kv):
    """Grouped-query layers too: query head h reads the cached head h // (H / H_kv)."""
    mha, prompt, x_new = kv_example(E, H, T, H_kv)
    d = kv_cache_diagram(mha, prompt, x_new, head=head)
    D = E // H
    kv = head // (H // (H_kv or H))
    columns = slice(kv * D, (kv + 1) * D)
    q_columns = slice(head * D, (head + 1) * D)
    with torch.no_grad():
        everything = torch.cat([prompt, x_new], dim=1)[0]  # (T + 1, E): every position, no cache
        keys = (everything @ mha.W_k.weight.T)[:, columns]  # (T + 1, D)
        values = (everything @ mha.W_v.weight.T)[:, columns]
        _, weights = mha(torch.cat([prompt, x_new], dim=1), causal=True)  # (1, H, T + 1, T + 1)
        q = (x_new[0] @ mha.W_q.weight.T)[0, q_columns]  # (D,)
    last = weights[0, head, -1]  # (T + 1,): the new position's row of the full pass
    np.testing.assert_allclose(d.keys, keys.numpy(), atol=1e-6)
    np.testing.assert_allclose(d.weights, last.numpy(), atol=1e-6)
    g = d.grids
    assert [number(v) for v in keys.flatten().tolist()] == [t.get_text() for _, t in sorted(g["keys"].numbers.items())]
    assert [number(v) for v in values.flatten().tolist()] == [t.get_text() for _, t in sorted(g["values"].numbers.items())]
    assert [number(v) for v in last.tolist()] == [t.get_text() for _, t in sorted(g["weights"].numbers.items())]
    assert [number(v) for v in q.tolist()] == [t.get_text() for _, t in sorted(g["q"].numbers.items())]
    assert [number(v) for v in (last @ values).tolist()] == [t.get_text() for _, t in sorted(g["output"].numbers.items())]
    # the appended rows: k and v are the caches' last rows, under them
    assert [t.get_text() for _, t in sorted(g["k"].numbers.items())] == [number(v) for v in keys[-1].tolist()]
    assert [t.get_text() for _, t in sorted(g["v"].numbers.items())] == [number(v) for v in values[-1].tolist()]
    assert g["k"].top < g["keys"].bottom and g["v"].top < g["values"].bottom
    cached = H_kv or H  # the cache holds H_kv heads
    assert d.shapes["keys before"] == (1, cached, T, D) and d.shapes["keys after"] == (1, cached, T + 1, D)
    assert f"{(1, cached, T, D)} \u2192 {(1, cached, T + 1, D)}" in "\n".join(strings(d.texts))


# --- 12: the residual stream, post-LN beside pre-LN --------------------------------------------


def test_block_steps_follow_the_formulas_of_the_two_placements():
    """post-LN: x = norm1(x + sa(x)); x = norm2(x + ff(x)). pre-LN: x = x + sa(norm1(x)); x = x + ff(norm2(x))."""
    assert block_steps(False) == (Step("self_attn", False), Step("norm1", True), Step("linear1", False),
                                  Step("norm2", True))
    assert block_steps(True) == (Step("norm1", False), Step("self_attn", False), Step("norm2", False),
                                 Step("linear1", False))


def test_block_steps_are_read_from_the_block_that_runs(monkeypatch):
    """A block whose forward normalises after the addition reads as post-LN, whatever its flag says."""
    from attn import TransformerBlock

    def post_ln(self, x, mask=None, *, causal=False, cache=None):
        x = self.norm1(x + self.attention_sublayer(x, mask, causal))
        return self.norm2(x + self.feed_forward(x))

    monkeypatch.setattr(TransformerBlock, "forward", post_ln)
    assert block_steps(True) == block_steps(False) == (Step("self_attn", False), Step("norm1", True),
                                                       Step("linear1", False), Step("norm2", True))


def test_residual_stream_draws_each_norm_where_the_block_runs_it():
    d = residual_stream_diagram()
    for placement, norm_first in (("post-LN", False), ("pre-LN", True)):
        placed = d.boxes[placement]
        assert tuple(s for s, _ in placed) == block_steps(norm_first)
        heights = [y for _, (_, y) in placed]
        assert heights == sorted(heights) and len(set(heights)) == 4, f"{placement}: not bottom to top"
        for s, (x, _) in placed:
            column = d.stream_x[placement] if s.on_stream else d.branch_x[placement]
            assert x == column, f"{placement}: {s.part} drawn off its column"
    assert all(s.on_stream for s, _ in d.boxes["post-LN"] if s.is_norm)
    assert not any(s.on_stream for s, _ in d.boxes["pre-LN"])
    assert strings(d.texts).count("+") == 4  # two additions per block, in each panel


# --- every figure: text placed, legible, in both languages ------------------------------------


def text_boxes(fig):
    """(text, its box in pixels) for every non-empty text of ``fig``, drawn."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(t, t.get_window_extent(renderer)) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip()]


def overlap(a, b, tolerance: float = 0.5) -> bool:
    """Whether two boxes share more than ``tolerance`` pixels in both directions."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance and min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance


def grids_of(d) -> list:
    """Every heatmap a diagram drew (the KV-cache diagram names its own)."""
    grids = getattr(d, "grids", [])  # the residual stream draws none
    return list(grids.values()) if isinstance(grids, dict) else list(grids)


def pixels(ax, left, bottom, right, top):
    """A box in the diagram's inches, in pixels."""
    from matplotlib.transforms import Bbox

    return Bbox([[left, bottom], [right, top]]).transformed(ax.transData)


@pytest.mark.parametrize("code", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(DRAW))
def test_no_text_overlaps_another_or_a_heatmap_or_leaves_the_figure(name, code):
    with language(code):
        d = DRAW[name]()
        boxes = text_boxes(d.figure)
    assert len(boxes) >= 20
    figure = d.figure.bbox
    for t, box in boxes:
        assert figure.x0 <= box.x0 and box.x1 <= figure.x1 and figure.y0 <= box.y0 and box.y1 <= figure.y1, (
            f"{t.get_text()!r} leaves the figure")
    for i, (t, a) in enumerate(boxes):
        for u, b in boxes[i + 1:]:
            assert not overlap(a, b), f"{t.get_text()!r} overlaps {u.get_text()!r}"
    numbers = {id(t) for g in grids_of(d) for t in g.numbers.values()}
    for g in grids_of(d):
        block = pixels(d.ax, g.left, g.bottom, g.right, g.top)
        for t, box in boxes:
            if id(t) not in numbers:
                assert not overlap(box, block), f"{t.get_text()!r} covers a heatmap"
        for (r, c), t in g.numbers.items():  # a number stays inside its own cell
            x0 = g.left + c * g.cell_w
            cell = pixels(d.ax, x0, g.top - (r + 1) * g.cell_h, x0 + g.cell_w, g.top - r * g.cell_h)
            box = t.get_window_extent()
            assert cell.x0 <= box.x0 and box.x1 <= cell.x1 and cell.y0 <= box.y0 and box.y1 <= cell.y1, (
                f"{t.get_text()!r} spills out of its cell")


@pytest.mark.parametrize("name", sorted(DRAW))
def test_readable_in_greyscale(name):
    """Numbers in 4.5:1 contrast on their cells (a contrast of luminances: the same in grey);
    the shades of value go one way in luminance; a mask's two kinds of cell far apart."""
    d = DRAW[name]()
    for g in grids_of(d):
        for (r, c), t in g.numbers.items():
            ratio = contrast_ratio(to_rgba(t.get_color()), g.cells[r][c].get_facecolor())
            assert ratio >= 4.5, f"{t.get_text()!r}: contrast {ratio:.2f}"
    luminance = relative_luminance(matplotlib.colormaps[CMAP](np.linspace(0, 1, 11)))
    assert np.all(np.diff(luminance) < 0), "the value map is not sequential in luminance"
    assert contrast_ratio(to_rgba(ALLOWED), to_rgba(BLOCKED)) >= 7


@pytest.mark.parametrize("name", sorted(DRAW))
def test_speaks_chinese_in_the_cjk_font(name):
    before = missing_messages()
    with language("zh"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = DRAW[name]()
        boxes = text_boxes(d.figure)
        description = d.description()
    assert missing_messages() - before == set()
    missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
    assert not missing, missing
    for t, _ in boxes:
        text = t.get_text()
        assert t.get_fontproperties().get_file() == _font_path(), f"{text!r} is not in the CJK font"
        english = set(re.findall(r"[A-Za-z_]{4,}", text)) - CODE_WORDS
        assert not english, f"{text!r}: English words {english} in the Chinese figure"
    assert sum(bool(CJK.search(t.get_text())) for t, _ in boxes) >= 5
    assert CJK.search(description) and check_alt(description)


@pytest.mark.parametrize("name", sorted(DRAW))
def test_the_english_description_is_a_text_alternative_with_the_drawn_numbers(name):
    d = DRAW[name]()
    text = check_alt(d.description())
    drawn = {t.get_text() for g in grids_of(d) for t in g.numbers.values()}
    if name == "encoder_decoder":
        assert "(2, 1, 1, 5)" in text and "lower triangle of 4 by 4" in text
    elif name == "residual_stream":
        assert ("Post-LN runs self-attention, then LayerNorm norm1 (on the stream), then feed-forward, then "
                "LayerNorm norm2 (on the stream)") in text
        assert "Pre-LN runs LayerNorm norm1, then self-attention, then LayerNorm norm2, then feed-forward:" in text
    else:
        quoted = set(re.findall(r"\u2212?\d+\.\d\d", text))
        assert quoted and quoted <= drawn, quoted - drawn


def test_draws_into_a_given_axes():
    ax = new_figure(10.1, 7.2).add_axes((0, 0, 1, 1))
    assert encoder_decoder_diagram(ax=ax).ax is ax


@pytest.mark.parametrize("call, error, match", [
    (lambda: split_merge_diagram("mha", split_example()[1]), TypeError, "mha"),
    (lambda: split_merge_diagram(split_example()[0], torch.randn(2, 6, 8)), ValueError, "x: expected"),
    (lambda: split_merge_diagram(split_example()[0], torch.randn(1, 9, 8)), ValueError, "x: expected"),
    (lambda: split_merge_diagram(MultiHeadAttention(8, 1), torch.randn(1, 6, 8)), ValueError, "at least 2 heads"),
    (lambda: split_merge_diagram(*split_example(), tokens=["a"]), ValueError, "tokens"),
    (lambda: split_merge_diagram(*split_example(), token=6), ValueError, "token"),
    (lambda: split_merge_diagram(*split_example(), ax="ax"), TypeError, "ax"),
    (lambda: block_steps("pre"), TypeError, "norm_first"),
    (lambda: residual_stream_diagram(ax="ax"), TypeError, "ax"),
    (lambda: encoder_decoder_flow([3, "4"]), TypeError, "source_lengths"),
    (lambda: encoder_decoder_flow((3, 9)), ValueError, "source_lengths"),
    (lambda: encoder_decoder_flow(5), TypeError, "source_lengths"),
    (lambda: encoder_decoder_flow((5, 3), 0), ValueError, "target_length"),
    (lambda: encoder_decoder_flow((5, 3), sequence=2), ValueError, "sequence"),
    (lambda: kv_cache_diagram(MultiHeadAttention(16, 2), torch.randn(1, 4, 16), torch.randn(1, 1, 16)),
     ValueError, "D = d_model / num_heads <= 4"),
    (lambda: kv_cache_diagram(*kv_example()[:2], torch.randn(1, 2, 8)), ValueError, "x_new"),
    (lambda: kv_cache_diagram(kv_example()[0], torch.randn(1, 8, 8), torch.randn(1, 1, 8)), ValueError, "prompt"),
    (lambda: kv_cache_diagram(*kv_example(), head=2), ValueError, "head"),
    # the argument at fault, not the layer's own (query) nor x's shape for the layer's size
    (lambda: split_merge_diagram(MultiHeadAttention(32, 2), torch.randn(1, 4, 32)), ValueError,
     r"^mha: expected d_model <= 8 to draw, got d_model=32$"),
    (lambda: kv_cache_diagram(kv_example()[0], kv_example()[1].double(), kv_example()[2]), TypeError,
     r"^prompt: expected dtype torch.float32 \(the dtype of the module's parameters\), got torch.float64$"),
    (lambda: kv_cache_diagram(*kv_example()[:2], kv_example()[2].double()), TypeError, r"^x_new: expected dtype"),
    (lambda: kv_cache_diagram(kv_example()[0], torch.randn(1, 4, 6), kv_example()[2]), ValueError,
     r"^prompt: expected \(1, T, E\) with 1 <= T <= \d+ and E = d_model = 8, got shape \(1, 4, 6\)$"),
    (lambda: kv_cache_diagram(*kv_example()[:2], torch.randn(1, 1, 6)), ValueError,
     r"^x_new: expected \(1, 1, E\) with E = d_model = 8"),
])
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_grid_draws_values_a_round_off_apart_alike():
    """Shades and written numbers of a diagram's grid do not depend on round-off
    (attn.drawing.plotting.settle): 1/8 is a colour-level edge and a tie of two decimals."""
    from matplotlib.colors import Normalize

    from attn.drawing.diagrams._drawing import grid
    from attn.drawing.plotting import new_figure

    tie = np.array([[0.125 - 1.4e-17, 0.125 + 5.6e-17, 0.375 - 5e-17]])
    exact = np.array([[0.125, 0.125, 0.375]])
    drawn = []
    for values in (tie, exact):
        ax = new_figure(3, 1).add_subplot()
        g = grid(ax, values, 0, 1, norm=Normalize(0, 1), cell=(1, 1), written=[(0, 0), (0, 1), (0, 2)])
        drawn.append(([c.get_facecolor() for c in g.cells[0]], [t.get_text() for t in g.numbers.values()]))
    assert drawn[0] == drawn[1]
