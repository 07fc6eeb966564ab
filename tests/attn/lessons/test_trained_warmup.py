"""attn.lessons.trained.warmup: the verdicts notebook 12 prints about post-LN, pre-LN and a warm-up.

The notebook prints bounds, not losses: this test keeps them true (the notebook's settings and
seed), and the warm-up's schedule is checked on its own.
"""
import math

import pytest

from attn.lessons.trained import warmup
from attn import TransformerBlock
from attn.lessons.trained.blocks import build_block_model, task_batch, train_block_model, warmup_lr

CHANCE = 1 / 8  # the reverse task: 8 digits


@pytest.fixture(scope="module")
def runs():
    return warmup.warmup_runs()


def test_post_ln_without_a_warm_up_stays_at_chance_and_the_other_three_learn(runs):
    """The notebook's verdicts: below 0.3 for post-LN without a warm-up, its loss stuck at ln 8;
    above 0.9 for the other three."""
    by = {(r.placement, r.warmup): r for r in runs}
    assert list(by) == [("post-LN", 0), ("post-LN", warmup.WARMUP), ("pre-LN", 0), ("pre-LN", warmup.WARMUP)]
    assert by["post-LN", 0].accuracy < 0.3
    assert abs(by["post-LN", 0].accuracy - CHANCE) < 0.05  # not a slow learner: it learned nothing
    assert max(abs(loss - math.log(8)) for loss in by["post-LN", 0].losses[-20:]) < 0.1  # a uniform guess's loss
    for key in (("post-LN", warmup.WARMUP), ("pre-LN", 0), ("pre-LN", warmup.WARMUP)):
        assert by[key].accuracy > 0.9, key
    assert all(len(r.losses) == warmup.STEPS for r in runs)


def test_the_warm_up_rises_in_a_straight_line_to_the_full_rate():
    assert [warmup_lr(t, 1.0, 4) for t in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_lr(0, 0.01, 0) == 0.01


def test_no_warm_up_is_the_training_of_before():
    """warmup=0 changes nothing: the same losses as a run that never mentions it."""
    def losses(**kw):
        model = build_block_model(TransformerBlock, 8, 8, num_blocks=1, seed=3)
        return train_block_model(model, task_batch("reverse"), steps=5, **kw)

    assert losses() == losses(warmup=0)
    assert losses() != losses(warmup=5)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"warmup": 0}, ValueError, r"^warmup: expected an int in 1\.\.100, got 0"),
    ({"warmup": 101}, ValueError, "warmup"),
    ({"depth": 0}, ValueError, "depth"),
    ({"lr": -1.0}, ValueError, "lr"),
    ({"seed": 1.5}, TypeError, "seed"),
])
def test_bad_input_names_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        warmup.warmup_runs(**kwargs)


def test_at_four_blocks_post_ln_learns_without_a_warm_up_too():
    """What the module says of the depth: the difference needs the deeper stack."""
    post = warmup.warmup_runs(depth=4)[0]
    assert (post.placement, post.warmup) == ("post-LN", 0) and post.accuracy > 0.9
