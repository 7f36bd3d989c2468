"""Log-log plots of energy spectra (`taichiflow spectrum --plot`), off-screen with a PyVista chart."""
from __future__ import annotations

from .log_charts import log_chart, write_charts


def plot_spectra(curves, path, title: str = "", size=(900, 700), references=()):
    """Write a PNG of E(k) against k on log axes, one line per (label, k, E) in `curves`, with a
    legend, and a grey dashed line per (label, k, E) in `references` (a power law to compare
    with). k = 0 (the mean flow) has no place on log axes, nor do shells below 1e-15 of a
    curve's largest, which hold only rounding (they would stretch the axis over 20 decades)."""
    try:
        chart = log_chart(curves, "k (periods per box length)", "E(k)", title, references)
    except ValueError:
        raise ValueError("no spectrum has energy in two shells with k > 0: nothing to plot on log axes") from None
    write_charts([chart], path, size)
