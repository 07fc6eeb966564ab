"""Checkers of notebook 08: right answers pass, wrong ones fail with a hint, None is handled,
and no message gives the expected answer away."""
import numpy as np
import pytest
import torch

from attn.exercises import nb08
from attn.lessons.trained.tasks import TASKS, held_out_batch
from attn.lessons.trained.tiny import load_trained, task_pattern_scores


def previous(L=6):
    i = torch.arange(L)
    return i[None, :] == i[:, None] - 1


def test_previous_token_mask():
    assert nb08.check_previous_token_mask(previous()).correct
    assert nb08.check_previous_token_mask(previous().int().tolist()).correct  # 0/1 lists too
    i = torch.arange(6)
    cases = {
        "diagonal": i[:, None] == i[None, :],
        "next token": previous().T,
        "row 0": previous() | (torch.arange(6)[:, None] + torch.arange(6)[None, :] == 0),
        "too many": previous() | previous().roll(1, 0),
    }
    for name, wrong in cases.items():
        fb = nb08.check_previous_token_mask(wrong)
        assert not fb.correct and fb.message, name
    assert "None" in nb08.check_previous_token_mask(None).message
    assert "shape (6, 6)" in nb08.check_previous_token_mask(torch.zeros(5, 5)).message
    assert "True/False" in nb08.check_previous_token_mask(torch.full((6, 6), 0.5)).message


def test_block_mask():
    seg = torch.tensor(nb08.EXERCISE_SEGMENTS)
    assert nb08.check_block_mask(seg[:, None] == seg[None, :]).correct
    assert not nb08.check_block_mask(torch.eye(10, dtype=torch.bool)).correct
    assert "symmetric" in nb08.check_block_mask(torch.ones(10, 10).tril().bool()).message
    no_diag = (seg[:, None] == seg[None, :]) & ~torch.eye(10, dtype=torch.bool)
    assert "diagonal" in nb08.check_block_mask(no_diag).message
    assert not nb08.check_block_mask(None).correct


def test_vertical_score():
    w = nb08.exercise_map()
    assert w.shape == (8, 2, 10, 10)
    w[:] = 0  # a copy: the checker's data is untouched
    w = nb08.exercise_map()
    right = w[..., 0].mean(dim=(0, 2))
    assert nb08.check_vertical_score(right).correct
    assert nb08.check_vertical_score(right.tolist()).correct
    assert "sum over the rows" in nb08.check_vertical_score(w[..., 0].sum(-1).mean(0)).message
    assert not nb08.check_vertical_score(w[..., 1].mean(dim=(0, 2))).correct
    assert "between 0 and 1" in nb08.check_vertical_score(right + 2).message
    assert "shape (2,)" in nb08.check_vertical_score(right[0]).message
    assert "None" in nb08.check_vertical_score(None).message


def test_mystery_heads_and_names():
    maps = nb08.mystery_heads()
    assert maps.shape == (4, 10, 10)
    torch.testing.assert_close(maps.sum(-1), torch.ones(4, 10))
    truth = [TASKS[t].pattern for t in nb08.MYSTERY_TASKS]
    assert sorted(truth) == sorted(["diagonal", "anti-diagonal", "vertical", "block"])
    assert nb08.check_pattern_names(truth).correct
    assert nb08.check_pattern_names([t.upper() for t in truth]).correct
    fb = nb08.check_pattern_names(truth[1:] + truth[:1])
    assert not fb.correct and "0 of 4 right" in fb.message
    assert "not among" in nb08.check_pattern_names(["diagonal", "stripes", "block", "vertical"]).message
    assert "four names" in nb08.check_pattern_names(["block"]).message
    assert "four names" in nb08.check_pattern_names("diagonal").message
    assert "None" in nb08.check_pattern_names(None).message


def test_each_mystery_head_is_its_models_clearest_head():
    maps = nb08.mystery_heads()
    for k, task in enumerate(nb08.MYSTERY_TASKS):
        model = load_trained(task)
        best = int(task_pattern_scores(model, task).argmax())
        with torch.no_grad():
            _, w = model(held_out_batch(task, 1).tokens)
        torch.testing.assert_close(maps[k], w[0, best])


@pytest.mark.parametrize("check, answer", [
    (nb08.check_previous_token_mask, torch.zeros(6, 6, dtype=torch.bool)),
    (nb08.check_block_mask, torch.zeros(10, 10, dtype=torch.bool)),
    (nb08.check_vertical_score, torch.zeros(2)),
    (nb08.check_pattern_names, ["diagonal"] * 4),
])
def test_messages_do_not_give_the_answer_away(check, answer):
    fb = check(answer)
    assert not fb.correct
    w = nb08.exercise_map()
    right = w[..., 0].mean(dim=(0, 2))
    for value in right.tolist():
        assert f"{value:.2f}" not in fb.message
    assert "anti-diagonal, vertical" not in fb.message
    assert repr(fb).startswith("❌ Not yet.")
    assert np.isfinite(len(fb._repr_html_()))
