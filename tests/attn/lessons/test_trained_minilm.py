"""A real pretrained model, offline: the file reader, the tokenizer, the encoder (against a
reference forward pass built from torch's own nn.MultiheadAttention), and the head scores."""
import json
import struct
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

from attn.examples import PHRASED_SENTENCES
from attn.lessons.pattern_scores import head_scores
from attn.lessons.trained import minilm as P


# --- the safetensors reader ------------------------------------------------------------------

def write_safetensors(path, tensors, dtype_names):
    header, blobs, offset = {}, [], 0
    for (name, t), dt in zip(tensors.items(), dtype_names):
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps({"__metadata__": {"format": "pt"}, **header}).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def test_read_safetensors_round_trip(tmp_path):
    tensors = {"a": torch.randn(3, 4), "b": torch.arange(6, dtype=torch.int64).reshape(2, 3),
               "c": torch.randn(5).half()}
    write_safetensors(tmp_path / "m.safetensors", tensors, ["F32", "I64", "F16"])
    back = P.read_safetensors(tmp_path / "m.safetensors")
    assert set(back) == set(tensors)
    for k in tensors:
        assert back[k].dtype == tensors[k].dtype and torch.equal(back[k], tensors[k])


def test_read_safetensors_rejects_unknown_dtypes(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"x": torch.zeros(2)}, ["F8_E4M3"])
    with pytest.raises(ValueError, match="expected dtypes .* got F8_E4M3 for x"):
        P.read_safetensors(tmp_path / "m.safetensors")


# --- the real model ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def loaded():
    return P.load_minilm()


def test_the_model_is_all_minilm_l6_v2_on_the_courses_attention(loaded):
    model, tok = loaded
    assert P.model_dir().is_dir() and (P.model_dir() / "model.safetensors").is_file()
    assert (model.num_layers, model.num_heads) == (6, 12)
    assert all(isinstance(layer.attn, P.MultiHeadAttention) and layer.attn.bias
               for layer in model.layers)
    assert len(tok.vocab) == model.word.num_embeddings == 30522
    assert P.load_minilm() is P.load_minilm()  # read once
    # every parameter replaced by the file's tensors
    state = P.read_safetensors(P.model_dir() / "model.safetensors")
    assert torch.equal(model.word.weight, state["embeddings.word_embeddings.weight"])
    assert torch.equal(model.layers[5].attn.W_o.bias, state["encoder.layer.5.attention.output.dense.bias"])


def reference_forward(state, ids, mask, num_heads=12, eps=1e-12):
    """BERT from the raw file's tensors with torch's nn.MultiheadAttention (no attn code)."""
    L = ids.shape[1]
    x = (state["embeddings.word_embeddings.weight"][ids]
         + state["embeddings.position_embeddings.weight"][:L]
         + state["embeddings.token_type_embeddings.weight"][0])
    x = F.layer_norm(x, (x.shape[-1],), state["embeddings.LayerNorm.weight"],
                     state["embeddings.LayerNorm.bias"], eps)
    E, maps, n = x.shape[-1], [], 0
    while f"encoder.layer.{n}.attention.self.query.weight" in state:
        p = lambda name: state[f"encoder.layer.{n}.{name}"]  # noqa: E731
        mha = torch.nn.MultiheadAttention(E, num_heads, batch_first=True)
        with torch.no_grad():
            qkv = ("query", "key", "value")
            mha.in_proj_weight.copy_(torch.cat([p(f"attention.self.{k}.weight") for k in qkv]))
            mha.in_proj_bias.copy_(torch.cat([p(f"attention.self.{k}.bias") for k in qkv]))
            mha.out_proj.weight.copy_(p("attention.output.dense.weight"))
            mha.out_proj.bias.copy_(p("attention.output.dense.bias"))
        a, w = mha(x, x, x, key_padding_mask=~mask, average_attn_weights=False)
        x = F.layer_norm(x + a, (E,), p("attention.output.LayerNorm.weight"),
                         p("attention.output.LayerNorm.bias"), eps)
        f = F.linear(F.gelu(F.linear(x, p("intermediate.dense.weight"), p("intermediate.dense.bias"))),
                     p("output.dense.weight"), p("output.dense.bias"))
        x = F.layer_norm(x + f, (E,), p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)
        maps.append(w)
        n += 1
    return x, torch.stack(maps)


def test_encoder_equals_a_reference_built_on_torch_multihead_attention(loaded):
    model, _ = loaded
    state = P.read_safetensors(P.model_dir() / "model.safetensors")
    rows = [P.encode(w).ids[0] for w in PHRASED_SENTENCES.values()]
    L = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), L, dtype=torch.long)
    mask = torch.zeros(len(rows), L, dtype=torch.bool)
    for b, r in enumerate(rows):
        ids[b, : len(r)], mask[b, : len(r)] = r, True
    with torch.no_grad():
        h, w = model(ids, mask)
        h_ref, w_ref = reference_forward(state, ids, mask)
    assert w.shape == (6, len(rows), 12, L, L)
    real = mask[:, :, None]  # compare real tokens only (padding rows are not used)
    torch.testing.assert_close(h * real, h_ref * real, atol=1e-4, rtol=0)
    torch.testing.assert_close(w * real[None, :, None], w_ref * real[None, :, None], atol=1e-5, rtol=0)


def test_sentence_embeddings_know_paraphrases(loaded):
    e = P.embed(["A man is playing a guitar.", "Someone plays the guitar.",
                 "The stock market fell sharply today."])
    sim = e @ e.T
    torch.testing.assert_close(sim.diagonal(), torch.ones(3))
    assert sim[0, 1] > 0.7 and sim[0, 2] < 0.3 and sim[1, 2] < 0.3


def test_encode_groups_and_unknown_characters(loaded):
    _, tok = loaded
    enc = P.encode(PHRASED_SENTENCES["chapter"])
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.ids.shape == (1, len(enc.tokens))
    chars = "".join(PHRASED_SENTENCES["chapter"])
    assert len(enc.tokens) == len(chars) + 2  # one token per Chinese character
    unknown = [c for c in chars if c not in tok.ids]
    assert enc.tokens.count("[UNK]") == len(unknown) > 0
    assert enc.groups[1:3] == (0, 0) and enc.groups[-2] == 5 and enc.groups[0] == -1
    gloss = P.encode(PHRASED_SENTENCES["gloss"])
    assert "[UNK]" not in gloss.tokens and "##ming" in gloss.tokens
    assert P.encode("one phrase").groups == (-1, 0, 0, -1)
    with pytest.raises(TypeError, match="words: expected a str or a non-empty list of str"):
        P.encode([])


# --- patterns and scores ---------------------------------------------------------------------------

def test_sentence_pattern_masks_by_their_definitions():
    enc = P.Encoded(("[CLS]", "a", "b", "c", "[SEP]"), torch.zeros(1, 5, dtype=torch.long),
                    (-1, 0, 0, 1, -1))
    m = P.sentence_pattern_masks(enc)
    assert tuple(m) == P.SENTENCE_PATTERNS
    for i in range(5):
        for j in range(5):
            assert bool(m["previous"][i, j]) == (j == i - 1)
            assert bool(m["next"][i, j]) == (j == i + 1)
            assert bool(m["[CLS]"][i, j]) == (j == 0)
            assert bool(m["[SEP]"][i, j]) == (j == 4)
            assert bool(m["block"][i, j]) == (i != j and enc.groups[i] == enc.groups[j] >= 0)
    with pytest.raises(TypeError, match="sentence: expected an Encoded"):
        P.sentence_pattern_masks(("a", "b"))


def test_the_heads_found_in_minilm(loaded):
    """What the notebook reports, re-measured: a previous-token head in layer 1, a
    next-token head in layer 2, and [CLS] (not [SEP]) as the common target."""
    for words in PHRASED_SENTENCES.values():
        maps = P.attention_maps(words)
        assert maps.weights.shape[:2] == (6, 12)
        torch.testing.assert_close(maps.weights.sum(-1), torch.ones(maps.weights.shape[:-1]))
        s = head_scores(maps.weights, P.sentence_pattern_masks(maps.sentence))
        assert s["previous"][0, 2] > 0.95 and s["previous"].flatten().topk(2).values[1] < 0.6
        assert s["next"].argmax().item() == 1 * 12 + 8 and s["next"].max() > 0.45
        assert s["[CLS]"].median() > 0.3 > s["[SEP]"].median()
        uniform = 1 / maps.weights.shape[-1]
        assert s["[CLS]"].median() > 3 * uniform


def test_nothing_reaches_the_network_or_imports_a_hub_library():
    code = textwrap.dedent("""
        import socket, sys
        def refuse(*args, **kwargs):
            raise OSError("network used")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from attn.lessons.trained import minilm as pretrained
        from attn.examples import SENTENCE
        maps = pretrained.attention_maps(SENTENCE)
        print(tuple(maps.weights.shape[:2]), "transformers" in sys.modules, "huggingface_hub" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(6,", "12)", "False", "False"]
