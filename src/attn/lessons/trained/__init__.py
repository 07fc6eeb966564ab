"""Attention that was really trained (notebooks 08, 10 and 12).

``tasks``: the toy tasks (neighbours, reverse, cls, phrases), each solved by one pattern.
``tiny``: a one-layer transformer trained on them, whose heads learn the chapter's patterns.
``minilm``: all-MiniLM-L6-v2, a pretrained BERT encoder, run offline by the course's own code.
``wordpiece``: BERT's WordPiece tokenizer, which ``minilm`` reads its sentences with.
``seq2seq``: a tiny encoder-decoder whose cross-attention learns to reverse a sequence.
``adam``: the optimizer both small models train with (``torch.optim.Adam``, written out).
``blocks``: small models made of Transformer blocks of any class, trained in seconds (12).
``warmup``: post-LN against pre-LN, trained with and without a warm-up of the learning rate (12).
"""
