"""An explorer's states: every value each of its controls can take, and the settings of all of
them numbered one by one (what tools/live_states.py draws and site/_static/attn-live.js shows).

A state is numbered like a number written in mixed radix: the explorer's offered controls in
their order, the last one changing fastest (``state_index``). A setting the explorer refuses
(notebook 04: a head count that does not divide d_model) is no state (``set_values`` says so).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def control_choices(control) -> list[tuple[str, object]]:
    """Every value a control can take, with the label it shows for it: (label, value).

    A check box: False, True. A drop-down, toggle buttons, a selection slider: their options.
    An integer or float slider: min to max by step, labelled as its readout shows them.

    Raises:
        TypeError: a control of another kind (a text box): it has no list of values.
    """
    import ipywidgets as widgets

    if isinstance(control, widgets.Checkbox):
        return [("False", False), ("True", True)]
    if isinstance(control, (widgets.Dropdown, widgets.ToggleButtons, widgets.SelectionSlider,
                            widgets.RadioButtons)):
        # ipywidgets' own reading of ``options``: all (label, value) pairs, or values shown by str
        given = tuple(control.options)
        if all(isinstance(o, (list, tuple)) and len(o) == 2 for o in given):
            return [(str(label), value) for label, value in given]
        return [(str(value), value) for value in given]
    if isinstance(control, widgets.IntSlider):
        return [(format(v, control.readout_format), v) for v in range(control.min, control.max + 1, control.step)]
    if isinstance(control, widgets.FloatSlider):
        n = round((control.max - control.min) / control.step)
        values = [round(control.min + i * control.step, 10) for i in range(n + 1)]
        return [(format(v, control.readout_format), v) for v in values]
    raise TypeError(f"control: expected a check box, a drop-down, toggle buttons or a slider, "
                    f"got {type(control).__name__}")


def control_kind(control) -> str:
    """How the page shows a control: site/_static/attn-live.js draws each kind."""
    import ipywidgets as widgets

    if isinstance(control, widgets.Checkbox):
        return "checkbox"
    if isinstance(control, widgets.ToggleButtons):
        return "toggle"
    if isinstance(control, widgets.Dropdown):
        return "select"
    return "slider"


def same_value(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, abs_tol=1e-9)
    return a == b


@dataclass(frozen=True)
class Offered:
    """A control as the site offers it: its values, in order, with their labels."""

    name: str
    label: str
    kind: str
    choices: list[tuple[str, object]]


def offered_controls(explorer, recipe) -> list[Offered]:
    """The controls the site offers, in the explorer's order, each with the values it offers
    (``recipe.grid`` where given, else all of them).

    Raises:
        ValueError: a value of ``recipe.grid`` the control does not know, or a control
            (a text box) that neither has values nor is in ``recipe.fixed``.
    """
    offered = []
    for name, control in explorer.controls.items():
        if name in recipe.fixed:
            continue
        choices = control_choices(control)
        if name in recipe.grid:
            known = {repr(v): label for label, v in choices}
            # a value the control offers only under another setting (04's heads) is shown by str
            choices = [(known.get(repr(v), str(v)), v) for v in recipe.grid[name]]
        offered.append(Offered(name, control.description, control_kind(control), choices))
    return offered


def state_index(offered: Sequence[Offered], positions: Sequence[int]) -> int:
    """The number of the state in which control i shows its ``positions[i]``-th value: mixed
    radix, the last control fastest (what the page's script computes)."""
    index = 0
    for control, k in zip(offered, positions):
        index = index * len(control.choices) + k
    return index


def one_move_apart(sizes: Sequence[int]):
    """Every setting of controls with ``sizes`` values each (tuples of positions), each one move
    of one control from the setting before (a reflected mixed-radix Gray code): drawn in this
    order, every setting costs the explorer one redraw, where counting order (``state_index``)
    moves several controls, each with its own redraw, whenever an earlier control turns over."""
    if not sizes:
        yield ()
        return
    *earlier, n = sizes
    for i, prefix in enumerate(one_move_apart(earlier)):
        for k in (range(n) if i % 2 == 0 else range(n - 1, -1, -1)):
            yield (*prefix, k)


def set_values(explorer, offered: Sequence[Offered], positions: Sequence[int]) -> bool:
    """Move the explorer's controls, in their order, to the given values, as a learner would.
    False if the explorer refuses one (it is not a state of the explorer)."""
    from traitlets import TraitError

    for control, k in zip(offered, positions):
        widget, value = explorer.controls[control.name], control.choices[k][1]
        if not same_value(widget.value, value):
            try:
                widget.value = value
            except (TraitError, ValueError):
                return False
    return all(same_value(explorer.controls[c.name].value, c.choices[k][1]) for c, k in zip(offered, positions))
