"""Checkers of notebook 04: right answers pass, typical mistakes get their hint, placeholders
and junk get a "Not yet", and no message gives the answer away. A test that takes
``language`` runs in English and in Chinese, and hears each reply in both (tests/_replies.py)."""
import pytest
import torch

from attn import MultiHeadAttention
from attn.lessons.cost.counts import attention_cost
from attn.exercises import nb04

from _replies import no_leak, reply, says


def _head_queries(weight, x, i, num_heads):
    d_k = weight.shape[0] // num_heads
    return x @ weight[i * d_k:(i + 1) * d_k].T  # rows of weight = columns of W^Q


def test_head_queries_right(language):
    assert reply(nb04.check_head_queries, _head_queries).correct
    # another correct way: the whole Q, split with view + transpose, head i taken
    def by_split(weight, x, i, num_heads):
        q = x @ weight.T  # (B, n, E)
        return q.view(x.shape[0], x.shape[1], num_heads, -1).transpose(1, 2)[:, i]  # (B, h, n, D)
    assert reply(nb04.check_head_queries, by_split).correct
    by_chunks = lambda w, x, i, h: torch.nn.functional.linear(x, w).chunk(h, -1)[i]  # noqa: E731
    assert reply(nb04.check_head_queries, by_chunks).correct


@pytest.mark.parametrize("answer, hint", [
    (None, "Replace None"),
    ("a string", "should be a function"),
    (lambda w, x, i, h: x @ w[:, i * (w.shape[0] // h):(i + 1) * (w.shape[0] // h)], "columns of weight"),
    (lambda w, x, i, h: x @ w[(i + 1) * (w.shape[0] // h):(i + 2) * (w.shape[0] // h)].T, "numbered from 0"),
    (lambda w, x, i, h: (x @ w.T).reshape(x.shape[0], h, x.shape[1], -1)[:, i], "mixes positions"),
    (lambda w, x, i, h: x @ w.T, "shape"),
    (lambda w, x, i, h: (x @ w.T).tolist(), "Return a tensor"),
    (lambda w, x, i, h: 2 * _head_queries(w, x, i, h), "differs from the layer's own split"),
    (lambda w, x, i, h: 1 / 0, "raised {error}"),
])
def test_head_queries_wrong(answer, hint, language):
    fb = reply(nb04.check_head_queries, answer)
    assert not fb.correct and says(fb, hint), fb


@pytest.mark.parametrize("check, answer", [
    (nb04.check_head_queries, lambda w, x, i, h: 1 / 0), (nb04.check_layer_macs, lambda n, E, h, d: [1 / 0]),
], ids=["head_queries", "layer_macs"])
def test_an_error_in_the_learners_function_is_named(check, answer, language):
    fb = reply(check, answer)
    assert not fb.correct and says(fb, "raised {error}", error="ZeroDivisionError"), fb


def test_head_queries_hard_coded_for_two_heads_fails():
    """A function right for the first layer only (h = 2 hard-coded) must not pass."""
    fb = nb04.check_head_queries(lambda w, x, i, h: _head_queries(w, x, i, 2))
    assert not fb.correct


def _layer_macs(n, d_model, num_heads, d_k):
    return 4 * n * d_model * num_heads * d_k + 2 * num_heads * n ** 2 * d_k


def test_layer_macs_right(language):
    assert reply(nb04.check_layer_macs, _layer_macs).correct
    assert reply(nb04.check_layer_macs, lambda n, E, h, d: float(_layer_macs(n, E, h, d))).correct


def test_layer_macs_compares_with_the_real_layer():
    """The expected counts come from running layers, and they agree with the formula; at most
    sizes the heads' width h d_k is not d_model, so the summary's count cannot pass."""
    for n, E, h, d in nb04.MACS_SIZES:
        assert nb04._counted_macs(n, E, h, d) == _layer_macs(n, E, h, d) == attention_cost(n, E, h, d_k=d, d_v=d).macs
    assert sum(h * d != E for _, E, h, d in nb04.MACS_SIZES) >= len(nb04.MACS_SIZES) - 1


@pytest.mark.parametrize("answer, hint", [
    (None, "Replace None"),
    (42, "should be a function"),
    (lambda n, E, h, d: 4 * n * E * E + 2 * n * n * E, "summary's count"),
    (lambda n, E, h, d: 4 * n * E * E + 2 * h * n * n * d, "map d_model numbers to d_model"),
    (lambda n, E, h, d: 3 * n * E * h * d + 2 * h * n * n * d, "W^O"),
    (lambda n, E, h, d: 4 * n * E * h * d + h * n * n * d, "weights times V"),
    (lambda n, E, h, d: h * 4 * n * E * h * d + 2 * h * n * n * d, "once for all heads"),
    (lambda n, E, h, d: 4 * n * E * h * d + 2 * h * n * n * E, "own d_k"),
    (lambda n, E, h, d: 4 * n * E * h * d + 2 * n * n * d, "once per head"),
    (lambda n, E, h, d: 4 * n * E * h * d, "grows with n^2"),
    (lambda n, E, h, d: _layer_macs(n, E, h, d) + 1, "differs from the layer's"),
    (lambda n, E, h, d: 2.5, "whole"),
    (lambda n, E, h, d: [1 / 0], "raised {error}"),
    (lambda n, E, h: 4 * n * E * E + 2 * n * n * E, "raised {error}"),  # the old three arguments
])
def test_layer_macs_wrong(answer, hint, language):
    fb = reply(nb04.check_layer_macs, answer)
    assert not fb.correct and says(fb, hint), fb
    no_leak(fb, *(_layer_macs(n, E, h, d) for n, E, h, d in nb04.MACS_SIZES))


def test_layer_macs_right_at_one_size_only_fails():
    fb = nb04.check_layer_macs(lambda n, E, h, d: _layer_macs(10, 512, 8, 64))
    assert not fb.correct


def _param_counts(count):
    """A learner's answer to exercise 2: {h: count(layer)} for the exercise's layers."""
    q = nb04.PARAMS_QUESTION
    return {h: count(MultiHeadAttention(q["d_model"], h, bias=q["bias"])) for h in q["heads"]}


def _heads_times(layer):
    return layer.num_heads * sum(p.numel() for p in layer.parameters())


PARAM_SLIPS = [
    (lambda layer: len(list(layer.parameters())), "number of the layer's tensors", "entries of one tensor"),
    (lambda layer: sum(p.shape[0] for p in layer.parameters()), "one dimension of each tensor",
     "2-D tensor"),
    (lambda layer: sum(p.numel() for n, p in layer.named_parameters() if n.endswith("weight")),
     "leaves out the biases", "each projection has two"),
    (lambda layer: sum(p.numel() for n, p in layer.named_parameters() if not n.startswith("W_o")),
     "output projection W^O", "four projections"),
    (_heads_times, "grows with the number of heads", "change shape with h"),
    (lambda layer: sum(p.numel() for p in layer.parameters()) + 1, "differs from the layer's",
     "how many numbers each holds"),
]


def test_param_count_right(language):
    nb04.PARAM_COUNT_HINTS.reset()
    right = _param_counts(lambda layer: sum(p.numel() for p in layer.parameters()))
    E = nb04.PARAMS_QUESTION["d_model"]
    assert set(right.values()) == {4 * E * E + 4 * E}  # h does not enter
    assert reply(nb04.check_param_count, right).correct
    assert reply(nb04.check_param_count, {h: float(c) for h, c in right.items()}).correct


@pytest.mark.parametrize("count, symptom, where", PARAM_SLIPS)
def test_param_count_names_each_slip_then_where_to_look(count, symptom, where, language):
    nb04.PARAM_COUNT_HINTS.reset()
    answer = _param_counts(count)
    first = reply(nb04.check_param_count, answer)
    assert not first.correct and says(first, symptom) and not says(first, "Where to look"), first
    second = reply(nb04.check_param_count, answer)
    assert not second.correct and second.message.startswith(first.message), second
    assert says(second, "Where to look") and says(second, where), second
    E = nb04.PARAMS_QUESTION["d_model"]
    no_leak(second, 4 * E * E + 4 * E)


def test_param_count_input_errors(language):
    nb04.PARAM_COUNT_HINTS.reset()
    heads = nb04.PARAMS_QUESTION["heads"]
    check = nb04.check_param_count
    assert says(reply(check, None), "Replace None")
    assert says(reply(check, 37248), "should be a dict")
    assert says(reply(check, {heads[0]: 1}), "missing: {missing}", missing=list(heads[1:]))
    assert says(reply(check, {h: "many" for h in heads}), "should be one whole number")
    assert says(reply(check, {h: 2.5 for h in heads}), "should be a whole number")
    right = _param_counts(lambda layer: sum(p.numel() for p in layer.parameters()))
    one_off = {h: c + (h == heads[1]) for h, c in right.items()}
    fb = reply(check, one_off)
    assert not fb.correct and says(fb, "For {h} heads your count differs from the layer's.", h=heads[1])


def _softmax_answer(count):
    """A learner's answer to exercise 4: count(weights) for the two layers of the question, whose
    queries (L tokens) and keys (S tokens) come from different sequences."""
    q = nb04.SOFTMAX_QUESTION
    torch.manual_seed(0)
    x_q = torch.randn(q["batch"], q["queries"], q["d_model"])  # (B, L, d_model)
    x_kv = torch.randn(q["batch"], q["keys"], q["d_model"])  # (B, S, d_model)
    many = MultiHeadAttention(q["d_model"], q["num_heads"])
    one = MultiHeadAttention(q["d_model"], 1)
    return count(many(x_q, x_kv)[1]), count(one(x_q, x_kv)[1])  # weights (B, H, L, S)


SOFTMAX_SLIPS = [
    (lambda w: w.numel(), "both sequences of the batch", "first dim"),
    (lambda w: w[0].shape[0] * w.shape[2], "count rows", "one score per (query, key) pair"),
    (lambda w: w.numel() // w.shape[-1], "and for the whole batch", "and the first"),
    (lambda w: w[0, 0].numel(), "counts are equal", "head dim"),
    (lambda w: w[0].shape[0] * w.shape[2] ** 2, "maps of L x L", "one score per key"),
    (lambda w: w[0].shape[0] * w.shape[3] ** 2, "maps of S x S", "one row per query"),
    (lambda w: w[0].numel() + 1, "Not the scores", "(B, H, L, S)"),
]


def test_softmax_entries_right(language):
    nb04.SOFTMAX_ENTRIES_HINTS.reset()
    many, one = _softmax_answer(lambda w: w[0].numel())
    q = nb04.SOFTMAX_QUESTION
    assert (many, one) == (q["num_heads"] * q["queries"] * q["keys"], q["queries"] * q["keys"])
    assert q["queries"] != q["keys"]  # the prose's h n^2 cannot answer it
    assert reply(nb04.check_softmax_entries, (many, one)).correct
    assert reply(nb04.check_softmax_entries, [torch.tensor(many), one]).correct


@pytest.mark.parametrize("count, symptom, where", SOFTMAX_SLIPS)
def test_softmax_entries_names_each_slip_then_where_to_look(count, symptom, where, language):
    nb04.SOFTMAX_ENTRIES_HINTS.reset()
    answer = _softmax_answer(count)
    first = reply(nb04.check_softmax_entries, answer)
    assert not first.correct and says(first, symptom) and not says(first, "Where to look"), first
    second = reply(nb04.check_softmax_entries, answer)
    assert not second.correct and second.message.startswith(first.message), second
    assert says(second, "Where to look") and says(second, where), second
    q = nb04.SOFTMAX_QUESTION
    no_leak(second, q["num_heads"] * q["queries"] * q["keys"], q["queries"] * q["keys"])


def test_softmax_entries_swapped_and_input_errors(language):
    nb04.SOFTMAX_ENTRIES_HINTS.reset()
    many, one = _softmax_answer(lambda w: w[0].numel())
    assert says(reply(nb04.check_softmax_entries, (one, many)), "other way round")
    for answer, hint in [(None, "placeholder"), (5, "Give two numbers"), (("a", 1), "whole number"),
                         ((1, "b"), "whole number")]:
        fb = reply(nb04.check_softmax_entries, answer)
        assert not fb.correct and says(fb, hint), (answer, fb)
