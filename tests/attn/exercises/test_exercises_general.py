"""attn.exercises.general: the checkers a lesson calls with its exercise's setting."""
from __future__ import annotations

import pytest
import torch

from attn.exercises import general
from attn.language import language
from attn.masks import causal_mask


def test_the_causal_mask_is_right_and_its_count_is_told():
    reply = general.check_mask(causal_mask(6), kind="causal", length=6)
    assert reply.correct and "21 of the 36" in reply.message


@pytest.mark.parametrize("answer,named", [
    (causal_mask(6).T, "rows and columns swapped"),
    (causal_mask(6) & ~torch.eye(6, dtype=torch.bool), "the diagonal is True"),
    (torch.ones(6, 6, dtype=torch.bool), "36 cells are True"),
    (None, "still None"),
    (torch.zeros(5, 5), "shape"),
])
def test_each_mistake_is_named_and_the_mask_never_shown(answer, named):
    reply = general.check_mask(answer, kind="causal", length=6)
    assert not reply.correct and named in reply.message, reply.message
    assert "[[" not in reply.message and "True, False" not in reply.message


def test_no_mask_means_every_cell():
    assert general.check_mask(torch.ones(4, 4), kind="none", length=4).correct
    assert not general.check_mask(causal_mask(4), kind="none", length=4).correct


def test_a_setting_it_does_not_know_is_the_notebooks_mistake():
    with pytest.raises(ValueError, match="kind: expected one of"):
        general.check_mask(causal_mask(4), kind="diagonal", length=4)


def test_the_replies_are_in_chinese_in_a_chinese_notebook():
    with language("zh"):
        reply = general.check_mask(causal_mask(6).T, kind="causal", length=6)
    assert "行和列对调" in repr(reply) and "rows" not in repr(reply), repr(reply)
