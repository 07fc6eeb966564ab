"""attn.lessons.two_sources: notebook 04's task that needs two sources, and the error left on it."""
import pytest
import torch

from attn.lessons.two_sources import error_left, two_source_target


def test_error_left_and_the_two_source_target():
    x = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(2, 3, 4)  # (B, n, d)
    t = two_source_target(x)
    assert t.shape == (2, 2, 4)
    torch.testing.assert_close(t[1, 1], torch.cat([x[1, 1, :2], x[1, 0, 2:]]))  # word 2
    assert error_left(t, t) == 0.0
    assert error_left(t + 1, t) == pytest.approx(1 / t.var().item())
    assert error_left(torch.full_like(t, t.mean().item()), t) == pytest.approx(1 - 1 / t.numel())
    with pytest.raises(ValueError, match="target: expected the shape of output"):
        error_left(t, t[:, :1])
    with pytest.raises(TypeError, match="output: expected a floating-point tensor"):
        error_left(t.long(), t)
    with pytest.raises(ValueError, match="x: expected"):
        two_source_target(x[..., :3])
