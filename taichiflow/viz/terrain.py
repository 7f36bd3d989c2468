"""Water over terrain: the `terrain` and `surface3d` styles of 2D runs whose snapshots have a bed
elevation array named `bed` and a depth array named `h` (a shallow-water run, whatever its model
file is called: the styles follow these two array names only).

* ``terrain``: the bed as a grey hill-shaded relief (lit from the north-west, 45 degrees up;
  the shading is computed with numpy from the bed's gradient, its slopes steepened by the
  vertical exaggeration) with contour lines at a round interval, and over it the water, where h
  exceeds `wet_depth` (1 mm), coloured by the field (default h, in blues), seen from above with
  x and y axes.
* ``surface3d``: a block diagram: the bed raised by its elevation times the vertical
  exaggeration, in earth tones, with sides down to a round elevation, and the water's surface
  h + bed where wet, raised alike, slightly translucent and coloured by the field, in
  perspective from the south-east, lit by the same sun; the bounds box reads true elevations.
  Where the water meets a bank its surface runs on flat into the ground, so that the shore is
  where the two surfaces cross.

The pictures take the arrays in SI units, as the shallow-water cases give them (g = 9.81:
lengths in metres, times in seconds): the scalar bars read `h (m)`, `speed (m/s)`, ... and the
time `t = 300 s`. The vertical exaggeration defaults to a round number near the one that makes
the relief a tenth of the domain's larger side (3x for 200 m of relief over 6 km), never below 1.
"""
from __future__ import annotations

import math

import numpy as np

from .env import pv
from .fields import cells_of, centre_plane, cmap_for, colour_limits, scalar_values, value_range

TERRAIN_ARRAYS = ("bed", "h")        # the bed elevation and the depth: both make the styles
TERRAIN_STYLES = ("terrain", "surface3d")
WET_DEPTH = 1e-3                     # water is drawn where h exceeds this depth (m)
LIGHT_AZIMUTH, LIGHT_ALTITUDE = 315.0, 45.0   # degrees: from the north-west (clockwise from +y), up
RELIEF_SHARE = 0.1                   # default exaggeration: the relief stands this share of the larger side
_NICE_FACTORS = (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)
# units of the arrays named so, in the terrain styles (vector components and magnitudes alike)
UNITS = {"h": "m", "bed": "m", "surface": "m", "eta": "m", "speed": "m/s", "vel": "m/s", "mom": "m^2/s",
         "manning": "s/m^(1/3)"}
_WATER_OPACITY = {"terrain": 0.88, "surface3d": 0.82}
_EARTH = ["#4f6b3a", "#7d8c4f", "#b3a66e", "#a88a62", "#8a7560", "#d9d3c7"]   # low ground to high
_WATER = ["#c6e2f5", "#7fb8e0", "#3d8cc7", "#1a5c9e", "#0b336b"]               # shallow to deep
_WALL = "#9a8a74"                             # the ground's sides (surface3d)
_CONTOUR = "#3a3a3a"                          # the bed's contour lines (terrain)
_WINDOW_PAIR = ((0.37, 0.16), (0.68, 0.17))    # (position_x, width) of surface3d's two bars in the window
_TOP_SPACE = 0.13                             # of the height, at the top: the time and the description
_VIEW_3D = np.array([0.7, -1.0, 0.6])         # from the south-east, above


def has_terrain(arrays) -> bool:
    """Whether a run's arrays make the terrain styles: a `bed` and an `h`."""
    return all(name in arrays for name in TERRAIN_ARRAYS)


def unit_of(title: str) -> str:
    """The SI unit of a field's title (`h`, `vel magnitude`, `vel_x`) by its array's name, or ""."""
    base = title.split(" ")[0]
    if base not in UNITS:
        stem, _, comp = base.rpartition("_")
        base = stem if comp in ("x", "y", "z") else base
    return UNITS.get(base, "")


def with_units(title: str) -> str:
    """A field's title with its SI unit where its array's name has one: `h (m)`, `vel_x (m/s)`."""
    unit = unit_of(title)
    return f"{title} ({unit})" if unit else title


def _colormap(name, colours):
    from matplotlib.colors import LinearSegmentedColormap
    return LinearSegmentedColormap.from_list(name, colours, N=256)


def water_cmap(title):
    """Blues, light where shallow (or slow) and dark where deep; a component keeps its diverging map."""
    return "coolwarm" if cmap_for(title) == "coolwarm" else _colormap("water", _WATER)


def earth_cmap():
    return _colormap("earth", _EARTH)


def hillshade(bed, cells, spacing, exaggeration=1.0, azimuth=LIGHT_AZIMUTH, altitude=LIGHT_ALTITUDE):
    """Lambertian shading, 0 to 1, of the bed (cell values in VTK order, x fastest) lit by a
    distant light from `azimuth` (degrees clockwise from north, +y) and `altitude` (degrees
    above the horizon): n . l of the surface z = exaggeration * bed, slopes by central
    differences (one-sided at the edges)."""
    nx, ny = cells[0], cells[1]
    z = np.asarray(bed, dtype=np.float64).reshape(ny, nx) * float(exaggeration)
    dzdx = np.gradient(z, spacing[0], axis=1) if nx > 1 else np.zeros_like(z)
    dzdy = np.gradient(z, spacing[1], axis=0) if ny > 1 else np.zeros_like(z)
    az, alt = math.radians(azimuth), math.radians(altitude)
    light = np.array([math.sin(az) * math.cos(alt), math.cos(az) * math.cos(alt), math.sin(alt)])
    shade = (-dzdx * light[0] - dzdy * light[1] + light[2]) / np.sqrt(dzdx ** 2 + dzdy ** 2 + 1.0)
    return np.clip(shade, 0.0, 1.0).ravel()


def default_exaggeration(bed, bounds) -> float:
    """A round vertical exaggeration that makes the relief about RELIEF_SHARE of the domain's
    larger side (1 for flat ground or relief that already stands that high)."""
    relief = float(np.nanmax(bed) - np.nanmin(bed))
    side = max(bounds[1] - bounds[0], bounds[3] - bounds[2])
    if not relief > 0 or not side > 0:
        return 1.0
    wanted = RELIEF_SHARE * side / relief
    if wanted <= 1.0:
        return 1.0
    return float(min(_NICE_FACTORS, key=lambda f: abs(math.log(f / wanted))))


def _round_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) that cuts `span` into 2 to 5 pieces."""
    if not span > 0:
        return 1.0
    for step in sorted(m * 10.0 ** e for e in range(math.floor(math.log10(span)) - 1, math.floor(math.log10(span)) + 2)
                       for m in (1, 2, 5)):
        if span / step <= 4:
            return step
    return 10.0 ** math.ceil(math.log10(span))


def _length(metres: float) -> str:
    return f"{metres * 1000:g} mm" if 0 < metres < 1 else f"{metres:g} m"


def _format_area(area: float) -> str:
    return f"{area / 1e6:.3g} km^2" if area >= 1e5 else f"{area:,.0f} m^2" if area >= 10 else f"{area:.3g} m^2"


class Terrain:
    """The Viewer's terrain styles of 2D runs (a mixin: it uses the Viewer's state)."""

    def _terrain_options(self, wet_depth, exaggeration):
        self.wet_depth = WET_DEPTH if wet_depth is None else float(wet_depth)
        if not (np.isfinite(self.wet_depth) and self.wet_depth >= 0):
            raise ValueError(f"--wet-depth must be a depth of 0 or more (got {self.wet_depth:g})")
        if exaggeration is not None:
            exaggeration = float(exaggeration)
            if not (np.isfinite(exaggeration) and exaggeration > 0):
                raise ValueError(f"--exaggeration must be above 0 (got {exaggeration:g})")
        self._exaggeration = exaggeration
        self._sun = None                 # surface3d's light from the north-west, once set
        self._ssaa = False               # super-sampling on (the terrain styles)

    @property
    def exaggeration(self) -> float:
        """The vertical exaggeration: --exaggeration, else default_exaggeration of the first bed."""
        if self._exaggeration is None:
            grid = self.series.grid(0)
            self._exaggeration = default_exaggeration(np.asarray(grid.cell_data["bed"]), grid.bounds)
        return self._exaggeration

    def _terrain_check(self, style):
        if style in TERRAIN_STYLES and style not in self.styles:
            arrays = ", ".join(self.series.arrays)
            raise ValueError(f"style {style!r} draws water over terrain: it needs a 2D run whose snapshots have "
                             f"a bed elevation array 'bed' and a depth array 'h' (this {self.ndim}D run has "
                             f"{arrays}; styles: {', '.join(self.styles)})")

    def _water_values(self, grid):
        """(field values, their title with units, the colour range, the wet mask) of a snapshot."""
        h = np.asarray(grid.cell_data["h"], dtype=float)
        wet = h > self.wet_depth
        values, title = scalar_values(grid, self.field, 2)
        if self.clim is not None:
            clim = self.clim
        elif self.one_range:
            clim = colour_limits(np.array(self.series.field_range(self.field, 2)), title)
        else:
            clim = colour_limits(values, title)
        return values, title, clim, wet

    def _wet_summary(self, grid, values, title, wet) -> str:
        if not wet.any():
            return f"no water deeper than {_length(self.wet_depth)}"
        cell_area = float(grid.spacing[0] * grid.spacing[1])
        unit = unit_of(title)
        return f"wet {_format_area(wet.sum() * cell_area)}, max {np.max(values[wet]):.3g}{' ' + unit if unit else ''}"

    def _flat_points(self, grid, arrays: dict, z: float):
        """The x-y rectangle of the cells at height z, `arrays` (cell values) averaged to its corners."""
        cells = cells_of(grid)
        flat = pv.ImageData(dimensions=(cells[0] + 1, cells[1] + 1, 1), spacing=grid.spacing,
                            origin=(grid.origin[0], grid.origin[1], z))
        for name, values in arrays.items():
            flat.cell_data[name] = values
        return flat.cell_data_to_point_data()

    def _hide_marker(self):
        renderer = self.plotter.renderer
        if getattr(renderer, "axes_widget", None) is not None:
            renderer.hide_axes()

    def _smooth_edges(self, on: bool):
        """Super-sampling (the terrain styles' shores and slopes), off again for the other styles."""
        if on != self._ssaa:
            if on:
                self.plotter.enable_anti_aliasing("ssaa")
            else:
                self.plotter.disable_anti_aliasing()
            self._ssaa = on

    # --- terrain: seen from above ---------------------------------------------------------------
    def _draw_terrain(self, grid):
        p = self.plotter
        self._hide_marker()
        self._smooth_edges(True)
        cells, z = cells_of(grid), centre_plane(grid, 2)
        bed = np.asarray(grid.cell_data["bed"], dtype=float)
        exaggeration = self.exaggeration
        shade = hillshade(bed, cells, grid.spacing, exaggeration)
        # grey: dark in shadow, light facing the light, lighter on high ground
        lo, hi = value_range(bed)
        relief = (0.3 + 0.65 * shade) * (0.82 + 0.18 * (bed - lo) / (hi - lo))
        p.add_mesh(self._flat_points(grid, {"relief": relief}, z), scalars="relief", cmap="gray", clim=(0.0, 1.0),
                   show_scalar_bar=False, lighting=False, name="relief")
        step = self._contour_step(bed)
        if step:
            levels = np.arange(math.ceil(lo / step), math.floor(hi / step) + 1) * step
            lines = self._centre_triangles(grid, {"bed": bed}, np.full(bed.shape, z + 0.005 * grid.spacing[0]))
            lines = lines.contour(levels, scalars="bed")
            if lines.n_points:
                p.add_mesh(lines, color=_CONTOUR, line_width=max(1.0, self._scale), opacity=0.6, lighting=False,
                           name="contours")
        values, title, clim, wet = self._water_values(grid)
        h = np.asarray(grid.cell_data["h"], dtype=float)
        bar_title = with_units(title)
        water = self._flat_points(grid, {"h": h, bar_title: values}, z + 0.01 * grid.spacing[0])
        water = water.clip_scalar(scalars="h", value=self.wet_depth, invert=False) if wet.any() else None
        if water is not None and water.n_points:
            p.add_mesh(water, scalars=bar_title, cmap=water_cmap(title), clim=clim, lighting=False,
                       opacity=_WATER_OPACITY["terrain"], name="water", scalar_bar_args=self._bar(bar_title))
        contours = f", {step:g} m contours" if step else ""
        self.description = (f"{title} where h > {_length(self.wet_depth)}; bed hill-shaded from the north-west"
                            f"{contours}; {self._wet_summary(grid, values, title, wet)}")
        if self._camera != "flat":
            self._flat_camera(grid.bounds)
        self._flat_axes(grid.bounds, z, titles=("x (m)", "y (m)"))

    @staticmethod
    def _contour_step(bed) -> float:
        """The bed's contour interval: a round step giving 5 to 20 lines (0 for flat ground)."""
        relief = float(np.nanmax(bed) - np.nanmin(bed))
        return _round_step(relief) / 5 if relief > 0 else 0.0

    # --- surface3d: in perspective -----------------------------------------------------------
    def _centre_triangles(self, grid, arrays: dict, heights):
        """Triangles through the cell centres (points in VTK order, x fastest) at `heights` (cell
        values) carrying `arrays`: the ground and the water are cut alike, so that the water,
        never below the ground at a point, is above it everywhere between."""
        nx, ny = cells_of(grid)[:2]
        x = grid.origin[0] + (np.arange(nx) + 0.5) * grid.spacing[0]
        y = grid.origin[1] + (np.arange(ny) + 0.5) * grid.spacing[1]
        xx, yy = np.meshgrid(x, y)                               # (ny, nx): x fastest when flattened
        points = np.column_stack([xx.ravel(), yy.ravel(), np.asarray(heights, dtype=float)])
        corner = (np.arange(ny - 1)[:, None] * nx + np.arange(nx - 1)[None, :]).ravel()
        a, b, c, d = corner, corner + 1, corner + nx + 1, corner + nx      # a quad, anticlockwise
        faces = np.column_stack([np.full_like(a, 3), a, b, c, np.full_like(a, 3), a, c, d]).ravel()
        surface = pv.PolyData(points, faces=faces)
        for name, values in arrays.items():
            surface.point_data[name] = values
        return surface

    def _water_surface(self, grid, bed, h, values, wet, name):
        """The triangles with a wet corner (h > wet_depth) at the water's level h + bed, carrying the
        field's values as `name`. A dry corner of such a triangle takes the mean level and value of
        its wet neighbours, or its own bed where that is lower: on a bank the water's surface runs
        flat into the ground and the shore is where the two meet, with no sheet climbing the bank;
        at a front running down dry ground it thins to nothing at the dry corner."""
        nx, ny = cells_of(grid)[:2]
        wet2, bed2 = wet.reshape(ny, nx), bed.reshape(ny, nx)
        level, field = (bed + h).reshape(ny, nx), np.asarray(values, dtype=float).reshape(ny, nx)
        count, level_sum, field_sum = (np.zeros((ny + 2, nx + 2)) for _ in range(3))
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                if dx or dy:
                    window = (slice(1 + dy, ny + 1 + dy), slice(1 + dx, nx + 1 + dx))
                    count[window] += wet2
                    level_sum[window] += np.where(wet2, level, 0.0)
                    field_sum[window] += np.where(wet2, field, 0.0)
        inner = (slice(1, ny + 1), slice(1, nx + 1))
        count, level_sum, field_sum = count[inner], level_sum[inner], field_sum[inner]
        shore = ~wet2 & (count > 0)
        near = np.maximum(count, 1.0)
        z = np.where(wet2, level, np.where(shore, np.minimum(level_sum / near, bed2), bed2))
        shown = np.where(shore, field_sum / near, field)
        surface = self._centre_triangles(grid, {name: shown.ravel()}, z.ravel())
        triangles = surface.faces.reshape(-1, 4)
        keep = wet[triangles[:, 1:]].any(axis=1)
        water = pv.PolyData(surface.points, faces=triangles[keep].ravel())
        water.point_data[name] = shown.ravel()
        return water.clean(tolerance=0.0)

    def _walls(self, grid, bottom, top, keep=None):
        """Vertical strips under the four edges of the cell-centre surface, from heights `bottom`
        up to `top` (cell values, or a number), where `keep` (cell values) holds at both ends: the
        sides of a block diagram."""
        nx, ny = cells_of(grid)[:2]
        x = grid.origin[0] + (np.arange(nx) + 0.5) * grid.spacing[0]
        y = grid.origin[1] + (np.arange(ny) + 0.5) * grid.spacing[1]
        index = np.arange(nx * ny).reshape(ny, nx)
        lower = np.broadcast_to(np.asarray(bottom, dtype=float), (nx * ny,))
        upper = np.broadcast_to(np.asarray(top, dtype=float), (nx * ny,))
        strips = []
        for edge in (index[0, :], index[-1, :], index[:, 0], index[:, -1]):
            if len(edge) < 2:
                continue
            ex, ey = x[edge % nx], y[edge // nx]
            points = np.concatenate([np.column_stack([ex, ey, lower[edge]]), np.column_stack([ex, ey, upper[edge]])])
            n = len(edge)
            a = np.arange(n - 1)
            quads = np.column_stack([np.full_like(a, 4), a, a + 1, n + a + 1, n + a])
            if keep is not None:
                quads = quads[keep[edge][:-1] & keep[edge][1:]]
            if len(quads):
                strips.append(pv.PolyData(points, faces=quads.ravel()))
        return strips

    def _draw_surface3d(self, grid):
        p = self.plotter
        if min(cells_of(grid)[:2]) < 2:
            raise ValueError("style 'surface3d' needs at least 2 cells along x and along y")
        k = self.exaggeration
        bed = np.asarray(grid.cell_data["bed"], dtype=float)
        h = np.asarray(grid.cell_data["h"], dtype=float)
        values, title, clim, wet = self._water_values(grid)
        bar_title = with_units(title)
        self._terrain_lights()
        self._smooth_edges(True)
        ground = self._centre_triangles(grid, {"bed (m)": bed}, k * bed)
        # the box: the domain, and round elevations below and above the bed and the water
        top = float(np.max(bed + h))
        step = _round_step(top - float(np.min(bed)))
        floor, ceiling = step * math.floor(np.min(bed) / step), step * math.ceil(top / step)
        box = tuple(grid.bounds[:4]) + (k * floor, k * max(ceiling, floor + step))
        both = bool(wet.any()) and bar_title != "bed (m)"
        p.add_mesh(ground.compute_normals(split_vertices=False), scalars="bed (m)", cmap=earth_cmap(),
                   clim=value_range(bed), smooth_shading=True, ambient=0.2, diffuse=0.9, specular=0.0,
                   name="ground", scalar_bar_args=self._pair_bar("bed (m)", 0 if both else None))
        for k_wall, wall in enumerate(self._walls(grid, box[4], k * bed)):
            p.add_mesh(wall, color=_WALL, ambient=0.6, diffuse=0.5, name=f"ground-side-{k_wall}")
        if wet.any():
            for k_wall, wall in enumerate(self._walls(grid, k * bed, k * (bed + h), keep=wet)):
                p.add_mesh(wall, color=_WATER[3], opacity=_WATER_OPACITY["surface3d"], ambient=0.35, diffuse=0.6,
                           name=f"water-side-{k_wall}")
            water = self._water_surface(grid, bed, h, values, wet, bar_title)
            water.points[:, 2] *= k
            water.points[:, 2] += 0.002 * k * float(np.ptp(bed) or 1.0)   # clear of the ground where they meet
            p.add_mesh(water.compute_normals(split_vertices=False), scalars=bar_title, cmap=water_cmap(title),
                       clim=clim, opacity=_WATER_OPACITY["surface3d"], smooth_shading=True, ambient=0.25,
                       diffuse=0.7, specular=0.5, specular_power=30, name="water", show_scalar_bar=both,
                       scalar_bar_args=self._pair_bar(bar_title, 1))
        coloured = "" if title == "h" else f" coloured by {title}"
        self.description = (f"bed and water surface (where h > {_length(self.wet_depth)}){coloured}, "
                            f"heights x{k:g}; {self._wet_summary(grid, values, title, wet)}")
        if self._camera != "terrain3d":
            self._terrain_camera(box)
        self._orientation_marker()
        self.plotter.renderer.show_axes()
        self._elevation_axes(box, k)

    def _pair_bar(self, title, slot):
        """A scalar bar of surface3d: the bed's (slot 0) and the water's (slot 1) side by side; in
        the window right of the style buttons, whose names are longer than the field's."""
        bar = self._bar(title, slot=slot)
        if slot is not None and self._widgets:
            bar.update(position_x=_WINDOW_PAIR[slot][0], width=_WINDOW_PAIR[slot][1])
        return bar

    def _terrain_lights(self):
        """The sun from the north-west, 45 degrees up, and a dimmer light from the camera."""
        p = self.plotter
        if self._sun is None:
            p.remove_all_lights()
            az, alt = math.radians(LIGHT_AZIMUTH), math.radians(LIGHT_ALTITUDE)
            sun = pv.Light(light_type="scene light", intensity=1.0)
            sun.positional = False
            sun.position = (math.sin(az) * math.cos(alt), math.cos(az) * math.cos(alt), math.sin(alt))
            sun.focal_point = (0.0, 0.0, 0.0)
            p.add_light(sun)
            p.add_light(pv.Light(light_type="headlight", intensity=0.3))
            self._sun = sun

    def _terrain_camera(self, box):
        """Perspective from the south-east and above, the box filling the picture between the title
        and the scalar bars (right of the buttons in the window), with room for its labels."""
        p = self.plotter
        p.disable_parallel_projection()
        centre = np.array([(box[0] + box[1]) / 2, (box[2] + box[3]) / 2, (box[4] + box[5]) / 2])
        side = max(box[1] - box[0], box[3] - box[2])
        p.camera.up = (0.0, 0.0, 1.0)
        p.camera.focal_point = tuple(centre)
        p.camera.position = tuple(centre + 2.5 * side * _VIEW_3D / np.linalg.norm(_VIEW_3D))
        p.camera.view_angle = 30.0
        bar = self._bar("")
        bottom = bar["position_y"] + bar["height"] + 0.07          # the bars and the box's labels below
        left = 0.22 if self._widgets else 0.08
        self._fit_box(box, (left, 0.93, bottom, 1.0 - _TOP_SPACE))
        self._camera = "terrain3d"

    def _fit_box(self, box, region):
        """Pan and zoom the camera until the box's corners span `region` (x0, x1, y0, y1, fractions
        of the picture) in one direction and fit it in the other, centred."""
        p = self.plotter
        cam = p.camera
        corners = np.array([[x, y, z, 1.0] for x in box[:2] for y in box[2:4] for z in box[4:]])
        aspect = self.size[0] / self.size[1]
        target = np.array([(region[0] + region[1]) / 2, (region[2] + region[3]) / 2])
        for _ in range(6):
            matrix = pv.array_from_vtkmatrix(cam.GetCompositeProjectionTransformMatrix(aspect, -1, 1))
            projected = corners @ matrix.T
            screen = (projected[:, :2] / projected[:, 3:4] + 1.0) / 2.0          # 0 to 1 across the picture
            low, high = screen.min(axis=0), screen.max(axis=0)
            shift = target - (low + high) / 2                                    # move the picture by this
            focal, position = np.asarray(cam.focal_point), np.asarray(cam.position)
            forward = (focal - position) / np.linalg.norm(focal - position)
            right = np.cross(forward, np.asarray(cam.up))
            right /= np.linalg.norm(right)
            up = np.cross(right, forward)
            half_height = np.linalg.norm(focal - position) * math.tan(math.radians(cam.view_angle) / 2)
            move = -(2 * shift[0] * half_height * aspect) * right - (2 * shift[1] * half_height) * up
            cam.focal_point, cam.position = tuple(focal + move), tuple(position + move)
            cam.zoom(float(min((region[1] - region[0]) / (high[0] - low[0]),
                               (region[3] - region[2]) / (high[1] - low[1]))))
        p.renderer.ResetCameraClippingRange()

    def _elevation_axes(self, box, exaggeration):
        """x, y and elevation on the box's outer edges, the elevation in true metres."""
        ranges = list(box[:4]) + [box[4] / exaggeration, box[5] / exaggeration]
        labels = self._axes_labels(ranges)
        labels["n_zlabels"] = min(labels["n_zlabels"], 3)     # a low axis: few labels
        actor = self.plotter.show_bounds(
            bounds=list(box), axes_ranges=ranges, xtitle="x (m)", ytitle="y (m)", ztitle="z (m)", location="outer",
            ticks="outside", color="black", bold=False, fmt="{0:.4g}", font_size=self._fs(11), render=False,
            **labels)
        actor.SetScreenSize(10.0 * self._scale)
        return actor
