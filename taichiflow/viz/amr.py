"""An adaptive run's snapshot (the leaves as one .vtu, io_vtu.py) on a uniform grid, for the
viewer's slices, iso-surfaces and charts, which work on cell data of an ImageData: a coarser
leaf's value repeated over the cells it covers, finer leaves averaged. The grid is the finest
level's, or the finest level whose grid has at most `max_cells` cells."""
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
