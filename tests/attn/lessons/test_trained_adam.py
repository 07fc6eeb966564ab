"""``attn.lessons.trained.adam.Adam``, written out to keep ``torch._dynamo`` out of the notebooks'
runs, must make exactly the updates of ``torch.optim.Adam`` for both models trained with it."""
import pytest
import torch

from attn.lessons.trained.adam import Adam
from attn.lessons.trained.seq2seq import Seq2Seq, make_pairs
from attn.lessons.trained.tasks import make_batch
from attn.lessons.trained.tiny import build_model


def tiny_loss(model, g):
    b = make_batch("phrases", 16, generator=g)
    logits, _ = model(b.tokens)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 2), b.targets.reshape(-1))


def seq2seq_loss(model, g):
    source, target = make_pairs("reverse", 16, 8, generator=g)
    logits, _ = model(source, target)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 10), target.reshape(-1))


def seq2seq_model():
    torch.manual_seed(0)
    return Seq2Seq(8)


@pytest.mark.parametrize("build, loss_of", [(lambda: build_model("phrases"), tiny_loss),
                                            (seq2seq_model, seq2seq_loss)], ids=["tiny", "seq2seq"])
def test_adam_is_torch_optims_adam_bit_for_bit(build, loss_of):
    ours, theirs = build(), build()
    start = [t.clone() for t in ours.state_dict().values()]
    opt_ours = Adam(ours.parameters(), lr=1e-2)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    g_ours, g_theirs = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(30):
        for model, opt, g in ((ours, opt_ours, g_ours), (theirs, opt_theirs, g_theirs)):
            loss = loss_of(model, g)
            opt.zero_grad()
            loss.backward()
            opt.step()
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()):
        assert torch.equal(a, b)
    moved = [not torch.equal(a, b) for a, b in zip(ours.state_dict().values(), start)]
    assert sum(moved) >= len(moved) // 2  # the steps really changed the weights
