"""An adaptive run's snapshot (the leaves as one .vtu, io_vtu.py) on a uniform grid, for the
viewer's slices, iso-surfaces and charts, which work on cell data of an ImageData: a coarser
leaf's value repeated over the cells it covers, finer leaves averaged. The grid is the finest
level's, or the finest level whose grid has at most `max_cells` cells. And the outlines of its
leaf blocks (`taichiflow view --blocks`)."""
from __future__ import annotations

import numpy as np
import pyvista as pv

from ..io import NDIM_FIELD, TIME_FIELD
from ..io_vtu import ROOT_CELLS_FIELD

MAX_CELLS = 2 ** 24


def resampled(leaves: pv.UnstructuredGrid, max_cells: int = MAX_CELLS) -> pv.ImageData:
    """The leaves' cell data on the uniform grid of one level (see the module docstring), with
    their field data and a `level` array of the leaf each cell came from."""
    dim = int(leaves.field_data[NDIM_FIELD][0])
    roots = np.asarray(leaves.field_data[ROOT_CELLS_FIELD][:dim], dtype=np.int64)
    levels = np.asarray(leaves.cell_data["level"])
    target = int(levels.max())
    while target > 0 and np.prod(roots * 2 ** target) > max_cells:
        target -= 1
    bounds = np.asarray(leaves.bounds).reshape(3, 2)[:dim]
    lower, extent = bounds[:, 0], bounds[:, 1] - bounds[:, 0]
    cells = tuple(int(n) for n in roots * 2 ** target)
    centres = np.asarray(leaves.cell_centers().points)[:, :dim]
    image = pv.ImageData(dimensions=[n + 1 for n in cells] + [2] * (3 - dim),
                         spacing=list(extent / cells) + [float(extent[0] / cells[0])] * (3 - dim),
                         origin=list(lower) + [0.0] * (3 - dim))
    for name in leaves.cell_data.keys():
        if name == "block":
            continue
        values = np.asarray(leaves.cell_data[name], dtype=np.float64)
        grid = _on_level(values.reshape(len(values), -1), levels, centres, lower, extent, roots, target)
        flat = grid.transpose(*reversed(range(dim)), dim).reshape(int(np.prod(cells)), -1)  # (x fastest)
        image.cell_data[name] = flat[:, 0] if flat.shape[1] == 1 else flat
    for name in (TIME_FIELD, NDIM_FIELD, ROOT_CELLS_FIELD):
        if name in leaves.field_data:
            image.field_data[name] = leaves.field_data[name]
    return image


def _on_level(values, levels, centres, lower, extent, roots, target):
    """values (n_leaf_cells, m) on the target level's grid, an array cells + (m,)."""
    dim = len(roots)
    cells = roots * 2 ** target
    out = np.zeros(tuple(cells) + (values.shape[1],))
    counts = np.zeros(tuple(cells))
    for level in np.unique(levels):
        chosen = levels == level
        index = np.floor((centres[chosen] - lower) / extent * (roots * 2 ** level)).astype(np.int64)
        if level <= target:  # (each leaf cell covers scale^dim cells of the grid)
            scale = 2 ** (target - level)
            view = out.reshape(sum(((n // scale, scale) for n in cells), ()) + (values.shape[1],))
            where = tuple(part for d in range(dim) for part in (index[:, d], slice(None)))
            view[where] = values[chosen].reshape((-1,) + (1,) * dim + (values.shape[1],))
            counts.reshape(sum(((n // scale, scale) for n in cells), ()))[where] = 1
        else:  # (scale^dim leaf cells share one cell of the grid: their mean)
            coarse = tuple(index[:, d] >> (level - target) for d in range(dim))
            np.add.at(out, coarse, values[chosen])
            np.add.at(counts, coarse, 1)
    return out / np.maximum(counts, 1)[..., None]


def block_outlines(leaves: pv.UnstructuredGrid, z: float | None = None) -> pv.PolyData:
    """The outline of every leaf block as line segments with each block's `level`: the
    rectangles of a 2D run (at z = 0), or where a 3D run's blocks cross the plane z (its
    rectangles there; a plane on a block face takes the blocks above it)."""
    dim = int(leaves.field_data[NDIM_FIELD][0])
    corners = 2 ** dim
    points = np.asarray(leaves.points)[np.asarray(leaves.cell_connectivity).reshape(-1, corners)]
    block = np.asarray(leaves.cell_data["block"])
    order = np.argsort(block, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(block[order]) != 0])
    lower = np.minimum.reduceat(points.min(axis=1)[order], starts)
    upper = np.maximum.reduceat(points.max(axis=1)[order], starts)
    level = np.asarray(leaves.cell_data["level"])[order][starts]
    if dim == 3:
        if z is None:
            raise ValueError("the block outlines of a 3D snapshot are drawn on a plane z: give one")
        crossing = (lower[:, 2] <= z) & (z < upper[:, 2])
        lower, upper, level = lower[crossing], upper[crossing], level[crossing]
    height = 0.0 if dim < 3 else z
    x0, y0, x1, y1 = lower[:, 0], lower[:, 1], upper[:, 0], upper[:, 1]
    if dim == 1:
        y0, y1 = np.zeros_like(x0), np.zeros_like(x0)
    rectangle = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                          np.stack([x0, y1], 1)], axis=1)               # (blocks, 4 corners, 2)
    xyz = np.zeros((len(x0) * 4, 3))
    xyz[:, :2] = rectangle.reshape(-1, 2)
    xyz[:, 2] = height
    first = np.arange(len(x0))[:, None] * 4
    ends = np.stack([first + np.arange(4), first + (np.arange(4) + 1) % 4], axis=-1).reshape(-1, 2)
    lines = np.hstack([np.full((len(ends), 1), 2), ends]).ravel()
    outlines = pv.PolyData(xyz, lines=lines)
    outlines.cell_data["level"] = np.repeat(level, 4)
    return outlines
