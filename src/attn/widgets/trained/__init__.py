"""Explorers of trained heads: the tiny models trained for the course (``.tiny``) and a real
pretrained model (``.minilm``, which needs ``attn.lessons.trained.minilm``'s model package)."""
from .minilm import MAX_TOKENS, HeadView, head_view, pretrained_explorer, score_grids, split_sentence
from .tiny import (
    N_EXAMPLES,
    ExampleFrame,
    TrainingFrame,
    example_explorer,
    example_frame,
    example_frames,
    training_explorer,
    training_frame,
)

__all__ = ["N_EXAMPLES", "TrainingFrame", "training_frame", "training_explorer", "ExampleFrame",
           "example_frame", "example_frames", "example_explorer", "MAX_TOKENS", "split_sentence",
           "HeadView", "head_view", "pretrained_explorer", "score_grids"]
