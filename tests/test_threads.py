"""attn.threads.torch_threads: the thread count inside the block, restored after it."""
import pytest
import torch

from attn.threads import torch_threads


@pytest.mark.parametrize("n", [1, 2, 3])
def test_sets_then_restores(n):
    before = torch.get_num_threads()
    with torch_threads(n):
        assert torch.get_num_threads() == n
    assert torch.get_num_threads() == before


def test_restores_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before


def test_bad_counts():
    with pytest.raises(ValueError, match="n: expected a positive int, got 0"):
        with torch_threads(0):
            pass
    with pytest.raises(TypeError, match="n: expected a positive int"):
        with torch_threads(1.5):
            pass
