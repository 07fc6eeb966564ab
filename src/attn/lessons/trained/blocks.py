"""Small models made of Transformer blocks, trained in seconds: any block class, such as the
one a learner writes in notebook 12.

``BlockModel`` is token embeddings + learned position embeddings, a stack of blocks, (for
pre-LN) one last LayerNorm, and a linear read-out per position. Its blocks are built from a
class with ``attn.TransformerBlock``'s constructor, ``cls(d_model, num_heads, d_ff,
norm_first=..., dropout=...)`` (the keywords it does not take are left out, as
``attn.exercises.nb12.check_transformer_block`` builds it), and called as ``block(x)``.

Two uses in notebook 12:

* what the feed-forward network adds: ``AttentionOnlyBlock`` is ``attn.TransformerBlock``
  without it, ``LinearFeedForwardBlock`` the block with its feed-forward but without the ReLU
  in it, and ``digit_sum_batch`` a task that needs a non-linear map of each token's vector:
  the last digit of the sum of a digit and the digit before it. Attention can bring the
  neighbour's digit to the token; the table of sums mod 10 is then a function of that one
  vector, which a Linear read-out cannot compute alone.
* a two-block model of the learner's blocks trained on a task of ``attn.lessons.trained.tasks``, with
  each block's heads read back (``attention_maps``).

Shape legend: B batch, L sequence length, E = d_model, H heads, C classes, N blocks.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_bool, check_entries, check_int, check_number, check_positive_int, check_token_ids
from ...block import TransformerBlock
from ..learner_layer import call_arguments, call_style, find_projections, split_output
from ...masks import causal_mask
from ...modules import MultiHeadAttention
from ...threads import torch_threads
from .adam import Adam
from .tasks import IGNORE, check_task, held_out_batch, make_batch

__all__ = ["D_MODEL", "HEADS", "D_FF", "SEQ_LEN", "EVAL_SEED", "AttentionOnlyBlock", "LinearFeedForwardBlock",
           "BlockModel",
           "build_block_model", "Examples", "digit_sum_batch", "task_batch", "train_block_model", "warmup_lr",
           "accuracy", "held_out", "task_held_out", "find_attention", "attention_maps"]

#: The models' sizes: d_ff = 4 * d_model, as in the 2017 paper.
D_MODEL, HEADS, D_FF = 32, 2, 128
SEQ_LEN = 10
#: The seed of the held-out examples every accuracy is measured on.
EVAL_SEED = 1_212


class AttentionOnlyBlock(TransformerBlock):
    """``attn.TransformerBlock`` without its feed-forward sub-layer: only the residual
    self-attention and its LayerNorm, x + sa(norm1(x)) (pre-LN) or norm1(x + sa(x)) (post-LN).

    Built with the same arguments (``d_ff`` is accepted and not used), so that it can stand
    where a block does.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, *, dropout: float = 0.0,
                 norm_first: bool = True, activation: str = "relu") -> None:
        super().__init__(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first,
                         activation=activation)
        del self.linear1, self.activation, self.dropout, self.linear2, self.dropout2, self.norm2

    def forward(self, x: Tensor, mask: Tensor | None = None, *, causal: bool = False) -> Tensor:
        """x (B, L, E) -> (B, L, E): the attention sub-layer with its residual connection."""
        self.check_inputs(x, mask, causal)
        if self.norm_first:
            return x + self.attention_sublayer(self.norm1(x), mask, causal)  # (B, L, E)
        return self.norm1(x + self.attention_sublayer(x, mask, causal))  # (B, L, E)


class LinearFeedForwardBlock(TransformerBlock):
    """``attn.TransformerBlock`` with the activation taken out of its feed-forward network:
    linear2(linear1(x)), the same parameters and as many of them, and no non-linearity there.

    Two Linears in a row are one Linear, (x W_1 + b_1) W_2 + b_2 = x (W_1 W_2) + (b_1 W_2 + b_2),
    so this sub-layer can only add a linear function of its input to the stream: the control
    that isolates what the ReLU of a real block does (notebook 12, section 5). Built with the
    same arguments (``activation`` is accepted and not used).
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, *, dropout: float = 0.0,
                 norm_first: bool = True, activation: str = "relu") -> None:
        super().__init__(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first,
                         activation=activation)
        self.activation = nn.Identity()  # feed_forward: linear2(dropout(linear1(x)))


def _accepted(cls: type, names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` the constructor of ``cls`` takes as keywords."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return set(names)
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return set(names)
    return {n for n in names if n in params}


class BlockModel(nn.Module):
    """Embeddings -> N blocks -> (pre-LN: a last LayerNorm) -> a Linear read-out per position.

    Args:
        block_class: builds each block, ``block_class(d_model, num_heads, d_ff, norm_first=...,
            dropout=...)``; a keyword its constructor does not take is left out (then the
            block's own default holds). Called as ``block(x)``, returning (B, L, E) (or a pair
            whose first item it is).
        vocab_size: token ids 0..vocab_size - 1.
        num_classes: C, outputs per position.
        num_blocks: N.
        seq_len: L, the number of learned positions.
        d_model, num_heads, d_ff: each block's sizes.
        norm_first: True: pre-LN blocks and a last LayerNorm; False: post-LN blocks.
        dropout: passed to each block (when it takes one).

    Raises:
        TypeError / ValueError naming the argument: a size that is not a positive int, or whose
        embedding or read-out weight would hold more than 2**28 entries; a ``block_class``
        whose first block, called as ``block(x)`` on zeros (1, 2, d_model) in eval mode (the
        RNG left as it was), raises or does not give back x's shape (``nn.Linear`` takes three
        numbers too). ``forward`` checks each block's output shape again.
    """

    def __init__(self, block_class: type[nn.Module], vocab_size: int, num_classes: int, *,
                 num_blocks: int = 2, seq_len: int = SEQ_LEN, d_model: int = D_MODEL,
                 num_heads: int = HEADS, d_ff: int = D_FF, norm_first: bool = True,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if not (inspect.isclass(block_class) and issubclass(block_class, nn.Module)):
            raise TypeError(f"block_class: expected an nn.Module class such as attn.TransformerBlock, "
                            f"got {type(block_class).__name__} {block_class!r:.60}")
        vocab_size, num_classes, num_blocks, seq_len, d_model, num_heads, d_ff = (
            check_positive_int(name, v) for name, v in (
                ("vocab_size", vocab_size), ("num_classes", num_classes), ("num_blocks", num_blocks),
                ("seq_len", seq_len), ("d_model", d_model), ("num_heads", num_heads), ("d_ff", d_ff)))
        for name, rows in (("vocab_size", vocab_size), ("seq_len", seq_len), ("num_classes", num_classes)):
            check_entries(name, (rows, d_model), f"({name}, d_model)", what="weight")  # tok, pos, out
        check_number("dropout", dropout, non_negative=True)
        wanted = {"norm_first": norm_first, "dropout": dropout}
        kwargs = {k: v for k, v in wanted.items() if k in _accepted(block_class, tuple(wanted))}
        self.seq_len, self.norm_first, self.d_model = seq_len, norm_first, d_model
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(block_class(d_model, num_heads, d_ff, **kwargs)
                                    for _ in range(num_blocks))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, num_classes)
        self._try_block(self.blocks[0])

    def _try_block(self, block: nn.Module) -> None:
        """Call one new block as ``forward`` will, on zeros (1, L, E) in eval mode (the learner's
        RNG left as it was): a class that is not a block (``nn.Linear`` takes three numbers
        too) is refused here, not deep inside the read-out at the first forward."""
        p = next(block.parameters(), None)
        x = torch.zeros(1, min(2, self.seq_len), self.d_model,
                        dtype=p.dtype if p is not None and p.is_floating_point() else None,
                        device=None if p is None else p.device)  # (1, L, E)
        training = block.training
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=[]):
                result = block.eval()(x)
        except Exception as err:  # any class: what it raised, said at the door
            raise TypeError(f"block_class: expected a block called as block(x) on x (B, L, d_model), "
                            f"got {type(block).__name__}, which raised {type(err).__name__}: {err}") from err
        finally:
            block.train(training)
        self._block_output(0, block, x, result)

    @staticmethod
    def _block_output(i: int, block: nn.Module, x: Tensor, result: object) -> Tensor:
        """A block's output (B, L, E), the same shape as its input x, or the first item of a
        pair; TypeError / ValueError naming ``block_class`` otherwise."""
        out = result[0] if isinstance(result, (tuple, list)) and result else result
        if not isinstance(out, Tensor):
            raise TypeError(f"block_class: expected blocks that return a tensor (B, L, d_model) (or a pair "
                            f"whose first item it is), got {type(result).__name__} from block {i} "
                            f"({type(block).__name__})")
        if out.shape != x.shape:
            raise ValueError(f"block_class: expected blocks that return (B, L, d_model) = {tuple(x.shape)}, "
                             f"the shape of their input, got {tuple(out.shape)} from block {i} "
                             f"({type(block).__name__})")
        return out

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (B, L) long -> logits (B, L, C)."""
        check_token_ids("tokens", tokens, max_len=self.seq_len, vocab_size=self.tok.num_embeddings)
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))  # (B, L, E)
        for i, block in enumerate(self.blocks):
            x = self._block_output(i, block, x, block(x))  # (B, L, E)
        return self.out(self.norm(x))  # (B, L, E) -> (B, L, C)


def build_block_model(block_class: type[nn.Module], vocab_size: int, num_classes: int, *,
                      seed: int = 0, **kwargs: object) -> BlockModel:
    """``BlockModel(block_class, vocab_size, num_classes, **kwargs)`` initialised from ``seed``,
    the learner's RNG left as it was."""
    check_int("seed", seed, low=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BlockModel(block_class, vocab_size, num_classes, **kwargs)


# ---- the data ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Examples:
    """tokens (B, L) long; targets (B, L) long, ``IGNORE`` (-100) where there is none."""

    tokens: Tensor
    targets: Tensor


def digit_sum_batch(batch_size: int, generator: torch.Generator, *, seq_len: int = SEQ_LEN) -> Examples:
    """Random digits 0..9; the target at position i > 0 is the last digit of (digit i +
    digit i - 1); position 0, with no digit before it, has none.

    Args:
        batch_size: B >= 1.
        generator: a seeded ``torch.Generator``.
        seq_len: L >= 2.
    """
    check_positive_int("batch_size", batch_size)
    check_int("seq_len", seq_len, low=2)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    tokens = torch.randint(0, 10, (batch_size, seq_len), generator=generator)  # (B, L)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, 1:] = (tokens[:, 1:] + tokens[:, :-1]) % 10  # (B, L - 1)
    return Examples(tokens, targets)


def task_batch(task: str) -> Callable[..., Examples]:
    """A ``draw(batch_size, generator)`` for a task of ``attn.lessons.trained.tasks`` (its batches, as
    ``Examples``)."""
    check_task(task)

    def draw(batch_size: int, generator: torch.Generator, *, seq_len: int = SEQ_LEN) -> Examples:
        b = make_batch(task, batch_size, seq_len=seq_len, generator=generator)
        return Examples(b.tokens, b.targets)

    return draw


def held_out(draw: Callable[..., Examples], n: int = 256) -> Examples:
    """The held-out examples of ``draw``: ``n`` drawn from the seed ``EVAL_SEED`` (for a task
    of ``attn.lessons.trained.tasks``, use its own ``held_out_batch``)."""
    return draw(n, torch.Generator().manual_seed(EVAL_SEED))


# ---- training ------------------------------------------------------------------------------

def train_block_model(model: nn.Module, draw: Callable[..., Examples], *, steps: int,
                      batch_size: int = 64, lr: float = 1e-2, warmup: int = 0, seed: int = 0) -> list[float]:
    """Train ``model`` (tokens -> logits (B, L, C)) with Adam on fresh batches of ``draw``.

    Seeded (the batches from ``seed + 1``, the dropout from ``seed``), on one thread, the
    learner's RNG left as it was; ends in eval mode. With ``warmup`` > 0 the learning rate
    rises in a straight line over the first ``warmup`` steps (``warmup_lr``), then stays at
    ``lr``; with 0 (the default) every step takes ``lr``.

    Returns:
        The training loss of each step (cross-entropy over the positions with a target).
    """
    _check_model(model)
    if not callable(draw):
        raise TypeError(f"draw: expected a function draw(batch_size, generator) -> Examples, such as "
                        f"digit_sum_batch or task_batch('reverse'), got {type(draw).__name__} {draw!r:.60}")
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        check_positive_int(name, v)
    lr = check_number("lr", lr, positive=True)
    check_int("warmup", warmup, low=0)
    check_int("seed", seed, low=0)
    data = torch.Generator().manual_seed(seed + 1)
    losses = []
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.train()
        opt = Adam(model.parameters(), lr=lr)  # = torch.optim.Adam(..., lr=lr), see attn.lessons.trained.adam
        for step in range(steps):
            opt.lr = warmup_lr(step, lr, warmup)
            batch = draw(batch_size, data)
            if not isinstance(batch, Examples):
                model.eval()
                raise TypeError(f"draw: expected draw(batch_size, generator) to return an "
                                f"attn.lessons.trained.blocks.Examples (tokens, targets), got {type(batch).__name__}")
            logits = model(batch.tokens)  # (B, L, C)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),  # (B * L, C)
                                   batch.targets.reshape(-1), ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    model.eval()
    return losses


def warmup_lr(step: int, lr: float, warmup: int) -> float:
    """The learning rate of step ``step`` (0, 1, ...) under a linear warm-up of ``warmup`` steps:
    lr * (step + 1) / warmup until it reaches ``lr``; ``lr`` itself when ``warmup`` is 0."""
    return lr if warmup == 0 else lr * min(1.0, (step + 1) / warmup)


@torch.no_grad()
def accuracy(model: nn.Module, examples: Examples) -> float:
    """Share of the positions with a target that ``model`` predicts right, in the mode it is in
    (eval mode: the dropout off)."""
    _check_model(model)
    if not isinstance(examples, Examples):
        raise TypeError(f"examples: expected an attn.lessons.trained.blocks.Examples (tokens, targets), such as "
                        f"held_out(digit_sum_batch) or task_held_out('reverse'), got {type(examples).__name__}")
    with torch_threads(1):
        logits = model(examples.tokens)  # (B, L, C)
    keep = examples.targets != IGNORE
    return (logits.argmax(-1) == examples.targets)[keep].float().mean().item()


def _check_model(model: object) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module from tokens (B, L) to logits (B, L, C), such as "
                        f"build_block_model(...), got {type(model).__name__}")


def task_held_out(task: str, n: int = 256) -> Examples:
    """The held-out examples of a task of ``attn.lessons.trained.tasks`` (its own ``held_out_batch``)."""
    b = held_out_batch(task, n)
    return Examples(b.tokens, b.targets)


# ---- the heads, read back ------------------------------------------------------------------

def find_attention(block: nn.Module) -> nn.Module | None:
    """The block's attention layer: the first submodule that is ``attn.MultiHeadAttention`` or
    has projections named as notebook 05's checker accepts them (``W_q``..., ``q_linear``...,
    ``W_query``..., a fused ``qkv``); None if there is none. Read by names, never by running it."""
    for module in block.modules():
        if module is block:
            continue
        if isinstance(module, MultiHeadAttention) or _projections(module) is not None:
            return module
    return None


def _projections(module: nn.Module) -> tuple[nn.Module | Tensor, nn.Module | Tensor] | nn.Module | None:
    """(query projection, key projection), or the fused one, as ``find_projections`` names
    them; None if there are none, or they are not layers or matrices yet."""
    found = find_projections(module)
    if found is None:
        return None
    got = {role: getattr(module, attr, None) for role, attr in found[1].items()}
    if "qkv" in got:
        return got["qkv"] if isinstance(got["qkv"], nn.Module) else None
    q, k = got["q"], got["k"]
    return (q, k) if isinstance(q, (nn.Module, Tensor)) and isinstance(k, (nn.Module, Tensor)) else None


def _project(proj: nn.Module | Tensor, x: Tensor) -> Tensor:
    """x (B, L, E) through an nn.Linear, or through a raw matrix used as x @ W (the course's
    Q = X W^Q)."""
    return x @ proj if isinstance(proj, Tensor) else proj(x)


def _weights(attention: nn.Module, x: Tensor, num_heads: int, causal: bool = False) -> Tensor:
    """The attention weights (B, H, L, L) of ``attention`` on its input x (B, L, E), with no
    mask or (``causal``) the causal mask, ``attn.causal_mask(L)``."""
    if isinstance(attention, MultiHeadAttention):
        return attention(x, need_weights=True, causal=causal)[1]
    mask = causal_mask(x.shape[1], device=x.device) if causal else None  # (L, L), True = may attend
    takes_qkv, mask_place = call_style(attention)
    call = call_arguments(takes_qkv, mask_place, x, x, mask)  # None: its forward takes no mask
    result = split_output(attention(*call[0], **call[1])) if call is not None else None
    if result is not None and result[1] is not None and result[1].dim() == 4:
        return result[1]
    found = _projections(attention)  # a layer that returns its output only: softmax(Q Kᵀ / √D)
    if isinstance(found, tuple):
        q, k = (_project(p, x) for p in found)  # (B, L, E) each
    else:
        q, k, _ = found(x).chunk(3, dim=-1)  # (B, L, 3E) -> 3 x (B, L, E): q, k, v side by side
    B, L, E = q.shape
    D = E // num_heads
    q, k = (t.reshape(B, L, num_heads, D).transpose(1, 2) for t in (q, k))  # (B, L, E) -> (B, H, L, D)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, L, L)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)  # (B, H, L, L)


@torch.no_grad()
def attention_maps(model: BlockModel, tokens: Tensor, *, num_heads: int = HEADS, causal: bool = False) -> Tensor:
    """Every block's attention weights on ``tokens`` (B, L): (N, B, H, L, L); ``causal``: under
    the causal mask, as a decoder's blocks attend (``attn.lessons.language_model``'s model),
    each row's weights on the keys up to the query and 0 after it.

    Each block's attention layer (``find_attention``) is watched while the model runs, so that
    it is read on the input it really gets (in a pre-LN block, the normalised stream); then it
    runs once more on that input to give its weights. An ``attn.MultiHeadAttention`` is watched
    at its query projection ``W_q``, which every call goes through (``attn.TransformerBlock``
    calls the layer's unchecked step, ``compute``, not the layer).

    Raises:
        ValueError: a block whose attention layer cannot be found.
    """
    check_bool("causal", causal)
    layers = []
    for i, block in enumerate(model.blocks):
        layer = find_attention(block)
        if layer is None:
            raise ValueError(f"model: block {i} ({type(block).__name__}) has no attention layer with "
                             "projections named as in notebook 05")
        layers.append(layer)
    inputs: list[Tensor | None] = [None] * len(layers)

    def watch(i: int) -> Callable:
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            inputs[i] = args[0] if args else kwargs.get("query", kwargs.get("x"))
        return hook

    watched = [layer.W_q if isinstance(layer, MultiHeadAttention) else layer for layer in layers]
    handles = [m.register_forward_pre_hook(watch(i), with_kwargs=True) for i, m in enumerate(watched)]
    try:
        with torch_threads(1):
            model(tokens)
    finally:
        for h in handles:
            h.remove()
    with torch_threads(1):
        return torch.stack([_weights(layer, x, num_heads, causal) for layer, x in zip(layers, inputs)])
