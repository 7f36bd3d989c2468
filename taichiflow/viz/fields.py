"""The fields a picture shows: scalar values of cell arrays (vector magnitudes, components),
numerical schlieren, colour maps and ranges, cell-centred copies for contours and volumes."""
from __future__ import annotations

import numpy as np

from .env import pv

SCHLIEREN_K = 15.0            # exponent factor of the schlieren mapping
_CMAPS = {"rho": "viridis", "p": "plasma", "E": "plasma", "e": "plasma", "T": "inferno",
          "alpha": "cividis"}


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


def cells_of(grid):
    return tuple(max(1, n - 1) for n in grid.dimensions)


def centred(grid, arrays: dict):
    """A point grid on the cell centres carrying `arrays` (cell values) exactly, for contours
    and volumes: no averaging to the corners."""
    cells = cells_of(grid)
    spacing = np.asarray(grid.spacing, dtype=float)
    out = pv.ImageData(dimensions=cells, spacing=spacing,
                       origin=np.asarray(grid.origin, dtype=float) + 0.5 * spacing)
    for name, values in arrays.items():
        out.point_data[name] = values
    return out


def centre_plane(grid, axis) -> float:
    """Coordinate of the cell centre nearest the middle along `axis` (never on a face)."""
    n = cells_of(grid)[axis]
    return grid.origin[axis] + (n // 2 + 0.5) * grid.spacing[axis]


def value_range(values):
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    return lo, hi


def colour_limits(values, title):
    lo, hi = value_range(values)
    if cmap_for(title) == "coolwarm":   # diverging map: keep 0 in the middle
        m = max(abs(lo), abs(hi))
        lo, hi = -m, m
    return lo, hi

