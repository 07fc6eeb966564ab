"""Multi-head layers written as notebook 05's learner writes them, in the three forms the
models must train (issue 22 §1): the chapter's names with ``forward(x, mask)`` returning
(output, weights); the article's ``q_linear`` names with ``forward(q, k, v, mask)``, biases and
a -1e9 fill, returning the output only (05's solution, word for word); and Raschka's names with
``forward(x, mask)`` returning the output only. Each passes
``attn.exercises.nb05.check_multi_head_attention`` (a test checks it).

And notebook 12's learner-style blocks and parts, right and wrong (``block_with`` plants a bug),
which the tests of notebook 12's checker (tests/attn/exercises/test_exercises_nb12.py) and of the model built
from a learner's blocks (tests/attn/lessons/test_trained_blocks.py) share: the learner classes the tests plant
live here, so that no test module imports another.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

import attn


def split_heads(x, n_heads):
    B, L, E = x.shape
    return x.view(B, L, n_heads, E // n_heads).transpose(1, 2)  # (B, L, E) -> (B, L, H, D) -> (B, H, L, D)


def merge_heads(x):
    B, H, L, D = x.shape
    return x.transpose(1, 2).reshape(B, L, H * D)  # (B, H, L, D) -> (B, L, H, D) -> (B, L, E)


class ChapterMultiHeadAttention(nn.Module):
    """05's step 4, as its solution writes it."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        Q = split_heads(self.W_q(x), self.n_heads)  # (B, L, E) -> (B, H, L, d_k)
        K = split_heads(self.W_k(x), self.n_heads)
        V = split_heads(self.W_v(x), self.n_heads)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, L, L)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, L, L)
        heads = weights @ V  # (B, H, L, d_k)
        return self.W_o(merge_heads(heads)), weights  # (B, L, E), (B, H, L, L)


class ArticleMultiHeadAttention(nn.Module):
    """05's step 5, the article's layer, as its solution writes it."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.q_linear = nn.Linear(d_model, d_model)
        self.k_linear = nn.Linear(d_model, d_model)
        self.v_linear = nn.Linear(d_model, d_model)
        self.out_linear = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B = q.size(0)
        q = self.q_linear(q).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, D)
        k = self.k_linear(k).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, S, D)
        v = self.v_linear(v).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, L, S)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous()  # (B, L, H, D)
        return self.out_linear(out.view(B, -1, self.d_model))  # (B, L, E)


class OutputOnlyMultiHeadAttention(nn.Module):
    """Raschka's names, forward(x, mask), a bias on the output projection only, and the
    output alone."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_model, d_model, bias=False)
        self.W_key = nn.Linear(d_model, d_model, bias=False)
        self.W_value = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, E = x.shape
        D = E // self.num_heads
        q, k, v = (w(x).view(B, L, self.num_heads, D).transpose(1, 2)  # (B, L, E) -> (B, H, L, D)
                   for w in (self.W_query, self.W_key, self.W_value))
        scores = q @ k.transpose(2, 3) / D ** 0.5  # (B, H, L, L)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v  # (B, H, L, D)
        return self.out_proj(out.transpose(1, 2).reshape(B, L, E))  # (B, L, E)


#: The three forms, by what they show.
LEARNER_CLASSES = {
    "the chapter's names, forward(x, mask), (output, weights)": ChapterMultiHeadAttention,
    "the article's names, forward(q, k, v, mask), the output only": ArticleMultiHeadAttention,
    "Raschka's names, forward(x, mask), the output only": OutputOnlyMultiHeadAttention,
}


# ---- learner-style parts of notebook 12 -----------------------------------------------------------------

class ChapterMHA(nn.Module):
    """The chapter's multi-head layer from 05 (no biases, -inf fill, returns output and weights)."""

    def __init__(self, d_model, n_heads, scale=True):
        super().__init__()
        self.n_heads, self.d_k, self.scale = n_heads, d_model // n_heads, scale
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        B, L, E = x.shape
        q, k, v = (W(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)
                   for W in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / (math.sqrt(self.d_k) if self.scale else 1.0)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.W_o((weights @ v).transpose(1, 2).reshape(B, L, E)), weights


class ArticleMHA(nn.Module):
    """The article's: q_linear..., biases, forward(q, k, v, mask), -1e9, the output only."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_linear, self.k_linear, self.v_linear, self.out_linear = (
            nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, q, k, v, mask=None):
        B, L, E = q.shape
        q, k, v = (lin(t).view(B, -1, self.h, self.d).transpose(1, 2)
                   for lin, t in ((self.q_linear, q), (self.k_linear, k), (self.v_linear, v)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        out = (torch.softmax(scores, -1) @ v).transpose(1, 2).contiguous().view(B, L, E)
        return self.out_linear(out)


class MyLayerNorm(nn.Module):
    """A hand-written LayerNorm: over the features (dim=-1) when right."""

    def __init__(self, d_model, dim=-1, unbiased=False, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.dim, self.unbiased, self.eps = dim, unbiased, eps

    def forward(self, x):
        mean = x.mean(self.dim, keepdim=True)
        var = x.var(self.dim, unbiased=self.unbiased, keepdim=True)
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta


class AnnotatedLayerNorm(nn.Module):
    """The Annotated Transformer's: a_2 * (x - mean) / (std + eps) + b_2, std unbiased."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        return self.a_2 * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.b_2


class Block(nn.Module):
    """A learner's block around the chapter's layer; ``BUG`` plants one classic bug."""

    BUG = None
    ATTENTION = ChapterMHA

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.attention = self.ATTENTION(d_model, num_heads)
        self.norm1, self.norm2 = self.make_norm(d_model), self.make_norm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)
        self.p = dropout

    def make_norm(self, d_model):
        return nn.LayerNorm(d_model)

    def sa(self, x, mask):
        args = (x, x, x) if isinstance(self.attention, ArticleMHA) else (x,)
        out = self.attention(*args, mask if self.BUG != "mask not passed" else None)
        out = out[0] if isinstance(out, tuple) else out
        if self.BUG == "dropout in eval":
            return F.dropout(out, self.p)  # training=True by default: random in eval too
        return self.dropout(out)

    def feed_forward(self, x):
        if self.BUG == "no activation":
            return self.dropout(self.ff[3](self.ff[2](self.ff[0](x))))
        if self.BUG == "activation after the second Linear":
            return self.dropout(torch.relu(self.ff[3](self.ff[0](x))))
        return self.dropout(self.ff(x))

    def forward(self, x, mask=None):
        bug = self.BUG
        norm2 = self.norm1 if bug == "norm1 used twice" else self.norm2
        pre = self.norm_first if bug != "norm placement swapped" else not self.norm_first
        keep_sa = bug != "no residual around the attention"
        keep_ff = bug != "no residual around the feed-forward"
        if pre:
            if bug == "residual after the norm":
                x = self.norm1(x)
                x = x + self.sa(x, mask)
                x = norm2(x)
                return x + self.feed_forward(x)
            x = keep_sa * x + self.sa(self.norm1(x), mask)
            return keep_ff * x + self.feed_forward(norm2(x))
        x = self.norm1(keep_sa * x + self.sa(x, mask))
        return norm2(keep_ff * x + self.feed_forward(x))


def block_with(bug=None, norm=None, attention=None, **attrs):
    members = {"BUG": bug, **attrs}
    if norm is not None:
        members["make_norm"] = lambda self, d: norm(d)
    if attention is not None:
        members["ATTENTION"] = attention
    return type("TransformerBlock", (Block,), members)


# ---- correct blocks ----------------------------------------------------------------------

class ReversedNorms(Block):
    """norm2 made before norm1: the checker finds the order by behaviour."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
        nn.Module.__init__(self)
        self.norm_first, self.p = norm_first, dropout
        self.norm2 = nn.LayerNorm(d_model)
        self.attention = ChapterMHA(d_model, num_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)


class GeluPackageBlock(nn.Module):
    """attn.MultiHeadAttention inside, GELU, F.dropout with training=self.training, no dropout
    argument in the constructor, torch's names."""

    def __init__(self, d_model, n_heads, d_ff, *, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = attn.MultiHeadAttention(d_model, n_heads, bias=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def sa(self, t, mask):
        return F.dropout(self.self_attn(t, mask=mask)[0], 0.1, training=self.training)

    def ff(self, t):
        return self.linear2(F.gelu(self.linear1(t)))

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.sa(self.norm1(x), mask)
            return x + self.ff(self.norm2(x))
        x = self.norm1(x + self.sa(x, mask))
        return self.norm2(x + self.ff(x))


class PostLNOnly(nn.Module):
    """The 2017 paper's block, no norm_first argument: checked with norm_first=False."""

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.mha = ArticleMHA(d_model, num_heads)
        self.ln_1, self.ln_2 = MyLayerNorm(d_model), MyLayerNorm(d_model)
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x, src_mask=None):
        x = self.ln_1(x + self.mha(x, x, x, src_mask))
        return self.ln_2(x + self.fc2(torch.relu(self.fc1(x))))


class MaskAsKey(GeluPackageBlock):
    """attn.MultiHeadAttention called as a layer of notebook 05 is, self_attn(h, mask): the mask
    arrives where the key goes."""

    def sa(self, t, mask):
        return F.dropout(self.self_attn(t, mask)[0], 0.1, training=self.training)


class OnlyTheAttentionDrops(GeluPackageBlock):
    """Takes dropout, gives it to attn.MultiHeadAttention (which drops attention weights) and
    never applies its own: the block's sub-layer outputs are never dropped. ReLU."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, norm_first=norm_first)
        self.self_attn = attn.MultiHeadAttention(d_model, n_heads, bias=True, dropout=dropout)
        self.dropout = nn.Dropout(dropout)  # made, never used

    def sa(self, t, mask):
        return self.self_attn(t, mask=mask)[0]

    def ff(self, t):
        return self.linear2(torch.relu(self.linear1(t)))


# ---- the classic confusions of this field, one learner class each (issue 32 §2) -------------------
# Each is the chapter's layer (or 12's block) with one confusion, written as a learner writes it;
# tests/test_exercises_named_bugs.py checks that the checkers name each one by its behaviour.

class ConfusedMHA(ChapterMultiHeadAttention):
    """05's step 4 as its solution writes it, step by step, so that a subclass changes one step."""

    def split(self, t):
        return split_heads(t, self.n_heads)  # (B, L, E) -> (B, H, L, d_k)

    def scores(self, Q, K):
        return Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, L, L)

    def apply_mask(self, scores, mask):
        return scores.masked_fill(mask == 0, float("-inf"))

    def softmax(self, scores):
        return torch.softmax(scores, dim=-1)

    def weighted_sum(self, weights, V, scores):
        return weights @ V  # (B, H, L, L) @ (B, H, L, d_k) -> (B, H, L, d_k)

    def forward(self, x, mask=None):
        Q, K, V = (self.split(W(x)) for W in (self.W_q, self.W_k, self.W_v))
        scores = self.scores(Q, K)
        if mask is not None:
            scores = self.apply_mask(scores, mask)
        weights = self.softmax(scores)
        return self.W_o(merge_heads(self.weighted_sum(weights, V, scores))), weights


class MaskTrueBlocksMHA(ConfusedMHA):
    """nn.MultiheadAttention's convention, True = blocked, where the course's True = may attend."""

    def apply_mask(self, scores, mask):
        return scores.masked_fill(mask, float("-inf"))


class PaddingOnQueriesMHA(ConfusedMHA):
    """A padding mask (B, 1, 1, L) turned to lie along the queries: (B, 1, L, 1); causal masks right."""

    def apply_mask(self, scores, mask):
        if mask.dim() == 4:
            mask = mask.transpose(-2, -1)  # (B, 1, 1, L) -> (B, 1, L, 1)
        return scores.masked_fill(mask == 0, float("-inf"))


class MaskOverHeadsMHA(ConfusedMHA):
    """A padding mask squeezed to (B, 1, L), as the single head took it: against (B, H, L, L) its
    batch dimension meets the heads (B = H = 2 in the checker, so it runs)."""

    def apply_mask(self, scores, mask):
        if mask.dim() == 4:
            mask = mask.squeeze(1)  # (B, 1, 1, L) -> (B, 1, L)
        return scores.masked_fill(mask == 0, float("-inf"))


class ScaledByModelSizeMHA(ConfusedMHA):
    """Divides by sqrt(d_model), where each dot product runs over a head's d_k numbers."""

    def scores(self, Q, K):
        return Q @ K.transpose(-2, -1) / math.sqrt(self.d_model)


class ViewWithoutTransposeMHA(ConfusedMHA):
    """Splits the heads with a single view to (B, H, L, d_k), without the transpose."""

    def split(self, t):
        B, L, E = t.shape
        return t.view(B, self.n_heads, L, E // self.n_heads)


class SoftmaxOverQueriesMHA(ConfusedMHA):
    """The softmax over dim -2, the queries."""

    def softmax(self, scores):
        return torch.softmax(scores, dim=-2)


class KeysTimesQueriesScoresMHA(ConfusedMHA):
    """Q and K swapped in the scores: K Q^T."""

    def scores(self, Q, K):
        return K @ Q.transpose(-2, -1) / math.sqrt(self.d_k)


class KeysNotTransposedMHA(ConfusedMHA):
    """Q @ K, K not transposed: it raises unless L = d_k."""

    def scores(self, Q, K):
        return Q @ K / math.sqrt(self.d_k)


class WeightsTransposedMHA(ConfusedMHA):
    """The right weights returned, their transpose multiplied by V."""

    def weighted_sum(self, weights, V, scores):
        return weights.transpose(-2, -1) @ V


class ScoresTimesValuesMHA(ConfusedMHA):
    """The right weights returned, the scores multiplied by V (the softmax's result left unused)."""

    def weighted_sum(self, weights, V, scores):
        return scores.masked_fill(scores == float("-inf"), 0.0) @ V


class ConfusedHead(nn.Module):
    """05's step 1, the chapter's single head SelfAttention(d_model, d_k, d_v), step by step."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.d_k = d_k
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def scores(self, Q, K):
        return Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, L, L)

    def weighted_sum(self, weights, V):
        return weights @ V  # (B, L, L) @ (B, L, d_v) -> (B, L, d_v)

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = self.scores(Q, K)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.weighted_sum(weights, V), weights


class KeysNotTransposedHead(ConfusedHead):
    """Q @ K in a single head."""

    def scores(self, Q, K):
        return Q @ K / math.sqrt(self.d_k)


class WeightsTransposedHead(ConfusedHead):
    """w.mT @ V in a single head, the right weights returned."""

    def weighted_sum(self, weights, V):
        return weights.mT @ V


class UnscaledDropout(nn.Module):
    """A dropout written by hand that zeroes numbers in training and keeps the others as they are
    (nn.Dropout divides them by 1 - p)."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training:
            return x
        return x * (torch.rand_like(x) > self.p)


class UnscaledDropoutBlock(Block):
    """A right block whose dropouts do not rescale what they keep."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
        super().__init__(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.dropout = UnscaledDropout(dropout)
        self.ff[2] = UnscaledDropout(dropout)
