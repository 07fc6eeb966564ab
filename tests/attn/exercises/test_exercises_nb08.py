"""Checkers of notebook 08: right answers pass, wrong ones fail with a hint, None is handled,
and no message gives the expected answer away. A test that takes ``language`` runs in English and
in Chinese, and hears each reply in both (tests/_replies.py)."""
import numpy as np
import pytest
import torch

from attn.exercises import nb08
from attn.lessons.trained.tasks import TASKS, held_out_batch
from attn.lessons.trained.tiny import load_trained, task_pattern_scores

from _replies import reply, says


def previous(L=6):
    i = torch.arange(L)
    return i[None, :] == i[:, None] - 1


def test_previous_token_mask(language):
    check = nb08.check_previous_token_mask
    assert reply(check, previous()).correct
    assert reply(check, previous().int().tolist()).correct  # 0/1 lists too
    i = torch.arange(6)
    cases = {
        "diagonal": (i[:, None] == i[None, :], "some diagonal cells (j = i) are True"),
        "next token": (previous().T, "that marks j = i + 1, the next token"),
        "row 0": (previous() | (torch.arange(6)[:, None] + torch.arange(6)[None, :] == 0),
                  "some diagonal cells (j = i) are True"),  # its cell (0, 0) is on the diagonal
        "too many": (previous() | previous().roll(1, 0), "row 0 is the first token"),  # (0, 4) among them
        "none": (torch.zeros(6, 6, dtype=torch.bool), "a previous-token head has one per"),
        "elsewhere": ((i[None, :] == i[:, None] - 2) | ((i[:, None] == 1) & (i[None, :] == 5)),
                      "mark (i, j) where j = i - 1"),
    }
    for name, (wrong, hint) in cases.items():
        fb = reply(check, wrong)
        assert not fb.correct and says(fb, hint), (name, fb.message)
    assert says(reply(check, None), "is still None")
    assert says(reply(check, torch.zeros(5, 5)), "should have shape {shape}", shape=(6, 6))
    assert says(reply(check, torch.full((6, 6), 0.5)), "should hold only True/False")


def test_block_mask(language):
    seg = torch.tensor(nb08.EXERCISE_SEGMENTS)
    check = nb08.check_block_mask
    assert reply(check, seg[:, None] == seg[None, :]).correct
    assert not reply(check, torch.eye(10, dtype=torch.bool)).correct
    assert says(reply(check, torch.ones(10, 10).tril().bool()), "sharing a phrase is symmetric")
    no_diag = (seg[:, None] == seg[None, :]) & ~torch.eye(10, dtype=torch.bool)
    assert says(reply(check, no_diag), "the diagonal should be all True")
    assert not reply(check, None).correct


def test_vertical_score(language):
    w = nb08.exercise_map()
    assert w.shape == (8, 2, 10, 10)
    w[:] = 0  # a copy: the checker's data is untouched
    w = nb08.exercise_map()
    right = w[..., 0].mean(dim=(0, 2))
    check = nb08.check_vertical_score
    assert reply(check, right).correct
    assert reply(check, right.tolist()).correct
    assert says(reply(check, w[..., 0].sum(-1).mean(0)), "that is a sum over the rows")
    assert not reply(check, w[..., 1].mean(dim=(0, 2))).correct
    assert says(reply(check, right + 2), "between 0 and 1")
    assert says(reply(check, torch.full((2,), 3.0)), "between 0 and 1")
    assert says(reply(check, right[0]), "should have shape {shape}", shape=(2,))
    assert says(reply(check, None), "answer is still None")


def test_mystery_heads():
    maps = nb08.mystery_heads()
    assert maps.shape == (4, 10, 10)
    torch.testing.assert_close(maps.sum(-1), torch.ones(4, 10))
    truth = [TASKS[t].pattern for t in nb08.MYSTERY_TASKS]
    assert sorted(truth) == sorted(["diagonal", "anti-diagonal", "vertical", "block"])


def test_pattern_names(language):
    truth = [TASKS[t].pattern for t in nb08.MYSTERY_TASKS]
    check = nb08.check_pattern_names
    assert reply(check, truth).correct
    assert reply(check, [t.upper() for t in truth]).correct
    fb = reply(check, truth[1:] + truth[:1])
    assert not fb.correct and says(fb, "{right} of 4 right", right=0)
    assert says(reply(check, ["diagonal", "stripes", "block", "vertical"]), "not among the pattern names")
    assert says(reply(check, ["block"]), "a list of four names")
    assert says(reply(check, "diagonal"), "a list of four names")
    assert says(reply(check, None), "answer is still None")


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
