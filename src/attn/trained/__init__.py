"""Attention that was really trained (notebook 08).

``tiny``: a tiny transformer trained on toy tasks, whose heads learn the chapter's patterns.
``minilm``: all-MiniLM-L6-v2, a pretrained BERT encoder, run offline by the course's own code.
"""
