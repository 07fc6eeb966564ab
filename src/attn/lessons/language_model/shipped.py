"""The weights trained longer than a notebook can afford, shipped in the package.

``python -m tools.train_language_model --language en`` (or ``zh``) trains a ``CharLM`` with the
settings of ``SHIPPED`` on the language's text, seeded and on one thread, and writes
``weights/<language>.pt`` (the state_dict in float16, half the bytes of float32) and
``weights/<language>.json`` (how it was trained: the settings, the final losses, the time, the
machine). ``load_shipped`` gives the model back in float32.

The same command gives the same weights bit for bit on the same machine; another CPU may
differ in the last bits of the arithmetic, and so in the weights, slightly.
"""
from __future__ import annotations

import json
import platform
from importlib import resources
from pathlib import Path

import torch

from ..._checks import check_choice
from .corpus import TEXTS, load_corpus
from .model import CharLM, build_char_lm
from .training import TrainRun, held_out_loss, train_char_lm

__all__ = ["SHIPPED", "NOTEBOOK", "train_shipped", "save_shipped", "load_shipped", "shipped_record",
           "weights_folder"]

#: The shipped models: the model's sizes and the training run, per language.
SHIPPED = {
    "en": {"model": {"d_model": 128, "num_heads": 4, "num_layers": 4, "context": 128, "dropout": 0.1},
           "training": {"steps": 1200, "batch_size": 24, "lr": 2e-3, "warmup": 100, "decay": True, "seed": 0}},
    "zh": {"model": {"d_model": 128, "num_heads": 4, "num_layers": 4, "context": 128, "dropout": 0.1},
           "training": {"steps": 800, "batch_size": 24, "lr": 2e-3, "warmup": 100, "decay": True, "seed": 0}},
}

#: The run a notebook can afford (at most 30 s on 2 cores), the same for both languages.
NOTEBOOK = {"model": {"d_model": 64, "num_heads": 4, "num_layers": 2, "context": 64},
            "training": {"steps": 150, "batch_size": 16, "lr": 3e-3, "seed": 0}}


def weights_folder() -> Path:
    """The package's folder of shipped weights."""
    return Path(str(resources.files(__package__) / "weights"))


def _language(language: object) -> str:
    return check_choice("language", language, tuple(TEXTS))


def train_shipped(language: str) -> TrainRun:
    """Train the shipped model of ``language`` from scratch, with the settings of ``SHIPPED``."""
    language = _language(language)
    corpus, settings = load_corpus(language), SHIPPED[language]
    model = build_char_lm(len(corpus.vocab), seed=settings["training"]["seed"], **settings["model"])
    return train_char_lm(model, corpus.train, held_out=corpus.held_out, eval_every=100, **settings["training"])


def save_shipped(run: TrainRun, language: str, directory: str | Path | None = None) -> tuple[Path, Path]:
    """Write the model of ``run`` as ``<language>.pt`` (float16 state_dict) and the record of
    its training as ``<language>.json`` in ``directory`` (default: the package's folder)."""
    language = _language(language)
    if not isinstance(run, TrainRun):
        raise TypeError(f"run: expected a TrainRun, got {type(run).__name__}")
    folder = weights_folder() if directory is None else Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    weights, record = folder / f"{language}.pt", folder / f"{language}.json"
    torch.save({k: v.detach().to(torch.float16).clone() for k, v in run.model.state_dict().items()}, weights)
    corpus = load_corpus(language)
    shipped = load_shipped(language, folder)  # the float16 weights, read back
    info = {
        "language": language,
        "text": TEXTS[language],
        "model": run.model.config,
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "training": run.settings,
        "final_training_loss_mean_of_last_50": round(sum(run.losses[-50:]) / len(run.losses[-50:]), 4),
        "held_out_loss": [[step, round(loss, 4)] for step, loss in run.held_out],
        "held_out_loss_float16_weights": round(held_out_loss(shipped, corpus.held_out), 4),
        "seconds": round(run.seconds, 1),
        "threads": 1,
        "machine": {"processor": _processor(), "python": platform.python_version(), "torch": torch.__version__},
        "command": f"python -m tools.train_language_model --language {language}",
    }
    record.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return weights, record


def _processor() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def shipped_record(language: str | None = None, directory: str | Path | None = None) -> dict:
    """The record (``<language>.json``) of the shipped model of ``language`` (None: the
    course's current language)."""
    language = load_corpus(language).language
    folder = weights_folder() if directory is None else Path(directory)
    return json.loads((folder / f"{language}.json").read_text(encoding="utf-8"))


def load_shipped(language: str | None = None, directory: str | Path | None = None) -> CharLM:
    """The shipped model of ``language`` (None: the course's current language), float32, in
    eval mode, made of ``attn.TransformerBlock``s."""
    corpus = load_corpus(language)
    folder = weights_folder() if directory is None else Path(directory)
    state = torch.load(folder / f"{corpus.language}.pt", weights_only=True)
    model = CharLM(len(corpus.vocab), **SHIPPED[corpus.language]["model"])
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    return model.eval()
