"""Initial regions that cover no cell: a warning, not a silent no-op.

A sphere of radius 1e-6 on a coarse grid, or a box outside the domain, leaves the initial state
as if it were not there, and nothing said so. A sharp region (no smoothing) takes part in the
fill only through the points the fill samples: the cell centres (point values) or the
Gauss-Legendre points of each cell (averages). Those points are evaluated here, in numpy, over
the cells the region's bounding box meets; a region with smoothing weighs every cell a little
and is never reported, nor a region whose box holds too many points to look at cheaply (a
region that large covers cells anyway), nor the regions of an adaptive case (finer levels).
"""
from __future__ import annotations

import math

import numpy as np

MAX_POINTS = 2_000_000  # sample points a region's check may evaluate


def regions_covering_no_cell(case: dict) -> list[str]:
    """A warning per sharp [initial] region that no sample point of the fill lies in."""
    if case.get("amr"):
        return []
    initial, grid = case["initial"], case["grid"]
    nodes = _sample_nodes(case)
    return [f"[initial] regions.{n} (shape = '{region['shape']}') covers no cell: none of the points the initial "
            f"fill samples ({'cell centres' if len(nodes) == 1 else f'{len(nodes)} per axis in each cell'}) lies "
            f"inside it, so it has no effect on this grid"
            for n, region in enumerate(initial.get("regions", ()))
            if not region.get("smoothing", 0.0) and _misses_every_point(region, grid, nodes)]


def _sample_nodes(case: dict) -> np.ndarray:
    """The fill's points per axis in a cell, on [-1, 1] (kernels/initial.py)."""
    values = case["initial"].get("values", "auto")
    if values == "auto":
        values = "point" if case["scheme"].get("method") == "finite_difference" else "average"
    if values == "point":
        return np.zeros(1)
    return np.polynomial.legendre.leggauss(int(case["initial"].get("quadrature_points", 4)))[0]


def _misses_every_point(region: dict, grid: dict, nodes: np.ndarray) -> bool:
    from .initial import region_distance  # (initial.py imports case.py, which imports this module)

    cells, lower, upper = grid["cells"], grid["lower"], grid["upper"]
    dim = len(cells)
    dx = [(upper[d] - lower[d]) / cells[d] for d in range(dim)]
    low, high = _bounds(region, lower, upper, dim)
    spans = [(max(0, math.floor((low[d] - lower[d]) / dx[d])), min(cells[d], math.ceil((high[d] - lower[d]) / dx[d])))
             for d in range(dim)]
    if any(i1 <= i0 for i0, i1 in spans):
        return True  # (its box lies outside the grid)
    if np.prod([i1 - i0 for i0, i1 in spans]) * len(nodes) ** dim > MAX_POINTS:
        return False
    axes = [(lower[d] + (np.arange(i0, i1)[:, None] + 0.5 + 0.5 * nodes[None, :]) * dx[d]).ravel()
            for d, (i0, i1) in enumerate(spans)]
    points = list(np.meshgrid(*axes, indexing="ij")) + [np.zeros(1)] * (3 - dim)
    return not np.any(region_distance(region, *points, dim=dim) < 0)


def _bounds(region: dict, lower, upper, dim: int) -> tuple:
    """A box holding the region's part of the grid."""
    if region["shape"] == "sphere":
        return ([region["center"][d] - region["radius"] for d in range(dim)],
                [region["center"][d] + region["radius"] for d in range(dim)])
    if region["shape"] == "box":
        return list(region["lower"][:dim]), list(region["upper"][:dim])
    return list(lower), list(upper)  # (half-spaces, cylinders: the grid)
