"""attn.TransformerBlock against torch.nn.TransformerEncoderLayer with copied weights."""
import itertools

import pytest
import torch
from torch import nn

from attn import TransformerBlock, causal_mask, padding_mask, to_torch_mha_mask

TOL = 1e-12
E, H, F, B, L = 8, 2, 24, 3, 5
LENGTHS = [5, 3, 2]  # the padding mask's sequences: no query is left without a key


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def torch_layer(norm_first, activation="relu", dropout=0.0, seed=0, eps=1e-5):
    """A float64 nn.TransformerEncoderLayer whose every parameter matters (torch starts the
    biases at 0 and the norms at 1, 0)."""
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=dropout, activation=activation,
                                       batch_first=True, norm_first=norm_first,
                                       layer_norm_eps=eps, dtype=torch.float64)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return layer


def masks():
    """(the package's mask, torch's keyword arguments), True = may attend vs True = blocked."""
    pad = padding_mask(LENGTHS, L)  # (B, 1, 1, L)
    return {
        "none": (None, {}),
        "causal": (causal_mask(L), {"src_mask": to_torch_mha_mask(causal_mask(L))}),
        "padding": (pad, {"src_key_padding_mask": to_torch_mha_mask(pad[:, 0, 0])}),  # (B, L)
    }


CASES = list(itertools.product([False, True], ["relu", "gelu"], ["none", "causal", "padding"]))


@pytest.mark.parametrize("grad", [False, True], ids=["torch-fast-path", "torch-python-path"])
@pytest.mark.parametrize("norm_first, activation, mask_name", CASES)
def test_equals_torch_in_eval_mode(norm_first, activation, mask_name, grad):
    layer = torch_layer(norm_first, activation, dropout=0.1).eval()  # dropout off in eval
    block = TransformerBlock.from_torch(layer)
    assert not block.training and block.norm_first is norm_first
    x = rand(B, L, E, seed=1)
    mask, torch_kwargs = masks()[mask_name]
    with torch.set_grad_enabled(grad):  # without grad, torch runs its fused kernel
        expected = layer(x, **torch_kwargs)
        out = block(x, mask)
    assert out.shape == (B, L, E)
    torch.testing.assert_close(out, expected, atol=TOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_causal_flag_is_the_causal_mask_and_combines_with_padding(norm_first):
    layer = torch_layer(norm_first).eval()
    block = TransformerBlock.from_torch(layer)
    x = rand(B, L, E, seed=2)
    torch.testing.assert_close(block(x, causal=True), block(x, causal_mask(L)), atol=TOL, rtol=0)
    pad = padding_mask(LENGTHS, L)
    expected = layer(x, src_mask=to_torch_mha_mask(causal_mask(L)),
                     src_key_padding_mask=to_torch_mha_mask(pad[:, 0, 0]))
    torch.testing.assert_close(block(x, pad, causal=True), expected, atol=TOL, rtol=0)


def test_the_two_placements_are_the_formulas():
    """post-LN: x = norm1(x + sa(x)); x = norm2(x + ff(x)). pre-LN: x = x + sa(norm1(x));
    x = x + ff(norm2(x)). Written out with the block's own parts."""
    torch.manual_seed(0)
    x = rand(B, L, E, seed=3)
    for norm_first in (False, True):
        block = TransformerBlock(E, H, F, norm_first=norm_first).double().eval()
        sa = lambda t: block.self_attn(t)[0]  # noqa: E731
        ff = lambda t: block.linear2(torch.relu(block.linear1(t)))  # noqa: E731
        if norm_first:
            h = x + sa(block.norm1(x))
            expected = h + ff(block.norm2(h))
        else:
            h = block.norm1(x + sa(x))
            expected = block.norm2(h + ff(h))
        torch.testing.assert_close(block(x), expected, atol=TOL, rtol=0)


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_a_grouped_query_block_is_its_formula_with_a_grouped_query_layer(num_kv_heads):
    torch.manual_seed(0)
    block = TransformerBlock(E, H, F, num_kv_heads=num_kv_heads).double().eval()
    sa = block.self_attn
    assert (sa.num_heads, sa.num_kv_heads) == (H, num_kv_heads)
    assert sa.W_k.weight.shape == sa.W_v.weight.shape == (num_kv_heads * E // H, E)
    x = rand(B, L, E, seed=3)
    pad = padding_mask(LENGTHS, L)
    h = x + sa(block.norm1(x), mask=pad, causal=True)[0]  # pre-LN, with the layer's own forward
    expected = h + block.linear2(torch.relu(block.linear1(block.norm2(h))))
    torch.testing.assert_close(block(x, pad, causal=True), expected, atol=TOL, rtol=0)
    assert TransformerBlock(E, H, F).self_attn.num_kv_heads == H  # the default: multi-head


def test_layer_norm_is_over_the_last_dim():
    block = TransformerBlock(E, H, F, norm_first=False).double().eval()  # post-LN: output = norm2(...)
    out = block(rand(B, L, E, seed=4))
    g, b = block.norm2.weight, block.norm2.bias  # 1 and 0 at init
    assert torch.equal(g, torch.ones_like(g)) and torch.equal(b, torch.zeros_like(b))
    torch.testing.assert_close(out.mean(-1), torch.zeros(B, L, dtype=torch.float64), atol=TOL, rtol=0)
    var = out.var(-1, unbiased=False)  # var / (var + eps) before the norm: 1 up to eps
    torch.testing.assert_close(var, torch.ones(B, L, dtype=torch.float64), atol=1e-3, rtol=0)


# ---- dropout ----

class FixedDrop(nn.Module):
    """A dropout whose kept/dropped pattern depends only on the shape (so that torch's layer
    and ours drop the same numbers, whatever the memory layout of the tensor)."""

    def __init__(self, p, seed):
        super().__init__()
        self.p, self.seed = p, seed

    def forward(self, t):
        keep = torch.rand(t.shape, generator=torch.Generator().manual_seed(self.seed)) >= self.p
        return t * keep.to(t.dtype) / (1 - self.p)


@pytest.mark.parametrize("activation", ["relu", "gelu"])  # gelu: a dropout before it differs
@pytest.mark.parametrize("norm_first", [False, True])
def test_dropouts_sit_where_torch_puts_them(norm_first, activation):
    """Training mode, the three nn.Dropout of both layers replaced by the same fixed patterns
    (the attention weights' dropout is checked against nn.MultiheadAttention in
    test_modules.py): after the activation, on each sub-layer's output."""
    layer = torch_layer(norm_first, activation, dropout=0.5).train()
    block = TransformerBlock.from_torch(layer)
    assert block.training and block.self_attn.dropout == 0.5
    layer.self_attn.dropout = block.self_attn.dropout = 0.0
    for i, name in enumerate(("dropout", "dropout1", "dropout2")):
        setattr(layer, name, FixedDrop(0.5, seed=i))
        setattr(block, name, FixedDrop(0.5, seed=i))
    x = rand(B, L, E, seed=5)
    expected = layer(x, src_mask=to_torch_mha_mask(causal_mask(L)))
    torch.testing.assert_close(block(x, causal=True), expected, atol=TOL, rtol=0)
    assert (expected - torch_layer(norm_first, activation).eval()(x, is_causal=True,
                                                      src_mask=to_torch_mha_mask(causal_mask(L)))
            ).abs().max() > 1e-2  # the fixed dropouts do change the output


@pytest.mark.parametrize("norm_first", [False, True])
def test_dropout_acts_in_training_only(norm_first):
    torch.manual_seed(0)
    block = TransformerBlock(E, H, F, dropout=0.3, norm_first=norm_first).double()
    x = rand(B, L, E, seed=6)
    block.eval()
    first, second = block(x), block(x)
    assert torch.equal(first, second)  # eval: no randomness
    block.train()
    torch.manual_seed(1)
    a = block(x)
    torch.manual_seed(2)
    b = block(x)
    assert (a - b).abs().max() > 1e-2 and (a - first).abs().max() > 1e-2
    no_dropout = TransformerBlock(E, H, F, norm_first=norm_first).double().train()
    no_dropout.load_state_dict(block.state_dict())
    torch.testing.assert_close(no_dropout(x), first, atol=TOL, rtol=0)  # dropout=0.0: training = eval


def test_every_dropout_is_used_in_training():
    block = TransformerBlock(E, H, F, dropout=0.3).double().train()
    called = []
    for name in ("dropout", "dropout1", "dropout2"):
        getattr(block, name).register_forward_hook(lambda m, i, o, name=name: called.append(name))
    block(rand(B, L, E))
    assert sorted(called) == ["dropout", "dropout1", "dropout2"]
    assert block.self_attn.dropout == 0.3


# ---- from_torch ----

def test_from_torch_copies_everything():
    layer = torch_layer(True, "gelu", dropout=0.2, eps=1e-6).train()
    layer.norm2.eps = 1e-7
    block = TransformerBlock.from_torch(layer)
    assert (block.d_model, block.num_heads, block.d_ff, block.norm_first) == (E, H, F, True)
    assert isinstance(block.activation, nn.GELU) and block.training
    assert (block.norm1.eps, block.norm2.eps) == (1e-6, 1e-7)
    assert block.dropout.p == block.dropout1.p == block.dropout2.p == block.self_attn.dropout == 0.2
    torch.testing.assert_close(
        torch.cat([block.self_attn.W_q.weight, block.self_attn.W_k.weight, block.self_attn.W_v.weight]),
        layer.self_attn.in_proj_weight, atol=0, rtol=0)  # q, k, v in that order
    for ours, theirs in ((block.linear1, layer.linear1), (block.linear2, layer.linear2),
                         (block.norm1, layer.norm1), (block.norm2, layer.norm2)):
        assert torch.equal(ours.weight, theirs.weight) and torch.equal(ours.bias, theirs.bias)
    assert block.linear1.weight.dtype == torch.float64
    assert isinstance(TransformerBlock.from_torch(torch_layer(False)).activation, nn.ReLU)


def test_from_torch_accepts_activation_modules():
    layer = nn.TransformerEncoderLayer(E, H, F, activation=nn.GELU(), batch_first=True)
    assert isinstance(TransformerBlock.from_torch(layer).activation, nn.GELU)


def test_error_from_torch():
    with pytest.raises(TypeError, match=r"layer: expected nn.TransformerEncoderLayer, got Linear"):
        TransformerBlock.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"layer: expected batch_first=True, got batch_first=False"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(E, H, F))
    with pytest.raises(ValueError, match=r"layer: expected bias=True .*, got bias=False"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(E, H, F, batch_first=True, bias=False))
    with pytest.raises(ValueError, match=r"layer: expected activation ReLU or GELU \(approximate='none'\), got"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(E, H, F, batch_first=True, activation=torch.tanh))
    with pytest.raises(ValueError, match=r"layer: expected activation ReLU or GELU"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(E, H, F, batch_first=True,
                                                               activation=nn.GELU(approximate="tanh")))
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.1, batch_first=True)
    layer.dropout2 = nn.Dropout(0.2)
    with pytest.raises(ValueError, match=r"layer: expected one dropout probability everywhere, got "
                                         r"self_attn.dropout=0.1, dropout.p=0.1, dropout1.p=0.1, dropout2.p=0.2"):
        TransformerBlock.from_torch(layer)


# ---- bad arguments ----

def test_error_constructor_arguments():
    with pytest.raises(ValueError, match=r"d_model: expected a positive multiple of num_heads=3, got 8"):
        TransformerBlock(8, 3, 16)
    with pytest.raises(TypeError, match=r"d_model: expected a positive int, got float 8.0"):
        TransformerBlock(8.0, 2, 16)
    with pytest.raises(ValueError, match=r"num_heads: expected a positive int, got 0"):
        TransformerBlock(8, 0, 16)
    with pytest.raises(ValueError, match=r"d_ff: expected a positive int, got 0"):
        TransformerBlock(8, 2, 0)
    with pytest.raises(ValueError, match=r"num_kv_heads: expected a divisor of num_heads=2 .*got 3"):
        TransformerBlock(8, 2, 16, num_kv_heads=3)
    with pytest.raises(TypeError, match=r"num_kv_heads: expected a positive int, got float 1.0"):
        TransformerBlock(8, 2, 16, num_kv_heads=1.0)
    with pytest.raises(TypeError, match=r"d_ff: expected a positive int, got float 32.0"):
        TransformerBlock(8, 2, 32.0)
    with pytest.raises(ValueError, match=r"dropout: expected a probability in \[0, 1\), got 1.0"):
        TransformerBlock(8, 2, 16, dropout=1.0)
    with pytest.raises(TypeError, match=r"dropout: expected a number, got str"):
        TransformerBlock(8, 2, 16, dropout="0.1")
    with pytest.raises(TypeError, match=r"norm_first: expected a bool \(True or False\), got str 'yes'"):
        TransformerBlock(8, 2, 16, norm_first="yes")
    with pytest.raises(ValueError, match=r"activation: expected one of 'relu', 'gelu', got 'tanh'"):
        TransformerBlock(8, 2, 16, activation="tanh")
    with pytest.raises(TypeError, match=r"activation: expected a name, 'relu' or 'gelu', got function"):
        TransformerBlock(8, 2, 16, activation=nn.functional.relu)
    with pytest.raises(TypeError):  # keyword-only
        TransformerBlock(8, 2, 16, 0.1)


def test_error_forward_arguments():
    block = TransformerBlock(E, H, F).double()
    with pytest.raises(TypeError, match=r"x: expected a torch.Tensor, got list"):
        block([[1.0] * E])
    with pytest.raises(TypeError, match=r"x: expected a floating-point tensor .*, got dtype torch.int64"):
        block(torch.ones(B, L, E, dtype=torch.long))
    with pytest.raises(ValueError, match=r"x: expected 3 dims \(B, L, d_model\), got shape \(5, 8\)"):
        block(rand(L, E))
    with pytest.raises(ValueError, match=r"x: expected last dim d_model=8, got shape \(3, 5, 6\)"):
        block(rand(B, L, 6))
    with pytest.raises(TypeError, match=r"x: expected dtype torch.float64 \(the dtype of the module's parameters\), got torch.float32"):
        block(rand(B, L, E, dtype=torch.float32))
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor \(True = may attend\), got dtype torch.float64"):
        block(rand(B, L, E), torch.ones(L, L, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, L\) = \(3, 2, 5, 5\), got shape \(4, 4\)"):
        block(rand(B, L, E), torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, L\) = \(3, 2, 5, 5\), got shape \(2, 1, 1, 5\)"):
        block(rand(B, L, E), padding_mask([5, 3], L))
    with pytest.raises(TypeError, match=r"causal: expected a bool \(True or False\), got int 1"):
        block(rand(B, L, E), causal=1)


def test_errors_come_before_any_computation():
    """A bad mask is refused before norm1 runs (pre-LN runs norm1 before the attention would
    check the mask)."""
    block = TransformerBlock(E, H, F).double()
    ran = []
    block.norm1.register_forward_hook(lambda *a: ran.append(True))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable"):
        block(rand(B, L, E), torch.ones(4, 4, dtype=torch.bool))
    assert ran == []


# ---- one check of each input per call, at the block's door ----

def spy_on_checks(monkeypatch):
    """Every ``check_*`` of the block, its attention layer and ``attn.functional``, recorded as
    (module, check, the name it checked) before it runs."""
    import attn.block
    import attn.functional
    import attn.modules

    log = []
    for namespace in (attn.block, attn.modules, attn.functional):
        for name in [n for n in vars(namespace) if n.startswith("check_")]:
            def spy(*args, _real=getattr(namespace, name), _at=(namespace.__name__, name), **kwargs):
                log.append((*_at, str(args[0])))
                return _real(*args, **kwargs)
            monkeypatch.setattr(namespace, name, spy)
    return log


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding"])
def test_forward_checks_each_input_once_at_the_block(monkeypatch, norm_first, mask_name):
    """The block checks x and the mask; its attention layer runs its unchecked step
    (``MultiHeadAttention.compute``) and checks nothing again."""
    block = TransformerBlock(E, H, F, norm_first=norm_first).double().eval()
    mask = masks()[mask_name][0]
    log = spy_on_checks(monkeypatch)
    assert block(rand(B, L, E), mask, causal=True).shape == (B, L, E)
    assert len(log) == len(set(log)), f"an input checked twice: {log}"
    assert [e for e in log if e[1] == "check_float"] == [("attn.block", "check_float", "x")]
    assert [e for e in log if e[1] == "check_bool_mask"] == (
        [] if mask is None else [("attn.block", "check_bool_mask", "mask")])
    assert [e for e in log if e[0] != "attn.block"] == [], "the attention layer checked again"


def test_a_bad_mask_is_refused_once_with_the_blocks_message(monkeypatch):
    """Named as the block names it: its legend is (B, H, L, L), the attention layer's (B, H, L, S)."""
    block = TransformerBlock(E, H, F).double()
    log = spy_on_checks(monkeypatch)
    with pytest.raises(ValueError, match=r"^mask: expected a shape broadcastable to \(B, H, L, L\) = "
                                         r"\(3, 2, 5, 5\), got shape \(4, 4\)$"):
        block(rand(B, L, E), torch.ones(4, 4, dtype=torch.bool))
    assert [e for e in log if e[1] == "check_bool_mask"] == [("attn.block", "check_bool_mask", "mask")]
    with pytest.raises(ValueError, match=r"^x: expected last dim d_model=8, got shape \(3, 5, 6\)$"):
        block(rand(B, L, 6))  # the attention layer would have said "query: expected last dim E=8"


@pytest.mark.parametrize("norm_first", [False, True])
def test_what_the_attention_layer_reads_is_still_seen_from_outside(norm_first):
    """The block calls its layer's unchecked step, not the layer: the lessons that watch a
    layer's input (``attention_inputs``, notebook 08) still see it, x or norm1(x)."""
    from attn.lessons.contributions import attention_inputs

    block = TransformerBlock(E, H, F, norm_first=norm_first).double().eval()
    x = rand(B, L, E, seed=6)
    (seen,) = attention_inputs(block, x)
    torch.testing.assert_close(seen, block.norm1(x) if norm_first else x, atol=0, rtol=0)


def test_sizes_whose_weights_cannot_be_allocated_are_refused_before_any():
    with pytest.raises(ValueError, match=r"^d_ff: expected a \(d_ff, d_model\) weight of at most 2\*\*28 = "
                                         r"268,435,456 entries, got \(d_ff, d_model\) = \(1099511627776, 8\), "
                                         r"8,796,093,022,208 entries$"):
        TransformerBlock(8, 2, 2**40)
    with pytest.raises(ValueError, match=r"^d_model: expected a \(d_model, d_model\) weight of at most 2\*\*28"):
        TransformerBlock(2**22, 2, 8)
    with torch.device("meta"):  # shapes only: the largest linear1 that is built
        assert TransformerBlock(8, 2, 2**25).linear1.weight.numel() == 2**28


def test_numpy_ints_are_sizes_as_elsewhere_in_the_package():
    np = pytest.importorskip("numpy")
    block = TransformerBlock(np.int64(8), np.int64(2), np.int64(24))
    assert (block.d_model, block.num_heads, block.d_ff) == (8, 2, 24)
    assert all(type(n) is int for n in (block.d_model, block.num_heads, block.d_ff))
    assert block(torch.zeros(1, 3, 8)).shape == (1, 3, 8)


def test_a_2d_mask_is_refused_when_the_batch_is_as_long_as_the_sequence():
    """B = L = 5: a (B, L) key-padding mask would read as an (L, L) mask. Refused at the block's
    door, before norm1 runs; each meaning written with its own dims is taken."""
    block = TransformerBlock(E, H, F).double().eval()
    x = rand(L, L, E)  # B = L = 5
    ran = []
    block.norm1.register_forward_hook(lambda *a: ran.append(True))
    for mask in (causal_mask(L), padding_mask([5, 4, 3, 2, 1], L)[:, 0, 0]):
        with pytest.raises(ValueError, match=r"^mask: expected a mask of 3 or 4 dims when the batch has as many "
                                             r"sequences as queries \(B = L = 5\), got shape \(5, 5\)"):
            block(x, mask)
    assert ran == []
    one_for_all = block(x, causal_mask(L)[None])  # (1, L, L)
    torch.testing.assert_close(one_for_all, block(x, causal=True), atol=TOL, rtol=0)
    assert block(x, padding_mask([5, 4, 3, 2, 1], L)).shape == (L, L, E)  # (B, 1, 1, L)
