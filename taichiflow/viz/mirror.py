"""Mirror images of snapshots across a case's symmetry faces: a run of a half, quarter or octant
of a symmetric problem is shown whole, as the flow it stands for."""
from __future__ import annotations

import numpy as np

from .env import pv
from .fields import cells_of

SYMMETRY = "symmetry"   # the boundary kind that declares a symmetry plane (registry.py)


def symmetry_faces(case: dict) -> list:
    """(axis, side) of each symmetry face the case declares, one per axis (the lower face where
    both are: mirroring across the second would only repeat the first image)."""
    boundary = case.get("boundary", {})
    ndim = len(case.get("grid", {}).get("cells", (0, 0, 0)))
    faces = []
    for axis in range(min(ndim, 3)):
        kinds = boundary.get("xyz"[axis], ())
        kinds = [kinds, kinds] if isinstance(kinds, str) else list(kinds)
        sides = [side for side, kind in enumerate(kinds[:2]) if kind == SYMMETRY]
        if sides:
            faces.append((axis, sides[0]))
    return faces


def plane_of(grid, axis: int, side: int) -> float:
    """Coordinate of the face (axis, side) of `grid`."""
    return float(grid.origin[axis] + (side * cells_of(grid)[axis]) * grid.spacing[axis])


def mirrored(grid, axis: int, side: int):
    """`grid` doubled across its face (axis, side): every cell array flipped into the new half,
    where vector arrays (a velocity) have their `axis` component negated, as a wall's ghost
    cells have; field data (time, dimension) kept."""
    cells = cells_of(grid)
    doubled = [2 * n if d == axis else n for d, n in enumerate(cells)]
    origin = list(grid.origin)
    if side == 0:
        origin[axis] -= cells[axis] * grid.spacing[axis]
    out = pv.ImageData(dimensions=[n + 1 for n in doubled], spacing=grid.spacing, origin=origin)
    for name in grid.cell_data.keys():
        out.cell_data[name] = mirrored_array(np.asarray(grid.cell_data[name]), cells, axis, side)
    for name in grid.field_data.keys():
        out.field_data[name] = grid.field_data[name]
    return out


def mirrored_array(values, cells, axis: int, side: int) -> np.ndarray:
    """Cell values in VTK order (x fastest; vectors one row per cell) with their mirror image
    appended on `side` of `axis`."""
    block = values.reshape(tuple(cells[::-1]) + values.shape[1:])      # (nz, ny, nx[, m])
    along = 2 - axis
    image = np.flip(block, axis=along).copy()
    if values.ndim == 2 and values.shape[1] > axis:
        image[..., axis] = -image[..., axis]
    halves = (image, block) if side == 0 else (block, image)
    return np.concatenate(halves, axis=along).reshape((-1,) + values.shape[1:])


def mirrored_across(grid, faces):
    """`grid` mirrored across each of `faces` in turn (a quarter becomes the whole)."""
    for axis, side in faces:
        grid = mirrored(grid, axis, side)
    return grid
