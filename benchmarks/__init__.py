"""Benchmarks of the course: control latency, course run time, attention at scale.

Run everything with ``make bench`` (= ``.venv/bin/python -m benchmarks``); each part prints a
table and writes ``benchmarks/results/<part>.json``. These measure; they assert nothing
(targets are printed next to the figures).
"""
