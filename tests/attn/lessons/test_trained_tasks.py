"""The toy tasks: batch shapes, seeding, each target by its definition, labels, bad input."""
import pytest
import torch

from attn.lessons.trained.tasks import IGNORE, TASK_PATTERNS, TASKS, make_batch, token_labels
from attn.lessons.pattern_scores import PATTERNS


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- tasks -------------------------------------------------------------------------------

@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("B, L", [(1, 2), (5, 10), (3, 13)])
def test_batch_shapes_and_ranges(task, B, L):
    b = make_batch(task, B, seq_len=L, generator=gen())
    spec = TASKS[task]
    for t in (b.tokens, b.targets, b.segments):
        assert t.shape == (B, L) and t.dtype == torch.long
    assert 0 <= b.tokens.min() and b.tokens.max() < spec.vocab_size
    real = b.targets[b.targets != IGNORE]
    assert 0 <= real.min() and real.max() < spec.num_classes


def test_same_generator_seed_same_batch_and_default_is_seeded():
    a = make_batch("phrases", 4, generator=gen(3))
    b = make_batch("phrases", 4, generator=gen(3))
    c = make_batch("phrases", 4, generator=gen(4))
    assert torch.equal(a.tokens, b.tokens) and not torch.equal(a.tokens, c.tokens)
    assert torch.equal(make_batch("cls", 3).tokens, make_batch("cls", 3).tokens)


def test_targets_by_their_definitions():
    """Each task's targets recomputed with plain loops."""
    L = 10
    b = make_batch("neighbours", 16, generator=gen(1))
    for x, y in zip(b.tokens.tolist(), b.targets.tolist()):
        assert y == [sum(x[j] for j in (i - 1, i, i + 1) if 0 <= j < L) for i in range(L)]
    b = make_batch("reverse", 16, generator=gen(1))
    for x, y in zip(b.tokens.tolist(), b.targets.tolist()):
        assert y == x[::-1]
    b = make_batch("cls", 16, generator=gen(1))
    for x, y in zip(b.tokens.tolist(), b.targets.tolist()):
        assert y == [IGNORE] + [x[0]] * (L - 1)
    b = make_batch("phrases", 16, generator=gen(1))
    for x, y, seg in zip(b.tokens.tolist(), b.targets.tolist(), b.segments.tolist()):
        for i in range(L):
            bits = [x[j] % 2 for j in range(L) if seg[j] == seg[i]]
            assert y[i] == int(2 * sum(bits) >= len(bits))


def test_phrases_are_contiguous_runs_with_distinct_letters():
    b = make_batch("phrases", 64, generator=gen(2))
    for x, seg in zip(b.tokens.tolist(), b.segments.tolist()):
        assert seg[0] == 0
        assert all(s1 - s0 in (0, 1) for s0, s1 in zip(seg, seg[1:]))  # runs, in order
        lengths = [seg.count(s) for s in range(seg[-1] + 1)]
        assert all(2 <= n <= 4 for n in lengths[:-1])  # only the last may be cut short
        letter = {s: {t // 2 for t, q in zip(x, seg) if q == s} for s in set(seg)}
        assert all(len(v) == 1 for v in letter.values())  # one letter per phrase
        assert len({v.pop() for v in letter.values()}) == len(letter)  # distinct letters


def test_token_labels():
    assert token_labels("cls", torch.tensor([2, 0, 3])) == ["[2]", "0", "3"]
    assert token_labels("phrases", torch.tensor([0, 1, 9])) == ["A0", "A1", "E1"]
    assert token_labels("reverse", torch.tensor([7, 0])) == ["7", "0"]
    with pytest.raises(ValueError, match=r"tokens: expected 1 dims \(L,\)"):
        token_labels("cls", torch.zeros(2, 3, dtype=torch.long))


def test_task_errors():
    with pytest.raises(ValueError, match=r"task: expected one of .*got 'copy'"):
        make_batch("copy", 2)
    with pytest.raises(ValueError, match="task: expected one of .*got 3"):
        make_batch(3, 2)
    with pytest.raises(ValueError, match="batch_size: expected a positive int, got 0"):
        make_batch("cls", 0)
    with pytest.raises(ValueError, match=r"seq_len: expected an int in 2..inf, got 1"):
        make_batch("cls", 2, seq_len=1)


def test_every_task_pattern_is_a_pattern_score_pattern():
    assert TASK_PATTERNS == tuple(spec.pattern for spec in TASKS.values())
    assert set(TASK_PATTERNS) <= set(PATTERNS)
