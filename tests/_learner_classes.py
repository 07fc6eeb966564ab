"""Multi-head layers written as notebook 05's learner writes them, in the three forms the
models must train (issue 22 §1): the chapter's names with ``forward(x, mask)`` returning
(output, weights); the article's ``q_linear`` names with ``forward(q, k, v, mask)``, biases and
a -1e9 fill, returning the output only (05's solution, word for word); and Raschka's names with
``forward(x, mask)`` returning the output only. Each passes
``attn.exercises.nb05.check_multi_head_attention`` (a test checks it).
"""
import math

import torch
from torch import nn


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
