"""What attention costs: counted exactly, and measured.

``counts``: ``attention_cost`` (parameters, multiply-adds and the weights' bytes of a layer,
from its sizes; notebooks 04 and 07) and ``count_ops`` (the torch work a piece of code really
does, counted from its tensors' shapes).
``scoring_costs``: the operations of the three scoring functions, counted on the code that runs them
(notebook 02).
``measure``: time and peak tensor memory against sequence length (notebook 07).
"""
