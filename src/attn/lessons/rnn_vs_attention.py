"""Self-attention vs a recurrent network (RNN), measured rather than asserted.

Three claims of the chapter's comparison table, each turned into a computation:

* **Parallelism** (并行化): how many steps must run one after another? Build the
  computation graph of each layer and take its depth (``sequential_steps``).
* **Path length** (路径长度): how many edges separate input position j from output
  position i, at worst? Breadth-first search on the same graphs (``longest_path``).
* **Long-range dependency** (长距离依赖): how strongly does the last output depend on each
  input? The norm of the Jacobian d y_last / d x_j, for a seeded random tanh RNN and a
  seeded random self-attention layer (``gradient_profile``).

And one claim of the article (flexibility: self-attention does not depend on order):
``permutation_gap`` measures how far a layer is from permutation equivariance.

Shape legend: B batch, n sequence length, d input size, h hidden size.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from .._checks import check_float, check_positive_int, check_rank, shape_str
from ..modules import SelfAttention

__all__ = [
    "rnn_graph",
    "attention_graph",
    "sequential_steps",
    "longest_path",
    "PathCounts",
    "path_counts",
    "TinyRNN",
    "seeded_layers",
    "GradientProfile",
    "input_gradient_norms",
    "gradient_profile",
    "permutation_gap",
]

Node = tuple[str, int]  # ("x", j) an input, ("h", t) an RNN state, ("y", i) an attention output
Graph = dict[Node, tuple[Node, ...]]  # node -> the nodes it is computed from


def rnn_graph(n: int) -> Graph:
    """The computation graph of a one-layer RNN over n positions.

    h_t is computed from x_t and h_{t-1}; the outputs are h_1 .. h_n.
    """
    check_positive_int("n", n)
    graph: Graph = {("x", j): () for j in range(n)}
    for t in range(n):
        graph[("h", t)] = (("x", t),) + ((("h", t - 1),) if t > 0 else ())
    return graph


def attention_graph(n: int) -> Graph:
    """The computation graph of one self-attention layer over n positions.

    Every output y_i is computed from every input x_j (through its query, key and value).
    """
    check_positive_int("n", n)
    inputs = tuple(("x", j) for j in range(n))
    graph: Graph = {x: () for x in inputs}
    for i in range(n):
        graph[("y", i)] = inputs
    return graph


def sequential_steps(graph: Graph) -> int:
    """The depth of the graph: the longest chain of computations that must wait for each other.

    Inputs have depth 0, a computed node 1 + the largest depth of its parents. Nodes at the
    same depth can run at the same time, so the depth is the number of sequential steps.
    """
    depth: dict[Node, int] = {}
    for node in graph:  # graphs are built in topological order (parents first)
        parents = graph[node]
        depth[node] = 1 + max(depth[p] for p in parents) if parents else 0
    return max(depth.values())


def longest_path(graph: Graph) -> int:
    """The worst case, over pairs (input j, output i) that are connected, of the number of
    edges on the shortest path from x_j to output i (the chapter's "longest distance")."""
    children: dict[Node, list[Node]] = {node: [] for node in graph}
    for node, parents in graph.items():
        for p in parents:
            children[p].append(node)
    worst = 0
    for source in (node for node, parents in graph.items() if not parents):
        dist = {source: 0}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for c in children[node]:
                if c not in dist:
                    dist[c] = dist[node] + 1
                    queue.append(c)
        worst = max(worst, max(dist.values()))
    return worst


@dataclass(frozen=True)
class PathCounts:
    """Sequential steps and longest path, both layers, for one sequence length n."""

    n: int
    rnn_steps: int
    attention_steps: int
    rnn_path: int
    attention_path: int


def path_counts(n: int) -> PathCounts:
    """Count both quantities on the two computation graphs for a sequence of length n."""
    rnn, att = rnn_graph(n), attention_graph(n)
    return PathCounts(n=n, rnn_steps=sequential_steps(rnn), attention_steps=sequential_steps(att),
                      rnn_path=longest_path(rnn), attention_path=longest_path(att))


class TinyRNN(nn.Module):
    """A one-layer tanh RNN written as the loop it is: h_t = tanh(x_t W_x + h_{t-1} W_h + b).

    Same parameters and initialisation as ``torch.nn.RNN(d, hidden, batch_first=True)``
    (``weight_ih_l0`` = W_x^T, ``weight_hh_l0`` = W_h^T, one bias = the sum of its two).

    Args:
        input_size: d.
        hidden_size: h.
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        check_positive_int("input_size", input_size)
        check_positive_int("hidden_size", hidden_size)
        bound = 1.0 / math.sqrt(hidden_size)
        self.W_x = nn.Parameter(torch.empty(input_size, hidden_size).uniform_(-bound, bound))
        self.W_h = nn.Parameter(torch.empty(hidden_size, hidden_size).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(hidden_size).uniform_(-bound, bound))

    def forward(self, x: Tensor) -> Tensor:
        """x (B, n, d) -> every hidden state (B, n, h). One step per position, in order."""
        check_float("x", x)
        check_rank("x", x, 3, "(B, n, d)")
        if x.shape[-1] != self.W_x.shape[0]:
            raise ValueError(f"x: expected last dim d={self.W_x.shape[0]}, got shape {shape_str(x)}")
        h = x.new_zeros(x.shape[0], self.W_h.shape[0])  # (B, h)
        states = []
        for t in range(x.shape[1]):  # the sequential loop: step t needs step t-1
            h = torch.tanh(x[:, t] @ self.W_x + h @ self.W_h + self.b)  # (B, h)
            states.append(h)
        return torch.stack(states, dim=1)  # n x (B, h) -> (B, n, h)


def seeded_layers(d: int, *, seed: int = 0, dtype: torch.dtype = torch.float64
                  ) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    """A random tanh RNN and a random self-attention layer, both d -> d, from one seed.

    Returns:
        (rnn, attention): each maps x (B, n, d) to outputs (B, n, d).
    """
    check_positive_int("d", d)
    with torch.random.fork_rng():  # leave the caller's global generator untouched
        torch.manual_seed(seed)
        rnn = TinyRNN(d, d).to(dtype)
        att = SelfAttention(d, d, d).to(dtype)

    def run_attention(x: Tensor) -> Tensor:
        return att(x)[0]  # (B, n, d); the weights are not needed here

    return rnn, run_attention


def input_gradient_norms(layer: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """||d y_last / d x_j|| (Frobenius) for every input position j.

    Args:
        layer: maps (1, n, d) to outputs (1, n, h).
        x: (1, n, d) one input sequence.

    Returns:
        norms: (n,), norms[j] = how much the last output moves per unit change of x_j.
    """
    check_float("x", x)
    check_rank("x", x, 3, "(1, n, d)")
    if x.shape[0] != 1:
        raise ValueError(f"x: expected one sequence (1, n, d), got shape {shape_str(x)}")
    x = x.detach().requires_grad_(True)
    y = layer(x)[0, -1]  # (h,) the last output
    # One backward pass per output coordinate gives one row of the Jacobian each. (Scalar
    # outputs need no grad_outputs tensor, which keeps torch from importing sympy: seconds.)
    rows = [torch.autograd.grad(y[k], x, retain_graph=k < y.numel() - 1)[0]
            for k in range(y.numel())]  # h x (1, n, d)
    jac = torch.stack(rows)  # (h, 1, n, d)
    return jac.pow(2).sum(dim=(0, 1, 3)).sqrt()  # (n,)


@dataclass(frozen=True)
class GradientProfile:
    """Gradient norms of the last output, indexed by distance = (n - 1) - j."""

    n: int
    d: int
    seed: int
    distance: tuple[int, ...]
    rnn: tuple[float, ...]
    attention: tuple[float, ...]


@lru_cache(maxsize=16, typed=True)
def gradient_profile(n: int = 32, d: int = 16, *, seed: int = 0) -> GradientProfile:
    """Measure ``input_gradient_norms`` for both seeded layers on one seeded random input.

    Args:
        n: sequence length.
        d: input, hidden and output size of both layers.
        seed: seeds the layers' weights and the input (same seed, same numbers).

    The result is immutable and cached: asking twice for the same profile costs nothing.
    """
    check_positive_int("n", n)
    rnn, att = seeded_layers(d, seed=seed)
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed + 1),
                    dtype=torch.float64)  # (1, n, d)
    g_rnn = input_gradient_norms(rnn, x).flip(0)  # index j -> distance n - 1 - j
    g_att = input_gradient_norms(att, x).flip(0)
    return GradientProfile(n=n, d=d, seed=seed, distance=tuple(range(n)),
                           rnn=tuple(g_rnn.tolist()), attention=tuple(g_att.tolist()))


def permutation_gap(layer: Callable[[Tensor], Tensor], x: Tensor, perm: Sequence[int]) -> float:
    """max |layer(x permuted) - layer(x) permuted|: 0 means permuting the input permutes the
    output the same way (permutation equivariance).

    Args:
        layer: maps (B, n, d) to (B, n, h).
        x: (B, n, d).
        perm: a permutation of range(n).
    """
    check_float("x", x)
    check_rank("x", x, 3, "(B, n, d)")
    p = torch.as_tensor(list(perm), dtype=torch.long)
    if sorted(p.tolist()) != list(range(x.shape[1])):
        raise ValueError(f"perm: expected a permutation of range({x.shape[1]}), got {list(perm)}")
    with torch.no_grad():
        return (layer(x[:, p]) - layer(x)[:, p]).abs().max().item()
