"""The pictures: every figure a notebook shows, drawn from numbers the lower layers compute.

``plotting``: heatmaps of weights and scores, figures, fonts (Latin and CJK).
``charts``: the line and bar charts of the lessons.
``figures``: showing a figure with its text alternative.
``diagrams/``: schematic diagrams of the flow through attention.

The drawing imports the lessons and the mechanism, never the widgets or the exercises.
"""
