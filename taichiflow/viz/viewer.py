"""The viewer: one PyVista plotter over a Series, its widgets, screenshots and movies."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import env
from .axes import Axes
from .charts import Charts
from .env import pv, require_pyvista
from .amr import block_outlines
from .fields import centre_plane, colour_limits, scalar_values, vector_names
from .scenes import Scenes
from .series import Series
from .terrain import TERRAIN_STYLES, Terrain, has_terrain

STYLES = {1: ("line",), 2: ("image", "iso", "schlieren"),
          3: ("iso", "slice", "volume", "schlieren", "streamlines")}
# and, for 2D runs whose snapshots have the arrays bed and h, TERRAIN_STYLES (terrain.py)
DEFAULT_SIZE = (1024, 768)
DEFAULT_SEEDS = 200          # streamline seed points
_TEXT = "black"
# A horizontal scalar bar at the bottom, labels above it; its title goes to its left (_bar_titles).
_BAR = dict(vertical=False, position_x=0.25, position_y=0.01, width=0.5, height=0.115, fmt="%.3g",
            n_labels=4, title_font_size=16, label_font_size=14, color=_TEXT, unconstrained_font_size=True)
# Two bars side by side (a field and the lines of a vector field): (position_x, width) of each,
# off-screen and in the window (where the buttons take the left)
_BAR_PAIR = {False: ((0.11, 0.27), (0.56, 0.26)), True: ((0.28, 0.17), (0.63, 0.19))}


class Viewer(Scenes, Terrain, Charts, Axes):
    """One PyVista plotter over a Series: draws snapshot `index` with a field and a style.

    Off-screen it makes screenshots and movies; on screen `add_widgets()` adds a time slider,
    field and style buttons and keys (Left/Right: previous/next snapshot, Home/End: first/last,
    [ and ]: previous/next field, /: next style). The streamlines style draws the lines of the
    vector array `vectors` (default: B where the run has it, else vel) through `seeds` points.
    2D runs with the arrays bed and h also have the terrain styles (terrain.py): the water where h
    exceeds `wet_depth` over the bed's relief, and in 3D warped by `exaggeration`.

    Colours: `clim` (low, high) where given; else a screenshot spans its own snapshot's range,
    while a movie and the window (`one_range`) span the field's range over the whole series, so
    that one colour means one value in every frame.
    """

    def __init__(self, series: Series, field=None, style=None, size=DEFAULT_SIZE, off_screen=True,
                 iso=None, clim=None, vectors=None, seeds=None, wet_depth=None, exaggeration=None, blocks=False):
        require_pyvista()
        if off_screen:
            env.prepare_offscreen()
        self.series = series
        self.ndim = series.ndim
        # the field picker: every array (a vector as its magnitude, or its x component in 1D)
        self.fields = (["all"] if self.ndim == 1 else []) + series.arrays
        self.vectors = self._checked_vectors(vectors)
        self.seeds = DEFAULT_SEEDS if seeds is None else int(seeds)
        if self.seeds < 1:
            raise ValueError(f"--seeds must be at least 1 (got {self.seeds})")
        # streamlines need a vector array
        self.styles = tuple(s for s in STYLES[self.ndim] if s != "streamlines" or self.vectors)
        # water over terrain: 2D runs with a bed and a depth
        self.terrain = self.ndim == 2 and has_terrain(series.arrays)
        if self.terrain:
            self.styles += TERRAIN_STYLES
        self._terrain_options(wet_depth, exaggeration)
        self.field = field or self.default_field()
        self.style = style or self.default_style()
        self.iso = iso
        self.blocks = bool(blocks)
        if self.blocks and (self.ndim != 2 and self.ndim != 3 or series.leaves(0) is None):
            raise ValueError("--blocks: the leaf blocks of an adaptive run ([amr]) in 2D or 3D; "
                             f"{series.name} is {'not an adaptive run' if series.leaves(0) is None else 'a 1D run'}")
        self._check(self.field, self.style)
        self.clim = self._checked_clim(clim)
        self.one_range = False
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
        if self.terrain:
            return "h"
        return "rho" if "rho" in arrays else arrays[0]

    def default_style(self) -> str:
        if self.ndim == 1:
            return "line"
        if self.ndim == 2:
            return "iso" if self.series.two_phase else "terrain" if self.terrain else "image"
        return "iso" if self.series.two_phase else "slice"

    def _checked_vectors(self, name):
        """The vector array whose lines the streamlines style draws: `name`, else B, else vel
        (None for a run with neither, or below 3D)."""
        names = vector_names(self.series.grid(0)) if self.ndim == 3 else []
        if name is not None:
            if name not in names:
                raise ValueError(f"--vectors {name}: no three-component array of that name in this run "
                                 f"(vectors: {', '.join(names) or 'none'}; streamlines are drawn in 3D only)")
            return name
        return next((n for n in ("B", "vel") if n in names), None)

    def _check(self, field, style):
        self._terrain_check(style)
        if style not in self.styles:
            kind = {1: "1D runs are drawn as line plots", 2: "2D runs are drawn as images"}.get(
                self.ndim, "streamlines need a three-component array such as vel or B")
            raise ValueError(f"style {style!r} is not available for a {self.ndim}D run "
                             f"({kind + '; ' if kind else ''}styles: {', '.join(self.styles)})")
        if field != "all":
            scalar_values(self.series.grid(0), field, self.ndim)  # raises for an unknown field

    def _checked_clim(self, clim):
        if clim is None:
            return None
        lo, hi = (float(v) for v in clim)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"--clim LOW HIGH: LOW must be below HIGH, both finite (got {lo:g} {hi:g})")
        if self.ndim == 1 and self.field == "all":
            raise ValueError("--clim sets the y range of one field of a 1D run: name it with --field")
        return lo, hi

    def _limits(self, values, name, title):
        """The colour range of field `name` (values and title as scalar_values gives them)."""
        if self.clim is not None:
            return self.clim
        if self.one_range:
            lo, hi = self.series.field_range(name, self.ndim)
            return colour_limits(np.array([lo, hi]), title)
        return colour_limits(values, title)

    def _grey_limits(self):
        """Schlieren is 0 to 1 in every frame (exp of a gradient scaled by its maximum)."""
        return self.clim if self.clim is not None else (0.0, 1.0)

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
            self._add_mirror_note()
        else:
            # remove the previous scene's actors only: widgets and their labels are actors too
            for name in self._scene:
                p.remove_actor(name, reset_camera=False, render=False)
            p.scalar_bars.clear()
            before = set(p.actors)
            {2: self._draw_2d, 3: self._draw_3d}[self.ndim](grid)
            if self.blocks:
                self._draw_blocks(grid)
            self._add_mirror_note()
            self._bar_titles()
            seconds = " s" if self.style in TERRAIN_STYLES else ""      # those pictures are in SI units
            head = f"{self.series.name}   t = {self.time:.4g}{seconds}   ({self.index + 1}/{len(self.series)})"
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

    def _draw_blocks(self, grid):
        """The leaf blocks outlined, coloured by level (3D: where they cross the plane z through
        the centre, the slices' plane)."""
        z = centre_plane(grid, 2)
        leaves = self.series.leaves(self.index)
        outlines = block_outlines(leaves, z if self.ndim == 3 else None)
        for axis, side in self.series.mirror_faces:  # (the mirror images' blocks too)
            if axis < 2:
                plane = leaves.bounds[2 * axis + side]
                image = outlines.copy()
                image.points[:, axis] = 2 * plane - image.points[:, axis]
                outlines = outlines.merge(image)
        if self.ndim == 2:
            outlines.points[:, 2] = z + 0.01 * grid.spacing[0]
        levels = int(outlines.cell_data["level"].max()) if outlines.n_cells else 0
        self.plotter.add_mesh(outlines, scalars="level", cmap="autumn_r", clim=(0, max(levels, 1)), line_width=1.5,
                              show_scalar_bar=False, name="blocks", lighting=False)
        where = "" if self.ndim == 2 else f" crossing z = {z:.3g}"
        self.description += f"; leaf blocks{where} outlined (yellow to red: level 0 to {levels})"

    def _add_mirror_note(self):
        note = self.series.mirror_note()
        if note:
            self.description += f"; {note}"

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

    def _bar(self, title, slot=None):
        """A scalar bar's settings: centred, or `slot` 0 (left) or 1 (right) of a pair."""
        # in the window the time slider and the key help take the bottom strip
        bar = dict(_BAR, title=title, title_font_size=self._fs(16), label_font_size=self._fs(14))
        if self._widgets:   # above the time slider and right of the buttons
            bar.update(position_x=0.34, position_y=0.115)
        if slot is not None:
            x, width = _BAR_PAIR[self._widgets][slot]
            bar.update(position_x=x, width=width)
        return bar

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
        """Time slider, field and style buttons, keys. Call before show(). Stepping through time,
        the colours keep one range (the series') unless --clim gave one."""
        p = self.plotter
        self.one_range = True
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
        self._camera = None            # framed again at the next draw, around the widgets
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
        """One frame per snapshot, all in one colour range (the field's over the whole series,
        or `clim`). A .mp4 needs imageio-ffmpeg; without it a .gif is written instead. Returns
        (the file written, a note or "")."""
        path, note = Path(path), ""
        if path.suffix.lower() != ".gif" and not env.have_ffmpeg():
            note = (f"imageio-ffmpeg is not installed (pip install imageio-ffmpeg) so {path.name} "
                    f"cannot be written; wrote {path.with_suffix('.gif').name} instead")
            path = path.with_suffix(".gif")
        if path.suffix.lower() == ".gif":
            self.plotter.open_gif(str(path), fps=fps)
        else:
            self.plotter.open_movie(str(path), framerate=fps, quality=7, macro_block_size=2)
        one_range, self.one_range = self.one_range, True
        try:
            for i in range(len(self.series)):
                self.draw(i)
                self.plotter.write_frame()
        finally:
            self.one_range = one_range
            self.plotter.mwriter.close()
            self.plotter.mwriter = None
        return path, note

    def show(self):
        self.plotter.show(title=f"taichiflow: {self.series.name}")

    def close(self):
        self.plotter.close()

