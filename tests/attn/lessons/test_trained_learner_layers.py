"""The learner's own layer from notebook 05, trained: 08's tiny transformer and 10's reverser
built with each learner-style class (tests/_learner_classes.py), with the seed and the budget
the notebooks use, reach what the notebooks print for the package's layer.

08 prints, for the package's layer: held-out accuracy > 0.95 (solved) and the best head's
pattern score > 0.8; 10 prints: at least 99% of the digits right when the reverser writes one
digit at a time, and a mean cross-attention weight on the mirrored source position above one
half. The same claims are asserted here for every class (the pattern ones for the class that
returns its weights: a layer that returns its output only trains as well, with no maps).
About 4 s of training per class, one thread.
"""
import pytest
import torch

from attn.exercises.nb05 import check_multi_head_attention
from attn.lessons.learner_layer import LearnerAttention
from attn.threads import torch_threads
from attn.lessons.trained.seq2seq import greedy_decode, make_pairs, train_seq2seq
from attn.lessons.trained.tasks import TASKS
from attn.lessons.trained.tiny import accuracy, held_out_maps, save_run, task_pattern_scores, train_tiny

from _learner_classes import LEARNER_CLASSES, ChapterMultiHeadAttention

SOLVED = 0.95  # 08: "solved (held-out accuracy > 0.95)"
PATTERN = 0.8  # 08: "block pattern (best head's score > 0.8)"
REVERSED = 0.99  # 10: "digits right when it writes one digit at a time, at least 99%"
ALIGNED = 0.5  # 10: "mean weight on the mirrored source position: trained, above one half"

FORMS = list(LEARNER_CLASSES)


@pytest.fixture(scope="module", params=FORMS)
def trained(request):
    """Every task of 08 and 10's reverser, trained with one learner-style class (08's and
    10's seeds and budgets: train_tiny's and train_seq2seq's defaults, 10's 150 steps of 64)."""
    cls = LEARNER_CLASSES[request.param]
    with torch_threads(1):
        tiny = {task: train_tiny(task, attention=cls) for task in TASKS}
        reverser = train_seq2seq("reverse", steps=150, batch_size=64, attention=cls)
    return cls, tiny, reverser


def test_each_learner_style_class_passes_the_checker_of_05():
    for cls in LEARNER_CLASSES.values():
        feedback = check_multi_head_attention(cls)
        assert feedback.correct, f"{cls.__name__}: {feedback}"


@pytest.mark.parametrize("task", list(TASKS))
def test_the_tiny_transformer_solves_every_task_with_the_learners_layer(trained, task):
    cls, tiny, _ = trained
    run = tiny[task]
    assert isinstance(run.model.attn, LearnerAttention) and isinstance(run.model.attn.layer, cls)
    assert accuracy(run.model, task) > SOLVED, f"{cls.__name__} on {task}: {accuracy(run.model, task):.3f}"
    assert run.accuracies[-1].item() == pytest.approx(accuracy(run.model, task))


@pytest.mark.parametrize("task", list(TASKS))
def test_the_learners_heads_form_the_tasks_pattern(trained, task):
    cls, tiny, _ = trained
    run = tiny[task]
    if cls is not ChapterMultiHeadAttention:  # returns its output only: nothing to draw
        assert run.maps is None and run.scores is None and run.untrained_scores is None
        with pytest.raises(ValueError, match="model: expected an attention layer that returns its weights"):
            held_out_maps(run.model, task)
        return
    scores = task_pattern_scores(run.model, task)
    torch.testing.assert_close(scores, run.scores[-1])
    assert scores.max() > PATTERN, f"{task}: best head {scores.max():.2f}"
    assert scores.max() > run.untrained_scores.max() + 0.4
    assert run.maps.shape == (len(run.steps), 2, 10, 10)


def test_the_reverser_learns_to_reverse_with_the_learners_layer(trained):
    cls, _, reverser = trained
    assert isinstance(reverser.model.cross_attn, LearnerAttention)
    assert reverser.accuracy >= REVERSED, f"{cls.__name__}: {reverser.accuracy:.4f}"
    source, target = make_pairs("reverse", 256, 8, generator=torch.Generator().manual_seed(6))
    digits, cross = greedy_decode(reverser.model, source)  # cross: (B, H, L, S) or None
    assert (digits == target).double().mean().item() >= REVERSED
    if cls is ChapterMultiHeadAttention:  # its cross-attention, through [decoder; memory]
        on_mirror = cross[:, 0].flip(-1).diagonal(dim1=-2, dim2=-1)  # weight on source position 7 - t
        assert on_mirror.mean().item() > ALIGNED
    else:
        assert cross is None


def test_only_a_run_of_the_packages_layer_can_be_saved(trained, tmp_path):
    """load_run builds the package's layer: a run of another class is refused, not misread."""
    cls, tiny, _ = trained
    with pytest.raises(ValueError, match=f"run: expected a run of the course's MultiHeadAttention "
                                         f"\\(load_run builds that\\), got one of {cls.__name__}"):
        save_run(tiny["cls"], tmp_path)
    assert not list(tmp_path.iterdir())
