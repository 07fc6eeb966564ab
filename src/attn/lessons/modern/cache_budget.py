"""The KV cache's bytes, from a model's published configuration (notebook 14).

A decoder keeps, for every layer and every token seen, the keys and values of each head of
keys and values (notebook 10):

    bytes per token = 2 (a key and a value) x layers x H_kv x D x bytes per number,

with H_kv the heads of keys and values and D the head size. Multi-head attention (MHA) has
H_kv = H; grouped-query attention (GQA) shares each key/value head among H / H_kv query heads;
multi-query attention (MQA) has H_kv = 1. Multi-head latent attention (MLA, DeepSeek-V2) caches
one latent vector of d_c numbers per token and layer, plus one small rotary key of d_r numbers
shared by the heads (``attn.lessons.modern.latent``):

    bytes per token = layers x (d_c + d_r) x bytes per number.

A sequence of T tokens in a batch of B holds B x T times that; with a sliding window of W
(Mistral 7B v0.1) only the last min(T, W) tokens are kept.

``PUBLISHED`` holds the numbers of six models, each with the page it was read from (the
model's config.json on Hugging Face, or its paper); ``chapter_configs`` the chapter's layer,
d_model = 512, h = 8, with 8, 4, 2 and 1 heads of keys and values.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..._checks import check_choice, check_int, check_positive_int

__all__ = ["ModelConfig", "PUBLISHED", "published", "FP16_BYTES", "chapter_configs",
           "cache_numbers_per_token", "cache_bytes_per_token", "cache_bytes", "KINDS"]

#: Bytes of one number in float16 or bfloat16, the dtype these models are served in.
FP16_BYTES = 2
#: The kinds of attention: what the cache holds per token and layer.
KINDS = ("MHA", "GQA", "MQA", "MLA")


@dataclass(frozen=True)
class ModelConfig:
    """One model's attention, as its configuration publishes it.

    Attributes:
        name: the model's name.
        kind: "MHA", "GQA", "MQA" or "MLA" (``KINDS``).
        layers: the number of attention layers (``num_hidden_layers``).
        heads: H, the query heads (``num_attention_heads``).
        kv_heads: H_kv, the heads of keys and values (``num_key_value_heads``; 1 for MQA).
            For MLA, the heads its keys and values are rebuilt for (= H).
        head_size: D, the size of one head's key (``hidden_size / num_attention_heads`` or
            ``head_dim``; for MLA, ``qk_nope_head_dim``).
        latent: d_c, MLA's cached latent per token and layer (``kv_lora_rank``); 0 otherwise.
        rope_dim: d_r, MLA's decoupled rotary key per token and layer (``qk_rope_head_dim``);
            0 otherwise.
        window: W, a sliding window (``sliding_window``), or None.
        source: where the numbers were read: an address without its scheme (the course fetches
            nothing; tests/delivery/test_offline.py holds the code to that).
    """

    name: str
    kind: str
    layers: int
    heads: int
    kv_heads: int
    head_size: int
    source: str
    latent: int = 0
    rope_dim: int = 0
    window: int | None = None

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        for field in ("layers", "heads", "kv_heads", "head_size"):
            check_positive_int(field, getattr(self, field))
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads: expected a divisor of heads={self.heads}, got {self.kv_heads}")
        expected = {"MHA": self.kv_heads == self.heads, "MQA": self.kv_heads == 1,
                    "GQA": 1 < self.kv_heads < self.heads, "MLA": True}[self.kind]
        if not expected:
            raise ValueError(f"kv_heads: expected {self.kind}'s number of key/value heads (MHA: heads, "
                             f"GQA: between 1 and heads, MQA: 1), got {self.kv_heads} for heads={self.heads}")
        if (self.kind == "MLA") != (self.latent > 0):
            raise ValueError(f"latent: expected a positive d_c for MLA only, got {self.latent} for {self.kind}")
        check_int("latent", self.latent, low=0)
        check_int("rope_dim", self.rope_dim, low=0)
        if self.window is not None:
            check_positive_int("window", self.window)


#: Six published models. Each number was read from the page named in ``source`` (the model's
#: config.json, or its paper where the config uses another format); head_size is
#: hidden_size / num_attention_heads where the config gives no head_dim.
PUBLISHED: tuple[ModelConfig, ...] = (
    # config.json: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size 4096
    ModelConfig("Llama 2 7B", "MHA", 32, 32, 32, 128,
                "huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    # config.json: num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192
    ModelConfig("Llama 2 70B", "GQA", 80, 64, 8, 128,
                "huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json"),
    # config.json: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, hidden_size 4096
    ModelConfig("Llama 3 8B", "GQA", 32, 32, 8, 128,
                "huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"),
    # the paper (window W = 4096) and params.json of https://huggingface.co/mistralai/Mistral-7B-v0.1:
    # n_layers 32, n_heads 32, n_kv_heads 8, head_dim 128, sliding_window 4096
    ModelConfig("Mistral 7B v0.1", "GQA", 32, 32, 8, 128, "arxiv.org/abs/2310.06825",
                window=4096),
    # config.json: n_layer 32, n_head 71, multi_query true, hidden_size 4544 (= 71 x 64)
    ModelConfig("Falcon 7B", "MQA", 32, 71, 1, 64,
                "huggingface.co/tiiuae/falcon-7b/blob/main/config.json"),
    # config.json (of DeepSeek-V2-Chat): num_hidden_layers 60, num_attention_heads 128,
    # kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128
    ModelConfig("DeepSeek-V2", "MLA", 60, 128, 128, 128,
                "huggingface.co/deepseek-ai/DeepSeek-V2-Chat/blob/main/config.json",
                latent=512, rope_dim=64),
)


def published(name: str) -> ModelConfig:
    """The ``PUBLISHED`` configuration of the model called ``name``."""
    names = tuple(c.name for c in PUBLISHED)
    return PUBLISHED[names.index(check_choice("name", name, names))]


def chapter_configs(d_model: int = 512, num_heads: int = 8, *, layers: int = 1,
                    kv_heads: tuple[int, ...] = (8, 4, 2, 1)) -> list[ModelConfig]:
    """The chapter's layer (``attn.MultiHeadAttention(d_model, num_heads, num_kv_heads=H_kv)``)
    with each number of key/value heads in ``kv_heads``: MHA, GQA ..., MQA.

    Args:
        d_model: E, a positive multiple of ``num_heads``.
        num_heads: H.
        layers: how many such layers the model stacks.
        kv_heads: H_kv values, each a divisor of H.

    Returns:
        One ``ModelConfig`` per H_kv, head size D = E / H, named "MHA", "GQA (H_kv = n)" or "MQA".
    """
    d_model = check_positive_int("d_model", d_model)
    num_heads = check_positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model: expected a positive multiple of num_heads={num_heads}, got {d_model}")
    if not isinstance(kv_heads, (tuple, list)) or not kv_heads:
        raise TypeError(f"kv_heads: expected a non-empty tuple of ints, got {kv_heads!r}")
    configs = []
    for n in kv_heads:
        n = check_positive_int("kv_heads", n)
        if num_heads % n:
            raise ValueError(f"kv_heads: expected divisors of num_heads={num_heads}, got {n}")
        kind = "MHA" if n == num_heads else "MQA" if n == 1 else "GQA"
        name = kind if kind != "GQA" else f"GQA (H_kv = {n})"
        configs.append(ModelConfig(name, kind, layers, num_heads, n, d_model // num_heads,
                                   source="attn.MultiHeadAttention"))
    return configs


def _check_config(config: object) -> ModelConfig:
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config: expected a ModelConfig (see PUBLISHED), got {type(config).__name__}")
    return config


def cache_numbers_per_token(config: ModelConfig) -> int:
    """The numbers one token adds to the cache, over every layer: 2 x layers x H_kv x D, or
    layers x (d_c + d_r) for MLA."""
    c = _check_config(config)
    if c.kind == "MLA":
        return c.layers * (c.latent + c.rope_dim)
    return 2 * c.layers * c.kv_heads * c.head_size  # a key and a value per layer and key/value head


def cache_bytes_per_token(config: ModelConfig, *, bytes_per_number: int = FP16_BYTES) -> int:
    """The bytes one token adds to the cache (float16: 2 bytes a number)."""
    return cache_numbers_per_token(config) * check_positive_int("bytes_per_number", bytes_per_number)


def cache_bytes(config: ModelConfig, tokens: int, *, batch: int = 1,
                bytes_per_number: int = FP16_BYTES) -> int:
    """The cache of ``batch`` sequences of ``tokens`` tokens each: B x min(T, W) x the bytes per
    token (W the model's sliding window, if any: older tokens are dropped).

    Args:
        config: a ``ModelConfig``.
        tokens: T >= 0, the tokens seen by each sequence.
        batch: B >= 1.
        bytes_per_number: 2 for float16 or bfloat16, 4 for float32.
    """
    c = _check_config(config)
    tokens = check_int("tokens", tokens, low=0)
    batch = check_positive_int("batch", batch)
    kept = tokens if c.window is None else min(tokens, c.window)
    return batch * kept * cache_bytes_per_token(c, bytes_per_number=bytes_per_number)
