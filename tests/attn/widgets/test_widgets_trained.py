"""Explorers of trained heads: their pure functions, then every control across its range."""
import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, near, pixels

from attn.lessons.pattern_scores import head_scores, pattern_mask, pattern_score
from attn.lessons.trained.tasks import IGNORE, TASKS, held_out_batch
from attn.lessons.trained.tiny import load_run, train_tiny
from attn.widgets.trained import (
    N_EXAMPLES,
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
    curves = ex.fig.axes[-1]
    before, maps_before = [box(pixels(ex), ax) for ax in ex.fig.axes], ex.state.maps
    maps_moved = 0
    for step in range(slider.min + slider.step, slider.max + 1, slider.step):
        slider.value = step
        assert ex.state.step == step and ex.state.task == "cls"
        assert f"Step {step}:" in ex.readout.value
        now = [box(pixels(ex), ax) for ax in ex.fig.axes]
        assert changed(before[-1], now[-1]), step  # the step's marker on the curves moves
        for h, m in enumerate(ex.maps):  # a head's map moves when its weights move visibly
            np.testing.assert_allclose(m.cells.values, ex.state.maps[h])
            if np.abs(ex.state.maps[h] - maps_before[h]).max() > 0.01:
                assert changed(before[h], now[h]), (step, h)
                maps_moved += 1
        before, maps_before = now, ex.state.maps
    assert curves is ex.fig.axes[-1]
    assert maps_moved >= 8  # the heads form over the first 50 steps
    slider.value = 0
    early = ex.state.scores.max()
    slider.value = 200
    assert ex.state.scores.max() > early + 0.4


def test_training_explorer_task_dropdown_covers_every_run(runs):
    ex = training_explorer(runs, step=200)
    before = pixels(ex)
    for _label, task in list(ex.controls["task"].options)[1:]:  # (label, value): the task's name
        ex.controls["task"].value = task
        assert ex.state.task == task and ex.state.pattern == TASKS[task].pattern
        assert f"<b>{task}</b>" in ex.readout.value and TASKS[task].pattern in ex.readout.value
        now = pixels(ex)
        for m in ex.maps:  # each head's map (its cells and its pattern's dots) is the new task's
            assert changed(box(before, m.ax), box(now, m.ax)), task
            np.testing.assert_array_equal(m.cells.marks, ex.state.mask)
        before = now
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
    before = pixels(ex)
    for i in range(slider.min + 1, slider.max + 1):
        slider.value = i
        assert ex.state.index == i
        n = sum(t != IGNORE for t in ex.state.targets)
        right = sum(p == t for p, t in zip(ex.state.predictions, ex.state.targets) if t != IGNORE)
        assert f"{right} of {n} right" in ex.readout.value
        assert "".join(f"<td>{t}</td>" for t in ex.state.tokens) in ex.readout.value
        now = pixels(ex)
        assert all(changed(box(before, m.ax), box(now, m.ax)) for m in ex.maps), i  # a new example
        before = now
    for _label, task in ex.controls["task"].options:
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


# --- the maps ---------------------------------------------------------------------------------------

def test_training_maps_show_the_weights_with_dots_on_the_pattern(runs):
    ex = training_explorer(runs, task="reverse", step=200)
    px, f = pixels(ex), ex.state
    L = f.maps.shape[-1]
    for h, m in enumerate(ex.maps):
        for i in range(L):
            for j in range(L):
                c = cell(px, m.ax, L, L, i, j)
                want = np.array(m.cells.cmap(f.maps[h, i, j], bytes=True)[:3])
                assert np.abs(c[1, 1] - want).max() <= 2, (h, i, j)  # a corner: the cell's colour
                assert near(c, (255, 127, 14), tol=30).any() == f.mask[i, j], (h, i, j)  # the dots
    assert ex.maps[0].labels.y_strings == list(f.tokens) and ex.maps[1].labels.y_strings == []


# --- the pretrained model's explorer ---------------------------------------------------------------

from attn.lessons.trained import minilm as pretrained  # noqa: E402
from attn.widgets.trained import (  # noqa: E402
    MAX_TOKENS, head_view, pretrained_explorer, score_grids, split_sentence)

ORANGE = (255, 127, 14)  # the frame on the chosen head of the grid


def _framed_heads(ex) -> list[tuple[int, int]]:
    """(layer, head), from 1, of the grid cells that carry the orange frame, read from the picture."""
    px, ax = pixels(ex), ex.maps["grid"].ax
    N, H = ex.state.grid.shape
    return [(n + 1, h + 1) for n in range(N) for h in range(H)
            if near(cell(px, ax, N, H, n, h), ORANGE, tol=30).mean() > 0.1]


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
    head_map = ex.maps["head"].ax
    assert "[UNK]" not in ex.state.tokens  # it opens on an English sentence (the model's vocabulary)
    assert _framed_heads(ex) == [(1, 1)]
    before = pixels(ex)
    for layer in range(2, 7):
        c["layer"].value = layer
        assert ex.state.layer == layer and f"<b>Layer {layer}," in ex.readout.value
        assert _framed_heads(ex) == [(layer, 1)]  # the frame follows the chosen layer
        now = pixels(ex)
        assert changed(box(before, head_map), box(now, head_map)), layer  # and the map is that head's
        before = now
    for head in range(2, 13):
        c["head"].value = head
        assert ex.state.head == head
        assert _framed_heads(ex) == [(6, head)]
        now = pixels(ex)
        assert changed(box(before, head_map), box(now, head_map)), head
        before = now
    grid = ex.maps["grid"].ax
    for pattern in pretrained.SENTENCE_PATTERNS:
        if pattern == c["pattern"].value:
            continue
        c["pattern"].value = pattern
        now = pixels(ex)
        assert changed(box(before, grid), box(now, grid)), pattern  # that pattern's scores
        np.testing.assert_array_equal(ex.maps["head"].cells.marks, ex.state.mask)  # its cells
        before = now
        assert ex.state.pattern == pattern and f"Highest {pattern} score" in ex.readout.value
    for text in list(c["example"].options) + ["my own words here"]:
        c["text"].value = text
        assert ex.state.tokens[1:-1] == tuple(
            t for w in split_sentence(text) for t in pretrained.load_minilm()[1].tokenize(w))[:MAX_TOKENS - 2]
    assert "[UNK]" not in ex.readout.value
    c["example"].value = c["example"].options[0]  # the chapter's sentence, through the drop-down
    assert "are [UNK]" in ex.readout.value
    c["head"].value = 3
    c["layer"].value = 1
    c["pattern"].value = "previous"
    assert ex.full_redraws == 1  # built once: not even a new sentence redraws everything
    view = ex.maps["head"]
    assert view.labels.x_strings == view.labels.y_strings == list(ex.state.tokens)
    assert view.cells.values.shape == (len(ex.state.tokens),) * 2
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
