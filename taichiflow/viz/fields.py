"""The fields a picture shows: scalar values of cell arrays (vector magnitudes, components),
numerical schlieren, colour maps and ranges, cell-centred copies for contours and volumes."""
from __future__ import annotations

import numpy as np

from .env import pv

SCHLIEREN_K = 15.0            # exponent factor of the schlieren mapping
_CMAPS = {"rho": "viridis", "p": "plasma", "E": "plasma", "e": "plasma", "T": "inferno",
          "alpha": "cividis"}
LINES_CMAP = "inferno"        # streamlines, over a field in its own map (viridis for rho)


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



def vector_names(grid) -> list:
    """The cell arrays of `grid` with three components (velocity, magnetic field, ...)."""
    return [n for n in grid.cell_data.keys()
            if np.asarray(grid.cell_data[n]).ndim == 2 and np.asarray(grid.cell_data[n]).shape[1] == 3]


def seed_points(bounds, count: int) -> np.ndarray:
    """`count` points spread evenly through the box `bounds` (x0, x1, y0, y1, z0, z1): the Halton
    sequence in bases 2, 3 and 5, the same points every time, with no lattice planes for lines
    to bunch on."""
    unit = np.array([[_radical_inverse(i, base) for base in (2, 3, 5)] for i in range(1, count + 1)])
    lower, upper = np.asarray(bounds[0::2], dtype=float), np.asarray(bounds[1::2], dtype=float)
    return lower + unit.reshape(-1, 3) * (upper - lower)


def _radical_inverse(i: int, base: int) -> float:
    """The digits of i in `base` mirrored about the point: 1 -> 0.5, 2 -> 0.25, 3 -> 0.75 in base 2."""
    value, scale = 0.0, 1.0
    while i > 0:
        scale /= base
        value += scale * (i % base)
        i //= base
    return value


def streamlines(grid, name: str, count: int):
    """Lines of the vector cell array `name` through `count` seed points (seed_points) in the box
    of the cell centres, followed both ways (Runge-Kutta 4-5 on the vectors at the cell centres,
    linearly interpolated) until they leave it or reach 4 box diagonals. A PolyData of lines
    carrying the vectors and their size as "<name> magnitude"."""
    vectors = np.asarray(grid.cell_data[name], dtype=float)
    field = centred(grid, {name: vectors})
    seeds = pv.PolyData(seed_points(field.bounds, count))
    diagonal = float(np.linalg.norm(np.subtract(field.bounds[1::2], field.bounds[0::2])))
    lines = field.streamlines_from_source(seeds, vectors=name, integration_direction="both",
                                          max_length=4.0 * diagonal, max_steps=4000,
                                          compute_vorticity=False)
    lines.point_data[f"{name} magnitude"] = np.linalg.norm(np.asarray(lines.point_data[name]), axis=1)
    return lines
