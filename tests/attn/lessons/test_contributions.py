"""attn.lessons.contributions: the decomposition output = sum_h sum_j a_hij f_hj (+ bias) holds on real
layers, norm-weighted shares are shares, and the recorded inputs are what the layers saw."""
import pytest
import torch

from attn import MultiHeadAttention, causal_mask
from attn.lessons.contributions import attention_inputs, norm_weighted, value_vectors
from attn.lessons.trained import tiny


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("E,H", [(8, 2), (12, 3), (6, 1)])
@pytest.mark.parametrize("masked", [False, True])
def test_weights_times_value_vectors_rebuild_the_output(E, H, bias, masked):
    torch.manual_seed(E + H)
    mha = MultiHeadAttention(E, H, bias=bias).double()
    x = torch.randn(2, 5, E, dtype=torch.float64)
    mask = causal_mask(5, 5) if masked else None
    with torch.no_grad():
        out, w = mha(x, mask=mask)  # (B, L, E), (B, H, L, S)
        f = value_vectors(mha, x)  # (B, H, S, E)
    rebuilt = (w[..., None] * f[:, :, None]).sum(dim=(1, 3))  # (B, H, L, S, E) -> (B, L, E)
    if bias:
        rebuilt = rebuilt + mha.W_o.bias
    torch.testing.assert_close(rebuilt, out, atol=1e-12, rtol=0)


def test_value_vectors_of_each_head_use_their_own_block_of_W_o():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        f = value_vectors(mha, x)
        v = mha.split_heads(mha.W_v(x))  # (1, H, S, D)
        for h in range(2):
            block = mha.W_o.weight[:, h * 4:(h + 1) * 4]  # (E, D)
            torch.testing.assert_close(f[0, h], v[0, h] @ block.T)


def test_norm_weighted_rows_are_shares():
    g = torch.Generator().manual_seed(1)
    w = torch.softmax(torch.randn(2, 3, 4, 5, generator=g), -1)  # (B, H, L, S)
    norms = torch.rand(2, 3, 5, generator=g)  # (B, H, S)
    s = norm_weighted(w, norms)
    torch.testing.assert_close(s.sum(-1), torch.ones(2, 3, 4))
    # equal norms change nothing; a key with norm 0 gets no share
    torch.testing.assert_close(norm_weighted(w, torch.ones(2, 3, 5)), w)
    norms[..., 0] = 0
    assert (norm_weighted(w, norms)[..., 0] == 0).all()


def test_norm_weighted_keeps_empty_rows_zero():
    w = torch.zeros(1, 2, 3)  # (H, L, S): no query attends to anything
    s = norm_weighted(w, torch.ones(1, 3))
    assert torch.equal(s, torch.zeros(1, 2, 3))


def test_attention_inputs_are_what_the_layer_saw():
    model = tiny.build_model("cls")
    tokens = torch.randint(0, 4, (3, 10), generator=torch.Generator().manual_seed(0))
    (x,) = attention_inputs(model, tokens)
    expected = model.tok(tokens) + model.pos(torch.arange(10))  # TinyTransformer's attention input
    torch.testing.assert_close(x, expected.detach())


def test_attention_inputs_reads_keyword_and_cross_attention_values():
    class Cross(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = MultiHeadAttention(4, 2)

        def forward(self, q, kv):
            return self.attn(q, value=kv, key=kv)

    m = Cross()
    q, kv = torch.randn(1, 2, 4), torch.randn(1, 3, 4)
    (seen,) = attention_inputs(m, q, kv)
    assert torch.equal(seen, kv)


def test_errors_name_the_argument():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match="mha: expected an attn.MultiHeadAttention"):
        value_vectors(torch.nn.Linear(8, 8), torch.randn(1, 2, 8))
    with pytest.raises(ValueError, match="value: expected last dim E=8"):
        value_vectors(mha, torch.randn(1, 2, 6))
    with pytest.raises(ValueError, match="value: expected 3 dims"):
        value_vectors(mha, torch.randn(2, 8))
    with pytest.raises(ValueError, match=r"norms: expected shape \(\.\.\., H, S\)"):
        norm_weighted(torch.rand(2, 3, 4), torch.rand(2, 3))
    with pytest.raises(ValueError, match="norms: expected sizes >= 0"):
        norm_weighted(torch.rand(2, 3, 4), -torch.ones(2, 4))
    with pytest.raises(TypeError, match="model: expected an nn.Module"):
        attention_inputs(lambda x: x, torch.zeros(1))
    with pytest.raises(ValueError, match="model: expected at least one attn.MultiHeadAttention"):
        attention_inputs(torch.nn.Linear(2, 2), torch.zeros(1, 2))
