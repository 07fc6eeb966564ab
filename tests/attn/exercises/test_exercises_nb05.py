"""Checkers of notebook 05: the guided build (the learner's classes) and PyTorch's own layer.

The layer checkers are tried on our own set of correct implementations (every one must pass)
and on one buggy class per classic bug (each must fail, with the hint that names that bug). A test
that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py).
"""
import functools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attn
from attn.exercises import Feedback, _layer_bugs, _layer_checker, nb05
from _learner_classes import MaskOverHeadsMHA, WeightsTransposedHead, WeightsTransposedMHA
from attn.language import get_language, tr

from _replies import CHINESE, TORCH_ERRORS, reply, says


@pytest.fixture(autouse=True)
def first_tier_hints():
    """Each test starts with every checker's hints at the first tier."""
    nb05.reset_hints()
    yield
    nb05.reset_hints()

# ---- correct single heads: cls(d_model, d_k, d_v) -----------------------------------------


class ChapterHead(nn.Module):
    """The chapter's single head: bmm, masked_fill(mask == 0, -inf), (output, weights)."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.d_k = d_k
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, V), weights


class MatmulHead(ChapterHead):
    """@, scaling the queries first, the mask applied with torch.where and ~mask."""

    def forward(self, x, mask=None):
        q = self.W_q(x) / self.d_k ** 0.5
        scores = q @ self.W_k(x).mT
        if mask is not None:
            scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=x.dtype))
        weights = scores.softmax(dim=2)
        return weights @ self.W_v(x), weights


class EinsumHead(ChapterHead):
    """einsum for both products, a -1e9 fill, output only."""

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.einsum("bld,bsd->bls", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        return torch.einsum("bls,bsd->bld", torch.softmax(scores, -1), v)


class PackageHead(ChapterHead):
    """The attention step handed to attn.scaled_dot_product_attention."""

    def forward(self, x, mask=None):
        return attn.scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x), mask)


class SdpaHead(ChapterHead):
    """PyTorch's fused function (True = may attend, as here); output only."""

    def forward(self, x, mask=None):
        return F.scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x), attn_mask=mask)


class ArticleNamedHead(nn.Module):
    """The article's names and biases, forward(q, k, v, mask)."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.q_linear = nn.Linear(d_model, d_k)
        self.k_linear = nn.Linear(d_model, d_k)
        self.v_linear = nn.Linear(d_model, d_v)

    def forward(self, q, k, v, mask=None):
        q, k, v = self.q_linear(q), self.k_linear(k), self.v_linear(v)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class LoopHead(ChapterHead):
    """One query at a time, in a Python loop."""

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        B, L, _ = x.shape
        full = None if mask is None else mask.expand(B, L, L)  # (L, L) or (B, 1, L) -> (B, L, L)
        rows, weights = [], []
        for i in range(L):
            s = (k @ q[:, i, :, None])[..., 0] / math.sqrt(self.d_k)  # (B, L)
            if mask is not None:
                s = s.masked_fill(full[:, i] == 0, float("-inf"))
            w = torch.softmax(s, dim=-1)
            weights.append(w)
            rows.append((w[:, :, None] * v).sum(dim=1))
        return torch.stack(rows, dim=1), torch.stack(weights, dim=1)


class FlagHead(ChapterHead):
    """forward(x, mask=None, need_weights=True): three positional parameters, one required."""

    def forward(self, x, mask=None, need_weights=True):
        out, weights = super().forward(x, mask)
        return (out, weights) if need_weights else out


class RaschkaHead(nn.Module):
    """Raschka's names (LLMs-from-scratch, ch. 3), scores scaled by keys.shape[-1] ** 0.5 after
    the product, an eval-safe nn.Dropout on the weights."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.W_query = nn.Linear(d_model, d_k, bias=False)
        self.W_key = nn.Linear(d_model, d_k, bias=False)
        self.W_value = nn.Linear(d_model, d_v, bias=False)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, mask=None):
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        if mask is not None:
            attn_scores = attn_scores.masked_fill(~mask, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.dropout(attn_weights) @ values, attn_weights


class FusedHead(nn.Module):
    """One fused projection to q, k and v side by side, split in that order."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.sizes = [d_k, d_k, d_v]
        self.qkv = nn.Linear(d_model, 2 * d_k + d_v)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).split(self.sizes, dim=-1)  # (B, L, 2 d_k + d_v) -> 3 parts
        return attn.scaled_dot_product_attention(q, k, v, mask)


class MatrixHead(nn.Module):
    """The course's own Q = X W^Q: raw (d_model, d_k) matrices, used as x @ W."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.d_k = d_k
        self.W_q = nn.Parameter(torch.randn(d_model, d_k))
        self.W_k = nn.Parameter(torch.randn(d_model, d_k))
        self.W_v = nn.Parameter(torch.randn(d_model, d_v))

    def forward(self, x, mask=None):
        Q, K, V = x @ self.W_q, x @ self.W_k, x @ self.W_v  # (B, L, d_model) @ (d_model, d)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        return weights @ V, weights


class Float32SoftmaxHead(ChapterHead):
    """The softmax computed in float32 and cast back, as mixed-precision code does."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).to(scores.dtype)
        return weights @ V, weights


CORRECT_HEADS = [ChapterHead, MatmulHead, EinsumHead, PackageHead, SdpaHead, ArticleNamedHead,
                 LoopHead, FlagHead, RaschkaHead, FusedHead, MatrixHead, Float32SoftmaxHead]


@pytest.mark.parametrize("cls", CORRECT_HEADS, ids=lambda c: c.__name__)
def test_every_correct_single_head_passes(cls, language):
    fb = reply(nb05.check_self_attention, cls)
    assert fb.correct, fb.message
    assert says(fb, "with no mask, a causal mask and a padding mask"), fb.message


# ---- correct multi-head layers: cls(d_model, n_heads) --------------------------------------


class ChapterMHA(nn.Module):
    """The chapter's layer: view + transpose, contiguous().view to merge, -inf, (output, weights).
    Its steps are methods, so that a buggy subclass changes one of them."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def split(self, t):
        B, L, _ = t.shape
        return t.view(B, L, self.n_heads, self.d_k).transpose(1, 2)

    def merge(self, t):
        B, _, L, _ = t.shape
        return t.transpose(1, 2).contiguous().view(B, L, self.d_model)

    def queries(self, x):
        return self.W_q(x)

    def scale(self):
        return math.sqrt(self.d_k)

    def blocked(self, mask):
        return mask == 0

    def softmax_dim(self):
        return -1

    def project_out(self, merged):
        return self.W_o(merged)

    def forward(self, x, mask=None):
        Q = self.split(self.queries(x))
        K = self.split(self.W_k(x))
        V = self.split(self.W_v(x))
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.scale()
        if mask is not None:
            scores = scores.masked_fill(self.blocked(mask), float("-inf"))
        weights = F.softmax(scores, dim=self.softmax_dim())
        return self.project_out(self.merge(torch.matmul(weights, V))), weights


class ReshapeMHA(ChapterMHA):
    """reshape on both sides (no contiguous needed)."""

    def split(self, t):
        return t.reshape(t.shape[0], t.shape[1], self.n_heads, -1).transpose(1, 2)

    def merge(self, t):
        return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)


class EinsumMHA(ChapterMHA):
    """unflatten/permute/flatten and einsum; output only."""

    def forward(self, x, mask=None):
        q, k, v = (f(x).unflatten(-1, (self.n_heads, self.d_k)).permute(0, 2, 1, 3)
                   for f in (self.W_q, self.W_k, self.W_v))
        scores = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        heads = torch.einsum("bhls,bhsd->bhld", scores.softmax(-1), v)
        return self.W_o(heads.permute(0, 2, 1, 3).flatten(2))


class BmmMHA(ChapterMHA):
    """Heads folded into the batch, (B*H, L, D), so that torch.bmm applies."""

    def forward(self, x, mask=None):
        B, L, E = x.shape
        H, D = self.n_heads, self.d_k
        q, k, v = (f(x).view(B, L, H, D).transpose(1, 2).reshape(B * H, L, D)
                   for f in (self.W_q, self.W_k, self.W_v))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(D)  # (B*H, L, L)
        scores = scores.view(B, H, L, L)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        heads = torch.bmm(weights.reshape(B * H, L, L), v).view(B, H, L, D)
        return self.W_o(heads.transpose(1, 2).reshape(B, L, E)), weights


class SdpaMHA(ChapterMHA):
    """PyTorch's fused attention per head; output only."""

    def forward(self, x, mask=None):
        q, k, v = (self.split(f(x)) for f in (self.W_q, self.W_k, self.W_v))
        return self.W_o(self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))


class ArticleMHA(nn.Module):
    """The article's layer: biases, forward(q, k, v, mask), -1e9, the output only."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.q_linear = nn.Linear(d_model, d_model)
        self.k_linear = nn.Linear(d_model, d_model)
        self.v_linear = nn.Linear(d_model, d_model)
        self.out_linear = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        batch_size = q.size(0)
        q = self.q_linear(q).view(batch_size, -1, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_linear(k).view(batch_size, -1, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_linear(v).view(batch_size, -1, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        output = torch.matmul(torch.softmax(scores, dim=-1), v)
        output = output.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)
        return self.out_linear(output)


class HeadLoopMHA(ChapterMHA):
    """One head at a time, on column slices, concatenated with torch.cat."""

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        heads, weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            s = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(self.d_k)
            if mask is not None:
                m = mask if mask.dim() < 4 else mask[:, 0]  # (L, L) or (B, 1, 1, L) -> (B, 1, L)
                s = s.masked_fill(m == 0, float("-inf"))
            w = s.softmax(-1)
            heads.append(w @ v[..., cols])
            weights.append(w)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


class BiasedChapterMHA(ChapterMHA):
    """The chapter's layer with biases in all four projections."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model))


class PackageMHA(nn.Module):
    """The package's layer used inside the learner's class (names W_q...; bias on request)."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.inner = attn.MultiHeadAttention(d_model, n_heads)
        self.W_q, self.W_k, self.W_v, self.W_o = (self.inner.W_q, self.inner.W_k,
                                                  self.inner.W_v, self.inner.W_o)

    def forward(self, x, mask=None):
        return self.inner(x, mask=mask)


class RaschkaMHA(nn.Module):
    """Raschka's MultiHeadAttention (LLMs-from-scratch, ch. 3): W_query, W_key, W_value, a biased
    out_proj, nn.Dropout on the weights, masked_fill_ in place; the output only."""

    def __init__(self, d_in, num_heads, dropout=0.1, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_in, num_heads, d_in // num_heads
        self.W_query = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.out_proj = nn.Linear(d_in, d_in)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        b, num_tokens, _ = x.shape
        keys, queries, values = (
            f(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            for f in (self.W_key, self.W_query, self.W_value))
        attn_scores = queries @ keys.transpose(2, 3)
        if mask is not None:
            attn_scores.masked_fill_(~mask, -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)


class FusedMHA(nn.Module):
    """One nn.Linear(E, 3E) named qkv (q, k, v side by side), out_proj, SDPA."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, E = x.shape
        qkv = self.qkv(x).view(B, L, 3, self.n_heads, E // self.n_heads)  # (B, L, 3, H, D)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # 3 x (B, H, L, D)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, L, D)
        return self.out_proj(heads.transpose(1, 2).reshape(B, L, E))


class MatrixMHA(ChapterMHA):
    """Raw (E, E) matrices used as x @ W, the course's Q = X W^Q, for all four projections."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            delattr(self, name)
            setattr(self, name, nn.Parameter(torch.randn(d_model, d_model) / d_model ** 0.5))

    def forward(self, x, mask=None):
        Q, K, V = (self.split(x @ W) for W in (self.W_q, self.W_k, self.W_v))
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        return self.merge(weights @ V) @ self.W_o, weights


class LinearMatrixMHA(MatrixMHA):
    """Raw (E, E) matrices, used as nn.Linear uses its weight: F.linear(x, W) = x @ W.T."""

    def forward(self, x, mask=None):
        Q, K, V = (self.split(F.linear(x, W)) for W in (self.W_q, self.W_k, self.W_v))
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        return F.linear(self.merge(weights @ V), self.W_o), weights


class Float32SoftmaxMHA(ChapterMHA):
    """The softmax in float32, cast back to the scores' dtype."""

    def softmax_dim(self):
        return -1

    def forward(self, x, mask=None):
        Q, K, V = (self.split(f(x)) for f in (self.W_q, self.W_k, self.W_v))
        scores = Q @ K.transpose(-2, -1) / self.scale()
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)
        return self.W_o(self.merge(weights @ V)), weights


CORRECT_MHAS = [ChapterMHA, ReshapeMHA, EinsumMHA, BmmMHA, SdpaMHA, ArticleMHA, HeadLoopMHA,
                BiasedChapterMHA, PackageMHA, nb05.ArticleAsPrinted, RaschkaMHA, FusedMHA,
                MatrixMHA, LinearMatrixMHA, Float32SoftmaxMHA]


@pytest.mark.parametrize("cls", CORRECT_MHAS, ids=lambda c: c.__name__)
def test_every_correct_multi_head_layer_passes(cls, language):
    fb = reply(nb05.check_multi_head_attention, cls)
    assert fb.correct, fb.message


def test_the_verdict_says_what_was_found(language):
    fb = reply(nb05.check_multi_head_attention, ArticleMHA)
    assert says(fb, "the article's names") and says(fb, "with biases")
    assert "forward(q, k, v, mask)" in fb.message and says(fb, "returns {gives}", gives=tr("the output"))
    fb = reply(nb05.check_multi_head_attention, ChapterMHA)
    assert says(fb, "the chapter's names") and says(fb, "no biases")
    assert says(fb, "returns {gives}", gives=tr("output and weights"))


# ---- one buggy class per classic bug -------------------------------------------------------

class NoScaleHead(ChapterHead):
    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(Q, K.transpose(1, 2))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, V), weights


class ScaledUpHead(ChapterHead):
    """Multiplies by the scale."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2) * math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        return weights @ V, weights


class ScaledAfterHead(ChapterHead):
    """Scales the weights, after the softmax."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1) / math.sqrt(self.d_k)
        return weights @ V, weights


class KeysTimesQueriesHead(ChapterHead):
    """K Q^T: the scores' product the wrong way round."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(K, Q.transpose(1, 2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = scores.softmax(-1)
        return weights @ V, weights


def head_with(**changes):
    """A ChapterHead with one line changed: scale, softmax dim, queries, mask handling."""
    scale = changes.get("scale", lambda self: math.sqrt(self.d_k))
    dim = changes.get("dim", -1)
    query = changes.get("query", "W_q")
    key = changes.get("key", "W_k")
    blocked = changes.get("blocked", lambda mask: mask == 0)

    class Head(ChapterHead):
        def forward(self, x, mask=None):
            Q, K, V = getattr(self, query)(x), getattr(self, key)(x), self.W_v(x)
            scores = torch.bmm(Q, K.transpose(1, 2)) / scale(self)
            if mask is not None and blocked is not None:
                scores = scores.masked_fill(blocked(mask), float("-inf"))
            weights = F.softmax(scores, dim=dim)
            return torch.bmm(weights, V), weights

    return Head


def mha_with(**overrides):
    return type("BuggyMHA", (ChapterMHA,), overrides)


class QueriesForKeysMHA(ChapterMHA):
    def forward(self, x, mask=None):
        Q, K, V = self.split(self.W_q(x)), self.split(self.W_q(x)), self.split(self.W_v(x))
        weights = (Q @ K.transpose(-2, -1) / self.scale()).masked_fill(
            mask == 0 if mask is not None else torch.zeros((), dtype=torch.bool), float("-inf")
        ).softmax(-1)
        return self.W_o(self.merge(weights @ V)), weights


class ScaledAfterMHA(ChapterMHA):
    def forward(self, x, mask=None):
        Q, K, V = (self.split(f(x)) for f in (self.W_q, self.W_k, self.W_v))
        scores = Q @ K.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1) / math.sqrt(self.d_k)
        return self.W_o(self.merge(weights @ V)), weights


class KeysTimesQueriesMHA(ChapterMHA):
    def forward(self, x, mask=None):
        Q, K, V = (self.split(f(x)) for f in (self.W_q, self.W_k, self.W_v))
        scores = K @ Q.transpose(-2, -1) / self.scale()
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.W_o(self.merge(weights @ V)), weights


class ValuesSplitWronglyMHA(ChapterMHA):
    """Queries and keys split right, the values with one view."""

    def forward(self, x, mask=None):
        B, L, _ = x.shape
        Q, K = self.split(self.W_q(x)), self.split(self.W_k(x))
        V = self.W_v(x).view(B, self.n_heads, L, self.d_k)
        scores = Q @ K.transpose(-2, -1) / self.scale()
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.W_o(self.merge(weights @ V)), weights


def merge_without_transpose(self, t):
    B, _, L, _ = t.shape
    return t.contiguous().view(B, L, self.d_model)


HEAD_BUGS = [
    ("no scaling", NoScaleHead),
    ("scaled by d_k", head_with(scale=lambda self: self.d_k)),
    ("scaled by d_model", head_with(scale=lambda self: self.W_q.in_features)),
    ("scaled by sqrt(d_model)", head_with(scale=lambda self: math.sqrt(self.W_q.in_features))),
    ("softmax over the queries", head_with(dim=1)),
    ("softmax over the batch", head_with(dim=0)),
    ("key projection used for the queries", head_with(query="W_k")),
    ("mask flipped", head_with(blocked=lambda mask: mask)),
    ("mask ignored", head_with(blocked=None)),
    ("query projection used for the keys", head_with(key="W_q")),
    ("scaled by sqrt(d_v)", head_with(scale=lambda self: math.sqrt(self.W_v.out_features))),
    ("mask along the wrong axis", head_with(blocked=lambda mask: mask.transpose(-2, -1) == 0)),
    ("scaled up", ScaledUpHead),
    ("scaled after the softmax", ScaledAfterHead),
    ("keys times queries", KeysTimesQueriesHead),
    ("weights transposed before the values", WeightsTransposedHead),
]

MHA_BUGS = [
    ("no scaling", mha_with(scale=lambda self: 1.0)),
    ("scaled by d_k", mha_with(scale=lambda self: self.d_k)),
    ("scaled by d_model", mha_with(scale=lambda self: self.d_model)),
    ("scaled by sqrt(d_model)", mha_with(scale=lambda self: math.sqrt(self.d_model))),
    ("softmax over the queries", mha_with(softmax_dim=lambda self: -2)),
    ("softmax over the heads", mha_with(softmax_dim=lambda self: 1)),
    ("softmax over the batch", mha_with(softmax_dim=lambda self: 0)),
    ("key projection used for the queries", mha_with(queries=lambda self, x: self.W_k(x))),
    ("heads split without a transpose",
     mha_with(split=lambda self, t: t.view(t.shape[0], self.n_heads, t.shape[1], self.d_k))),
    ("heads merged without a transpose", mha_with(merge=merge_without_transpose)),
    ("mask flipped", mha_with(blocked=lambda self, mask: mask)),
    ("mask flipped", mha_with(blocked=lambda self, mask: mask == 1)),
    ("mask ignored", mha_with(blocked=lambda self, mask: torch.zeros_like(mask))),
    ("no output projection", mha_with(project_out=lambda self, merged: merged)),
    ("query projection used for the keys", QueriesForKeysMHA),
    ("scaled up", mha_with(scale=lambda self: 1 / math.sqrt(self.d_k))),
    ("scaled after the softmax", ScaledAfterMHA),
    ("keys times queries", KeysTimesQueriesMHA),
    ("values split without a transpose", ValuesSplitWronglyMHA),
    ("mask along the wrong axis", mha_with(blocked=lambda self, mask: mask.mT == 0)),
    ("mask over the heads", MaskOverHeadsMHA),
    ("weights transposed before the values", WeightsTransposedMHA),
]

# A phrase that names each bug in its hint.
NAMES = {
    "no scaling": "not scaled",
    "scaled by d_k": "divided by d_k itself",
    "scaled by d_model": "divided by d_model",
    "scaled by sqrt(d_model)": "divided by √d_model",
    "softmax over the queries": "softmax runs over the queries",
    "softmax over the heads": "softmax runs over the heads",
    "softmax over the batch": "softmax runs over the batch",
    "key projection used for the queries": "made with the key projection",
    "heads split without a transpose": "split with a single view",
    "heads merged without a transpose": "merged with a view straight from",
    "mask flipped": "wrong way round",
    "mask ignored": "does not use `mask`",
    "no output projection": "skips the output projection",
    "query projection used for the keys": "keys are made with the query projection",
    "scaled up": "multiplied by the scale",
    "scaled by sqrt(d_v)": "divided by √d_v",
    "scaled after the softmax": "sums to the same number below 1",
    "keys times queries": "transpose of the right ones",
    "values split without a transpose": "values are split with a single view",
    "mask along the wrong axis": "lined up with the scores' rows",
    "mask over the heads": "meets the scores' heads dimension",
    "keys not transposed": "by K itself, not by its transpose",
    "weights transposed before the values": "multiplies their transpose by the values",
}


def assert_names_the_bug(fb, bug):
    assert not fb.correct
    assert says(fb, NAMES[bug]), fb.message
    others = [p for b, p in NAMES.items() if b != bug and p not in NAMES[bug]]
    assert not any(says(fb, p) for p in others), fb.message
    for answer in ("√d_k", "sqrt(d_k)", "transpose(1, 2)", "dim=-1", "mask == 0,", "W_o("):
        assert answer not in fb.message


def test_every_bug_has_a_name_and_a_buggy_class():
    assert set(NAMES) == set(_layer_bugs.BUGS)
    assert {b for b, _ in MHA_BUGS} == set(nb05._MULTI.bugs())
    assert {b for b, _ in HEAD_BUGS} == set(nb05._SELF.bugs())
    assert set(nb05._MULTI.bugs()) | set(nb05._SELF.bugs()) | set(nb05._MULTI.square_bugs()) == set(_layer_bugs.BUGS)
    assert "scaled by sqrt(d_v)" not in nb05._MULTI.bugs()  # d_v = d_k there: it cannot show


def assert_second_try_says_where(check, cls, bug):
    """The same mistake twice: the symptom, then the symptom and the place to look."""
    symptom, where = _layer_bugs.BUGS[bug]
    symptom = symptom[0].lower() + symptom[1:]  # after "With <case>: "
    nb05.reset_hints()
    first, second = reply(check, cls), reply(check, cls)
    assert says(first, symptom) and not says(first, "Where to look"), first.message
    assert second.message.startswith(first.message), second.message
    assert says(second, "{symptom} Where to look: {where}.", where=tr(where)), second.message
    for answer in ("√d_k", "sqrt(d_k)", "transpose(1, 2)", "dim=-1", "mask == 0,", "W_o(", "*"):
        assert answer not in where


@pytest.mark.parametrize("bug, cls", HEAD_BUGS, ids=[b for b, _ in HEAD_BUGS])
def test_each_single_head_bug_gets_its_hint(bug, cls, language):
    assert_names_the_bug(reply(nb05.check_self_attention, cls), bug)
    assert_second_try_says_where(nb05.check_self_attention, cls, bug)


@pytest.mark.parametrize("bug, cls", MHA_BUGS, ids=[f"{b}-{i}" for i, (b, _) in enumerate(MHA_BUGS)])
def test_each_multi_head_bug_gets_its_hint(bug, cls, language):
    assert_names_the_bug(reply(nb05.check_multi_head_attention, cls), bug)
    assert_second_try_says_where(nb05.check_multi_head_attention, cls, bug)


class ArticleNoScale(ArticleMHA):
    """A bug in the other style: the article's layer, unscaled."""

    def forward(self, q, k, v, mask=None):
        B = q.size(0)
        q, k, v = (f(t).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)
                   for f, t in ((self.q_linear, q), (self.k_linear, k), (self.v_linear, v)))
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, -1, self.d_model)
        return self.out_linear(out)


class ArticleFlippedMask(ArticleMHA):
    """-1e9 and a flipped mask: the fully blocked rows become uniform, not NaN."""

    def forward(self, q, k, v, mask=None):
        return super().forward(q, k, v, None if mask is None else ~mask)


@pytest.mark.parametrize("cls, bug", [(ArticleNoScale, "no scaling"),
                                      (ArticleFlippedMask, "mask flipped")])
def test_bugs_in_the_articles_style(cls, bug, language):
    assert_names_the_bug(reply(nb05.check_multi_head_attention, cls), bug)


def test_the_mask_bug_is_reported_with_the_mask_that_shows_it():
    fb = nb05.check_multi_head_attention(mha_with(blocked=lambda self, mask: mask))
    assert fb.message.startswith("With a causal mask:"), fb.message


def test_each_mask_is_really_tried():
    class FirstRowOnly(ChapterMHA):  # reads every mask as a key mask: right for padding only
        def blocked(self, mask):
            return mask[..., :1, :] == 0

    class LastSequenceOnly(ChapterMHA):  # applies one sequence's mask to all: right for causal only
        def blocked(self, mask):
            return (mask[-1:] if mask.dim() == 4 else mask) == 0

    fb = nb05.check_multi_head_attention(FirstRowOnly)
    assert not fb.correct and fb.message.startswith("Without a mask your output is right; with a "
                                                    "causal mask it is not"), fb.message
    fb = nb05.check_multi_head_attention(LastSequenceOnly)
    assert not fb.correct and fb.message.startswith("Without a mask your output is right; with a "
                                                    "padding mask it is not"), fb.message


def test_merging_with_view_after_transpose_raises_and_points_to_contiguous(language):
    def merge(self, t):
        B, _, L, _ = t.shape
        return t.transpose(1, 2).view(B, L, self.d_model)

    fb = reply(nb05.check_multi_head_attention, mha_with(merge=merge))
    assert not fb.correct
    assert "view size is not compatible" in fb.message and says(fb, "no longer contiguous in memory")


def test_bmm_on_four_dims_is_explained(language):
    class Bmm4D(ChapterMHA):
        def forward(self, x, mask=None):
            Q, K, V = (self.split(f(x)) for f in (self.W_q, self.W_k, self.W_v))
            weights = torch.bmm(Q, K.transpose(-2, -1)).softmax(-1)
            return self.W_o(self.merge(torch.bmm(weights, V))), weights

    fb = reply(nb05.check_multi_head_attention, Bmm4D)
    assert not fb.correct and says(fb, "3-D tensors only")


def failing(message: str) -> type:
    """A learner's multi-head layer whose forward fails with PyTorch's ``message``."""
    def forward(self, x, mask=None):
        raise RuntimeError(message)

    return type("Errs", (ChapterMHA,), {"forward": forward})


@pytest.mark.parametrize("message", TORCH_ERRORS)
def test_each_torch_error_is_explained(message, language):
    """PyTorch's words are the learner's, kept as they are; what they usually mean is said in
    the learner's language."""
    fb = reply(nb05.check_multi_head_attention, failing(message))
    assert not fb.correct and says(fb, "forward raised {error}")
    hint = next((h for keys, h in _layer_checker.ERROR_HINTS if any(k in message for k in keys)), None)
    assert message in fb.message and (says(fb, hint) if hint else says(fb, "(no message)")), fb.message
    again = reply(nb05.check_multi_head_attention, failing(message))
    assert again.message.startswith(fb.message), again.message


def test_a_layer_without_any_output_projection_is_told_so(language):
    class NoWo(ChapterMHA):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            del self.W_o

    class NoWoUsed(NoWo):
        def project_out(self, merged):
            return merged

    for cls in (NoWo, NoWoUsed):
        fb = reply(nb05.check_multi_head_attention, cls)
        assert not fb.correct and says(fb, "has no output projection"), fb.message


def test_two_bugs_at_once_get_an_honest_fallback(language):
    Both = mha_with(scale=lambda self: 1.0, softmax_dim=lambda self: -2)
    first = reply(nb05.check_multi_head_attention, Both)
    assert not first.correct and says(first, "not by one of the classic bugs")
    second = reply(nb05.check_multi_head_attention, Both)
    assert second.message.startswith(first.message) and says(second, "Where to look")


def test_right_output_wrong_weights(language):
    class ScoresAsWeights(ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out, weights.log()

    fb = reply(nb05.check_multi_head_attention, ScoresAsWeights)
    assert not fb.correct and says(fb, "your output is right, but the weights")


def test_averaged_weights_are_told_apart(language):
    class Averaged(ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out, weights.mean(dim=1)

    fb = reply(nb05.check_multi_head_attention, Averaged)
    assert not fb.correct and says(fb, "one map per head")


def test_step_one_checks_only_the_case_without_a_mask(language):
    ignores_mask = head_with(blocked=None)
    assert reply(nb05.check_self_attention, ChapterHead, masks=False).correct
    fb = reply(nb05.check_self_attention, ignores_mask, masks=False)
    assert fb.correct and says(fb, "masks come next")
    assert not reply(nb05.check_self_attention, ignores_mask).correct


# ---- the bug catalogue itself --------------------------------------------------------------

@pytest.mark.parametrize("spec", [nb05._SELF, nb05._MULTI], ids=["single", "multi"])
def test_variants_are_one_bug_each_and_tell_apart(spec):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(_layer_bugs.BATCH, _layer_bugs.LENGTH, spec.d_model, generator=gen, dtype=torch.float64)
    params = {role: (torch.randn(*shape, generator=gen, dtype=torch.float64) / 2,
                     torch.randn(shape[0], generator=gen, dtype=torch.float64))
              for role, shape in spec.shapes().items()}
    outputs = {}
    for case, mask in spec.masks():
        expected, _ = _layer_bugs.reference(x, params, mask, spec)
        assert torch.allclose(_layer_bugs.variant(x, params, mask, spec, None), expected,
                              atol=1e-12, rtol=0)
        for bug in spec.bugs():
            outputs.setdefault(bug, []).append(_layer_bugs.variant(x, params, mask, spec, bug))
    correct = [_layer_bugs.reference(x, params, m, spec)[0] for _, m in spec.masks()]
    for bug, outs in outputs.items():
        assert any(not _layer_bugs.same(o, c) for o, c in zip(outs, correct)), f"{bug} is not a bug"
        for other, other_outs in outputs.items():
            if other != bug:
                assert any(not _layer_bugs.same(a, b) for a, b in zip(outs, other_outs)), (bug, other)


def test_the_reference_is_pytorchs_layer():
    torch.manual_seed(0)
    E, H = nb05.MULTI_HEAD_ARGS["d_model"], nb05.MULTI_HEAD_ARGS["n_heads"]
    torch_mha = nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    ours = attn.MultiHeadAttention.from_torch(torch_mha)
    params = {role: (lin.weight.detach(), lin.bias.detach())
              for role, lin in zip("qkvo", (ours.W_q, ours.W_k, ours.W_v, ours.W_o))}
    x = torch.randn(2, 5, E, dtype=torch.float64)
    for _, mask in nb05._MULTI.masks():
        torch_mask = None if mask is None else attn.to_torch_mha_mask(mask.expand(2, H, 5, 5)
                                                                      ).reshape(2 * H, 5, 5)
        expected, w = torch_mha(x, x, x, attn_mask=torch_mask, average_attn_weights=False)
        got, got_w = _layer_bugs.reference(x, params, mask, nb05._MULTI)
        assert (got - expected).abs().max() < 1e-12 and (got_w - w).abs().max() < 1e-12


def test_variant_rejects_an_unknown_bug():
    with pytest.raises(ValueError, match="bug: expected None or one of"):
        _layer_bugs.variant(torch.zeros(2, 5, 6), {}, None, nb05._SELF, "typo")


# ---- the checker's own bad input -----------------------------------------------------------

class TwoArgs(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()


class NotAModule:
    def __init__(self, *args):
        pass


class Skeleton(nn.Module):
    """What the notebook's cell holds before the learner writes anything."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.W_q = None
        self.W_k = None
        self.W_v = None

    def forward(self, x, mask=None):
        raise NotImplementedError


class SkeletonForward(ChapterHead):
    def forward(self, x, mask=None):
        raise NotImplementedError


class TransposedShapes(ChapterHead):
    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.W_q = nn.Linear(d_k, d_model, bias=False)


class NoMaskArgument(ChapterHead):
    def forward(self, x):
        return super().forward(x)


class ReturnsDict(ChapterHead):
    def forward(self, x, mask=None):
        return {"output": super().forward(x, mask)[0]}


class InitFails(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        raise KeyError("oops")


class OtherNames(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k)


class MaskFilledWithZero(ChapterHead):
    """Blocked scores set to 0, not -inf: right without a mask, wrong with one, no classic bug."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, 0.0)
        weights = scores.softmax(-1)
        return weights @ V, weights


class InitNotWritten(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        raise NotImplementedError


class ReluForQueries(ChapterHead):
    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.W_q = nn.ReLU()


class FusedMatrix(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.qkv = nn.Parameter(torch.zeros(5, 5))


@pytest.mark.parametrize("cls, words", [
    (ChapterHead(6, 4, 3), "Pass the class itself"),
    (lambda d_model, d_k, d_v: None, "expected a class"),
    (None, "expected a class"),
    (3, "expected a class"),
    (NotAModule, "should subclass nn.Module"),
    (TwoArgs, "The checker builds"),
    (InitFails, "The checker builds"),
    (Skeleton, "is not set yet"),
    (SkeletonForward, "forward is not written yet"),
    (TransposedShapes, "should take {in_f} features to {out_f}"),
    (NoMaskArgument, "takes no mask argument"),
    (ReturnsDict, "should return the output, or (output, weights)"),
    (OtherNames, "has no projections named W_q"),
    (MaskFilledWithZero, "Without a mask your output is right"),
    (InitNotWritten, "__init__ is not written yet"),
    (ReluForQueries, "should be an nn.Linear"),
    (FusedMatrix, "is a matrix used as x @ W, so it should have shape"),
])
def test_bad_input_gets_a_clear_message_not_a_traceback(cls, words, language):
    fb = reply(nb05.check_self_attention, cls)
    assert isinstance(fb, Feedback) and not fb.correct
    assert says(fb, words), fb.message
    again = reply(nb05.check_self_attention, cls)
    assert again.message.startswith(fb.message), again.message


def test_the_learners_own_words_and_sizes_are_kept(language):
    """What the reply quotes, whatever the language: the learner's exception and names, the sizes."""
    check = nb05.check_self_attention
    assert "TypeError" in reply(check, TwoArgs).message
    assert "KeyError: 'oops'" in reply(check, InitFails).message
    assert says(reply(check, Skeleton), "{name}.{attr} is not set yet", name="Skeleton", attr="W_q")
    assert says(reply(check, TransposedShapes), "should take {in_f} features to {out_f}", in_f=6, out_f=4)
    assert "W_q" in reply(check, OtherNames).message


def test_wrong_constructor_message_says_how_the_checker_builds():
    fb = nb05.check_multi_head_attention(ChapterHead)
    assert "ChapterHead(8, 2) raised TypeError" in fb.message
    assert "builds ChapterHead(d_model, n_heads)" in fb.message


def test_a_checker_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    a = torch.rand(3)
    torch.manual_seed(5)
    nb05.check_multi_head_attention(ChapterMHA)
    nb05.check_self_attention(ChapterHead)
    assert torch.equal(torch.rand(3), a)


# ---- step 3: split and merge ---------------------------------------------------------------

def split_ok(x, n_heads):
    B, L, E = x.shape
    return x.view(B, L, n_heads, E // n_heads).transpose(1, 2)


def merge_ok(x):
    B, H, L, D = x.shape
    return x.transpose(1, 2).reshape(B, L, H * D)


def todo_split(x, n_heads):
    raise NotImplementedError


def test_split_merge_accepts_a_right_pair(language):
    assert reply(nb05.check_split_merge, split_ok, merge_ok).correct
    assert reply(nb05.check_split_merge, 
        lambda x, h: x.unflatten(-1, (h, -1)).permute(0, 2, 1, 3),
        lambda x: x.permute(0, 2, 1, 3).contiguous().view(x.shape[0], x.shape[2], -1)).correct


@pytest.mark.parametrize("split, merge, words", [
    (lambda x, h: x.view(x.shape[0], h, x.shape[1], -1), merge_ok, "split with a single view"),
    (split_ok, lambda x: x.reshape(x.shape[0], x.shape[2], -1), "merged with a view straight"),
    (split_ok, lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1), "contiguous"),
    (split_ok, lambda x: x.transpose(1, 2), "should give shape (B, L, E)"),
    (lambda x, h: x, merge_ok, "should give shape (B, H, L, D)"),
    (lambda x, h: x.view(x.shape[0], x.shape[1], h, -1).transpose(1, 2).flip(-1), merge_ok,
     "the shape is right, not the numbers"),
    (split_ok, lambda x: x.transpose(1, 2).flip(-1).reshape(x.shape[0], x.shape[2], -1),
     "the shape is right, not the numbers"),
    (None, merge_ok, "expected a function"),
    (lambda x, h: 1 / 0, merge_ok, "raised {error}"),
    (functools.partial(todo_split), merge_ok, "it is not written yet"),
    (functools.partial(lambda x, h: 1 / 0), merge_ok, "it raised {error}"),
])
def test_split_merge_wrong_pairs(split, merge, words, language):
    fb = reply(nb05.check_split_merge, split, merge)
    assert not fb.correct and says(fb, words), fb.message


def test_split_merge_names_the_function(language):
    fb = reply(nb05.check_split_merge, None, merge_ok)
    assert says(fb, "{name}: expected a function", name="split_heads"), fb.message
    fb = reply(nb05.check_split_merge, lambda x, h: 1 / 0, merge_ok)
    assert says(fb, "raised {error}", error="ZeroDivisionError: division by zero"), fb.message


def test_split_merge_skeleton_is_not_yet(language):
    def split_heads(x, n_heads):
        raise NotImplementedError

    fb = reply(nb05.check_split_merge, split_heads, merge_ok)
    assert not fb.correct and says(fb, "{name} is not written yet", name="split_heads")


# ---- step 6: the article's silent case -----------------------------------------------------

def test_the_articles_layer_runs_silently_on_12_and_5():
    s = nb05.SILENT_CASE
    layer = nb05.ArticleAsPrinted(s["d_model"], s["num_heads"])
    x = torch.randn(s["batch"], s["length"], s["d_model"])
    out = layer(x, x, x)
    assert tuple(out.shape) == (2, 5, 12)
    assert tuple(layer.attn_weights.shape) == (2, 5, 6, 6)


def test_silent_case_prediction(language):
    """Predicted for nb05.PREDICTION_CASE (d_model = 14, 4 heads, 6 tokens), which no cell of 05
    runs; the shapes the notebook prints for SILENT_CASE are named as such."""
    right = {"head_dim": 3, "weights": (2, 4, 7, 7), "output": torch.Size([2, 6, 14])}
    assert reply(nb05.check_silent_case, right).correct
    for wrong, words in [
        ({"head_dim": 2, "weights": (2, 5, 6, 6), "output": (2, 5, 12)}, "the notebook printed"),
        ({**right, "head_dim": 4}, "rounds down"),
        ({**right, "weights": (2, 4, 6, 6)}, "the -1"),
        ({**right, "weights": (2, 7, 4, 4)}, "(batch, heads, L', L')"),
        ({**right, "output": (2, 7, 14)}, "has a -1 too"),
        ({**right, "output": "error"}, "raises nothing"),
        ({**right, "head_dim": 2.4}, "should be an int"),
        (None, "Set `answer`"),
    ]:
        fb = reply(nb05.check_silent_case, wrong)
        assert not fb.correct and says(fb, words), (wrong, fb.message)
        assert "(2, 4, 7, 7)" not in fb.message


def test_the_prediction_case_runs_silently_and_is_not_the_printed_one():
    p, s = nb05.PREDICTION_CASE, nb05.SILENT_CASE
    assert (p["d_model"], p["num_heads"]) != (s["d_model"], s["num_heads"])
    layer = nb05.ArticleAsPrinted(p["d_model"], p["num_heads"])
    x = torch.randn(p["batch"], p["length"], p["d_model"])
    assert tuple(layer(x, x, x).shape) == (2, 6, 14) and tuple(layer.attn_weights.shape) == (2, 4, 7, 7)


class Guarded(nb05.ArticleAsPrinted):
    def __init__(self, d_model, num_heads):
        if d_model % num_heads:
            raise ValueError(f"d_model: expected a multiple of num_heads={num_heads}, got {d_model}")
        super().__init__(d_model, num_heads)


def test_head_split_guard(language):
    assert reply(nb05.check_head_split_guard, Guarded).correct

    class Asserted(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            assert d_model % num_heads == 0
            super().__init__(d_model, num_heads)

    class Silent(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if d_model % num_heads:
                raise ValueError("bad sizes")
            super().__init__(d_model, num_heads)

    class TooStrict(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if num_heads != 1:
                raise ValueError(f"d_model={d_model}, num_heads={num_heads}")
            super().__init__(d_model, num_heads)

    class WrongType(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if d_model % num_heads:
                raise RuntimeError(f"{d_model} {num_heads}")
            super().__init__(d_model, num_heads)

    for cls, words in [(nb05.ArticleAsPrinted, "still builds without complaint"),
                       (Asserted, "A bare assert"), (Silent, "name d_model and num_heads"),
                       (TooStrict, "so it should build"), (WrongType, "is a ValueError"),
                       (HardCoded, "stops the sizes of the text"),
                       (HardCodedMessage, "name d_model and num_heads"),
                       (CheckedAfterTheWeights, "but only after {made} parameters were made"),
                       (CheckedAfterOneMatrix, "but only after {made} parameter was made")]:
        nb05.reset_hints()
        first = reply(nb05.check_head_split_guard, cls)
        assert not first.correct and says(first, words) and not says(first, "Where to look"), (cls, first)
        second = reply(nb05.check_head_split_guard, cls)
        assert second.message.startswith(first.message) and says(second, "Where to look"), (cls, second)
    check = nb05.check_head_split_guard
    assert says(reply(check, CheckedAfterTheWeights), "after {made} parameters", made=8)
    assert says(reply(check, CheckedAfterOneMatrix), "after {made} parameter was", made=1)
    for cls in (Guarded(12, 4), print):
        fb = reply(nb05.check_head_split_guard, cls)
        assert not fb.correct and says(fb, "expected the class"), (cls, fb.message)


class HardCoded(nb05.ArticleAsPrinted):
    """Stops only the sizes the text uses."""

    def __init__(self, d_model, num_heads):
        if (d_model, num_heads) == (12, 5):
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
        super().__init__(d_model, num_heads)


class HardCodedMessage(nb05.ArticleAsPrinted):
    """The right condition, and a message that names the text's values, whatever the sizes."""

    def __init__(self, d_model, num_heads):
        if d_model % num_heads:
            raise ValueError("d_model=12 is not a multiple of num_heads=5")
        super().__init__(d_model, num_heads)


class CheckedAfterTheWeights(nb05.ArticleAsPrinted):
    """The right check and message, after super().__init__ has made the four nn.Linear."""

    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model: expected a multiple of num_heads={num_heads}, got {d_model}")


class CheckedAfterOneMatrix(nn.Module):
    """A raw nn.Parameter made before the check."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.W_q = nn.Parameter(torch.zeros(d_model, d_model))
        if d_model % num_heads:
            raise ValueError(f"d_model: expected a multiple of num_heads={num_heads}, got {d_model}")


class GuardedOwnLayer(nn.Module):
    """A class of its own (no ArticleAsPrinted): the check first, then the weights."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
        self.W_q = nn.Linear(d_model, d_model)


@pytest.mark.parametrize("cls", [Guarded, GuardedOwnLayer], ids=lambda c: c.__name__)
def test_a_right_guard_passes_on_every_size(cls, language):
    fb = reply(nb05.check_head_split_guard, cls)
    assert fb.correct and says(fb, "now stops at once, before any weight is made"), fb.message


def test_the_guard_sizes_cover_both_cases_and_more_than_the_texts():
    even, uneven = nb05.GUARD_SIZES["even"], nb05.GUARD_SIZES["uneven"]
    assert even and all(E % H == 0 for E, H in even)
    assert uneven and all(E % H for E, H in uneven)
    text = (nb05.SILENT_CASE["d_model"], nb05.SILENT_CASE["num_heads"])
    assert text not in uneven and any(E != text[0] for E, _ in uneven)


def test_the_guard_hints_say_where_on_a_second_try(language):
    first = reply(nb05.check_head_split_guard, CheckedAfterTheWeights)
    second = reply(nb05.check_head_split_guard, CheckedAfterTheWeights)
    assert not says(first, "Where to look")
    where = tr("the order of the lines in __init__: where your check stands relative to the line that "
               "makes the projections")
    assert says(second, "{symptom} Where to look: {where}.", where=where), second.message


def test_the_guard_check_leaves_nn_module_as_it_was():
    register = nn.Module.register_parameter
    nb05.check_head_split_guard(CheckedAfterTheWeights)
    assert nn.Module.register_parameter is register
    assert len(list(nn.Linear(2, 3).parameters())) == 2


# ---- PyTorch's own layer -------------------------------------------------------------------

def test_mha_causal_mask_right_answer_behaves_like_causal_in_torch(language):
    L = nb05.MASK_LENGTH
    answer = torch.ones(L, L, dtype=torch.bool).triu(1)
    assert reply(nb05.check_mha_causal_mask, answer).correct
    # the accepted answer really makes nn.MultiheadAttention causal
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, L, 8)
    _, w = mha(x, x, x, attn_mask=answer)
    assert torch.all(w[0].triu(1) == 0) and torch.all(w[0].diagonal() > 0)


@pytest.mark.parametrize("answer, hint", [
    (None, "bool tensor"),
    ([[True]], "should be a torch.Tensor"),
    (torch.zeros(5, 5, dtype=torch.int64), "should have dtype torch.bool"),
    (torch.zeros(5, 5), "*added* to the scores"),
    (torch.ones(5, 5).tril(), "blocks nothing"),
    (torch.zeros(5, 5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -100.0), "other values too"),
    (torch.zeros(5, 5).masked_fill(attn.causal_mask(5), float("-inf")), "where a query may attend"),
    (torch.zeros(5, 5).masked_fill(torch.eye(5, dtype=torch.bool), float("-inf")), "row by row"),
    (torch.zeros(4, 4, dtype=torch.bool), "should have shape ({L}, {L})"),
    (attn.causal_mask(5), "True = may attend"),
    (torch.ones(5, 5, dtype=torch.bool).triu(0), "the diagonal must be allowed"),
    (torch.ones(5, 5, dtype=torch.bool).tril(-1), "blocks the past"),
    (torch.eye(5, dtype=torch.bool), "row by row"),
])
def test_mha_causal_mask_wrong_answers_get_a_hint(answer, hint, language):
    fb = reply(nb05.check_mha_causal_mask, answer)
    assert not fb.correct and says(fb, hint), fb.message
    assert "triu" not in fb.message and "tril" not in fb.message
    again = reply(nb05.check_mha_causal_mask, answer)  # a mask it can read: the place to look too
    readable = isinstance(answer, torch.Tensor) and answer.shape == (5, 5) and answer.dtype != torch.int64
    assert again.message.startswith(fb.message) and says(again, "Where to look") == readable, again.message


def test_mha_causal_mask_quotes_the_values_and_sizes(language):
    fb = reply(nb05.check_mha_causal_mask,
               torch.zeros(5, 5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -100.0))
    assert says(fb, "other values too: {others}", others=[-100.0]), fb.message
    fb = reply(nb05.check_mha_causal_mask, torch.zeros(4, 4, dtype=torch.bool))
    assert says(fb, "should have shape ({L}, {L})", L=5), fb.message


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mha_causal_mask_accepts_pytorchs_own_float_mask(dtype, language):
    L = nb05.MASK_LENGTH
    answer = nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype)
    fb = reply(nb05.check_mha_causal_mask, answer)
    assert fb.correct and says(fb, "get -inf added to their scores"), fb.message
    # and it really gives the same attention as the bool mask the checker also accepts
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=dtype)
    x = torch.randn(1, L, 8, dtype=dtype)
    bool_mask = torch.ones(L, L, dtype=torch.bool).triu(1)
    assert reply(nb05.check_mha_causal_mask, bool_mask).correct
    _, w_float = mha(x, x, x, attn_mask=answer)
    _, w_bool = mha(x, x, x, attn_mask=bool_mask)
    assert torch.allclose(w_float, w_bool)


def test_a_float_mask_of_ones_and_zeros_is_told_it_is_added_twice_with_where_to_look(language):
    ones_zeros = (~torch.ones(5, 5, dtype=torch.bool).triu(1)).float()  # 1 allowed, 0 blocked
    first = reply(nb05.check_mha_causal_mask, ones_zeros)
    second = reply(nb05.check_mha_causal_mask, ones_zeros)
    assert not first.correct and says(first, "is *added* to the scores") and not says(first, "Where to look")
    where = tr("what a float attn_mask must hold where a key is blocked (or use a bool mask, True = blocked)")
    assert says(second, "{symptom} Where to look: {where}.", where=where), second.message
    assert "-inf" not in first.message  # the first tier gives the symptom, not the value


def test_weight_shapes(language):
    s = nb05.SHAPES_SETUP
    B, L, H = s["batch"], s["length"], s["num_heads"]
    right = {"averaged": (B, L, L), "per_head": torch.Size([B, H, L, L])}
    check = nb05.check_weight_shapes
    assert reply(check, right).correct
    fb = reply(check, {"averaged": (B, H, L, L), "per_head": (B, H, L, L)})
    assert not fb.correct and says(fb, "still has a heads dimension")
    fb = reply(check, {"averaged": (L, B, L), "per_head": (B, H, L, L)})
    assert not fb.correct and says(fb, "the batch comes first")
    fb = reply(check, {"averaged": (B, L, L), "per_head": (B, L, H, L)})
    assert not fb.correct and says(fb, "The per-head weights have one (L, S) map")
    for bad in (None, {"averaged": (B, L, L)}, {"averaged": "BLL", "per_head": (1,)}):
        fb = reply(check, bad)
        assert not fb.correct and str((B, L, L)) not in fb.message


def test_weight_shapes_leave_the_global_rng_alone():
    torch.manual_seed(5)
    a = torch.rand(3)
    torch.manual_seed(5)
    nb05.check_weight_shapes({"averaged": (1,), "per_head": (1,)})
    assert torch.equal(torch.rand(3), a)


def test_fully_masked_row(language):
    right = {"-inf": "nan", "-1e9": "uniform", "package": "zeros"}
    check = nb05.check_fully_masked_row
    assert reply(check, right).correct
    assert reply(check, {k: v.upper() for k, v in right.items()}).correct
    fb = reply(check, {"-inf": "zeros", "-1e9": "uniform", "package": "nan"})
    assert not fb.correct and fb.message.startswith(tr("{wrong} of 3 not right yet.", wrong=2))
    fb = reply(check, {"-inf": "zeros", "-1e9": "nan", "package": "uniform"})
    assert not fb.correct and fb.message.startswith(tr("{wrong} of 3 not right yet.", wrong=3))
    assert not reply(check, None).correct
    assert not reply(check, {"-inf": "nan", "-1e9": "flat", "package": "zeros"}).correct


# ---- issue 20: what the layer checkers accept, and how they say what is wrong ---------------

def test_the_verdict_names_the_accepted_forms(language):
    assert says(reply(nb05.check_multi_head_attention, RaschkaMHA), "Raschka's names")
    assert says(reply(nb05.check_multi_head_attention, FusedMHA), "a fused qkv projection")
    fb = reply(nb05.check_self_attention, MatrixHead)
    assert says(fb, ", matrices used as {matrices}", matrices="x @ W"), fb.message
    fb = reply(nb05.check_multi_head_attention, LinearMatrixMHA)
    assert says(fb, ", matrices used as {matrices}", matrices="x @ W.T"), fb.message
    fb = reply(nb05.check_self_attention, Float32SoftmaxHead)
    assert says(fb, "to float32 round-off (below {bound}: some step", bound="1e-5"), fb.message
    assert says(reply(nb05.check_self_attention, ChapterHead), "in float64")


class Float32NoScaleHead(ChapterHead):
    """A float32 softmax that hides no bug: the missing scale is still named."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).double()
        return weights @ V, weights


def test_float32_round_off_is_told_from_a_bug(language):
    assert_names_the_bug(reply(nb05.check_self_attention, Float32NoScaleHead), "no scaling")


class WholeLayerInFloat16(ChapterHead):
    """Everything after the projections in float16: far more than round-off of a float32 step."""

    def forward(self, x, mask=None):
        out, weights = super().forward(x.half().double(), mask)
        return out.half().double(), weights.half().double()


def test_float16_is_not_passed_as_round_off(language):
    first = reply(nb05.check_self_attention, WholeLayerInFloat16)
    assert not first.correct and says(first, "not by one of the classic bugs"), first.message
    second = reply(nb05.check_self_attention, WholeLayerInFloat16)
    assert second.message.startswith(first.message) and says(second, "Where to look")


@pytest.mark.parametrize("spec, correct", [(nb05._SELF, ChapterHead), (nb05._SELF, ArticleNamedHead),
                                           (nb05._MULTI, ChapterMHA), (nb05._MULTI, ArticleMHA)],
                         ids=["single", "single-biased", "multi", "multi-biased"])
def test_every_bug_is_far_from_float32_round_off(spec, correct):
    """With the checker's own weights and input, each bug differs from the right layer, and
    from every other bug, by far more than ROUND_OFF in some mask case: so accepting float32
    round-off never lets a bug through nor names the wrong one."""
    learner = _layer_checker.inspect_layer(correct(*spec.args), spec)
    gen = torch.Generator().manual_seed(_layer_checker._SEED + 1)
    x = torch.randn(_layer_bugs.BATCH, _layer_bugs.LENGTH, spec.d_model, generator=gen, dtype=torch.float64)
    far = 100 * _layer_bugs.ROUND_OFF

    def gap(a, b):
        return (a - b).nan_to_num(nan=1.0).abs().max().item()  # NaN against a number: far

    outs = {bug: [_layer_bugs.variant(x, learner.params, m, spec, bug) for _, m in spec.masks()]
            for bug in (None, *spec.bugs())}
    for bug in spec.bugs():
        for other in (None, *spec.bugs()):
            if other != bug:
                assert max(gap(a, b) for a, b in zip(outs[bug], outs[other])) > far, (bug, other)


class DropoutEverywhereMHA(ChapterMHA):
    """F.dropout with its default training=True: random even in eval mode."""

    def forward(self, x, mask=None):
        out, weights = super().forward(x, mask)
        return self.W_o(F.dropout(self.merge(weights @ self.split(self.W_v(x))), 0.1)), weights


class DropoutHead(ChapterHead):
    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        weights = F.dropout((Q @ K.mT / math.sqrt(self.d_k)).softmax(-1), p=0.1)
        return weights @ V, weights


@pytest.mark.parametrize("check, cls", [(nb05.check_multi_head_attention, DropoutEverywhereMHA),
                                        (nb05.check_self_attention, DropoutHead)])
def test_an_output_that_changes_between_two_calls_in_eval_mode_is_named(check, cls, language):
    torch.manual_seed(3)
    before = torch.rand(2)
    torch.manual_seed(3)
    first, second = reply(check, cls), reply(check, cls)
    assert torch.equal(torch.rand(2), before)  # the learner's dropout did not move the RNG
    symptom, where = _layer_checker.RANDOM_IN_EVAL
    assert not first.correct and first.message == tr(symptom)
    assert second.message == tr("{symptom} Where to look: {where}.", symptom=tr(symptom), where=tr(where))


def test_print_the_shapes_only_when_a_shape_is_wrong(language):
    class WrongOutputShape(ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out[:, :, :4], weights

    class WrongWeightsShape(ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out, weights[:, 0]

    def asks_for_the_shapes(fb):
        return says(fb, "Print the shape") or says(fb, "print the shape")

    for cls in (WrongOutputShape, WrongWeightsShape):
        fb = reply(nb05.check_multi_head_attention, cls)
        assert not fb.correct and says(fb, "Print the shape"), fb.message
    Both = mha_with(scale=lambda self: 1.0, softmax_dim=lambda self: -2)  # right shapes, two bugs
    for _ in range(2):
        fb = reply(nb05.check_multi_head_attention, Both)
        assert not fb.correct and not asks_for_the_shapes(fb), fb.message
    for bug, cls in MHA_BUGS:
        fb = reply(nb05.check_multi_head_attention, cls)
        assert not asks_for_the_shapes(fb), (bug, fb.message)


def test_square_matrices_that_fit_neither_way_get_the_course_reading(language):
    """A raw-matrix layer with a bug: diagnosed in the course's reading, x @ W."""

    class MatrixNoScale(MatrixMHA):
        def scale(self):
            return 1.0

        def forward(self, x, mask=None):
            Q, K, V = (self.split(x @ W) for W in (self.W_q, self.W_k, self.W_v))
            weights = (Q @ K.transpose(-2, -1) / self.scale()).softmax(-1)
            return self.merge(weights @ V) @ self.W_o, weights

    assert_names_the_bug(reply(nb05.check_multi_head_attention, MatrixNoScale), "no scaling")


@pytest.mark.parametrize("bad, words, fields", [
    ("matrix", "is a matrix used as x @ W, so it should have shape ({in_f}, {out_f})",
     {"in_f": 6, "out_f": 4}),
    ("fused", "should take {in_f} features to {out_f} ({what})",
     {"in_f": 6, "out_f": 11, "what": "q, k and v side by side"}),
])
def test_wrong_shapes_of_the_new_forms_are_explained(bad, words, fields, language):
    class Bad(nn.Module):
        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            if bad == "matrix":
                self.W_q, self.W_k = nn.Parameter(torch.zeros(5, 5)), nn.Parameter(torch.zeros(6, 4))
                self.W_v = nn.Parameter(torch.zeros(6, 3))
            else:
                self.qkv = nn.Linear(d_model, 3 * d_k)

    fb = reply(nb05.check_self_attention, Bad)
    fields = {k: tr(v) if isinstance(v, str) else v for k, v in fields.items()}  # a phrase, translated
    assert not fb.correct and says(fb, words, **fields), fb.message


# ---- issue 20: the article's layer over lengths, and PyTorch's fully masked row --------------

def test_the_articles_layer_raises_at_once_unless_the_length_fits():
    """d_model = 12, h = 5: view(B, -1, 5, 2) needs L * 12 to be a multiple of 10."""
    s = nb05.SILENT_CASE
    layer = nb05.ArticleAsPrinted(s["d_model"], s["num_heads"])
    silent = []
    for L in range(1, 11):
        x = torch.randn(1, L, s["d_model"])
        try:
            layer(x, x, x)
            silent.append(L)
        except RuntimeError as err:
            assert "is invalid for input of size" in str(err)
    assert silent == [5, 10]


def test_pytorchs_fully_masked_row_depends_on_the_path():
    """What 05's prose states of nn.MultiheadAttention on a query with no key."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.out_proj.bias.uniform_(0.5, 1.0)  # not zero, so "the bias" and "zeros" differ
    x = torch.randn(1, 4, 16, dtype=torch.float64)
    allowed = torch.ones(4, 4, dtype=torch.bool)
    allowed[0] = False
    blocked = attn.to_torch_mha_mask(allowed)
    sdpa = F.scaled_dot_product_attention(x, x, x, attn_mask=allowed)
    assert torch.all(sdpa[0, 0] == 0)
    mha.train()
    assert mha(x, x, x, attn_mask=blocked)[0][0, 0].isnan().all()  # need_weights=True
    out = mha(x, x, x, attn_mask=blocked, need_weights=False)[0][0, 0]
    assert torch.allclose(out, mha.out_proj.bias)  # SDPA's zeros through out_proj
    mha.eval()
    with torch.no_grad():  # the fast path
        assert mha(x, x, x, attn_mask=blocked, need_weights=False)[0][0, 0].isnan().all()
        assert mha(x, x, x, attn_mask=blocked)[0][0, 0].isnan().all()


@pytest.mark.parametrize("fill", [-1e9, -1e30])
def test_mha_causal_mask_accepts_a_fill_as_far_down_as_the_articles(fill, language):
    """Notebook 05 teaches that -1e9 blocks as -inf does (exp of it is exactly 0, even in float64,
    and every row of a causal mask keeps a key): the checker takes it, and says why."""
    L = nb05.MASK_LENGTH
    answer = torch.zeros(L, L).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), fill)
    fb = reply(nb05.check_mha_causal_mask, answer)
    assert fb.correct and says(fb, "same attention as -inf"), fb.message
    shown = f"{fill:g}".replace("e+", "e").replace("e0", "e")
    assert says(fb, "get {fill} added to their scores", fill=shown), fb.message
    torch.manual_seed(0)  # and it is right: the same weights as the bool mask
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, L, 8)
    _, w = mha(x, x, x, attn_mask=answer)
    _, w_bool = mha(x, x, x, attn_mask=torch.ones(L, L, dtype=torch.bool).triu(1))
    assert torch.equal(w, w_bool)


# ---- the language of a reply -----------------------------------------------------------------

def test_the_language_comes_back_and_no_text_is_kept_from_chinese():
    """Tables hold English (marked, not translated at import); a reply is made when asked for,
    in the language of that moment, and the tests in Chinese before this one gave English back."""
    assert get_language() == "en"
    with attn.language.language("zh"):
        chinese = reply(nb05.check_self_attention, NoScaleHead)
    nb05.reset_hints()
    english = nb05.check_self_attention(NoScaleHead)
    assert get_language() == "en" and not CHINESE.search(english.message)
    assert repr(english).startswith("❌ Not yet. With no mask: your scores are not scaled")
    assert CHINESE.search(chinese.message) and chinese.message != english.message
    assert _layer_bugs.BUGS["no scaling"][0].startswith("Your scores are not scaled")
