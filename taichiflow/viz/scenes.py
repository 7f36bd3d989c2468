"""2D and 3D scenes of the viewer: images, iso-lines and iso-surfaces, slices, volumes,
schlieren, streamlines, their coordinate axes, and the cameras that frame them."""
from __future__ import annotations

import numpy as np

from .fields import (LINES_CMAP, SCHLIEREN_K, cells_of, centre_plane, centred, cmap_for, scalar_values,
                     schlieren, streamlines)

# Volume rendering: the lowest 30% of the range (the ambient state, mostly) transparent, then a ramp.
_VOLUME_OPACITY = np.clip((np.linspace(0.0, 1.0, 31) - 0.3) / 0.7, 0.0, 1.0) * 0.8   # interpolated to 256
# Under streamlines only the upper half of the range shows, so that the lines show through it.
_STREAMLINES_OPACITY = np.clip((np.linspace(0.0, 1.0, 31) - 0.5) / 0.5, 0.0, 1.0) * 0.8
_SURFACE_GREY = "#9a9a9a"
_TITLE_SPACE = 0.14          # of the height, at the top: the time and the description
# the strips (in pixels at 1024 x 768, scaled with the fonts) that the axes' labels take
_LEFT_LABELS, _BELOW_LABELS, _RIGHT_SPACE = 78, 58, 24


class Scenes:
    """The Viewer's drawing of 2D and 3D snapshots (a mixin: it uses the Viewer's state)."""

    # --- cameras ---------------------------------------------------------------------------
    def _flat_camera(self, bounds):
        """Look down z at the x-y rectangle `bounds`, filling the box left free by the title at
        the top, the scalar bar at the bottom and the axes' labels left of and below it."""
        p = self.plotter
        w, h = self.size
        x0, x1, y0, y1 = bounds[:4]
        bar = self._bar("")
        box_left = self._px(_LEFT_LABELS) + (0.16 * w if self._widgets else 0.0)
        box_bottom = (bar["position_y"] + bar["height"]) * h + self._px(_BELOW_LABELS)
        box_w = w - box_left - self._px(_RIGHT_SPACE)
        box_h = h * (1.0 - _TITLE_SPACE) - box_bottom
        per_unit = min(box_w / (x1 - x0), box_h / (y1 - y0))        # pixels per length unit
        # the window's centre in the plane: the box's centre is the domain's centre
        cx = (x0 + x1) / 2 - (box_left + box_w / 2 - w / 2) / per_unit
        cy = (y0 + y1) / 2 - (box_bottom + box_h / 2 - h / 2) / per_unit
        p.view_xy()
        p.enable_parallel_projection()
        cam = p.camera
        cam.focal_point = (cx, cy, 0.0)
        cam.position = (cx, cy, 10.0 * max(x1 - x0, y1 - y0))
        cam.up = (0.0, 1.0, 0.0)
        cam.parallel_scale = h / (2 * per_unit)
        p.renderer.ResetCameraClippingRange()
        self._camera = "flat"

    def _px(self, pixels) -> float:
        """`pixels` at 1024 x 768, scaled as the fonts are."""
        return pixels * self._scale

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
        # room for the bounds box's labels, and in the window for the widgets below
        p.camera.zoom(0.72 if self._widgets else 0.85)
        # lift the picture a little: the title is above it, the scalar bar below
        shift = np.array([0.0, 0.0, (0.16 if self._widgets else 0.07) * (grid.bounds[5] - grid.bounds[4])])
        p.camera.focal_point = tuple(np.asarray(p.camera.focal_point) - shift)
        p.camera.position = tuple(np.asarray(p.camera.position) - shift)
        self._camera = "3d"

    # --- 2D ---------------------------------------------------------------------------------
    def _draw_2d(self, grid):
        if self.style == "terrain":
            return self._draw_terrain(grid)
        if self.style == "surface3d":
            return self._draw_surface3d(grid)
        p = self.plotter
        self._hide_marker()          # shown by surface3d
        self._smooth_edges(False)    # on in the terrain styles
        z = centre_plane(grid, 2)
        if self.style == "schlieren":
            values, title = scalar_values(grid, self.field, 2)
            shown, shown_title = schlieren(values, cells_of(grid), grid.spacing), f"schlieren of {title}"
            cmap, clim = "gray", self._grey_limits()
            self.description = f"numerical schlieren exp(-{SCHLIEREN_K:g} G / Gmax), G = size of grad {title}"
        else:
            name = self._colour_field() if self.style == "iso" else self.field
            shown, shown_title = scalar_values(grid, name, 2)
            cmap, clim = cmap_for(shown_title), self._limits(shown, name, shown_title)
            self.description = f"{shown_title}: min {np.min(shown):.4g}, max {np.max(shown):.4g}"
        g = grid.copy(deep=False)
        g.cell_data.clear()
        g.cell_data[shown_title] = shown
        image = g.slice(normal="z", origin=(grid.center[0], grid.center[1], z))
        p.add_mesh(image, scalars=shown_title, cmap=cmap, clim=clim, name="image",
                   scalar_bar_args=self._bar(shown_title), lighting=False)
        if self.style == "iso":
            self._iso_line(grid, z, shown_title)
        if self._camera != "flat":
            self._flat_camera(grid.bounds)
        self._flat_axes(grid.bounds, z)

    def _iso_line(self, grid, z, shown_title):
        values, title = scalar_values(grid, self.field, 2)
        level = self._iso_level(values)
        lines = centred(grid, {title: values}).contour([level], scalars=title)
        if lines.n_points:
            lines.points[:, 2] = z + 0.01 * grid.spacing[0]
            self.plotter.add_mesh(lines, color="white", line_width=3, name="iso", lighting=False)
        self.description = f"{shown_title}, with the {title} = {level:.3g} iso-line (white)"

    def _iso_level(self, values):
        if self.iso is not None:
            return float(self.iso)
        if self.field == "alpha":
            return 0.5
        lo, hi = float(np.min(values)), float(np.max(values))
        return 0.5 * (lo + hi)

    # --- 3D ---------------------------------------------------------------------------------
    def _draw_3d(self, grid):
        self._orientation_marker()
        if self.style == "schlieren":
            self._draw_schlieren_slice(grid)
            return
        self.plotter.add_mesh(grid.outline(), color="gray", line_width=2, name="outline", lighting=False)
        {"iso": self._draw_iso_surface, "slice": self._draw_slices, "volume": self._draw_volume,
         "streamlines": self._draw_streamlines}[self.style](grid)
        if self._camera != "3d":
            self._space_camera(grid)
        self._box_axes(grid.bounds)

    def _draw_iso_surface(self, grid):
        p = self.plotter
        values, title = scalar_values(grid, self.field, 3)
        colour = self._colour_field()
        colour_values, colour_title = scalar_values(grid, colour, 3)
        level = self._iso_level(values)
        arrays = {title: values}
        if colour_title != title:
            arrays[colour_title] = colour_values
        clim = self._limits(colour_values, colour, colour_title)
        cmap = cmap_for(colour_title)
        surface = centred(grid, arrays).contour([level], scalars=title)
        # the colour field on a y plane through the iso-surface's centre (else the domain's):
        # the surface's front half stands out of it, e.g. a bubble over its pressure slice
        y = float(np.mean(surface.points[:, 1])) if surface.n_points else grid.center[1]
        k = int(np.clip((y - grid.origin[1]) // grid.spacing[1], 0, cells_of(grid)[1] - 1))
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

    def _draw_slices(self, grid):
        values, title = scalar_values(grid, self.field, 3)
        g = grid.copy(deep=False)
        g.cell_data.clear()
        g.cell_data[title] = values
        xc, yc, zc = (centre_plane(grid, a) for a in range(3))
        slices = g.slice_orthogonal(x=xc, y=yc, z=zc).combine()
        # cut away the quarter of each slice in the octant that faces the camera (+x, -y, +z)
        eps = 1e-6 * max(grid.spacing)
        x0, x1, y0, y1, z0, z1 = grid.bounds
        slices = slices.clip_box((xc - eps, x1 + 1, y0 - 1, yc + eps, zc - eps, z1 + 1), invert=True)
        self.plotter.add_mesh(slices, scalars=title, cmap=cmap_for(title), clim=self._limits(values, self.field, title),
                              name="slices", ambient=0.35, diffuse=0.75, scalar_bar_args=self._bar(title))
        self.description = f"{title} on three orthogonal slices through the centre, the octant in front cut away"

    def _draw_volume(self, grid):
        values, title = scalar_values(grid, self.field, 3)
        vol = centred(grid, {title: values})
        self.plotter.add_volume(vol, scalars=title, cmap=cmap_for(title), clim=self._limits(values, self.field, title),
                                opacity=_VOLUME_OPACITY, name="volume", scalar_bar_args=self._bar(title))
        self.description = f"{title}, volume rendering (low values transparent)"

    def _draw_streamlines(self, grid):
        """The field as a volume rendering (or, with `iso`, a translucent iso-surface)
        and the lines of the vector array `self.vectors` through `self.seeds` points, coloured
        by the vector's size: magnetic field lines through the density, say."""
        p = self.plotter
        values, title = scalar_values(grid, self.field, 3)
        volume = self.iso is None       # then two scalar bars, side by side
        if volume:
            p.add_volume(centred(grid, {title: values}), scalars=title, cmap=cmap_for(title),
                         clim=self._limits(values, self.field, title), opacity=_STREAMLINES_OPACITY,
                         name="volume", scalar_bar_args=self._bar(title, slot=0))
            what = f"{title} volume rendering (its upper half)"
        else:
            surface = centred(grid, {title: values}).contour([float(self.iso)], scalars=title)
            what = f"{title} = {float(self.iso):.3g} iso-surface (grey)"
            if surface.n_points:
                p.add_mesh(surface.compute_normals(split_vertices=False), color=_SURFACE_GREY, opacity=0.35,
                           smooth_shading=True, name="iso")
            else:
                what = f"no {what} at this time"
        magnitude, magnitude_title = scalar_values(grid, self.vectors, 3)
        lines = streamlines(grid, self.vectors, self.seeds)
        if lines.n_points:
            p.add_mesh(lines, scalars=magnitude_title, cmap=LINES_CMAP,
                       clim=self._limits(magnitude, self.vectors, magnitude_title), name="lines",
                       line_width=max(1.0, 2.5 * self._scale), render_lines_as_tubes=True,
                       scalar_bar_args=self._bar(magnitude_title, slot=1 if volume else None))
        self.description = (f"{what}; lines of {self.vectors} from {self.seeds} seeds, "
                            f"coloured by {magnitude_title}")

    def _draw_schlieren_slice(self, grid):
        """Numerical schlieren on the central z slice, seen from above."""
        values, title = scalar_values(grid, self.field, 3)
        g = grid.copy(deep=False)
        g.cell_data.clear()
        name = f"schlieren of {title}"
        g.cell_data[name] = schlieren(values, cells_of(grid), grid.spacing)
        z = centre_plane(grid, 2)
        image = g.slice(normal="z", origin=(grid.center[0], grid.center[1], z))
        self.plotter.add_mesh(image, scalars=name, cmap="gray", clim=self._grey_limits(), name="schlieren",
                              lighting=False, scalar_bar_args=self._bar(name))
        self.description = (f"numerical schlieren exp(-{SCHLIEREN_K:g} G / Gmax), G = size of grad {title}, "
                            f"on z = {z:.3g}")
        if self._camera != "flat":
            self._flat_camera(grid.bounds)
        self._flat_axes(grid.bounds, z)
