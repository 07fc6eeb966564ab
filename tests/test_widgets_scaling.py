"""The d_k explorer (attn.widgets.scaling): its pure function and its slider."""
import math

import numpy as np
import pytest
import torch

from attn.widgets.scaling import D_K_GRID, ScalingStats, scaling_curves, scaling_explorer, scaling_stats


# The numbers behind the explorer (attn.scaling) are tested in test_scaling.py.


def test_explorer_slider_across_its_range():
    ex = scaling_explorer()
    slider = ex.controls["d_k"]
    assert (slider.min, slider.max) == (1, 512)
    images, readouts = set(), set()
    for d_k in (1, 2, 3, 8, 63, 64, 100, 255, 511, 512):
        slider.value = d_k
        assert ex.state == scaling_stats(d_k)
        assert f"d_k = {d_k}" in ex.readout.value
        images.add(ex.image.value)
        readouts.add(ex.readout.value)
    assert len(images) == 10 and len(readouts) == 10
    slider.value = 1
    assert "scaling changes nothing" in ex.readout.value
    slider.value = 512
    assert "scaling changes nothing" not in ex.readout.value
    assert ex.full_redraws == 1


def test_explorer_bad_input():
    with pytest.raises(ValueError, match="d_k"):
        scaling_explorer(0)
