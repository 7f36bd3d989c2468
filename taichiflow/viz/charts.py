"""1D snapshots: one line chart per field, updated in place from frame to frame.

The axes carry the units a case declares (`[case] units`, in the run's resolved case.toml:
`length`, `time` and fields by name, e.g. mm, us, g/cm^3 and GPa for the gas-water tube):
`x (mm)`, `p (GPa)`, `t = 0.24 us`. A run without them reads as before. A depth `h` beside a
`surface` over a flat bed (a dam break) is one panel, not two identical ones."""
from __future__ import annotations

import numpy as np

from .env import pv
from .fields import cells_of, scalar_values, value_range

_LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


class Charts:
    """The Viewer's line charts of 1D runs (a mixin: it uses the Viewer's state)."""

    def _line_names(self, grid):
        if self.field != "all":
            return [self.field]
        names = list(grid.cell_data.keys())
        if "h" in names and "surface" in names and _flat_bed(grid):
            names.remove("surface")  # (h + a constant: the same curve)
        return names

    def _unit(self, title: str) -> str:
        """' (unit)' for a chart's title, or `length`, where the case declares its unit, else ''."""
        unit = declared_unit(self.series.case, title)
        return f" ({unit})" if unit else ""

    def _y_range(self, y, name):
        """A chart's y range: --clim, else the series' range in a movie or the window (one
        scale in every frame), else this snapshot's, padded by 6% either side."""
        if self.clim is not None and len(self._charts[0]) == 1:
            return list(self.clim)
        lo, hi = self.series.field_range(name, 1) if self.one_range else value_range(y)
        pad = 0.06 * (hi - lo)
        return [lo - pad, hi + pad]

    def _remove_charts(self):
        for chart in self._charts[1]:
            self.plotter.remove_chart(chart)
        self._charts = None

    def _draw_lines(self, grid):
        names = self._line_names(grid)
        n = len(names)
        x = grid.origin[0] + (np.arange(cells_of(grid)[0]) + 0.5) * grid.spacing[0]
        if self._charts is None or self._charts[0] != names:
            if self._charts is not None:
                self._remove_charts()
            charts, lines = [], []
            for k, name in enumerate(names):
                _, title = scalar_values(grid, name, 1)
                chart = pv.Chart2D(size=(1.0, 1.0 / n), loc=(0.0, 1.0 - (k + 1) / n),
                                   x_label="x" + self._unit("length") if k == n - 1 else "",
                                   y_label=title + self._unit(title))
                chart.background_color = "white"
                chart.GetTitleProperties().SetFontSize(self._fs(18))
                for axis in (chart.x_axis, chart.y_axis):
                    axis.label_size, axis.tick_label_size = self._fs(16), self._fs(14)
                lines.append(chart.line(x, np.zeros_like(x), color=_LINE_COLOURS[k % len(_LINE_COLOURS)],
                                        width=3.0))
                self.plotter.add_chart(chart)
                charts.append(chart)
            self._charts = (names, charts, lines)
        _, charts, lines = self._charts
        for k, (name, chart, line) in enumerate(zip(names, charts, lines)):
            y, title = scalar_values(grid, name, 1)
            line.update(x, y)
            chart.y_range = self._y_range(y, name)
            chart.x_range = [grid.bounds[0], grid.bounds[1]]
        seconds = declared_unit(self.series.case, "time")
        charts[0].title = (f"{self.series.name}   t = {self.time:.4g}{' ' + seconds if seconds else ''}"
                           f"   ({self.index + 1}/{len(self.series)})")
        self.description = ", ".join(scalar_values(grid, nm, 1)[1] for nm in names) + " against x"


def declared_units(case: dict) -> dict:
    """The units the run's case declares ([case] units: name -> unit text), or {}."""
    units = (case or {}).get("case", {}).get("units", {})
    return {str(k): str(v) for k, v in units.items()} if isinstance(units, dict) else {}


def declared_unit(case: dict, title: str) -> str:
    """The unit the case declares for a chart's title (`p`, `vel_x`, `vel magnitude`, `length`,
    `time`) or for its array (`vel` for `vel_x`), else ''."""
    units = declared_units(case)
    base = title.split(" ")[0]
    stem, _, comp = base.rpartition("_")
    return units.get(base) or (units.get(stem, "") if comp in ("x", "y", "z") else "")


def _flat_bed(grid) -> bool:
    """Whether `surface` is `h` plus one constant (a flat bed) in this snapshot."""
    bed = np.asarray(grid.cell_data["surface"], dtype=float) - np.asarray(grid.cell_data["h"], dtype=float)
    scale = max(1.0, float(np.abs(grid.cell_data["surface"]).max())) if bed.size else 1.0
    return bed.size == 0 or float(bed.max() - bed.min()) <= 1e-12 * scale
