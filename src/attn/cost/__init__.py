"""What attention costs: counted exactly, and measured.

``counts``: parameters and multiply-adds of single- and multi-head layers (notebook 04).
``scoring``: the operations of the three scoring functions, counted on the code that runs them
(notebook 02).
``measure``: time and peak tensor memory against sequence length (notebook 07).
"""
