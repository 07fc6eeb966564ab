"""The tiny transformer: its tasks, its pattern scores, and training from scratch.

The training tests retrain every task from scratch (about a second each, one thread) and
check that the task is solved and that the task's pattern appears, measured by the pattern
score against a threshold and against the untrained model's score.
"""
from importlib import resources

import pytest
import torch

from attn.modules import MultiHeadAttention
from attn.trained.tiny import (
    IGNORE,
    Adam,
    PATTERNS,
    TASKS,
    TinyTransformer,
    TrainRun,
    accuracy,
    build_model,
    head_scores,
    held_out_batch,
    load_run,
    load_trained,
    make_batch,
    pattern_mask,
    pattern_score,
    save_run,
    token_labels,
    train_tiny,
)

SOLVED = 0.95  # held-out accuracy that counts as solving a task
PATTERN = 0.8  # best head's pattern score that counts as "the pattern appeared"
MARGIN = 0.4  # ... and by how much it must beat the untrained model's best head


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
    with pytest.raises(TypeError, match="task: expected one of"):
        make_batch(3, 2)
    with pytest.raises(ValueError, match="batch_size: expected a positive int, got 0"):
        make_batch("cls", 0)
    with pytest.raises(ValueError, match="seq_len: expected at least 2, got 1"):
        make_batch("cls", 2, seq_len=1)


# --- pattern masks and scores ---------------------------------------------------------------

def test_pattern_masks_by_their_definitions():
    L = 5
    for name in ("diagonal", "anti-diagonal", "vertical"):
        m = pattern_mask(name, L)
        assert m.shape == (L, L) and m.dtype == torch.bool
        for i in range(L):
            for j in range(L):
                want = {"diagonal": abs(i - j) <= 1, "anti-diagonal": i + j == L - 1,
                        "vertical": j == 0}[name]
                assert bool(m[i, j]) == want
    seg = torch.tensor([0, 0, 1, 1, 1])
    m = pattern_mask("block", L, segments=seg)
    assert m.tolist() == [[bool(seg[i] == seg[j]) for j in range(L)] for i in range(L)]
    assert pattern_mask("block", L, segments=torch.stack([seg, seg.flip(0)])).shape == (2, L, L)


def test_pattern_mask_errors():
    with pytest.raises(ValueError, match=r"pattern: expected one of .*got 'stripes'"):
        pattern_mask("stripes", 4)
    with pytest.raises(TypeError, match="segments: expected a .* for pattern 'block', got None"):
        pattern_mask("block", 4)
    with pytest.raises(ValueError, match=r"segments: expected last dim L=4, got shape \(5,\)"):
        pattern_mask("block", 4, segments=torch.zeros(5, dtype=torch.long))


@pytest.mark.parametrize("pattern", ["diagonal", "anti-diagonal", "vertical"])
@pytest.mark.parametrize("L", [3, 6, 10])
def test_uniform_attention_scores_the_masks_share(pattern, L):
    mask = pattern_mask(pattern, L)
    w = torch.full((2, 3, L, L), 1.0 / L)
    share = mask.float().sum(-1).mean() / L
    torch.testing.assert_close(pattern_score(w, mask), share.repeat(3))


def test_attention_on_the_mask_scores_one_and_off_it_zero():
    L = 6
    mask = pattern_mask("anti-diagonal", L)
    on = mask.float()[None, None]  # (1, 1, L, L): all weight on the pattern
    off = torch.roll(on, 1, dims=-1)  # all weight one column to the right: off the pattern
    assert pattern_score(on, mask).item() == 1.0
    assert pattern_score(off, mask).item() == 0.0
    both = torch.cat([on, off], dim=1)  # (1, 2, L, L): head 1 on, head 2 off
    assert pattern_score(both[0], mask).tolist() == [1.0, 0.0]


def test_block_scores_use_each_examples_own_phrases():
    seg = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
    mask = pattern_mask("block", 4, segments=seg)  # (2, 4, 4)
    w = mask.float() / mask.float().sum(-1, keepdim=True)  # uniform inside each block
    assert pattern_score(w[:, None], mask).item() == pytest.approx(1.0)
    assert pattern_score(w[:, None], mask.flip(0)).item() < 1.0


def test_pattern_score_errors():
    mask = pattern_mask("vertical", 4)
    with pytest.raises(ValueError, match=r"weights: expected 3 or 4 dims"):
        pattern_score(torch.ones(4, 4), mask)
    with pytest.raises(TypeError, match="mask: expected a bool tensor"):
        pattern_score(torch.ones(1, 1, 4, 4), mask.float())
    with pytest.raises(ValueError, match=r"mask: expected shape \(L, S\) = \(4, 4\)"):
        pattern_score(torch.ones(1, 1, 4, 4), pattern_mask("vertical", 5))


# --- the model --------------------------------------------------------------------------------

def test_model_is_built_on_the_courses_attention_and_returns_maps():
    m = build_model("reverse", num_heads=4)
    assert isinstance(m.attn, MultiHeadAttention) and m.attn.num_heads == 4
    tokens = make_batch("reverse", 3).tokens
    logits, w = m(tokens)
    assert logits.shape == (3, 10, TASKS["reverse"].num_classes)
    assert w.shape == (3, 4, 10, 10)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, 10))


def test_build_model_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b, c = build_model("cls", seed=5), build_model("cls", seed=5), build_model("cls", seed=6)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(a.tok.weight, b.tok.weight) and not torch.equal(a.tok.weight, c.tok.weight)


def test_model_errors():
    m = build_model("cls")
    with pytest.raises(TypeError, match="tokens: expected dtype torch.long, got torch.float32"):
        m(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"tokens: expected 2 dims \(B, L\)"):
        m(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens: expected at most L=10 positions"):
        m(torch.zeros(1, 11, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens: expected ids in 0..3, got 0..4"):
        m(torch.tensor([[0, 4]]))
    with pytest.raises(ValueError, match="num_classes: expected a positive int, got 0"):
        TinyTransformer(4, 10, 0)


# --- training from scratch ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs():
    return {task: train_tiny(task) for task in TASKS}


@pytest.mark.parametrize("task", list(TASKS))
def test_training_solves_the_task(runs, task):
    run = runs[task]
    untrained = accuracy(build_model(task), task)
    assert untrained < 0.6, f"{task}: the untrained model already scores {untrained:.2f}"
    assert accuracy(run.model, task) >= SOLVED
    assert run.accuracies[-1].item() == pytest.approx(accuracy(run.model, task))


@pytest.mark.parametrize("task", list(TASKS))
def test_training_makes_the_tasks_pattern_appear(runs, task):
    run = runs[task]
    trained = head_scores(run.model, task)
    untrained = head_scores(build_model(task), task)
    torch.testing.assert_close(untrained, run.untrained_scores)
    assert trained.max() >= PATTERN, f"{task}: best head scores {trained.max():.2f}"
    assert trained.max() >= untrained.max() + MARGIN, \
        f"{task}: trained {trained.max():.2f} vs untrained {untrained.max():.2f}"


@pytest.mark.parametrize("task", list(TASKS))
def test_each_pattern_belongs_to_its_task(runs, task):
    """A trained model's best head scores higher on its own pattern than an unrelated
    model's best head does (block needs phrases, so it is compared on ``phrases`` only)."""
    own = TASKS[task].pattern
    batch = held_out_batch(task)
    for other, run in runs.items():
        if other == task or own == "block":
            continue
        _, w = run.model(make_batch(other, 256, generator=gen(9)).tokens)
        mask = pattern_mask(own, 10, segments=batch.segments)
        assert pattern_score(w, mask).max() < head_scores(runs[task].model, task).max()


def test_run_records_the_maps_forming(runs):
    run = runs["phrases"]
    assert run.steps[0] == 0 and run.steps[-1] == TASKS["phrases"].steps
    assert run.maps.shape == (len(run.steps), 2, 10, 10)
    assert run.scores.shape == (len(run.steps), 2) and run.accuracies.shape == (len(run.steps),)
    assert len(run.losses) == TASKS["phrases"].steps
    assert sum(run.losses[-20:]) < sum(run.losses[:20])
    assert (run.scores[-1] > run.scores[0]).all()


def test_training_is_reproducible_and_restores_threads_and_rng(runs):
    torch.set_num_threads(2)
    torch.manual_seed(42)
    before = torch.random.get_rng_state()
    again = train_tiny("cls")
    assert torch.get_num_threads() == 2
    assert torch.equal(torch.random.get_rng_state(), before)
    for a, b in zip(again.model.state_dict().values(), runs["cls"].model.state_dict().values()):
        assert torch.equal(a, b)
    other = train_tiny("cls", seed=1, steps=20)
    assert not torch.equal(other.model.tok.weight, again.model.tok.weight)


def test_adam_is_torch_optims_adam_bit_for_bit():
    """``tiny.Adam`` (written out to keep torch._dynamo out of the notebook) makes exactly the
    updates of ``torch.optim.Adam`` with the same learning rate."""
    ours, theirs = build_model("phrases"), build_model("phrases")
    opt_ours, opt_theirs = Adam(ours.parameters(), lr=1e-2), torch.optim.Adam(theirs.parameters(), lr=1e-2)
    data = gen(3)
    for _ in range(30):
        b = make_batch("phrases", 16, generator=data)
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            logits, _ = model(b.tokens)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 2), b.targets.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(ours.tok.weight, build_model("phrases").tok.weight)


def test_train_errors():
    with pytest.raises(ValueError, match="steps: expected a positive int, got 0"):
        train_tiny("cls", steps=0)
    with pytest.raises(ValueError, match="lr: expected a positive number, got -1"):
        train_tiny("cls", lr=-1)
    with pytest.raises(ValueError, match="task: expected one of"):
        train_tiny("sort")


# --- shipped weights ------------------------------------------------------------------------------

@pytest.mark.parametrize("task", list(TASKS))
def test_shipped_run_matches_its_own_history(task):
    run = load_run(task)
    assert isinstance(run, TrainRun) and run.task == task
    torch.testing.assert_close(head_scores(run.model, task), run.scores[-1])
    assert accuracy(run.model, task) == pytest.approx(run.accuracies[-1].item())
    assert accuracy(run.model, task) >= SOLVED and run.scores[-1].max() >= PATTERN
    with torch.no_grad():
        _, w = run.model(run.probe.tokens)
    torch.testing.assert_close(w[0], run.maps[-1])
    assert torch.equal(load_trained(task).out.weight, run.model.out.weight)


def test_shipped_weights_are_small_and_load_with_weights_only():
    folder = resources.files("attn.trained") / "weights"
    files = [f for f in folder.iterdir() if f.name.endswith(".pt")]
    assert {f.name for f in files} == {f"tiny_{t}.pt" for t in TASKS}
    assert sum(len(f.read_bytes()) for f in files) < 400_000
    for f in files:
        with resources.as_file(f) as path:
            saved = torch.load(path, weights_only=True)
        assert set(saved) >= {"model", "steps", "maps", "scores", "accuracies"}


def test_save_and_load_round_trip(tmp_path):
    run = train_tiny("reverse", steps=5, snapshot_every=2)
    path = save_run(run, tmp_path)
    assert path.name == "tiny_reverse.pt"
    back = load_run("reverse", tmp_path)
    assert back.steps == run.steps == [0, 2, 4, 5]
    assert torch.equal(back.maps, run.maps) and back.losses == pytest.approx(run.losses)
    for a, b in zip(back.model.state_dict().values(), run.model.state_dict().values()):
        assert torch.equal(a, b)
    with pytest.raises(TypeError, match="run: expected a TrainRun, got dict"):
        save_run({}, tmp_path)


def test_patterns_listed():
    assert set(PATTERNS) == {spec.pattern for spec in TASKS.values()}
