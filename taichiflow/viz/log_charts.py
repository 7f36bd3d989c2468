"""Log-log line charts written off-screen as PNGs: energy spectra (spectrum_chart.py), and
quantities against time (tools/turbulence-pictures.py)."""
from __future__ import annotations

import numpy as np

from . import env
from .charts import _LINE_COLOURS
from .env import pv, require_pyvista

_REFERENCE = "#7f7f7f"       # reference lines (a power law, say): grey, dashed


def on_log_axes(x, y):
    """The points of a curve that log axes can show: x > 0, and y above 1e-15 of the curve's
    largest (below that a spectrum's shells hold only rounding, and would stretch the axis over
    20 decades; zeros and negatives have no place at all)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 1e-15 * np.max(y, initial=0.0)) & (y > 0)
    return x[keep], y[keep]


def log_chart(curves, x_label: str, y_label: str, title: str = "", references=(), loc=(0.0, 0.0),
              size=(1.0, 1.0)):
    """A Chart2D on log axes with a coloured line per (label, x, y) in `curves` and a grey dashed
    line per (label, x, y) in `references`, each of its points that log axes show (a curve with
    one such point a marker); `loc` and `size` place it in the window (fractions). Raises
    ValueError when no curve has two points."""
    require_pyvista()
    chart = pv.Chart2D(size=size, loc=loc, x_label=x_label, y_label=y_label)
    chart.background_color = "white"
    chart.title = title
    drawn = False
    for i, (label, x, y) in enumerate(curves):
        x, y = on_log_axes(x, y)
        colour = _LINE_COLOURS[i % len(_LINE_COLOURS)]
        if len(x) >= 2:
            chart.line(x, y, color=colour, width=3.0, label=label)
            drawn = True
        elif len(x) == 1:  # (a single shell with energy, as at t = 0 of a one-mode start: a marker, in the legend)
            chart.scatter(x, y, color=colour, size=12, style="o", label=label)
    if not drawn:
        raise ValueError(f"no curve of {y_label} has two points with positive values: nothing to plot on log axes")
    for label, x, y in references:
        x, y = on_log_axes(x, y)
        chart.line(x, y, color=_REFERENCE, width=2.0, style="--", label=label)
    chart.x_axis.log_scale = True
    chart.y_axis.log_scale = True
    return chart


def write_charts(charts, path, size=(900, 700)):
    """Write `charts` (placed by their loc and size) off-screen as one PNG of `size` pixels."""
    require_pyvista()
    env.prepare_offscreen()
    plotter = pv.Plotter(off_screen=True, window_size=list(size), theme=pv.themes.DocumentTheme())
    plotter.set_background("white")
    try:
        for chart in charts:
            plotter.add_chart(chart)
        plotter.screenshot(str(path))
    finally:
        plotter.close()
