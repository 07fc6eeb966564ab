"""The KV cache's bytes from published configurations (attn.lessons.modern.cache_budget): the
formula against numbers worked by hand, against the bytes a real ``attn.KVCache`` holds, and
the errors that name their argument."""
import pytest
import torch

from attn import KVCache, MultiHeadAttention
from attn.lessons.modern import cache_budget as cb

KIB = 1024


@pytest.mark.parametrize("name, per_token", [
    ("Llama 2 7B", 2 * 32 * 32 * 128 * 2),  # 512 KiB: every head keeps its keys and values
    ("Llama 2 70B", 2 * 80 * 8 * 128 * 2),  # 320 KiB: 80 layers, but 8 key/value heads
    ("Llama 3 8B", 2 * 32 * 8 * 128 * 2),  # 128 KiB
    ("Mistral 7B v0.1", 2 * 32 * 8 * 128 * 2),
    ("Falcon 7B", 2 * 32 * 1 * 64 * 2),  # 8 KiB: one key/value head of 64 numbers
    ("DeepSeek-V2", 60 * (512 + 64) * 2),  # the latent and the rotary key, per layer
])
def test_bytes_per_token_of_each_published_model(name, per_token):
    assert cb.cache_bytes_per_token(cb.published(name)) == per_token


def test_the_published_numbers_are_those_read_from_their_sources():
    got = {c.name: (c.kind, c.layers, c.heads, c.kv_heads, c.head_size, c.latent, c.rope_dim, c.window)
           for c in cb.PUBLISHED}
    assert got == {
        "Llama 2 7B": ("MHA", 32, 32, 32, 128, 0, 0, None),
        "Llama 2 70B": ("GQA", 80, 64, 8, 128, 0, 0, None),
        "Llama 3 8B": ("GQA", 32, 32, 8, 128, 0, 0, None),
        "Mistral 7B v0.1": ("GQA", 32, 32, 8, 128, 0, 0, 4096),
        "Falcon 7B": ("MQA", 32, 71, 1, 64, 0, 0, None),
        "DeepSeek-V2": ("MLA", 60, 128, 128, 128, 512, 64, None),
    }
    assert all(c.source.startswith(("huggingface.co/", "arxiv.org/")) for c in cb.PUBLISHED)  # no scheme: nothing fetches them


def test_mla_caches_as_much_as_gqa_with_two_and_a_quarter_groups():
    """DeepSeek-V2's paper: d_c + d_r = 4.5 d_h numbers, the cache of GQA with 2.25 groups."""
    c = cb.published("DeepSeek-V2")
    assert (c.latent + c.rope_dim) * 4 == 2 * 2.25 * c.head_size * 4
    mha_same_dims = 2 * c.layers * c.heads * c.head_size
    assert mha_same_dims / cb.cache_numbers_per_token(c) == pytest.approx(56.888, abs=1e-3)


def test_a_sequence_a_batch_and_a_window():
    llama = cb.published("Llama 3 8B")
    assert cb.cache_bytes(llama, 8192, batch=4) == 4 * 8192 * 128 * KIB  # 4 GiB
    mistral = cb.published("Mistral 7B v0.1")
    assert cb.cache_bytes(mistral, 4096) == cb.cache_bytes(llama, 4096)  # the window not yet full
    assert cb.cache_bytes(mistral, 32768) == cb.cache_bytes(mistral, 4096)  # it stops growing
    assert cb.cache_bytes(llama, 32768) == 8 * cb.cache_bytes(mistral, 32768)
    assert cb.cache_bytes(llama, 0) == 0
    assert cb.cache_bytes(llama, 10, bytes_per_number=4) == 2 * cb.cache_bytes(llama, 10)


def test_the_chapters_layer_with_8_4_2_1_heads_of_keys_and_values():
    configs = cb.chapter_configs()
    assert [c.kind for c in configs] == ["MHA", "GQA", "GQA", "MQA"]
    assert [cb.cache_bytes_per_token(c) for c in configs] == [2048, 1024, 512, 256]  # 2 x H_kv x 64 x 2


@pytest.mark.parametrize("kv_heads", [8, 4, 2, 1])
def test_the_formula_is_what_a_real_cache_holds(kv_heads):
    (config,) = cb.chapter_configs(kv_heads=(kv_heads,))
    layer = MultiHeadAttention(512, 8, num_kv_heads=kv_heads).to(torch.float16).eval()
    cache = KVCache()
    T = 5
    with torch.no_grad():
        layer(torch.randn(1, T, 512).to(torch.float16), cache=cache, need_weights=False)
    held = (cache.key.numel() + cache.value.numel()) * cache.key.element_size()
    assert held == cb.cache_bytes(config, T)


def test_bad_input_is_named():
    llama = cb.published("Llama 3 8B")
    with pytest.raises(TypeError, match="config: expected a ModelConfig"):
        cb.cache_bytes_per_token("Llama 3 8B")
    with pytest.raises(ValueError, match="tokens: expected an int in 0..inf, got -1"):
        cb.cache_bytes(llama, -1)
    with pytest.raises(ValueError, match="batch: expected a positive int, got 0"):
        cb.cache_bytes(llama, 1, batch=0)
    with pytest.raises(TypeError, match="bytes_per_number: expected a positive int"):
        cb.cache_bytes(llama, 1, bytes_per_number=2.0)
    with pytest.raises(ValueError, match="name: expected one of"):
        cb.published("GPT-5")
    with pytest.raises(ValueError, match="kv_heads: expected divisors of num_heads=8, got 3"):
        cb.chapter_configs(kv_heads=(3,))
    with pytest.raises(ValueError, match="d_model: expected a positive multiple of num_heads=8, got 100"):
        cb.chapter_configs(100)
    with pytest.raises(ValueError, match="kv_heads: expected a divisor of heads=32, got 5"):
        cb.ModelConfig("x", "GQA", 1, 32, 5, 4, "here")
    with pytest.raises(ValueError, match="kv_heads: expected MHA's number of key/value heads"):
        cb.ModelConfig("x", "MHA", 1, 32, 8, 4, "here")
    with pytest.raises(ValueError, match="latent: expected a positive d_c for MLA only"):
        cb.ModelConfig("x", "MLA", 1, 32, 32, 4, "here")
    with pytest.raises(ValueError, match="kind: expected one of"):
        cb.ModelConfig("x", "SWA", 1, 32, 32, 4, "here")
