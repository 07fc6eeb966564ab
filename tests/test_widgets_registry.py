"""Every explorer of the course: builds without arguments, and every control moves the picture."""
import ipywidgets as widgets
import pytest

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


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_control_changes_the_picture(name):
    ex = EXPLORERS[name]()
    assert isinstance(ex, Explorer) and ex.controls
    for control_name, control in ex.controls.items():
        before_png, before_html = ex.image.value, ex.readout.value
        control.value = other_value(control)
        assert ex.image.value[:4] == b"\x89PNG"
        assert ex.image.value != before_png or ex.readout.value != before_html, \
            f"{name}: moving {control_name} changed nothing"


def test_an_explorer_with_a_layout_engine_is_laid_out_once_then_frozen():
    import ipywidgets as widgets
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from attn.widgets import Explorer

    fig = Figure(figsize=(3, 2), dpi=50, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    (line,) = ax.plot([0, 1], [0, 1])
    slider = widgets.IntSlider(value=1, min=1, max=3)

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
