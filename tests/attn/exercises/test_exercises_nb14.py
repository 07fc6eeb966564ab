"""Checker of notebook 14: grouped-query attention written by a learner. Four correct ways pass
(repeat_interleave, expand then reshape, a grouped view of the queries, and torch's SDPA with
enable_gqa=True); each classic slip gets its own named symptom, then where to look, in English
and in Chinese (tests/_replies.py)."""
import math

import pytest
import torch
import torch.nn.functional as F

from attn.exercises import nb14
from attn.language import tr, translation

from _replies import reply, says


@pytest.fixture(autouse=True)
def first_tier():
    nb14.GQA_HINTS.reset()
    yield
    nb14.GQA_HINTS.reset()


def groups_of(q, k):
    H, H_kv = q.shape[1], k.shape[1]
    if H % H_kv:
        raise ValueError(f"num_kv_heads: expected a divisor of num_heads={H}, got {H_kv}")
    return H // H_kv


def attend(q, k, v, mask):
    """softmax(q k^T / sqrt(D)) v with k, v already one head per query head: (output, weights)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# ---- four correct ways --------------------------------------------------------------------

def by_repeat_interleave(q, k, v, mask=None):
    G = groups_of(q, k)
    return attend(q, k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1), mask)


def by_expand_and_reshape(q, k, v, mask=None):
    G = groups_of(q, k)
    B, H_kv, S, D = k.shape
    k = k[:, :, None].expand(B, H_kv, G, S, D).reshape(B, H_kv * G, S, D)
    v = v[:, :, None].expand(B, H_kv, G, S, D).reshape(B, H_kv * G, S, D)
    return attend(q, k, v, mask)


def by_grouped_queries(q, k, v, mask=None):
    """No copy of the keys: the queries viewed as (B, H_kv, G, L, D), the mask given its own
    dimension for the groups."""
    G = groups_of(q, k)
    B, H, L, D = q.shape
    H_kv = k.shape[1]
    if mask is not None:
        mask = torch.broadcast_to(mask, (B, H, L, k.shape[2])).reshape(B, H_kv, G, L, -1)
    out, weights = attend(q.reshape(B, H_kv, G, L, D), k[:, :, None], v[:, :, None], mask)
    return out.reshape(B, H, L, D), weights.reshape(B, H, L, -1)


def by_sdpa(q, k, v, mask=None):
    groups_of(q, k)  # the refusal: SDPA's own error would not name num_kv_heads
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # output only


@pytest.mark.parametrize("fn", [by_repeat_interleave, by_expand_and_reshape, by_grouped_queries, by_sdpa])
def test_each_correct_way_passes(fn, language):
    fb = reply(nb14.check_grouped_query_attention, fn)
    assert fb.correct, fb.message
    assert says(fb, "agree") or says(fb, "agrees")


def test_the_success_message_claims_only_what_was_checked():
    fb = nb14.check_grouped_query_attention(by_sdpa)
    assert "returns no weights, so none were compared" in fb.message
    cases = [case for case, *_ in nb14._cases()]
    assert cases == ["no mask", "a causal mask", "a padding mask", "a mask per head",
                     "one key/value head and a padding mask", "as many key/value heads as query heads"]
    assert [(H, H_kv) for _, H, H_kv, _ in nb14._cases()] == [(4, 2)] * 4 + [(4, 1), (4, 4)]
    assert nb14.NOT_DIVIDING == (6, 4)
    for claim in ("4 query heads sharing 2", "no mask, a causal mask, a padding mask and a mask per head",
                  "sharing 1 and 4", "refuses 6 query heads with 4", "names num_kv_heads"):
        assert claim in nb14.check_grouped_query_attention(by_repeat_interleave).message


# ---- the slips, planted ---------------------------------------------------------------------

def keys_tiled(q, k, v, mask=None):
    G = groups_of(q, k)
    return attend(q, k.repeat(1, G, 1, 1), v.repeat_interleave(G, dim=1), mask)


def values_tiled(q, k, v, mask=None):
    G = groups_of(q, k)
    return attend(q, k.repeat_interleave(G, dim=1), v.repeat(1, G, 1, 1), mask)


def both_tiled(q, k, v, mask=None):
    G = groups_of(q, k)
    return attend(q, k.tile(1, G, 1, 1), v.tile(1, G, 1, 1), mask)


def mask_over_the_queries(q, k, v, mask=None):
    return by_repeat_interleave(q, k, v, None if mask is None else mask.transpose(-2, -1))


def mask_over_the_groups(q, k, v, mask=None):
    G = groups_of(q, k)
    B, H, L, D = q.shape
    out, weights = attend(q.reshape(B, k.shape[1], G, L, D), k[:, :, None], v[:, :, None], mask)
    return out.reshape(B, H, L, D), weights.reshape(B, H, L, -1)


def never_refuses(q, k, v, mask=None):
    G = -(-q.shape[1] // k.shape[1])  # rounded up: 6 heads over 4 gives 8 keys, sliced to 6
    return attend(q, k.repeat_interleave(G, dim=1)[:, :q.shape[1]], v.repeat_interleave(G, dim=1)[:, :q.shape[1]],
                  mask)


def refuses_without_the_name(q, k, v, mask=None):
    if q.shape[1] % k.shape[1]:
        raise ValueError("the heads do not divide")
    return by_repeat_interleave(q, k, v, mask)


def fails_inside(q, k, v, mask=None):
    G = q.shape[1] // k.shape[1]  # 6 // 4 = 1: the shapes no longer match, torch raises
    return attend(q, k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1), mask)


SLIPS = [
    (keys_tiled, "keys tiled", "no mask"),
    (values_tiled, "values tiled", "no mask"),
    (both_tiled, "keys and values tiled", "no mask"),
    (mask_over_the_queries, "mask over the queries", "a causal mask"),
    (mask_over_the_groups, "mask over the groups", "a padding mask"),
]


@pytest.mark.parametrize("fn, slip, case", SLIPS, ids=[s for _, s, _ in SLIPS])
def test_each_slip_is_named_then_located(fn, slip, case, language):
    symptom, where = nb14.SLIPS[slip]
    if language == "zh":
        assert translation(symptom) != symptom and translation(where) != where, "not translated"
    first = reply(nb14.check_grouped_query_attention, fn)
    assert not first.correct
    assert first.message.startswith(tr("With {case}: {symptom}", case=tr(case), symptom="")), first.message
    others = [s for name, (s, _) in nb14.SLIPS.items() if name != slip]
    opening = translation(symptom)[:12]
    assert opening.lower()[:12] in first.message.lower(), first.message
    for other in others:
        assert translation(other)[1:40] not in first.message
    second = reply(nb14.check_grouped_query_attention, fn)
    assert second.message.startswith(first.message) and tr(where) in second.message


@pytest.mark.parametrize("fn, slip", [(never_refuses, "not refused"), (refuses_without_the_name, "not named"),
                                      (fails_inside, "raised inside")])
def test_a_group_count_that_does_not_divide_must_be_refused_by_name(fn, slip, language):
    symptom, where = nb14.SLIPS[slip]
    assert by_repeat_interleave(*nb14._inputs(4, 2, 0))[0].shape == (2, 4, 5, 3)
    first = reply(nb14.check_grouped_query_attention, fn)
    assert not first.correct
    assert says(first, symptom.split("{H_kv}")[1][:40].strip()), first.message
    second = reply(nb14.check_grouped_query_attention, fn)
    assert tr(where) in second.message


def test_a_slip_it_does_not_know_is_said_to_be_one(language):
    def unscaled(q, k, v, mask=None):
        G = groups_of(q, k)
        scores = q @ k.repeat_interleave(G, dim=1).transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, -1) @ v.repeat_interleave(G, dim=1)

    fb = reply(nb14.check_grouped_query_attention, unscaled)
    assert not fb.correct and says(fb, "not by one of the slips this checker knows")


def test_wrong_weights_with_a_right_output_are_named(language):
    def stale_weights(q, k, v, mask=None):
        out, weights = by_repeat_interleave(q, k, v, mask)
        return out, weights.transpose(-2, -1)

    fb = reply(nb14.check_grouped_query_attention, stale_weights)
    assert not fb.correct and says(fb, "your weights are not those it was made with")


def test_what_cannot_be_checked_is_said(language):
    def raises(q, k, v, mask=None):
        raise NotImplementedError

    def shapes(q, k, v, mask=None):
        return q[:, :1]

    def three(q, k, v, mask=None):
        return q, q, q

    def crashes(q, k, v, mask=None):
        return q @ k  # (L, D) @ (L, D): torch raises

    assert says(reply(nb14.check_grouped_query_attention, raises), "Not implemented yet")
    assert says(reply(nb14.check_grouped_query_attention, shapes), "should have shape")
    assert says(reply(nb14.check_grouped_query_attention, three), "Return the output (B, H, L, D)")
    assert says(reply(nb14.check_grouped_query_attention, crashes), "your function raised")
    assert says(reply(nb14.check_grouped_query_attention, None), "Replace None with your function")


def test_every_slip_differs_from_the_right_answer_by_far_more_than_the_round_off():
    for i, (case, H, H_kv, mask) in enumerate(nb14._cases()[:4]):
        q, k, v = nb14._inputs(H, H_kv, seed=i)
        right = by_repeat_interleave(q, k, v, mask)[0]
        for name, slip in nb14._slips(q, k, v, mask).items():
            try:
                wrong = slip()
            except (RuntimeError, ValueError):
                continue
            if case == "a causal mask" and name == "mask over the groups":
                continue  # an (L, S) mask broadcasts the same over groups as over heads: it is right
            if mask is None and name in ("mask over the queries", "mask over the groups"):
                continue  # no mask, nothing to misplace
            assert (wrong - right).abs().max() > 1e-2, (case, name)
