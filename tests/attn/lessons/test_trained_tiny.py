"""The tiny transformer: the model, its heads' pattern scores, and training from scratch.

The training tests retrain every task from scratch (about a second each, one thread) and
check that the task is solved and that the task's pattern appears, measured by the pattern
score against a threshold and against the untrained model's score.
"""
from importlib import resources

import pytest
import torch

from attn.modules import MultiHeadAttention
from attn.lessons.pattern_scores import pattern_mask, pattern_score
from attn.lessons.trained.tasks import TASKS, held_out_batch, make_batch
from attn.lessons.trained.tiny import (
            TinyTransformer,
            TrainRun,
            accuracy,
            build_model,
            held_out_maps,
            load_run,
            load_trained,
            save_run,
            task_pattern_scores,
            train_tiny,
)

SOLVED = 0.95  # held-out accuracy that counts as solving a task
PATTERN = 0.8  # best head's pattern score that counts as "the pattern appeared"
MARGIN = 0.4  # ... and by how much it must beat the untrained model's best head


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


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
    trained = task_pattern_scores(run.model, task)
    untrained = task_pattern_scores(build_model(task), task)
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
        assert pattern_score(w, mask).mean(0).max() < task_pattern_scores(runs[task].model, task).max()


@pytest.mark.parametrize("task", ["phrases", "reverse"])
def test_task_pattern_scores_average_each_examples_rows(task):
    """Written out as loops over examples, heads and rows: the weight on the task's cells."""
    model = load_trained(task)
    batch, w = held_out_maps(model, task, n=8)
    assert w.shape == (8, 2, 10, 10)
    seg = batch.segments
    expected = torch.zeros(2)
    for b in range(8):
        for h in range(2):
            for i in range(10):
                cells = [j for j in range(10) if (seg[b, i] == seg[b, j] if task == "phrases" else i + j == 9)]
                expected[h] += w[b, h, i, cells].sum() / (8 * 10)
    torch.testing.assert_close(task_pattern_scores(model, task, n=8), expected)


def test_run_records_the_maps_forming(runs):
    run = runs["phrases"]
    assert run.steps[0] == 0 and run.steps[-1] == TASKS["phrases"].steps
    assert run.maps.shape == (len(run.steps), 2, 10, 10)
    assert run.scores.shape == (len(run.steps), 2) and run.accuracies.shape == (len(run.steps),)
    assert len(run.losses) == TASKS["phrases"].steps
    assert sum(run.losses[-20:]) < sum(run.losses[:20])
    assert (run.scores[-1] > run.scores[0]).all()


@pytest.fixture
def two_threads():
    """Start from 2 threads, and leave the run's own thread count as it was afterwards (a
    test that runs after this one on the same worker checks it)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_training_is_reproducible_and_restores_threads_and_rng(runs, two_threads):
    torch.manual_seed(42)
    before = torch.random.get_rng_state()
    again = train_tiny("cls")
    assert torch.get_num_threads() == 2
    assert torch.equal(torch.random.get_rng_state(), before)
    for a, b in zip(again.model.state_dict().values(), runs["cls"].model.state_dict().values()):
        assert torch.equal(a, b)
    other = train_tiny("cls", seed=1, steps=20)
    assert not torch.equal(other.model.tok.weight, again.model.tok.weight)


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
    torch.testing.assert_close(task_pattern_scores(run.model, task), run.scores[-1])
    assert accuracy(run.model, task) == pytest.approx(run.accuracies[-1].item())
    assert accuracy(run.model, task) >= SOLVED and run.scores[-1].max() >= PATTERN
    with torch.no_grad():
        _, w = run.model(run.probe.tokens)
    torch.testing.assert_close(w[0], run.maps[-1])
    assert torch.equal(load_trained(task).out.weight, run.model.out.weight)


def test_shipped_weights_are_small_and_load_with_weights_only():
    folder = resources.files("attn.lessons.trained") / "weights"
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

