"""Exercise checkers, one door per notebook (``attn.exercises.nb01`` ...).

Each checker takes the learner's answer and returns a ``Feedback``: right or wrong, with a
hint when wrong. It never prints the expected answer. A step that cannot take an answer further
raises ``Refused`` with the reply, which the ``@checker`` decorator returns (``_base``).
Where a notebook's checkers need much machinery, it sits in private modules named for what they
hold (``_layer_checker``, ``_block_bugs``, ``_layer_norm`` ...), and the notebook's module
imports their names.
"""
from ._base import Feedback

__all__ = ["Feedback"]
