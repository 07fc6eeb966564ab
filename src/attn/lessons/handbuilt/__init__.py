"""Heads built by hand: every number chosen, nothing trained.

``sentence``: a toy self-attention over the chapter's sentence (notebook 01).
``heads``: queries and keys that make the diagonal, vertical and block patterns (notebook 06).
"""
