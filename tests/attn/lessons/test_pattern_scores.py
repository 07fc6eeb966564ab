"""Pattern masks and pattern scores: every mask against its definition cell by cell, every
score against a map whose answer is known, and the profile of the hand-built heads."""
import numpy as np
import pytest
import torch

from attn.examples import TWO_SENTENCE_PHRASES
from attn.lessons.handbuilt.heads import block_qk, diagonal_qk, head_weights, vertical_qk
from attn.lessons.pattern_scores import (
            PATTERNS,
            check_segments,
            head_scores,
            pattern_mask,
            pattern_profile,
            pattern_score,
)

DEFINITIONS = {
    "diagonal": lambda i, j, L: abs(i - j) <= 1,
    "anti-diagonal": lambda i, j, L: i + j == L - 1,
    "previous": lambda i, j, L: j == i - 1,
    "next": lambda i, j, L: j == i + 1,
    "vertical": lambda i, j, L: j == 0,
}


# --- masks ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(DEFINITIONS))
@pytest.mark.parametrize("L", [1, 2, 5, 10])
def test_masks_by_their_definitions(name, L):
    m = pattern_mask(name, L)
    assert m.shape == (L, L) and m.dtype == torch.bool
    assert m.tolist() == [[DEFINITIONS[name](i, j, L) for j in range(L)] for i in range(L)]


@pytest.mark.parametrize("key, column", [(0, 0), (3, 3), (-1, 4), (-5, 0)])
def test_vertical_mask_on_any_key(key, column):
    m = pattern_mask("vertical", 5, key=key)
    assert m.tolist() == [[j == column for j in range(5)] for _ in range(5)]


def test_block_mask_by_its_definition_with_and_without_self():
    seg = [-1, 0, 0, 1, 1, 1, -1]  # [CLS] a a b b b [SEP]
    L = len(seg)
    with_self = pattern_mask("block", L, segments=seg)
    others = pattern_mask("block", L, segments=torch.tensor(seg), include_self=False)
    for i in range(L):
        for j in range(L):
            same = seg[i] == seg[j] >= 0
            assert bool(with_self[i, j]) == same
            assert bool(others[i, j]) == (same and i != j)


def test_block_mask_per_example():
    seg = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]])
    m = pattern_mask("block", 5, segments=seg)
    assert m.shape == (2, 5, 5)
    for b in range(2):
        assert torch.equal(m[b], pattern_mask("block", 5, segments=seg[b]))


def test_every_listed_pattern_builds():
    for name in PATTERNS:
        kwargs = {"segments": [0, 0, 1]} if name == "block" else {}
        assert pattern_mask(name, 3, **kwargs).shape == (3, 3)


def test_mask_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"pattern: expected one of .*got 'stripes'"):
        pattern_mask("stripes", 4)
    with pytest.raises(ValueError, match="seq_len: expected a positive int, got 0"):
        pattern_mask("diagonal", 0)
    with pytest.raises(TypeError, match=r"segments: expected a \(L,\) or \(B, L\) tensor .*got None"):
        pattern_mask("block", 4)
    with pytest.raises(ValueError, match=r"segments: expected last dim L=4, got shape \(5,\)"):
        pattern_mask("block", 4, segments=torch.zeros(5, dtype=torch.long))
    with pytest.raises(TypeError, match="segments: expected an integer tensor, got dtype torch.float32"):
        pattern_mask("block", 2, segments=torch.zeros(2))
    with pytest.raises(TypeError, match="segments: expected ints"):
        pattern_mask("block", 2, segments=[0, "a"])
    with pytest.raises(ValueError, match=r"key: expected an int in -4..3, got 4"):
        pattern_mask("vertical", 4, key=4)
    with pytest.raises(TypeError, match="include_self: expected a bool"):
        pattern_mask("block", 2, segments=[0, 0], include_self="no")
    with pytest.raises(ValueError, match=r"segments: expected last dim L >= 1, got shape \(0,\)"):
        check_segments([])


# --- scores --------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["diagonal", "anti-diagonal", "vertical"])
@pytest.mark.parametrize("L", [3, 6, 10])
def test_uniform_attention_scores_the_masks_share_of_each_row(pattern, L):
    mask = pattern_mask(pattern, L)
    w = torch.full((2, 3, L, L), 1.0 / L)
    share = mask.float().sum(-1).mean() / L  # every row has a cell in these masks
    torch.testing.assert_close(pattern_score(w, mask), share.expand(2, 3))


def test_attention_on_the_mask_scores_one_and_off_it_zero():
    L = 6
    mask = pattern_mask("anti-diagonal", L)
    on = mask.double()  # all weight on the pattern
    off = torch.roll(on, 1, dims=-1)  # all weight one column to the right: off the pattern
    assert pattern_score(on, mask).item() == 1.0
    assert pattern_score(off, mask).item() == 0.0
    assert pattern_score(torch.stack([on, off]), mask).tolist() == [1.0, 0.0]  # two heads


def test_rows_without_a_cell_or_without_weight_are_left_out():
    L = 4
    prev = pattern_mask("previous", L)
    exact = torch.roll(torch.eye(L), -1, dims=-1)  # every row on its previous token (row 0 wraps)
    assert pattern_score(exact, prev).item() == 1.0  # row 0 has no previous token: left out
    masked = exact.clone()
    masked[2] = 0  # query 2 may attend to nothing: a row of zeros
    assert pattern_score(masked, prev).item() == 1.0
    half = exact.clone()
    half[3] = torch.tensor([0.5, 0.0, 0.5, 0.0])  # half its weight on the previous token
    assert pattern_score(half, prev).item() == pytest.approx((1 + 1 + 0.5) / 3)
    nothing = torch.zeros(L, L, dtype=torch.bool)
    assert pattern_score(torch.full((2, 3, L, L), 1 / L), nothing).tolist() == [[0.0] * 3] * 2


def test_one_mask_per_example():
    seg = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
    mask = pattern_mask("block", 4, segments=seg)  # (2, 4, 4)
    w = mask.double() / mask.double().sum(-1, keepdim=True)  # uniform inside each block
    heads = w[:, None].expand(2, 3, 4, 4)  # (B, H, L, S): three heads, each the same
    torch.testing.assert_close(pattern_score(heads, mask[:, None]), torch.ones(2, 3, dtype=torch.float64))
    assert (pattern_score(heads, mask.flip(0)[:, None]) < 1).all()  # the other example's phrases


def test_head_scores_is_pattern_score_per_name():
    w = torch.softmax(torch.randn(2, 3, 5, 5, generator=torch.Generator().manual_seed(0)), -1)
    masks = {name: pattern_mask(name, 5) for name in ("previous", "next", "vertical")}
    scores = head_scores(w, masks)
    assert list(scores) == list(masks)
    for name, m in masks.items():
        assert torch.equal(scores[name], pattern_score(w, m))
    with pytest.raises(TypeError, match="masks: expected a dict"):
        head_scores(w, [masks["next"]])


def test_score_errors_name_the_argument():
    mask = pattern_mask("vertical", 4)
    with pytest.raises(ValueError, match=r"weights: expected at least 2 dims"):
        pattern_score(torch.ones(4), mask)
    with pytest.raises(TypeError, match="weights: expected a floating-point tensor"):
        pattern_score(torch.ones(4, 4, dtype=torch.long), mask)
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor \(True = a cell of the pattern\)"):
        pattern_score(torch.ones(1, 1, 4, 4), mask.float())
    with pytest.raises(ValueError, match=r"mask: expected shape \(L, S\) = \(4, 4\)"):
        pattern_score(torch.ones(1, 1, 4, 4), pattern_mask("vertical", 5))
    with pytest.raises(ValueError, match="mask: expected shape"):  # (B, L, S) for (B, H, L, S): ambiguous
        pattern_score(torch.ones(2, 2, 4, 4), mask.expand(2, 4, 4))


# --- profiles of single maps -------------------------------------------------------------------------

def test_profile_reads_each_hand_built_pattern():
    n = 12
    diag = pattern_profile(head_weights(*diagonal_qk(n, 32, strength=1.0)))
    vert = pattern_profile(head_weights(*vertical_qk(n, 32, strength=1.0, key=7)))
    block = pattern_profile(head_weights(*block_qk(TWO_SENTENCE_PHRASES, 32, strength=1.0)),
                            TWO_SENTENCE_PHRASES)
    assert diag.self_weight > 0.9 and diag.top_key_weight < 0.2
    assert vert.top_keys == (7,) and vert.top_key_weight > 0.9
    assert block.segment_weight > 0.9
    assert diag.segment_weight is None


def test_profile_by_hand_skips_fully_masked_rows_and_accepts_arrays():
    w = np.array([[0.0, 0.0], [0.25, 0.75]])
    p = pattern_profile(w)
    assert p.self_weight == 0.75 and p.top_keys == (1,) and p.max_weight == 0.75
    assert p.top_key_weight == 0.75
    w3 = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8]])
    p3 = pattern_profile(w3, [0, 0, 1])
    assert p3.self_weight == pytest.approx((0.5 + 0.2 + 0.8) / 3)
    assert p3.segment_weight == pytest.approx((1.0 + 0.4 + 0.8) / 3)
    assert p3.top_keys == (2,) and p3.top_key_weight == pytest.approx(1.4 / 3)
    assert p3.max_weight == pytest.approx((0.5 + 0.6 + 0.8) / 3)
    zero = pattern_profile(np.zeros((3, 3)), [0, 0, 1])
    assert zero.max_weight == 0 and zero.segment_weight == 0


def test_profile_names_every_key_of_a_tie_and_no_key_a_real_gap_apart():
    # Keys 1 and 2 tie up to round-off (the gap a different summation order could make);
    # key 3 is 1e-6 behind: a real difference, far above round-off.
    gap = 1e-15
    w = np.array([[0.1, 0.3, 0.3 - gap, 0.3 - 1e-6],
                  [0.1, 0.3 - gap, 0.3, 0.3 - 1e-6]])
    w = w / w.sum(-1, keepdims=True)
    p = pattern_profile(w)
    assert p.top_keys == (1, 2)
    assert p.top_key_label(["a", "b", "c", "d"]) == "b = c"
    assert pattern_profile(np.array([[0.2, 0.8]])).top_key_label(["a", "b"]) == "b"
    assert pattern_profile(np.zeros((2, 3))).top_keys == (0, 1, 2)
    with pytest.raises(ValueError, match="tokens: expected at least 3 tokens"):
        p.top_key_label(["a", "b"])


def test_profile_errors():
    with pytest.raises(ValueError, match="weights: expected 2 dims"):
        pattern_profile(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"segments: expected last dim L=3"):
        pattern_profile(np.zeros((3, 3)), [0, 1])
    with pytest.raises(ValueError, match="segments: expected a square"):
        pattern_profile(np.zeros((3, 2)), [0, 1, 1])
