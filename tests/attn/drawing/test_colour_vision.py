"""Pictures readable without colour vision: no meaning carried by red against green alone.

- Every named colour map the package uses (found as a string in src/attn that names a
  matplotlib colour map) is sequential with lightness that rises or falls steadily, or
  diverging with lightness steady on each side; its two ends stay apart for a viewer with
  deuteranopia or protanopia (simulated, Machado et al. 2009, severity 1).
- In every explorer's figure (and the efficiency curves of notebook 07), no two lines or
  filled patches of one axes are told apart by a hue that deuteranopia or protanopia
  confuses: such lines differ in marker or line style too, and patches differ in lightness.
"""
from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgb

from attn.drawing.charts import STYLE, loglog_curves
from attn.widgets import EXPLORERS

from _pictures import colormaps_used

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


USED = sorted(colormaps_used())  # tests/_pictures.py


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


def _apart(a, b, vision) -> float:
    """CIE76 difference of two colours as seen with ``vision`` (None: normal vision)."""
    return float(np.linalg.norm(lab(np.array(to_rgb(a)), vision) - lab(np.array(to_rgb(b)), vision)))


def _over_white(rgba) -> tuple:
    r, g, b, a = rgba
    return tuple(c * a + (1 - a) for c in (r, g, b))


def confusions(fig) -> list[str]:
    """Pairs of artists in one axes that only colour vision tells apart: lines of colours a
    viewer with deuteranopia or protanopia confuses and the same marker and line style, or
    filled patches of such colours."""
    found = []
    for ax in fig.axes:
        # a vertical or horizontal reference line (axvline, axhline) is told apart by its shape
        lines = [ln for ln in ax.get_lines() if ln.get_visible() and len(ln.get_xdata())
                 and len(set(map(float, ln.get_xdata()))) > 1 and len(set(map(float, ln.get_ydata()))) > 1]
        for a, b in itertools.combinations(lines, 2):
            ca, cb = a.get_color(), b.get_color()
            if _apart(ca, cb, None) > 10 and min(_apart(ca, cb, v) for v in CVD) < 10 \
                    and (a.get_marker(), a.get_linestyle()) == (b.get_marker(), b.get_linestyle()):
                found.append(f"lines {a.get_label()!r} ({ca}) and {b.get_label()!r} ({cb})")
        patches = [p for p in ax.patches if p.get_visible() and p.get_fill()]
        for a, b in itertools.combinations(patches, 2):
            ca, cb = _over_white(a.get_facecolor()), _over_white(b.get_facecolor())
            if _apart(ca, cb, None) > 10 and min(_apart(ca, cb, v) for v in CVD) < 10:
                found.append(f"patches {ca} and {cb}")
    return found


def test_loglog_curves_tell_the_methods_apart_without_colour():
    """The static time/memory plots of notebook 07 (and the efficiency explorer's curves)."""
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.subplots()
    lines = loglog_curves(ax, [64, 128], {m: [1.0, 4.0] for m in STYLE}, slope=None)
    assert len(lines) == len(STYLE)
    assert confusions(fig) == []
    for a, b in itertools.combinations(lines, 2):
        assert (a.get_marker(), a.get_linestyle()) != (b.get_marker(), b.get_linestyle())
        assert min(_apart(a.get_color(), b.get_color(), v) for v in (None, *CVD)) > 20, (
            f"{a.get_label()} ({a.get_color()}) and {b.get_label()} ({b.get_color()}) look alike")


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_explorer_tells_nothing_apart_by_colour_alone(name):
    ex = EXPLORERS[name]()
    try:
        assert confusions(ex.fig) == [], f"{name}: told apart only by colour vision: {confusions(ex.fig)}"
    finally:
        ex.close()
