"""2D and 3D scenes of the viewer: images, iso-lines and iso-surfaces, slices, volumes,
schlieren, and the cameras that frame them."""
from __future__ import annotations

import numpy as np

from .fields import (SCHLIEREN_K, cells_of, centre_plane, centred, cmap_for, colour_limits, scalar_values,
                     schlieren)

# Volume rendering: the lowest 30% of the range (the ambient state, mostly) transparent, then a ramp.
_VOLUME_OPACITY = np.clip((np.linspace(0.0, 1.0, 31) - 0.3) / 0.7, 0.0, 1.0) * 0.8   # interpolated to 256


class Scenes:
    """The Viewer's drawing of 2D and 3D snapshots (a mixin: it uses the Viewer's state)."""

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
        z = centre_plane(grid, 2)
        if self.style == "schlieren":
            values, title = scalar_values(grid, self.field, 2)
            shown, shown_title = schlieren(values, cells_of(grid), grid.spacing), f"schlieren of {title}"
            cmap, clim = "gray", (0.0, 1.0)
            self.description = f"numerical schlieren exp(-{SCHLIEREN_K:g} G / Gmax), G = size of grad {title}"
        elif self.style == "iso":
            colour = self._colour_field()
            shown, shown_title = scalar_values(grid, colour, 2)
            cmap, clim = cmap_for(shown_title), colour_limits(shown, shown_title)
        else:
            shown, shown_title = scalar_values(grid, self.field, 2)
            cmap, clim = cmap_for(shown_title), colour_limits(shown, shown_title)
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
            lines = centred(grid, {title: values}).contour([level], scalars=title)
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
            clim = colour_limits(colour_values, colour_title)
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
        elif self.style == "slice":
            g = grid.copy(deep=False)
            g.cell_data.clear()
            g.cell_data[title] = values
            xc, yc, zc = (centre_plane(grid, a) for a in range(3))
            slices = g.slice_orthogonal(x=xc, y=yc, z=zc).combine()
            # cut away the quarter of each slice in the octant that faces the camera (+x, -y, +z)
            eps = 1e-6 * max(grid.spacing)
            x0, x1, y0, y1, z0, z1 = grid.bounds
            slices = slices.clip_box((xc - eps, x1 + 1, y0 - 1, yc + eps, zc - eps, z1 + 1), invert=True)
            p.add_mesh(slices, scalars=title, cmap=cmap_for(title), clim=colour_limits(values, title),
                       name="slices", ambient=0.35, diffuse=0.75, scalar_bar_args=self._bar(title))
            self.description = (f"{title} on three orthogonal slices through the centre, "
                                f"the octant in front cut away")
        elif self.style == "volume":
            vol = centred(grid, {title: values})
            p.add_volume(vol, scalars=title, cmap=cmap_for(title), clim=colour_limits(values, title),
                         opacity=_VOLUME_OPACITY, name="volume", scalar_bar_args=self._bar(title))
            self.description = f"{title}, volume rendering (low values transparent)"
        else:  # schlieren on the central z slice, seen from above
            g = grid.copy(deep=False)
            g.cell_data.clear()
            name = f"schlieren of {title}"
            g.cell_data[name] = schlieren(values, cells_of(grid), grid.spacing)
            z = centre_plane(grid, 2)
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

