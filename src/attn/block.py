"""A Transformer block: self-attention and a feed-forward network, each with a residual
connection and a LayerNorm.

Shape legend: B batch, L tokens, E = d_model, H heads, F = d_ff (the feed-forward's hidden
size, 4·E in the 2017 paper). Masks are bool, True = may attend (the package's one convention).

The two placements of the norms (Xiong et al. 2020, fig. 1):

    post-LN (norm_first=False, the 2017 paper):   x = norm1(x + sa(x));  x = norm2(x + ff(x))
    pre-LN  (norm_first=True, GPT-2 onward):      x = x + sa(norm1(x));  x = x + ff(norm2(x))

where sa is multi-head self-attention and ff(x) = linear2(activation(linear1(x))). Dropout
(training mode only) acts on the attention weights, after the activation inside ff, and on
each sub-layer's output before the residual add: the places ``nn.TransformerEncoderLayer``
puts it. The submodules carry that layer's names, so that the two can be read side by side.
"""
from __future__ import annotations

from torch import Tensor, nn

from ._checks import (check_bool, check_bool_mask, check_choice, check_entries, check_float,
                      check_like_parameters, check_mask_reading, check_positive_int, check_rank,
                      shape_str)
from .modules import MultiHeadAttention, check_dropout

__all__ = ["TransformerBlock"]

#: The activations of the feed-forward network, by name (those ``nn.TransformerEncoderLayer``
#: takes as strings).
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU}


class TransformerBlock(nn.Module):
    """One Transformer (encoder) block: residual self-attention, then a residual feed-forward
    network, each with a LayerNorm over the last dim (each token's E features).

    Args:
        d_model: E, the size of each token's vector; a positive multiple of ``num_heads``.
        num_heads: H, the attention heads.
        num_kv_heads: H_kv, the heads of keys and values, a divisor of H; None (the default)
            means H. Below H the attention is grouped-query (1: multi-query); see
            ``attn.MultiHeadAttention``.
        d_ff: F, the hidden size of the position-wise feed-forward network.
        dropout: p in [0, 1): in training mode, the probability of zeroing an attention
            weight, a hidden unit of the feed-forward and each number of a sub-layer's output;
            no effect in eval mode.
        norm_first: True: pre-LN, x + sa(norm1(x)); False: post-LN, norm1(x + sa(x)).
        activation: "relu" (the 2017 paper) or "gelu" (BERT, GPT-2).

    Submodules (as in ``nn.TransformerEncoderLayer``): ``self_attn`` (an
    ``attn.MultiHeadAttention`` with biases), ``linear1`` (E -> F), ``activation``,
    ``dropout``, ``linear2`` (F -> E), ``norm1``, ``norm2``, ``dropout1``, ``dropout2``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, *, num_kv_heads: int | None = None,
                 dropout: float = 0.0, norm_first: bool = True, activation: str = "relu") -> None:
        super().__init__()
        d_model = check_positive_int("d_model", d_model)
        num_heads = check_positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(
                f"d_model: expected a positive multiple of num_heads={num_heads}, got {d_model}")
        d_ff = check_positive_int("d_ff", d_ff)
        check_entries("d_model", (d_model, d_model), "(d_model, d_model)", what="weight")  # attention
        check_entries("d_ff", (d_ff, d_model), "(d_ff, d_model)", what="weight")  # linear1, linear2
        dropout = check_dropout(dropout)
        self.norm_first = check_bool("norm_first", norm_first)
        if not isinstance(activation, str):
            raise TypeError(f"activation: expected a name, 'relu' or 'gelu', got "
                            f"{type(activation).__name__} {activation!r}")
        check_choice("activation", activation, tuple(ACTIVATIONS))
        self.d_model, self.num_heads, self.d_ff = d_model, num_heads, d_ff
        # the attention sub-layer
        self.self_attn = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, bias=True,
                                            dropout=dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.norm1 = nn.LayerNorm(d_model)
        # the feed-forward sub-layer: the same two Linears at every position
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = ACTIVATIONS[activation]()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout2 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)

    # --- the two sub-layers -----------------------------------------------------------------

    def attention_sublayer(self, x: Tensor, mask: Tensor | None, causal: bool) -> Tensor:
        """Multi-head self-attention (dropout on its weights inside), then dropout.

        Its inputs are not checked again: ``forward`` checked x and the mask (``check_inputs``),
        so the attention layer's unchecked step (``MultiHeadAttention.compute``) runs.

        Args:
            x: (B, L, E); mask, causal: as in ``forward``.

        Returns:
            (B, L, E)
        """
        out, _ = self.self_attn.compute(x, x, x, mask, need_weights=False, causal=causal)  # (B, L, E)
        return self.dropout1(out)

    def feed_forward(self, x: Tensor) -> Tensor:
        """linear2(dropout(activation(linear1(x)))), then dropout: each token on its own.

        Args:
            x: (B, L, E)

        Returns:
            (B, L, E)
        """
        hidden = self.dropout(self.activation(self.linear1(x)))  # (B, L, E) -> (B, L, F)
        return self.dropout2(self.linear2(hidden))  # (B, L, F) -> (B, L, E)

    # --- the forward pass ---------------------------------------------------------------------

    def forward(self, x: Tensor, mask: Tensor | None = None, *, causal: bool = False) -> Tensor:
        """One block: the same shape in as out.

        Args:
            x: (B, L, E), float, of the dtype and device of the block's parameters.
            mask: None, or bool broadcastable to (B, H, L, L); **True = may attend**: (L, L)
                for all sequences (``mask[None]``, (1, L, L), when B = L > 1: a 2-D mask could
                then be (B, L) too, ValueError), or ``attn.padding_mask(lengths, L)`` (B, 1, 1, L).
            causal: True also blocks the future (``attn.causal_mask(L)``, combined with
                ``mask``).

        Returns:
            (B, L, E)
        """
        self.check_inputs(x, mask, causal)
        if self.norm_first:  # pre-LN: each sub-layer reads a normalised copy of x
            x = x + self.attention_sublayer(self.norm1(x), mask, causal)  # (B, L, E)
            x = x + self.feed_forward(self.norm2(x))  # (B, L, E)
        else:  # post-LN: normalise after each residual add
            x = self.norm1(x + self.attention_sublayer(x, mask, causal))  # (B, L, E)
            x = self.norm2(x + self.feed_forward(x))  # (B, L, E)
        return x

    def check_inputs(self, x: object, mask: object, causal: object) -> None:
        """The arguments of ``forward``, checked before any computation, once: the attention
        sub-layer does not check them again. What ``attn.MultiHeadAttention.forward`` would
        refuse in x or the mask is refused here, named as the block's arguments.

        Raises:
            TypeError / ValueError naming the argument: x not a float tensor (B, L, E) of the
            parameters' dtype and device; a mask that is not bool, does not broadcast to
            (B, H, L, L) or lies on another device, or is 2-D when B = L > 1; a causal that is
            not a bool.
        """
        check_float("x", x)
        check_rank("x", x, 3, "(B, L, d_model)")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected last dim d_model={self.d_model}, got shape {shape_str(x)}")
        check_like_parameters("x", x, self.norm1.weight)  # (every block has norm1)
        check_bool("causal", causal)
        if mask is not None:
            B, L, _ = x.shape
            check_bool_mask("mask", mask, (B, self.num_heads, L, L), "(B, H, L, L)", device=x.device)
            check_mask_reading("mask", mask, (B,), L)

    def extra_repr(self) -> str:
        return f"norm_first={self.norm_first}"

    # --- weights from torch.nn.TransformerEncoderLayer ----------------------------------------

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """Copy the weights, the norms' eps, the dropout and the train/eval mode of an
        ``nn.TransformerEncoderLayer(..., batch_first=True)``.

        ``self_attn.in_proj_weight`` (3E, E) is cut into W_q, W_k, W_v (in that order; see
        ``attn.MultiHeadAttention.from_torch``). In eval mode the two compute the same numbers:
        ``layer(x, src_mask=..., src_key_padding_mask=...)`` with torch's masks (True =
        blocked) is ``block(x, mask)`` with the package's (``attn.from_torch_mha_mask``).

        Raises:
            TypeError: not an ``nn.TransformerEncoderLayer``.
            ValueError: ``batch_first=False``, ``bias=False``, an activation other than ReLU or
                (exact) GELU, or dropouts that differ from one another.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(f"layer: expected nn.TransformerEncoderLayer, got {type(layer).__name__}")
        attn = layer.self_attn
        if not attn.batch_first:
            raise ValueError("layer: expected batch_first=True, got batch_first=False")
        if layer.linear1.bias is None or attn.in_proj_bias is None or layer.norm1.bias is None:
            raise ValueError("layer: expected bias=True (biases in every Linear and LayerNorm), "
                             "got bias=False")
        activation = _activation_name(layer.activation)
        ps = {"self_attn.dropout": attn.dropout, "dropout.p": layer.dropout.p,
              "dropout1.p": layer.dropout1.p, "dropout2.p": layer.dropout2.p}
        if len(set(ps.values())) > 1:
            got = ", ".join(f"{k}={v}" for k, v in ps.items())
            raise ValueError(f"layer: expected one dropout probability everywhere, got {got}")
        E, H, F = attn.embed_dim, attn.num_heads, layer.linear1.out_features
        ref = layer.linear1.weight
        block = cls(E, H, F, dropout=attn.dropout, norm_first=layer.norm_first,
                    activation=activation).to(ref.device, ref.dtype)
        block.self_attn = MultiHeadAttention.from_torch(attn)  # in_proj split into q, k, v
        for ours, theirs in ((block.linear1, layer.linear1), (block.linear2, layer.linear2),
                             (block.norm1, layer.norm1), (block.norm2, layer.norm2)):
            ours.load_state_dict(theirs.state_dict())
        block.norm1.eps, block.norm2.eps = layer.norm1.eps, layer.norm2.eps
        return block.train(layer.training)


def _activation_name(activation: object) -> str:
    """"relu" or "gelu" for the activation an ``nn.TransformerEncoderLayer`` holds (a function
    or a module); ValueError for any other."""
    fn = nn.functional
    if activation is fn.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is fn.gelu or (isinstance(activation, nn.GELU) and activation.approximate == "none"):
        return "gelu"
    raise ValueError(f"layer: expected activation ReLU or GELU (approximate='none'), got {activation!r}")
