"""Exercise checkers, one module per notebook (``attn.exercises.nb01`` ...).

Each checker takes the learner's answer and returns a ``Feedback``: right or wrong, with a
hint when wrong. It never prints the expected answer.
"""
from ._base import Feedback

__all__ = ["Feedback"]
