"""Coordinates on the pictures: x and y axes with ticks and labels beside 2D images, a labelled
bounds box around 3D views, and an orientation marker in 3D, all in the grid's units."""
from __future__ import annotations

import math

_TEXT = "black"
_NICE_STEPS = (1.0, 2.0, 2.5, 5.0)
_LABEL_COUNTS = (6, 5, 4, 7, 3)          # preferred numbers of labels on an axis, best first
_MARKER_VIEWPORT = (0.84, 0.0, 1.0, 0.21)  # the orientation marker, bottom right: beside the bar
AXES_NAME = "axes"


def _is_nice(step: float) -> bool:
    """A step of 1, 2, 2.5 or 5 times a power of ten."""
    if not step > 0 or not math.isfinite(step):
        return False
    mantissa = step / 10.0 ** math.floor(math.log10(step))
    return any(abs(mantissa - nice) < 1e-6 * nice for nice in _NICE_STEPS) or abs(mantissa - 10.0) < 1e-5


def _on_steps(value: float, step: float) -> bool:
    ratio = value / step
    return abs(ratio - round(ratio)) < 1e-6 * max(1.0, abs(ratio))


def label_count(lo: float, hi: float) -> int:
    """How many evenly spaced labels from `lo` to `hi` read best: round steps (1, 2, 2.5 or 5
    times a power of ten) on round values (0.25, 0.5, ... not 0.1875)."""
    span = hi - lo
    for n in _LABEL_COUNTS:
        step = span / (n - 1)
        if _is_nice(step) and _on_steps(lo, step):
            return n
    for n in _LABEL_COUNTS:
        if _is_nice(span / (n - 1)):
            return n
    return 5


def _blank_first_label(actor, axis: int):
    """Leave out the first coordinate of an axis, where two axes' labels meet at a corner."""
    labels = actor.GetAxisLabels(axis)
    if labels is not None and labels.GetNumberOfValues() > 1:
        labels.SetValue(0, " ")
        actor.SetAxisLabels(axis, labels)


class Axes:
    """The Viewer's coordinate axes and orientation marker (a mixin: it uses the Viewer's state)."""

    def _axes_labels(self, bounds) -> dict:
        return {f"n_{c}labels": label_count(bounds[2 * d], bounds[2 * d + 1]) for d, c in enumerate("xyz")}

    def _flat_axes(self, bounds, z: float, titles=("x", "y")):
        """x and y axes along the bottom and left edges of an image in the plane z, ticks outside."""
        flat = [bounds[0], bounds[1], bounds[2], bounds[3], z, z]
        actor = self.plotter.show_bounds(
            bounds=flat, show_zaxis=False, xtitle=titles[0], ytitle=titles[1], ztitle=" ", location="front",
            use_2d=True, ticks="outside", color=_TEXT, bold=False, fmt="{0:.4g}", font_size=self._fs(15),
            render=False, **self._axes_labels(flat))
        for axis in range(3):        # flat text takes its size from the text properties
            actor.GetTitleTextProperty(axis).SetFontSize(self._fs(18))
        return actor

    def _box_axes(self, bounds):
        """A labelled bounds box around a 3D view: ticks and coordinates on its outer edges."""
        actor = self.plotter.show_bounds(
            bounds=list(bounds), xtitle="x", ytitle="y", ztitle="z", location="outer", ticks="outside",
            color=_TEXT, bold=False, fmt="{0:.4g}", font_size=self._fs(12), render=False,
            **self._axes_labels(bounds))
        actor.SetScreenSize(11.0 * self._scale)
        _blank_first_label(actor, 1)     # seen from the default camera it meets z's last label
        return actor

    def _orientation_marker(self):
        """The x, y, z arrows in the bottom right corner, turning with the camera (3D runs)."""
        renderer = self.plotter.renderer
        if getattr(renderer, "axes_widget", None) is None:
            self.plotter.add_axes(interactive=False, color=_TEXT, line_width=3, viewport=_MARKER_VIEWPORT)
