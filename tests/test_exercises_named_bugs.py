"""The checkers name each classic confusion of this field by what it does (issue 32 §2).

Notebook 12's LayerNorm exercise answered by a library norm hears that the checker switched it off.
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn.exercises import nb12
from attn.language import language, tr


def _layer_norm_by(norm):
    """A LayerNorm exercise answered by a library function or module."""
    def answer(x, gain, bias, eps=1e-5):
        E = x.shape[-1]
        return {
            "F.layer_norm": lambda: F.layer_norm(x, (E,), gain, bias, eps),
            "torch.layer_norm": lambda: torch.layer_norm(x, (E,), gain, bias, eps),
            "nn.LayerNorm": lambda: nn.LayerNorm(E, eps=eps, elementwise_affine=False).double()(x) * gain + bias,
            "F.group_norm": lambda: F.group_norm(x.reshape(-1, E), 1, eps=eps).reshape(x.shape) * gain + bias,
            "nn.GroupNorm": lambda: nn.GroupNorm(1, E, eps=eps, affine=False)(x.reshape(-1, E)).reshape(x.shape)
            * gain + bias,
            "F.instance_norm": lambda: F.instance_norm(x.reshape(1, -1, E), eps=eps).reshape(x.shape) * gain + bias,
            "F.batch_norm": lambda: F.batch_norm(x.reshape(-1, E).T, None, None, training=True,
                                                 eps=eps).T.reshape(x.shape) * gain + bias,
        }[norm]()
    return answer


NORMS = ["F.layer_norm", "torch.layer_norm", "nn.LayerNorm", "F.group_norm", "nn.GroupNorm",
         "F.instance_norm", "F.batch_norm"]


@pytest.mark.parametrize("code", ["en", "zh"])
@pytest.mark.parametrize("norm", NORMS)
def test_a_library_norm_is_named_in_the_layer_norm_exercise(code, norm):
    answer = _layer_norm_by(norm)
    x, gain, bias, eps = torch.randn(2, 3, 8, dtype=torch.float64), torch.rand(8, dtype=torch.float64), \
        torch.randn(8, dtype=torch.float64), 1e-5
    torch.testing.assert_close(answer(x, gain, bias, eps), F.layer_norm(x, (8,), gain, bias, eps))  # it is one
    with language(code):
        fb = nb12.check_layer_norm(answer)
        assert not fb.correct
        named = tr("Your function calls a library norm (F.layer_norm or nn.LayerNorm, or F.group_norm, "
                   "F.instance_norm or F.batch_norm, which give a LayerNorm when called on the right dims): "
                   "the checker switches them off. Write the steps out: the mean, the variance, the "
                   "division, the gain and the bias.")
        assert fb.message == named, fb.message
        if code == "zh":
            assert "层归一化" in fb.message
    assert F.layer_norm(x, (8,)).shape == x.shape  # the library is back afterwards
