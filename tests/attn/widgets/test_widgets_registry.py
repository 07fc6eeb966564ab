"""Every explorer of the course: builds without arguments, and every control, moved from the
explorer's default state, changes the picture (its decoded pixels: a new readout is not enough);
every control has a name and every slider says the value it shows (for a screen reader)."""
import subprocess
import sys

import ipywidgets as widgets
import numpy as np
import pytest
from _pictures import changed, pixels

from attn.widgets import EXPLORERS, Explorer


def other_value(control):
    """A value different from the control's current one, inside its range."""
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        return control.min if control.value != control.min else control.max
    if isinstance(control, widgets.SelectionSlider) or hasattr(control, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return next(v for v in values if v != control.value)
    if isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        return not control.value
    if isinstance(control, widgets.Text):
        return control.value + " 北京"
    raise AssertionError(f"no rule for {type(control).__name__}")


def test_importing_the_registry_imports_no_explorer():
    """``import attn.widgets`` (and reading ``EXPLORERS``) loads only what every explorer
    shares, ``_base``; each entry imports its explorer's module when it is called."""
    code = ("import sys\nfrom attn.widgets import EXPLORERS\n"
            "print(*sorted(m for m in sys.modules if m.startswith('attn.widgets.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            timeout=120).stdout.split()
    assert loaded == ["attn.widgets._base"]


def test_each_entry_is_the_builder_its_module_names():
    """One form for every entry: the builder of ``attn.widgets.<module>`` named as the explorer
    (04's is ``splitting_explorer``, in ``attn.widgets.splitting``)."""
    names = {key: builder.__name__ for key, builder in EXPLORERS.items()}
    assert names["splitting (04)"] == "splitting_explorer"
    assert all(name.endswith("_explorer") for name in names.values()), names


@pytest.fixture(scope="module")
def built():
    """Each explorer built once (the efficiency explorer measures for a few seconds)."""
    cache = {}

    def build(name):
        if name not in cache:
            cache[name] = EXPLORERS[name]()
        return cache[name]

    return build


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_control_moved_from_the_default_changes_the_picture(name):
    ex = EXPLORERS[name]()  # a fresh one: every control starts at the default
    assert isinstance(ex, Explorer) and ex.controls
    defaults = {n: c.value for n, c in ex.controls.items()}
    for control_name, control in ex.controls.items():
        for other, c in ex.controls.items():  # back to the default state
            if c.value != defaults[other]:
                c.value = defaults[other]
        before = pixels(ex)
        control.value = other_value(control)
        assert changed(before, pixels(ex)), f"{name}: moving {control_name} left the picture as it was"


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_moving_back_restores_the_picture(name, built):
    """A move and its reverse: the picture comes back pixel for pixel (no stale live artist)."""
    ex = built(name)
    for control_name, control in ex.controls.items():
        start, before = control.value, pixels(ex)
        control.value = other_value(control)
        control.value = start
        assert not changed(before, pixels(ex)), f"{name}: {control_name} there and back changed the picture"


def test_an_explorer_with_a_layout_engine_is_laid_out_once_then_frozen():
    import ipywidgets as widgets
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from attn.widgets import Explorer

    fig = Figure(figsize=(3, 2), dpi=50, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    (line,) = ax.plot([0, 1], [0, 1])
    slider = widgets.IntSlider(value=1, min=1, max=3, description="k")

    def update(k):
        line.set_ydata([0, k])
        ax.set_ylim(0, 3)
        return k, f"k={k}"

    ex = Explorer({"k": slider}, fig, update, lambda: [line])
    position = ax.get_position().bounds
    assert ex.full_redraws == 1
    assert position != (0.125, 0.11, 0.775, 0.77)  # constrained layout moved the axes from the default
    slider.value = 3
    assert ax.get_position().bounds == position and ex.full_redraws == 1 and ex.state == 3


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_control_is_named_and_every_slider_says_its_value(name, built):
    """A screen reader hears each control's name (its description) and a slider's value as it
    is shown ("d_k = 16"; a selection slider's front end would say the option's index); the
    explorer carries the script that writes them into the page, and marks its readout live
    (tests/delivery/test_browser.py checks what the page then says)."""
    ex = built(name)
    for control_name, control in ex.controls.items():
        label = control.description.strip()
        assert label, f"{name}: the control {control_name!r} has no description (no accessible name)"
        text = ex.value_text(control_name)
        if isinstance(control, widgets.SelectionSlider):
            assert control.readout, f"{name}: {control_name}: the readout (what it announces) is hidden"
            assert text == f"{label} = {control.label}", (name, control_name, text)
            options = [o[0] if isinstance(o, tuple) else str(o) for o in control.options]
            assert control.label == options[control.index], (name, control_name, control.label)
        elif isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
            assert control.readout, f"{name}: {control_name}: the readout (what it announces) is hidden"
            assert text == f"{label} = {control.value:{control.readout_format}}", (name, control_name, text)
    (script,) = [out["data"]["application/javascript"] for out in ex.a11y.outputs]
    for attribute in ("aria-label", "aria-valuetext", "aria-live", "role"):
        assert attribute in script, f"{name}: the page script writes no {attribute}"


def _small_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1), dpi=40)
    FigureCanvasAgg(fig)
    fig.add_subplot()
    return fig


def test_a_slider_over_a_list_says_the_option_not_its_index():
    fig = _small_figure()
    slider = widgets.SelectionSlider(options=[("one", 1), ("four", 4), ("sixteen", 16)], value=16,
                                     description="d_k")
    ex = Explorer({"d_k": slider}, fig, lambda d_k: (d_k, f"d_k={d_k}"), lambda: [])
    assert ex.value_text("d_k") == "d_k = sixteen"
    slider.value = 1
    assert ex.value_text("d_k") == "d_k = one"


@pytest.mark.parametrize("control, message", [
    (widgets.IntSlider(value=1, min=1, max=3), "needs a description"),
    (widgets.Dropdown(options=["a", "b"], description="  "), "needs a description"),
    (widgets.IntSlider(value=1, min=1, max=3, description="k", readout=False), "readout"),
    (widgets.SelectionSlider(options=[1, 2], description="k", readout=False), "readout"),
])
def test_an_explorer_refuses_a_control_a_screen_reader_cannot_tell(control, message):
    fig = _small_figure()
    with pytest.raises(ValueError, match=message):
        Explorer({"k": control}, fig, lambda k: (k, str(k)), lambda: [])


NO_MAPS = {"efficiency (07)", "depth (12)"}  # curves and bars only


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_map_is_declared_when_the_explorer_is_built_and_drawn_in_its_figure(name, built):
    """``Explorer(..., maps=...)``: the maps are part of the explorer, never attached afterwards."""
    ex = built(name)
    views = list(ex.maps.values()) if isinstance(ex.maps, dict) else ex.maps
    assert bool(views) == (name not in NO_MAPS), f"{name}: maps {ex.maps!r}"
    assert all(v.ax.figure is ex.fig for v in views)


@pytest.mark.parametrize("name", ["worked (03)", "patterns (06)"])
def test_the_fast_path_draws_the_pictures_the_notebook_shows(name):
    """``encode_png = False`` (the website's builder): each move draws the same pixels as the
    PNG a learner sees, read by ``pixels()``, and leaves ``image`` as it was."""
    shown, fast = EXPLORERS[name](), EXPLORERS[name]()
    fast.encode_png = False
    kept = bytes(fast.image.value)
    assert np.array_equal(np.asarray(fast.pixels()), pixels(fast))  # before any move: the PNG's
    for control_name, control in shown.controls.items():
        value = other_value(control)
        control.value = value
        fast.controls[control_name].value = value
        assert np.array_equal(np.asarray(fast.pixels()), pixels(shown)), f"{name}: {control_name}"
    assert bytes(fast.image.value) == kept, f"{name}: the fast path encoded a picture"
