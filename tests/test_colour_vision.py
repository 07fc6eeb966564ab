"""Pictures readable without colour vision: no meaning carried by red against green alone.

- Every named colour map the package uses (found as a string in src/attn that names a
  matplotlib colour map) is sequential with lightness that rises or falls steadily, or
  diverging with lightness steady on each side; its two ends stay apart for a viewer with
  deuteranopia or protanopia (simulated, Machado et al. 2009, severity 1).
- Lines told apart by colour (the efficiency curves) also differ in marker and line style, and
  their colours stay apart with deuteranopia and protanopia.
- The efficiency explorer's "held at once" panel: light against dark, not hue against hue.
"""
from __future__ import annotations

import ast
import itertools
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgb

from attn.efficiency import STYLE

SRC = Path(__file__).resolve().parents[1] / "src" / "attn"
# Machado, Oliveira & Fernandes (2009), severity 1.0, on linear RGB.
CVD = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
}


def _linear(rgb: np.ndarray) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def lab(rgb: np.ndarray, vision: str | None = None) -> np.ndarray:
    """CIELAB (D65) of sRGB colours (..., 3) in [0, 1], as seen with ``vision`` (None: normal)."""
    lin = _linear(rgb)
    if vision is not None:
        lin = np.clip(lin @ CVD[vision].T, 0, 1)
    xyz = lin @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def colormaps_used() -> set[str]:
    """Names of matplotlib colour maps written as strings anywhere in the package."""
    names = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in matplotlib.colormaps:
                names.add(node.value)
    return names


USED = sorted(colormaps_used())


def test_the_package_uses_colour_maps():
    assert {"Blues", "RdBu_r"} <= set(USED), USED


@pytest.mark.parametrize("name", USED)
def test_colour_map_lightness_carries_the_order(name):
    rgb = matplotlib.colormaps[name](np.linspace(0, 1, 64))[:, :3]
    lightness = lab(rgb)[:, 0]
    steps = np.diff(lightness)
    if np.all(steps < 0.5) or np.all(steps > -0.5):  # sequential: one way throughout
        assert abs(lightness[-1] - lightness[0]) > 40, f"{name}: lightness spans only {np.ptp(lightness):.0f}"
    else:  # diverging: one way on each side of the middle
        mid = int(np.argmax(lightness))
        assert np.all(steps[:mid] > -0.5) and np.all(steps[mid:] < 0.5), f"{name}: lightness goes up and down"
    for vision in CVD:
        ends = lab(rgb[[0, -1]], vision)
        # CIE76 difference: about 2 is just noticeable; 20 and more is plainly another colour
        assert np.linalg.norm(ends[0] - ends[1]) > 20, f"{name}: its ends look alike with {vision}"


def test_lines_told_apart_by_colour_also_differ_in_marker_and_style():
    for (a, (_, ca, fa)), (b, (_, cb, fb)) in itertools.combinations(STYLE.items(), 2):
        assert fa[0] != fb[0] and fa[1:] != fb[1:], f"{a} and {b}: same marker or line style ({fa}, {fb})"
        apart = min(np.linalg.norm(lab(to_rgb(ca), v) - lab(to_rgb(cb), v)) for v in (None, *CVD))
        assert apart > 20, f"{a} ({ca}) and {b} ({cb}) look alike (CIE76 difference {apart:.0f})"


def test_efficiency_held_at_once_panel_is_light_against_dark():
    from matplotlib.patches import Rectangle

    from attn.widgets import efficiency_explorer

    ex = efficiency_explorer(lengths=(64, 128), seconds={m: [1e-3, 2e-3] for m in STYLE},
                             peak_bytes={m: [1e3, 2e3] for m in STYLE})
    patches = [p for ax in ex.fig.axes for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    colours = [p.get_facecolor()[:3] for p in patches[-2:]]  # the n×n square, the block over it
    for vision in (None, *CVD):
        light = lab(np.array(colours), vision)[:, 0]
        assert abs(light[0] - light[1]) > 30, f"lightness {light} with {vision or 'normal vision'}"
