"""Multi-head latent attention worked out (attn.lessons.modern.latent): the absorption equals the
rebuilt keys in float64, rotary positions on the rebuilt keys break it, the decoupled rotary
key restores it; the cache per token."""
import pytest
import torch

from attn.lessons.modern import latent
from attn.positions import offset_spread

EXACT = 1e-12


@pytest.fixture(params=[0, 1, 2])
def setting(request):
    layer = latent.latent_layer(seed=request.param)
    return layer, latent.sample_input(seed=request.param + 10)


def gap(a, b):
    return (a - b).abs().max().item()


def test_the_keys_need_not_be_rebuilt(setting):
    layer, x = setting
    assert gap(latent.scores_absorbed(layer, x), latent.scores_direct(layer, x)) < EXACT


def test_rotating_the_rebuilt_keys_breaks_the_absorption(setting):
    layer, x = setting
    direct = latent.scores_direct(layer, x, rope=True)
    assert gap(latent.scores_absorbed(layer, x, rope=True), direct) > 0.1
    # what RoPE buys: the rotated direct scores depend on the offset only, for fixed q and k
    q = torch.ones(6, 4, dtype=torch.float64)
    from attn.positions import apply_rope
    assert offset_spread(apply_rope(q) @ apply_rope(q).T) < EXACT


def test_the_decoupled_rotary_key_restores_it(setting):
    layer, x = setting
    absorbed = latent.scores_decoupled(layer, x, absorbed=True)
    assert gap(absorbed, latent.scores_decoupled(layer, x, absorbed=False)) < EXACT
    assert gap(absorbed, latent.scores_absorbed(layer, x)) > 0.1  # the rotary part counts
    assert gap(latent.outputs(layer, x, absorbed=True), latent.outputs(layer, x, absorbed=False)) < EXACT


def test_the_values_fold_too_and_the_outputs_are_causal():
    layer, x = latent.latent_layer(), latent.sample_input()
    out = latent.outputs(layer, x, absorbed=True)
    assert out.shape == (4, 6, 4)
    changed = x.clone()
    changed[-1] += 1.0  # the last token cannot reach the earlier ones
    assert gap(latent.outputs(layer, changed, absorbed=True)[:, :-1], out[:, :-1]) < EXACT


def test_what_is_cached():
    layer, x = latent.latent_layer(), latent.sample_input()
    c, k_rope = latent.latent_cache(layer, x)
    assert c.shape == (6, 6) and k_rope.shape == (6, 4)
    k, v = latent.rebuilt_keys_values(layer, c)
    assert k.shape == v.shape == (4, 6, 4)
    assert latent.cache_numbers_per_token(layer) == {"MLA": 10, "MHA": 32, "MQA": 8}


def test_bad_input_is_named():
    layer = latent.latent_layer()
    with pytest.raises(ValueError, match="head_dim: expected an even int"):
        latent.latent_layer(head_dim=3)
    with pytest.raises(ValueError, match=r"x: expected a float64 \(T, E=16\)"):
        latent.scores_direct(layer, torch.zeros(3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"x: expected a float64"):
        latent.scores_direct(layer, torch.zeros(3, 16))
    with pytest.raises(TypeError, match="layer: expected a LatentLayer"):
        latent.latent_cache("layer", torch.zeros(3, 16, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"x: expected 2 dims"):
        latent.latent_cache(layer, torch.zeros(1, 3, 16, dtype=torch.float64))
