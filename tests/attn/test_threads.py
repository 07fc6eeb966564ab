"""attn.threads.torch_threads: the thread count inside the block, restored after it."""
import pytest
import torch

from attn.threads import torch_threads


@pytest.fixture
def two_threads():
    """Start from 2 threads (the suite may run with OMP_NUM_THREADS=1), end as we started."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 3])
def test_sets_then_restores(two_threads, n):
    with torch_threads(n):
        assert torch.get_num_threads() == n
    assert torch.get_num_threads() == 2


def test_restores_after_an_error(two_threads):
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == 2


def test_bad_counts():
    with pytest.raises(ValueError, match="n: expected a positive int, got 0"):
        with torch_threads(0):
            pass
    with pytest.raises(TypeError, match="n: expected a positive int"):
        with torch_threads(1.5):
            pass
