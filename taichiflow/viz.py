"""Pictures of taichiflow results with PyVista: `taichiflow view` and `taichiflow run --render`.

Only this module (imported lazily by the command line) imports pyvista; the solver never
does, so GPU nodes without VTK still run cases. Everything works off-screen on a machine
with no display and no GPU (VTK renders with Mesa through EGL or OSMesa).

Scenes, by the run's dimension:

* 3D: ``iso`` (an iso-surface of the field, coloured by the pressure, with the domain's
  outline), ``slice`` (three orthogonal slices through the centre), ``volume`` (volume
  rendering) and ``schlieren`` (numerical schlieren on the central z slice).
* 2D: ``image`` (the field as an image), ``iso`` (an image of the pressure with the field's
  iso-line) and ``schlieren``.
* 1D: ``line`` (line plots, one chart per field, or only the field asked for).

Defaults follow the model: for a two-phase run (the fields contain ``alpha`` or the model is
``two_phase``) the ``alpha`` = 0.5 iso-surface coloured by ``p`` (3D; in 2D an image of ``p``
with the ``alpha`` = 0.5 line); for hydrodynamics the density on slices (3D) or as an image.
Numerical schlieren is exp(-k |grad f| / max |grad f|) (Quirk & Karni 1996), computed with
numpy from the cell data, in grey.

Public API
----------
Series.open(out_dir)            the run's snapshots (series.pvd) and resolved case
Viewer(series, field, style, size, off_screen)
    .draw(index) .screenshot(png, index) .write_movie(path, fps) .add_widgets() .show()
view_command(args)              `taichiflow view`
attach_renderer(sim, log)       `taichiflow run --render`: a PNG beside every snapshot
"""
from __future__ import annotations

import ctypes.util
import importlib.util
import os
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

try:
    import pyvista as pv
except ImportError as err:  # the solver runs without it; only pictures need it
    pv = None
    _PYVISTA_ERROR = err

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

STYLES = {1: ("line",), 2: ("image", "iso", "schlieren"), 3: ("iso", "slice", "volume", "schlieren")}
SCHLIEREN_K = 15.0            # exponent factor of the schlieren mapping
DEFAULT_SIZE = (1024, 768)
NDIM_FIELD = "TAICHIFLOW_NDIM"

_CMAPS = {"rho": "viridis", "p": "plasma", "E": "plasma", "e": "plasma", "T": "inferno",
          "alpha": "cividis"}
# Volume rendering: the lowest 30% of the range (the ambient state, mostly) transparent, then a ramp.
_VOLUME_OPACITY = np.clip((np.linspace(0.0, 1.0, 31) - 0.3) / 0.7, 0.0, 1.0) * 0.8   # interpolated to 256
_LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
_TEXT = "black"
# A horizontal scalar bar at the bottom, labels above it; its title goes to its left (_bar_titles).
_BAR = dict(vertical=False, position_x=0.25, position_y=0.01, width=0.5, height=0.115, fmt="%.3g",
            n_labels=4, title_font_size=16, label_font_size=14, color=_TEXT, unconstrained_font_size=True)


def _require_pyvista():
    if pv is None:
        raise RuntimeError(f"pictures need pyvista, which is not importable here ({_PYVISTA_ERROR}); "
                           f"install it with: pip install pyvista")


def _prepare_offscreen():
    """Without an X display VTK first tries X and warns; go straight to EGL when Mesa has it."""
    if sys.platform.startswith("linux") and not _have_display() and ctypes.util.find_library("EGL"):
        os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")


def _have_ffmpeg() -> bool:
    """imageio writes .mp4 through the ffmpeg binary that the imageio-ffmpeg wheel carries."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def _have_display() -> bool:
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


# ----------------------------------------------------------------------------------------
# data: the run's snapshots
# ----------------------------------------------------------------------------------------

class Series:
    """Snapshots of one run: (time, file) entries, the resolved case, cached VTK grids."""

    def __init__(self, entries, case=None, name=None, cache=3):
        self.entries = [(float(t), Path(f)) for t, f in entries]
        self.case = case or {}
        self.name = name or self.case.get("case", {}).get("name", "")
        self._cache = OrderedDict()
        self._cache_size = max(1, cache)

    @classmethod
    def open(cls, out_dir):
        """Read OUT_DIR/series.pvd (with pyvista's PVD reader) and OUT_DIR/case.toml."""
        _require_pyvista()
        out = Path(out_dir)
        pvd = out / "series.pvd"
        if not pvd.is_file():
            raise ValueError(f"{out}: no series.pvd here; give the output folder of a `taichiflow run`")
        reader = pv.get_reader(str(pvd))
        entries = [(d.time, out / d.path) for d in reader.datasets]
        if not entries:
            raise ValueError(f"{pvd}: the series has no snapshots yet")
        case = {}
        if (out / "case.toml").is_file():
            with open(out / "case.toml", "rb") as f:
                case = tomllib.load(f)
        return cls(entries, case, name=case.get("case", {}).get("name", out.name))

    def append(self, time, path):
        self.entries.append((float(time), Path(path)))

    def __len__(self):
        return len(self.entries)

    @property
    def times(self):
        return [t for t, _ in self.entries]

    def nearest(self, time) -> int:
        """Index of the snapshot nearest `time` (the last one for None)."""
        if time is None:
            return len(self) - 1
        return int(np.argmin([abs(t - float(time)) for t in self.times]))

    def grid(self, index) -> "pv.ImageData":
        """The snapshot as read by VTK's XML ImageData reader (cell data as written)."""
        index = index % len(self)
        path = self.entries[index][1]
        key = (index, str(path))
        if key not in self._cache:
            self._cache[key] = pv.read(str(path))
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return self._cache[key]

    @property
    def ndim(self) -> int:
        grid = self.grid(0)
        if NDIM_FIELD in grid.field_data:
            return int(grid.field_data[NDIM_FIELD][0])
        cells = [n - 1 for n in grid.dimensions]
        return max(1, max((d + 1 for d in range(3) if cells[d] > 1), default=1))

    @property
    def model(self) -> str:
        name = str(self.case.get("model", {}).get("name", ""))
        return Path(name).stem if name.endswith(".py") else name

    @property
    def arrays(self) -> list:
        return list(self.grid(0).cell_data.keys())

    @property
    def two_phase(self) -> bool:
        return "alpha" in self.arrays or self.model == "two_phase"


# ----------------------------------------------------------------------------------------
# fields
# ----------------------------------------------------------------------------------------

def scalar_values(grid, name, ndim):
    """Cell values of field `name` in VTK order (x fastest) and its title.

    A vector array gives its magnitude (`vel magnitude`), or its x component in 1D (`vel_x`);
    `vel_y` and the like pick a component.
    """
    data = grid.cell_data
    if name in data:
        a = np.asarray(data[name])
        if a.ndim == 1:
            return a, name
        if ndim == 1:
            return a[:, 0], f"{name}_x"
        return np.linalg.norm(a, axis=1), f"{name} magnitude"
    base, _, comp = name.rpartition("_")
    if base in data and comp in ("x", "y", "z") and np.asarray(data[base]).ndim == 2:
        return np.asarray(data[base])[:, "xyz".index(comp)], name
    raise ValueError(f"no field {name!r} in this run; its fields are {', '.join(data.keys())} "
                     f"(vector components as e.g. vel_x)")


def cmap_for(title) -> str:
    base = title
    if title.endswith(" magnitude"):
        return "magma"
    if base.rpartition("_")[2] in ("x", "y", "z") and base.rpartition("_")[0]:
        return "coolwarm"
    return _CMAPS.get(base, "viridis")


def schlieren(values, cells, spacing) -> np.ndarray:
    """exp(-k |grad f| / max |grad f|) of cell values in VTK order: 1 where flat, dark at shocks."""
    f = np.asarray(values, dtype=np.float64).reshape(cells[::-1])       # (nz, ny, nx)
    squares = np.zeros_like(f)
    for axis, (n, h) in enumerate(zip(cells[::-1], spacing[::-1])):
        if n > 1:
            squares += np.gradient(f, h, axis=axis) ** 2
    g = np.sqrt(squares).ravel()
    gmax = g.max() if g.size else 0.0
    return np.exp(-SCHLIEREN_K * g / gmax) if gmax > 0 else np.ones_like(g)


def _cells(grid):
    return tuple(max(1, n - 1) for n in grid.dimensions)


def _centred(grid, arrays: dict):
    """A point grid on the cell centres carrying `arrays` (cell values) exactly, for contours
    and volumes: no averaging to the corners."""
    cells = _cells(grid)
    spacing = np.asarray(grid.spacing, dtype=float)
    out = pv.ImageData(dimensions=cells, spacing=spacing,
                       origin=np.asarray(grid.origin, dtype=float) + 0.5 * spacing)
    for name, values in arrays.items():
        out.point_data[name] = values
    return out


def _centre_plane(grid, axis) -> float:
    """Coordinate of the cell centre nearest the middle along `axis` (never on a face)."""
    n = _cells(grid)[axis]
    return grid.origin[axis] + (n // 2 + 0.5) * grid.spacing[axis]


def _range(values):
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    return lo, hi


def _clim(values, title):
    lo, hi = _range(values)
    if cmap_for(title) == "coolwarm":   # diverging map: keep 0 in the middle
        m = max(abs(lo), abs(hi))
        lo, hi = -m, m
    return lo, hi


# ----------------------------------------------------------------------------------------
# the viewer
# ----------------------------------------------------------------------------------------

class Viewer:
    """One PyVista plotter over a Series: draws snapshot `index` with a field and a style.

    Off-screen it makes screenshots and movies; on screen `add_widgets()` adds a time slider,
    field and style buttons and keys (Left/Right: previous/next snapshot, Home/End: first/last,
    [ and ]: previous/next field, /: next style).
    """

    def __init__(self, series: Series, field=None, style=None, size=DEFAULT_SIZE, off_screen=True,
                 iso=None):
        _require_pyvista()
        if off_screen:
            _prepare_offscreen()
        self.series = series
        self.ndim = series.ndim
        # the field picker: every array (a vector as its magnitude, or its x component in 1D)
        self.fields = (["all"] if self.ndim == 1 else []) + series.arrays
        self.styles = STYLES[self.ndim]
        self.field = field or self.default_field()
        self.style = style or self.default_style()
        self.iso = iso
        self._check(self.field, self.style)
        self.size = tuple(int(s) for s in size)
        self._scale = min(2.5, max(0.5, (self.size[0] * self.size[1] / (1024 * 768)) ** 0.5))  # fonts
        self.plotter = pv.Plotter(off_screen=off_screen, window_size=list(self.size),
                                  theme=pv.themes.DocumentTheme())
        self.plotter.set_background("white")
        self.index = len(series) - 1
        self._camera = None          # the kind of camera set: "3d" or "flat"
        self._charts = None          # 1D: (names, charts, lines)
        self._scene = set()          # 2D/3D: names of the actors of the snapshot shown
        self._widgets = False
        self._field_buttons, self._style_buttons = {}, {}
        self.slider = None
        self.description = ""

    # --- choices ---------------------------------------------------------------------------
    def default_field(self) -> str:
        arrays = self.series.arrays
        if self.ndim == 1:
            return "all"
        if self.series.two_phase and "alpha" in arrays:
            return "alpha"
        return "rho" if "rho" in arrays else arrays[0]

    def default_style(self) -> str:
        if self.ndim == 1:
            return "line"
        if self.ndim == 2:
            return "iso" if self.series.two_phase else "image"
        return "iso" if self.series.two_phase else "slice"

    def _check(self, field, style):
        if style not in self.styles:
            kind = {1: "1D runs are drawn as line plots", 2: "2D runs are drawn as images"}.get(self.ndim, "")
            raise ValueError(f"style {style!r} is not available for a {self.ndim}D run "
                             f"({kind + '; ' if kind else ''}styles: {', '.join(self.styles)})")
        if field != "all":
            scalar_values(self.series.grid(0), field, self.ndim)  # raises for an unknown field

    @property
    def time(self) -> float:
        return self.series.entries[self.index][0]

    def _colour_field(self):
        """What an iso-surface is coloured by: the pressure when there is one."""
        arrays = self.series.arrays
        return "p" if "p" in arrays and self.field != "p" else self.field

    # --- drawing ---------------------------------------------------------------------------
    def draw(self, index=None):
        """Show snapshot `index` (default: the current one) with the current field and style."""
        if index is not None:
            self.index = index % len(self.series)
        grid = self.series.grid(self.index)
        p = self.plotter
        if self.ndim == 1:
            self._draw_lines(grid)       # charts are updated in place
        else:
            # remove the previous scene's actors only: widgets and their labels are actors too
            for name in self._scene:
                p.remove_actor(name, reset_camera=False, render=False)
            p.scalar_bars.clear()
            before = set(p.actors)
            {2: self._draw_2d, 3: self._draw_3d}[self.ndim](grid)
            self._bar_titles()
            head = f"{self.series.name}   t = {self.time:.4g}   ({self.index + 1}/{len(self.series)})"
            h, fs_head, fs_what = self.size[1], self._fs(14), self._fs(10)
            y_head = h - 1.9 * fs_head - 3                     # in pixels, from the bottom
            y_what = y_head - 1.8 * fs_what - 4
            p.add_text(head, position=(0.008, y_head / h), viewport=True, font_size=fs_head, color=_TEXT,
                       name="time")
            p.add_text(self.description, position=(0.01, y_what / h), viewport=True, font_size=fs_what,
                       color=_TEXT, name="what")
            self._scene = set(p.actors) - before
        for bar in p.scalar_bars.values():
            bar.SetTextPositionToSucceedScalarBar()      # labels above the bar
        if self._widgets:
            self._draw_labels()
            for buttons, chosen in ((self._field_buttons, self.field), (self._style_buttons, self.style)):
                for name, widget in buttons.items():
                    widget.GetRepresentation().SetState(int(name == chosen))
            if self.slider is not None:
                self.slider.GetRepresentation().SetValue(self.time)
        p.render()

    def _fs(self, points):
        """A font size for this picture: `points` at 1024 x 768, scaled with the picture."""
        return max(6, int(round(points * self._scale)))

    def _bar_titles(self):
        """Each scalar bar's title left of its colours (VTK puts it on top of the labels)."""
        p = self.plotter
        for title, bar in p.scalar_bars.items():
            bar.SetTitle(" ")
            x, y = bar.GetPosition()
            text = p.add_text(title, position=(x - 0.012, y + 0.014), viewport=True, font_size=self._fs(11),
                              color=_TEXT, name=f"bar-title-{title}")
            text.GetTextProperty().SetJustificationToRight()

    def _bar(self, title):
        # in the window the time slider and the key help take the bottom strip
        bar = dict(_BAR, title=title, title_font_size=self._fs(16), label_font_size=self._fs(14))
        if self._widgets:   # above the time slider and right of the buttons
            bar.update(position_x=0.34, position_y=0.115)
        return bar

    def _flat_camera(self, bounds):
        """Look down z at the x-y rectangle `bounds`, filling the frame between the title at the
        top and the scalar bar at the bottom."""
        p = self.plotter
        x0, x1, y0, y1 = bounds[:4]
        cx, cy, lx, ly = (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0
        aspect = self.size[0] / self.size[1]
        free = 0.74                                          # of the height: 0.12 below, 0.14 above
        scale = max(ly / (2 * free), lx / (2 * aspect * 0.96))   # half the visible height
        p.view_xy()
        p.enable_parallel_projection()
        cam = p.camera
        shift_y = 0.01 * 2 * scale                          # the domain 1% below the middle
        cam.focal_point = (cx, cy + shift_y, 0.0)
        cam.position = (cx, cy + shift_y, 10.0 * max(lx, ly))
        cam.up = (0.0, 1.0, 0.0)
        cam.parallel_scale = scale
        p.renderer.ResetCameraClippingRange()
        self._camera = "flat"

    def _space_camera(self, grid):
        """From the front (-y), to the right and above, z up: the y slice of the iso style faces it."""
        p = self.plotter
        p.disable_parallel_projection()
        centre = np.asarray(grid.center, dtype=float)
        direction = np.array([0.55, -1.0, 0.65])
        p.camera.focal_point = tuple(centre)
        p.camera.position = tuple(centre + direction)
        p.camera.up = (0.0, 0.0, 1.0)
        p.reset_camera(bounds=grid.bounds)
        # lift the picture a little: the title is above it, the scalar bar below
        shift = np.array([0.0, 0.0, 0.04 * (grid.bounds[5] - grid.bounds[4])])
        p.camera.focal_point = tuple(np.asarray(p.camera.focal_point) - shift)
        p.camera.position = tuple(np.asarray(p.camera.position) - shift)
        self._camera = "3d"

    def _draw_2d(self, grid):
        p = self.plotter
        z = _centre_plane(grid, 2)
        if self.style == "schlieren":
            values, title = scalar_values(grid, self.field, 2)
            shown, shown_title = schlieren(values, _cells(grid), grid.spacing), f"schlieren of {title}"
            cmap, clim = "gray", (0.0, 1.0)
            self.description = f"numerical schlieren exp(-{SCHLIEREN_K:g} G / Gmax), G = size of grad {title}"
        elif self.style == "iso":
            colour = self._colour_field()
            shown, shown_title = scalar_values(grid, colour, 2)
            cmap, clim = cmap_for(shown_title), _clim(shown, shown_title)
        else:
            shown, shown_title = scalar_values(grid, self.field, 2)
            cmap, clim = cmap_for(shown_title), _clim(shown, shown_title)
            self.description = f"{shown_title}: min {np.min(shown):.4g}, max {np.max(shown):.4g}"
        g = grid.copy(deep=False)
        g.cell_data.clear()
        g.cell_data[shown_title] = shown
        image = g.slice(normal="z", origin=(grid.center[0], grid.center[1], z))
        p.add_mesh(image, scalars=shown_title, cmap=cmap, clim=clim, name="image",
                   scalar_bar_args=self._bar(shown_title), lighting=False)
        if self.style == "iso":
            values, title = scalar_values(grid, self.field, 2)
            level = self._iso_level(values)
            lines = _centred(grid, {title: values}).contour([level], scalars=title)
            if lines.n_points:
                lines.points[:, 2] = z + 0.01 * grid.spacing[0]
                p.add_mesh(lines, color="white", line_width=3, name="iso", lighting=False)
            self.description = f"{shown_title}, with the {title} = {level:.3g} iso-line (white)"
        if self._camera != "flat":
            self._flat_camera(grid.bounds)

    def _iso_level(self, values):
        if self.iso is not None:
            return float(self.iso)
        if self.field == "alpha":
            return 0.5
        lo, hi = float(np.min(values)), float(np.max(values))
        return 0.5 * (lo + hi)

    def _draw_3d(self, grid):
        p = self.plotter
        p.add_mesh(grid.outline(), color="gray", line_width=2, name="outline", lighting=False)
        values, title = scalar_values(grid, self.field, 3)
        if self.style == "iso":
            colour_values, colour_title = scalar_values(grid, self._colour_field(), 3)
            level = self._iso_level(values)
            arrays = {title: values}
            if colour_title != title:
                arrays[colour_title] = colour_values
            clim = _clim(colour_values, colour_title)
            cmap = cmap_for(colour_title)
            surface = _centred(grid, arrays).contour([level], scalars=title)
            # the colour field on a y plane through the iso-surface's centre (else the domain's):
            # the surface's front half stands out of it, e.g. a bubble over its pressure slice
            y = float(np.mean(surface.points[:, 1])) if surface.n_points else grid.center[1]
            k = int(np.clip((y - grid.origin[1]) // grid.spacing[1], 0, _cells(grid)[1] - 1))
            y = grid.origin[1] + (k + 0.5) * grid.spacing[1]     # a cell centre, never a face
            g = grid.copy(deep=False)
            g.cell_data.clear()
            g.cell_data[colour_title] = colour_values
            plane = g.slice(normal="y", origin=(grid.center[0], y, grid.center[2]))
            p.add_mesh(plane, scalars=colour_title, cmap=cmap, clim=clim, name="plane", lighting=False,
                       scalar_bar_args=self._bar(colour_title))
            if surface.n_points:
                surface = surface.compute_normals(auto_orient_normals=False, split_vertices=False)
                p.add_mesh(surface, scalars=colour_title, cmap=cmap, clim=clim, smooth_shading=True,
                           specular=0.3, name="iso", scalar_bar_args=self._bar(colour_title))
                self.description = (f"{title} = {level:.3g} iso-surface and the plane y = {y:.3g}, "
                                    f"coloured by {colour_title}")
            else:
                self.description = (f"{colour_title} on the plane y = {y:.3g}; no {title} = {level:.3g} "
                                    f"iso-surface at this time ({title} from {np.min(values):.4g} to "
                                    f"{np.max(values):.4g})")
        elif self.style == "slice":
            g = grid.copy(deep=False)
            g.cell_data.clear()
            g.cell_data[title] = values
            xc, yc, zc = (_centre_plane(grid, a) for a in range(3))
            slices = g.slice_orthogonal(x=xc, y=yc, z=zc).combine()
            # cut away the quarter of each slice in the octant that faces the camera (+x, -y, +z)
            eps = 1e-6 * max(grid.spacing)
            x0, x1, y0, y1, z0, z1 = grid.bounds
            slices = slices.clip_box((xc - eps, x1 + 1, y0 - 1, yc + eps, zc - eps, z1 + 1), invert=True)
            p.add_mesh(slices, scalars=title, cmap=cmap_for(title), clim=_clim(values, title),
                       name="slices", ambient=0.35, diffuse=0.75, scalar_bar_args=self._bar(title))
            self.description = (f"{title} on three orthogonal slices through the centre, "
                                f"the octant in front cut away")
        elif self.style == "volume":
            vol = _centred(grid, {title: values})
            p.add_volume(vol, scalars=title, cmap=cmap_for(title), clim=_clim(values, title),
                         opacity=_VOLUME_OPACITY, name="volume", scalar_bar_args=self._bar(title))
            self.description = f"{title}, volume rendering (low values transparent)"
        else:  # schlieren on the central z slice, seen from above
            g = grid.copy(deep=False)
            g.cell_data.clear()
            name = f"schlieren of {title}"
            g.cell_data[name] = schlieren(values, _cells(grid), grid.spacing)
            z = _centre_plane(grid, 2)
            image = g.slice(normal="z", origin=(grid.center[0], grid.center[1], z))
            p.add_mesh(image, scalars=name, cmap="gray", clim=(0.0, 1.0), name="schlieren",
                       lighting=False, scalar_bar_args=self._bar(name))
            self.description = (f"numerical schlieren exp(-{SCHLIEREN_K:g} G / Gmax), G = size of grad {title}, "
                                f"on z = {z:.3g}")
            if self._camera != "flat":
                self._flat_camera(grid.bounds)
            return
        if self._camera != "3d":
            self._space_camera(grid)

    # --- 1D: charts ------------------------------------------------------------------------
    def _line_names(self, grid):
        if self.field != "all":
            return [self.field]
        return [n for n in grid.cell_data.keys()]

    def _remove_charts(self):
        for chart in self._charts[1]:
            self.plotter.remove_chart(chart)
        self._charts = None

    def _draw_lines(self, grid):
        names = self._line_names(grid)
        n = len(names)
        x = grid.origin[0] + (np.arange(_cells(grid)[0]) + 0.5) * grid.spacing[0]
        if self._charts is None or self._charts[0] != names:
            if self._charts is not None:
                self._remove_charts()
            charts, lines = [], []
            for k, name in enumerate(names):
                _, title = scalar_values(grid, name, 1)
                chart = pv.Chart2D(size=(1.0, 1.0 / n), loc=(0.0, 1.0 - (k + 1) / n),
                                   x_label="x" if k == n - 1 else "", y_label=title)
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
            lo, hi = _range(y)
            pad = 0.06 * (hi - lo)
            chart.y_range = [lo - pad, hi + pad]
            chart.x_range = [grid.bounds[0], grid.bounds[1]]
        charts[0].title = f"{self.series.name}   t = {self.time:.4g}   ({self.index + 1}/{len(self.series)})"
        self.description = ", ".join(scalar_values(grid, nm, 1)[1] for nm in names) + " against x"

    # --- navigation (also the widgets' callbacks) --------------------------------------------
    def set_index(self, index):
        self.draw(max(0, min(len(self.series) - 1, int(index))))

    def step(self, delta):
        self.set_index(self.index + delta)

    def set_time(self, time):
        self.set_index(self.series.nearest(time))

    def set_field(self, field):
        self._check(field, self.style)
        self.field = field
        self.draw()

    def next_field(self, delta=1):
        k = self.fields.index(self.field) if self.field in self.fields else -1
        self.set_field(self.fields[(k + delta) % len(self.fields)])

    def set_style(self, style):
        self._check(self.field, style)
        self.style = style
        self.draw()

    def next_style(self):
        self.set_style(self.styles[(self.styles.index(self.style) + 1) % len(self.styles)])

    # --- interactive widgets -----------------------------------------------------------------
    def add_widgets(self):
        """Time slider, field and style buttons, keys. Call before show()."""
        p = self.plotter
        times = self.series.times
        if len(times) > 1:
            self.slider = p.add_slider_widget(
                lambda value: self.set_time(value), rng=[times[0], times[-1]], value=self.time,
                title="time", pointa=(0.30, 0.055), pointb=(0.80, 0.055), fmt="%.4g", style="modern",
                color=_TEXT, title_height=0.025, interaction_event="end")
        keys = {"Right": lambda: self.step(1), "Left": lambda: self.step(-1),
                "Home": lambda: self.set_index(0), "End": lambda: self.set_index(len(self.series) - 1),
                "bracketright": lambda: self.next_field(1), "bracketleft": lambda: self.next_field(-1),
                "slash": self.next_style}
        for key, callback in keys.items():
            p.add_key_event(key, callback)
        size, gap = 22, 30
        for k, name in enumerate(self.fields):
            self._field_buttons[name] = p.add_checkbox_button_widget(
                self._radio(self._field_buttons, name, self.set_field), value=name == self.field,
                position=(10, 40 + gap * k), size=size, border_size=2, color_on="#1f77b4",
                color_off="white", background_color="gray")
        if len(self.styles) > 1:
            for k, name in enumerate(self.styles):
                self._style_buttons[name] = p.add_checkbox_button_widget(
                    self._radio(self._style_buttons, name, self.set_style), value=name == self.style,
                    position=(110, 40 + gap * k), size=size, border_size=2, color_on="#d62728",
                    color_off="white", background_color="gray")
        self._widgets = True
        self._draw_labels()

    def _radio(self, buttons, name, choose):
        def callback(state):
            if not state:                     # clicking the chosen one keeps it chosen
                buttons[name].GetRepresentation().SetState(1)
                return
            for other, widget in buttons.items():
                if other != name:
                    widget.GetRepresentation().SetState(0)
            choose(name)
        return callback

    def _draw_labels(self):
        p = self.plotter
        gap = 30
        for k, name in enumerate(self._field_buttons):
            p.add_text(name, position=(38, 43 + gap * k), font_size=9, color=_TEXT, name=f"field-{name}")
        for k, name in enumerate(self._style_buttons):
            p.add_text(name, position=(138, 43 + gap * k), font_size=9, color=_TEXT, name=f"style-{name}")
        top = 40 + gap * max(len(self._field_buttons), len(self._style_buttons))
        p.add_text("field" + (" " * 14 + "style" if self._style_buttons else ""), position=(10, top + 4),
                   font_size=9, color=_TEXT, name="pickers")
        p.add_text("Left/Right: time   Home/End: first/last   [ ]: field   /: style   q: quit",
                   position=(10, 8), font_size=8, color=_TEXT, name="keys")

    # --- outputs -------------------------------------------------------------------------------
    def screenshot(self, path, index=None):
        """Draw snapshot `index` (default: current) and save it as a PNG of the viewer's size."""
        self.draw(index)
        self.plotter.screenshot(str(path))
        return Path(path)

    def write_movie(self, path, fps=4.0):
        """One frame per snapshot. A .mp4 needs imageio-ffmpeg; without it a .gif is written
        instead. Returns (the file written, a note or "")."""
        path, note = Path(path), ""
        if path.suffix.lower() != ".gif" and not _have_ffmpeg():
            note = (f"imageio-ffmpeg is not installed (pip install imageio-ffmpeg) so {path.name} "
                    f"cannot be written; wrote {path.with_suffix('.gif').name} instead")
            path = path.with_suffix(".gif")
        if path.suffix.lower() == ".gif":
            self.plotter.open_gif(str(path), fps=fps)
        else:
            self.plotter.open_movie(str(path), framerate=fps, quality=7, macro_block_size=2)
        try:
            for i in range(len(self.series)):
                self.draw(i)
                self.plotter.write_frame()
        finally:
            self.plotter.mwriter.close()
            self.plotter.mwriter = None
        return path, note

    def show(self):
        self.plotter.show(title=f"taichiflow: {self.series.name}")

    def close(self):
        self.plotter.close()


# ----------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------

def view_command(args) -> int:
    """`taichiflow view OUT_DIR [--screenshot PNG] [--movie FILE] [--time T] [--field F] ...`."""
    _require_pyvista()
    series = Series.open(args.out_dir)
    off_screen = bool(args.screenshot or args.movie)
    if not off_screen and not _have_display():
        raise RuntimeError("no display here for the interactive viewer; write pictures off-screen "
                           "with --screenshot fig.png or --movie movie.gif")
    viewer = Viewer(series, field=args.field, style=args.style, size=args.size or DEFAULT_SIZE,
                    off_screen=off_screen, iso=getattr(args, "iso", None))
    index = series.nearest(args.time)
    try:
        if args.screenshot:
            viewer.screenshot(args.screenshot, index)
            print(f"wrote {args.screenshot}: t = {viewer.time:.6g}, {viewer.description}")
        if args.movie:
            written, note = viewer.write_movie(args.movie, fps=args.fps)
            if note:
                print(f"taichiflow: {note}", file=sys.stderr)
            print(f"wrote {written}: {len(series)} frames, t = {series.times[0]:.6g} to {series.times[-1]:.6g}")
        if not off_screen:
            viewer.add_widgets()
            viewer.draw(index)
            viewer.show()
    finally:
        viewer.close()
    return 0


def attach_renderer(sim, log=print) -> bool:
    """`taichiflow run --render`: a picture (snapshot_NNNNN.png) of every snapshot the run
    writes, drawn by a listener of its outputs (run/outputs.py: Outputs.on_snapshot). Without
    pyvista, or after a rendering error, it says so once and the run goes on without pictures.
    """
    if pv is None:
        log(f"--render: pyvista is not importable ({_PYVISTA_ERROR}); the run goes on without pictures")
        return False
    series = Series([], case=sim.case, cache=1)
    state = {"viewer": None, "failed": False}

    def draw(t, path):
        if state["failed"]:
            return
        try:
            series.append(t, path)
            if state["viewer"] is None:
                state["viewer"] = Viewer(series, off_screen=True)
            state["viewer"].screenshot(Path(path).with_suffix(".png"), len(series) - 1)
        except Exception as err:  # a picture must never end a run
            state["failed"] = True
            log(f"--render: rendering failed ({type(err).__name__}: {err}); the run goes on without pictures")

    sim.outputs.on_snapshot(draw)
    return True
