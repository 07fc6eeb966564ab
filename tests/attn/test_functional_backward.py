"""attn.functional.attention_backward against autograd and finite differences (gradcheck)."""
import pytest
import torch

from attn import attention_backward, causal_mask, padding_mask, scaled_dot_product_attention


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def autograd_grads(q, k, v, grad_out, mask=None, scale=None):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out, _ = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    return torch.autograd.grad(out, (q, k, v), grad_out)


def random_mask(shape, seed, p=0.6):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < p


class HandAttention(torch.autograd.Function):
    """The forward of the package, the backward by hand: what gradcheck puts to the test."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale):
        ctx.save_for_backward(q, k, v)
        ctx.mask, ctx.scale = mask, scale
        return scaled_dot_product_attention(q, k, v, mask, scale=scale)[0]

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        return (*attention_backward(q, k, v, grad_out, ctx.mask, scale=ctx.scale), None, None)


@pytest.mark.parametrize("shapes", [((4, 3), (6, 3), (6, 5)), ((2, 4, 3), (2, 6, 3), (2, 6, 2)),
                                    ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4))])
@pytest.mark.parametrize("scale", [None, 0.7])
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_autograd(shapes, scale, seed):
    q, k, v = (rand(*s, seed=seed + i) for i, s in enumerate(shapes))
    grad_out = rand(*q.shape[:-1], v.shape[-1], seed=seed + 3)
    got = attention_backward(q, k, v, grad_out, scale=scale)
    ref = autograd_grads(q, k, v, grad_out, scale=scale)
    for name, a, b, t in zip(("query", "key", "value"), got, ref, (q, k, v)):
        assert a.shape == t.shape, name
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0, msg=name)


@pytest.mark.parametrize("mask_kind", ["causal", "random", "padding", "with empty rows"])
def test_equals_autograd_with_masks(mask_kind):
    q, k, v = rand(2, 2, 5, 4), rand(2, 2, 5, 4, seed=1), rand(2, 2, 5, 3, seed=2)
    if mask_kind == "causal":
        mask = causal_mask(5)
    elif mask_kind == "random":
        mask = random_mask((2, 1, 5, 5), 3) | torch.eye(5, dtype=torch.bool)
    elif mask_kind == "padding":
        mask = padding_mask([5, 2], 5)
    else:
        mask = random_mask((2, 2, 5, 5), 4)
        mask[0, 1, 3] = False  # query 3 of head 1 may attend to no key
        mask[1, :, 0] = False
    grad_out = rand(2, 2, 5, 3, seed=5)
    got = attention_backward(q, k, v, grad_out, mask)
    ref = autograd_grads(q, k, v, grad_out, mask)
    for a, b in zip(got, ref):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


def test_fully_masked_rows_and_blocked_keys_get_zero_gradients():
    q, k, v = rand(4, 3), rand(5, 3, seed=1), rand(5, 2, seed=2)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[1] = False  # query 1 sees nothing
    mask[:, 4] = False  # key 4 is seen by no query
    dq, dk, dv = attention_backward(q, k, v, rand(4, 2, seed=3), mask)
    assert torch.equal(dq[1], torch.zeros(3, dtype=dq.dtype))
    assert torch.equal(dk[4], torch.zeros(3, dtype=dk.dtype))
    assert torch.equal(dv[4], torch.zeros(2, dtype=dv.dtype))
    assert all(torch.isfinite(t).all() for t in (dq, dk, dv))
    assert dq[0].abs().sum() > 0 and dk[0].abs().sum() > 0


@pytest.mark.parametrize("mask", [None, "causal", "with empty rows"])
def test_gradcheck_of_the_hand_written_backward(mask):
    q, k, v = (rand(2, 4, 3, seed=i).requires_grad_() for i in range(3))
    if mask == "causal":
        mask = causal_mask(4)
    elif mask == "with empty rows":
        mask = random_mask((2, 4, 4), 7)
        mask[0, 2] = False
        mask[1, 0] = False
    assert torch.autograd.gradcheck(lambda q, k, v: HandAttention.apply(q, k, v, mask, 0.8), (q, k, v))


def test_broadcast_batch_dims_are_summed_back():
    q = rand(1, 4, 3)  # broadcast along the batch of key and value
    k, v = rand(3, 6, 3, seed=1), rand(3, 6, 2, seed=2)
    grad_out = rand(3, 4, 2, seed=3)
    got = attention_backward(q, k, v, grad_out)
    ref = autograd_grads(q, k, v, grad_out)
    assert got[0].shape == (1, 4, 3)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize("q_shape, kv_batch", [((3, 4, 3), (1,)), ((2, 3, 4, 3), (2, 1)), ((2, 3, 4, 3), (1, 1))])
def test_key_and_value_broadcast_along_the_batch_are_summed_back(q_shape, kv_batch):
    # key and value (..., 1, S, E) shared by every query batch: their gradient is the sum
    # over the batch dims they were broadcast along, as autograd gives
    q = rand(*q_shape)
    k, v = rand(*kv_batch, 6, 3, seed=1), rand(*kv_batch, 6, 2, seed=2)
    grad_out = rand(*q_shape[:-1], 2, seed=3)
    got = attention_backward(q, k, v, grad_out)
    ref = autograd_grads(q, k, v, grad_out)
    for name, a, b, t in zip(("query", "key", "value"), got, ref, (q, k, v)):
        assert a.shape == t.shape, name
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0, msg=name)


def test_does_not_mutate_its_arguments():
    q, k, v, g = rand(3, 4), rand(5, 4, seed=1), rand(5, 2, seed=2), rand(3, 2, seed=3)
    mask = causal_mask(3, 5)
    copies = [t.clone() for t in (q, k, v, g, mask)]
    attention_backward(q, k, v, g, mask)
    for t, c in zip((q, k, v, g, mask), copies):
        assert torch.equal(t, c)


def test_errors():
    q, k, v = rand(3, 4), rand(5, 4, seed=1), rand(5, 2, seed=2)
    with pytest.raises(ValueError, match=r"grad_output: expected shape \(\.\.\., L, Ev\) = \(3, 2\), got shape \(3, 4\)"):
        attention_backward(q, k, v, rand(3, 4))
    with pytest.raises(TypeError, match=r"grad_output: expected a torch.Tensor, got list"):
        attention_backward(q, k, v, [[0.0, 0.0]] * 3)
    with pytest.raises(TypeError, match=r"query/grad_output: expected one dtype"):
        attention_backward(q, k, v, rand(3, 2, dtype=torch.float32))
    with pytest.raises(ValueError, match=r"key: expected feature size E=4"):
        attention_backward(q, rand(5, 3), v, rand(3, 2))
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor"):
        attention_backward(q, k, v, rand(3, 2), torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"scale: expected a positive finite float"):
        attention_backward(q, k, v, rand(3, 2), scale=-1.0)


def test_backward_steps_are_autograds_intermediates():
    """attention_backward_steps keeps W, dW and dS: each equals what autograd gives for it."""
    from attn.functional import attention_backward_steps

    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 4, 3, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 5, 2, dtype=torch.float64, generator=g, requires_grad=True)
    d_out = torch.randn(2, 4, 2, dtype=torch.float64, generator=g)
    mask = torch.rand(4, 5, generator=g) > 0.3
    scale = 0.7
    scores = scale * q @ k.transpose(-2, -1)
    scores.retain_grad()
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)
    weights.retain_grad()
    (weights @ v).backward(d_out)
    steps = attention_backward_steps(q.detach(), k.detach(), v.detach(), d_out, mask, scale=scale)
    torch.testing.assert_close(steps.weights, weights.detach(), atol=1e-12, rtol=0)
    torch.testing.assert_close(steps.grad_weights, weights.grad, atol=1e-12, rtol=0)
    torch.testing.assert_close(steps.grad_scores.masked_fill(~mask, 0.0), scores.grad.masked_fill(~mask, 0.0),
                               atol=1e-12, rtol=0)
    for got, want in ((steps.grad_query, q.grad), (steps.grad_key, k.grad), (steps.grad_value, v.grad)):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
