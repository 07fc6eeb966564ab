"""Explorers of trained heads: their pure functions, then every control across its range."""
import numpy as np
import pytest
import torch

from attn.plotting import new_figure
from attn.pattern_scores import head_scores, pattern_mask, pattern_score
from attn.trained.tasks import IGNORE, TASKS, held_out_batch
from attn.trained.tiny import load_run, train_tiny
from attn.widgets.trained import (
    N_EXAMPLES,
    LiveMap,
    example_explorer,
    example_frame,
    example_frames,
    training_explorer,
    training_frame,
)


@pytest.fixture(scope="module")
def runs():
    return {task: load_run(task) for task in TASKS}


# --- training_frame ----------------------------------------------------------------------------

def test_training_frame_takes_the_last_snapshot_at_or_before_the_step(runs):
    run = runs["reverse"]
    assert run.steps[:3] == [0, 10, 20]
    assert training_frame(run, 0).step == 0
    assert training_frame(run, 19).step == 10
    assert training_frame(run, 20).step == 20
    assert training_frame(run, 10_000).step == run.steps[-1]  # clamped
    assert training_frame(run, -5).step == 0
    f = training_frame(run, 20)
    np.testing.assert_allclose(f.maps, run.maps[2].numpy())
    np.testing.assert_allclose(f.scores, run.scores[2].numpy())
    np.testing.assert_allclose(f.untrained, run.scores[0].numpy())
    assert f.accuracy == pytest.approx(run.accuracies[2].item())
    assert f.pattern == "anti-diagonal" and f.mask.shape == (10, 10) and f.mask.sum() == 10


def test_training_frame_block_mask_follows_the_probes_phrases(runs):
    run = runs["phrases"]
    f = training_frame(run, 0)
    seg = run.probe.segments[0]
    assert (f.mask == (seg[:, None] == seg[None, :]).numpy()).all()
    assert f.tokens[0][0] == "A"


def test_training_frame_errors(runs):
    with pytest.raises(TypeError, match="run: expected a TrainRun, got dict"):
        training_frame({}, 0)
    with pytest.raises(TypeError, match="step: expected an int, got float"):
        training_frame(runs["cls"], 1.5)


# --- training_explorer ---------------------------------------------------------------------------

def test_training_explorer_step_slider_changes_picture_readout_and_state(runs):
    ex = training_explorer(runs, task="cls")
    slider = ex.controls["step"]
    assert (slider.min, slider.max, slider.step) == (0, 200, 10)
    seen_images, seen_steps = set(), []
    for step in range(slider.min, slider.max + 1, slider.step):
        slider.value = step
        assert ex.state.step == step and ex.state.task == "cls"
        assert f"Step {step}:" in ex.readout.value
        seen_images.add(ex.image.value)
        seen_steps.append(ex.state.step)
    assert len(seen_images) > 10  # the maps change as training goes on
    slider.value = 0
    early = ex.state.scores.max()
    slider.value = 200
    assert ex.state.scores.max() > early + 0.4


def test_training_explorer_task_dropdown_covers_every_run(runs):
    ex = training_explorer(runs, step=200)
    images = set()
    for task in ex.controls["task"].options:
        ex.controls["task"].value = task
        assert ex.state.task == task and ex.state.pattern == TASKS[task].pattern
        assert f"<b>{task}</b>" in ex.readout.value and TASKS[task].pattern in ex.readout.value
        images.add(ex.image.value)
    assert len(images) == len(runs)
    assert ex.full_redraws == 1  # built once: a new task's labels and curves are live too


def test_training_explorer_takes_a_live_run_with_other_heads_and_steps():
    live = train_tiny("cls", steps=30, snapshot_every=5, num_heads=1)
    shipped = load_run("reverse")
    ex = training_explorer({"cls (here)": live, "reverse": shipped})
    assert ex.controls["step"].step == 5 and ex.controls["step"].max == 200
    ex.controls["step"].value = 100  # beyond the live run: its last snapshot
    assert ex.state.step == 30 and ex.state.maps.shape == (1, 10, 10)
    ex.controls["task"].value = "reverse"
    assert ex.state.step == 100 and ex.state.maps.shape == (2, 10, 10)


def test_training_explorer_errors(runs):
    with pytest.raises(TypeError, match="runs: expected a non-empty dict"):
        training_explorer({})
    with pytest.raises(TypeError, match=r"runs\['x'\]: expected a TrainRun, got int"):
        training_explorer({"x": 1})
    with pytest.raises(ValueError, match="task: expected one of"):
        training_explorer(runs, task="sort")


# --- example_frame / example_explorer -------------------------------------------------------------

@pytest.mark.parametrize("task", list(TASKS))
def test_example_frame_agrees_with_the_model_and_the_score(runs, task):
    model = runs[task].model
    batch = held_out_batch(task, N_EXAMPLES)
    frames = example_frames(model, task)
    assert len(frames) == N_EXAMPLES
    for i in (0, 7, N_EXAMPLES - 1):
        f = example_frame(model, task, i)
        g = frames[i]
        np.testing.assert_allclose(f.maps, g.maps, atol=1e-6)
        with torch.no_grad():
            logits, w = model(batch.tokens[i : i + 1])
        np.testing.assert_allclose(f.maps, w[0].numpy(), atol=1e-6)
        assert list(f.predictions) == logits[0].argmax(-1).tolist()
        assert list(f.targets) == batch.targets[i].tolist()
        mask = pattern_mask(TASKS[task].pattern, 10, segments=batch.segments[i])
        np.testing.assert_allclose(f.scores, pattern_score(w[0], mask).numpy(), atol=1e-6)


def test_example_frame_errors(runs):
    with pytest.raises(ValueError, match=r"index: expected an int in 0..31, got 32"):
        example_frame(runs["cls"].model, "cls", N_EXAMPLES)
    with pytest.raises(TypeError, match="model: expected a TinyTransformer, got str"):
        example_frame("m", "cls", 0)
    with pytest.raises(ValueError, match="task: expected one of"):
        example_frame(runs["cls"].model, "copy", 0)


def test_example_explorer_every_control(runs):
    models = {task: run.model for task, run in runs.items()}
    ex = example_explorer(models, task="phrases")
    slider = ex.controls["index"]
    assert (slider.min, slider.max) == (0, N_EXAMPLES - 1)
    images = set()
    for i in range(slider.min, slider.max + 1):
        slider.value = i
        assert ex.state.index == i
        n = sum(t != IGNORE for t in ex.state.targets)
        right = sum(p == t for p, t in zip(ex.state.predictions, ex.state.targets) if t != IGNORE)
        assert f"{right} of {n} right" in ex.readout.value
        assert "".join(f"<td>{t}</td>" for t in ex.state.tokens) in ex.readout.value
        images.add(ex.image.value)
    assert len(images) > N_EXAMPLES // 2
    for task in ex.controls["task"].options:
        ex.controls["task"].value = task
        assert ex.state.task == task
        assert f"<i>{TASKS[task].pattern}</i>" in ex.readout.value
    assert ex.full_redraws == 1  # built once; every move after that is blitted


def test_example_explorer_errors(runs):
    with pytest.raises(TypeError, match="models: expected a non-empty dict"):
        example_explorer({})
    with pytest.raises(ValueError, match="models: expected task names"):
        example_explorer({"mine": runs["cls"].model})
    with pytest.raises(TypeError, match=r"models\['cls'\]: expected a TinyTransformer"):
        example_explorer({"cls": 3})
    with pytest.raises(ValueError, match=r"index: expected an int in 0..31, got -1"):
        example_explorer({"cls": runs["cls"].model}, index=-1)


# --- LiveMap -------------------------------------------------------------------------------------------

def test_live_map_resizes_to_a_smaller_map_and_blanks_unused_labels():
    ax = new_figure(3, 3).add_subplot()
    m = LiveMap(ax, 4)
    assert m.set(np.eye(4), list("abcd"), None, "four") is False  # same size: no resize
    assert m.set(np.eye(3), ["a", "b", "c"], np.eye(3, dtype=bool), "three") is True
    assert m.cells.values.shape == (3, 3)
    assert ax.get_xlim() == (-0.5, 2.5) and ax.get_ylim() == (2.5, -0.5)
    assert m.labels.x_strings == ["a", "b", "c"] and m.labels.y_strings == ["a", "b", "c"]
    assert m.dots.get_offsets().shape == (3, 2) and m.title.text == "three"
    assert m.set(np.zeros((0, 0)), (), None, "") is True
    assert m.dots.get_offsets().shape == (0, 2) and m.labels.x_strings == []
    assert m.artists() == [m.cells, m.labels, m.dots, m.title]
    assert all(a.get_animated() for a in m.artists() if a is not m.dots)  # never in the background
    with pytest.raises(ValueError, match="weights: expected at most 4 x 4"):
        m.set(np.eye(5), list("abcde"), None, "")


# --- the pretrained model's explorer ---------------------------------------------------------------

from attn.trained import minilm as pretrained  # noqa: E402
from attn.widgets.trained import (  # noqa: E402
    MAX_TOKENS, head_view, pretrained_explorer, score_grids, split_sentence)


def test_split_sentence():
    assert split_sentence("小明 在 北京") == ("小明", "在", "北京")
    assert split_sentence("the quick fox | jumps | ") == ("the quick fox", "jumps")
    assert split_sentence("   ") == ()
    with pytest.raises(TypeError, match="text: expected a str, got list"):
        split_sentence(["a"])


def test_head_view_agrees_with_the_scores():
    v = head_view("The quick brown fox | jumps over | the lazy dog", 2, 9, "next")
    maps = pretrained.attention_maps(("The quick brown fox", "jumps over", "the lazy dog"))
    scores = head_scores(maps.weights, pretrained.sentence_pattern_masks(maps.sentence))
    np.testing.assert_allclose(v.map, maps.weights[1, 8].numpy())
    np.testing.assert_allclose(v.grid, scores["next"].numpy())
    assert v.scores == {k: pytest.approx(float(s[1, 8])) for k, s in scores.items()}
    assert v.tokens == maps.sentence.tokens and v.cut == 0
    assert (v.mask == pretrained.sentence_pattern_masks(maps.sentence)["next"].numpy()).all()


def test_head_view_cuts_long_sentences_and_handles_empty_text():
    long = head_view(" ".join(["word"] * 40), 1, 1, "previous")
    assert len(long.tokens) == MAX_TOKENS and long.cut == 42 - MAX_TOKENS
    assert long.map.shape == (MAX_TOKENS, MAX_TOKENS)
    empty = head_view("", 1, 1, "[CLS]")
    assert empty.tokens[0] == "[CLS]" and empty.tokens[-1] == "[SEP]"


def test_head_view_errors():
    with pytest.raises(ValueError, match=r"layer: expected an int in 1..6, got 0"):
        head_view("a b", 0, 1, "next")
    with pytest.raises(ValueError, match=r"head: expected an int in 1..12, got 13"):
        head_view("a b", 1, 13, "next")
    with pytest.raises(ValueError, match="pattern: expected one of"):
        head_view("a b", 1, 1, "diagonal")


def test_pretrained_explorer_every_control():
    ex = pretrained_explorer()
    c = ex.controls
    assert (c["layer"].min, c["layer"].max, c["head"].min, c["head"].max) == (1, 6, 1, 12)
    images = set()
    for layer in range(1, 7):
        c["layer"].value = layer
        assert ex.state.layer == layer and f"<b>Layer {layer}," in ex.readout.value
        images.add(ex.image.value)
    for head in range(1, 13):
        c["head"].value = head
        assert ex.state.head == head
        images.add(ex.image.value)
    assert len(images) == 6 + 12 - 1  # every (layer, head) shown is a different picture
    for pattern in pretrained.SENTENCE_PATTERNS:
        c["pattern"].value = pattern
        assert ex.state.pattern == pattern and f"Highest {pattern} score" in ex.readout.value
    for text in list(c["text"].options) + ["my own words here"]:
        c["text"].value = text
        assert ex.state.tokens[1:-1] == tuple(
            t for w in split_sentence(text) for t in pretrained.load_minilm()[1].tokenize(w))[:MAX_TOKENS - 2]
    assert "[UNK]" not in ex.readout.value
    c["text"].value = c["text"].options[0]  # the chapter's sentence
    assert "are [UNK]" in ex.readout.value
    c["head"].value = 3
    c["layer"].value = 1
    c["pattern"].value = "previous"
    assert ex.full_redraws == 1  # built once: not even a new sentence redraws everything
    assert ex.view.labels.x_strings == ex.view.labels.y_strings == list(ex.state.tokens)
    assert ex.view.cells.values.shape == (len(ex.state.tokens),) * 2
    assert ex.state.scores["previous"] > 0.95


def test_score_grids_draws_one_panel_per_pattern_and_marks_the_best():
    grids = {"a": torch.zeros(2, 3), "b": torch.eye(2, 3)}
    grids["a"][1, 2] = 0.7
    fig = score_grids(grids)
    axes = [ax for ax in fig.axes if ax.get_title() in grids]
    assert [ax.get_title() for ax in axes] == ["a", "b"]
    for ax, g in zip(axes, grids.values()):
        np.testing.assert_allclose(ax.images[0].get_array(), g.numpy())
        (marker,) = ax.lines
        row, col = divmod(int(g.argmax()), g.shape[1])
        assert list(marker.get_xdata()) == [col] and list(marker.get_ydata()) == [row]
    with pytest.raises(TypeError, match="scores: expected a non-empty dict"):
        score_grids({})
    with pytest.raises(ValueError, match=r"scores\['a'\]: expected 2 dims \(N, H\)"):
        score_grids({"a": torch.zeros(3)})


def test_attention_maps_returns_a_copy():
    words = ("a", "copy")
    first = pretrained.attention_maps(words)
    first.weights.zero_()
    assert pretrained.attention_maps(words).weights.sum() > 0
