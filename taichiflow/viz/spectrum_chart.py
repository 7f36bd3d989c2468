"""Log-log plots of energy spectra (`taichiflow spectrum --plot`), off-screen with a PyVista chart."""
from __future__ import annotations

import numpy as np

from . import env
from .charts import _LINE_COLOURS
from .env import pv, require_pyvista


def plot_spectra(curves, path, title: str = "", size=(900, 700)):
    """Write a PNG of E(k) against k on log axes, one line per (label, k, E) in `curves`, with a
    legend. k = 0 (the mean flow) has no place on log axes, nor do shells below 1e-15 of a
    curve's largest, which hold only rounding (they would stretch the axis over 20 decades)."""
    require_pyvista()
    env.prepare_offscreen()
    plotter = pv.Plotter(off_screen=True, window_size=list(size), theme=pv.themes.DocumentTheme())
    plotter.set_background("white")
    chart = pv.Chart2D(x_label="k (periods per box length)", y_label="E(k)")
    chart.background_color = "white"
    chart.title = title
    drawn = False
    for i, (label, k, energy) in enumerate(curves):
        k, energy = np.asarray(k, dtype=float), np.asarray(energy, dtype=float)
        keep = (k > 0) & (energy > 1e-15 * energy.max())
        if keep.sum() >= 2:
            chart.line(k[keep], energy[keep], color=_LINE_COLOURS[i % len(_LINE_COLOURS)], width=3.0, label=label)
            drawn = True
    if not drawn:
        plotter.close()
        raise ValueError("no spectrum has energy in two shells with k > 0: nothing to plot on log axes")
    chart.x_axis.log_scale = True
    chart.y_axis.log_scale = True
    plotter.add_chart(chart)
    try:
        plotter.screenshot(str(path))
    finally:
        plotter.close()
