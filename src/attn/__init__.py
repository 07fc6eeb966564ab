"""attn: the shared package of the course on self-attention and multi-head attention.

Mask convention everywhere: bool, **True = may attend** (as in
``torch.nn.functional.scaled_dot_product_attention``).
"""
from . import examples
from .block import TransformerBlock
from .functional import (
    attention_backward,
    attention_from_scores,
    masked_softmax,
    scaled_dot_product_attention,
    softmax_with_fill,
)
from .kv_cache import KVCache
from .masks import causal_mask, from_torch_mha_mask, padding_mask, sliding_window_mask, to_torch_mha_mask
from .modules import MultiHeadAttention, SelfAttention
from .scoring import AdditiveAttention, dot_product_scores, scaled_dot_product_scores

__version__ = "0.1.0"

__all__ = [
    "examples",
    "scaled_dot_product_attention",
    "masked_softmax",
    "softmax_with_fill",
    "attention_from_scores",
    "attention_backward",
    "dot_product_scores",
    "scaled_dot_product_scores",
    "AdditiveAttention",
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "to_torch_mha_mask",
    "from_torch_mha_mask",
    "SelfAttention",
    "MultiHeadAttention",
    "KVCache",
    "TransformerBlock",
]
