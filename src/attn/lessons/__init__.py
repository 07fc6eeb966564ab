"""The lessons' computations: what a notebook shows, computed from the mechanism in ``attn``.

Each module serves one or a few notebooks (its docstring says which) and imports only the
mechanism and its ground, never the drawing, the widgets or the exercises above it.

``scaling``, ``pattern_scores``, ``worked_example``, ``chapter_check``, ``two_sources``,
``rnn_vs_attention``, ``depth``, ``contributions``: one lesson's numbers each.
``learner_layer``: how the course reads a layer a learner wrote (its projections, its call).
``cost/``: what attention costs, counted and measured.
``handbuilt/``: heads whose every number is chosen by hand.
``trained/``: attention that was really trained, and the small models of blocks.
``language_model/``: a character-level language model of blocks, trained on real text.
"""
