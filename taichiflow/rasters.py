"""Rasters in case files (`kind = "raster"` perturbations): gridded data such as a terrain's
height, read from a .npy or .npz file and sampled at the cells' points.

A raster holds values at the nodes of a regular grid spanning its extent: node [i, j] lies at
x_min + i (x_max - x_min) / (nx - 1), y_min + j (y_max - y_min) / (ny - 1) (array index
[i, j] = [x, y], as the solver's own arrays). A point takes the bilinear interpolation of the
four nodes around it (linear between two nodes on a 1D grid), with its coordinates first
clamped to the extent: outside the raster a point takes the value at the nearest point of its
edge, so a raster a little smaller than the grid still covers it.

The host's numpy sampling is here; kernels/initial.py repeats it operation for operation on
the device, with the constants of `axis_constants`, so the two agree to rounding.
numpy and stdlib only: no taichi.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["Raster", "RasterError", "axis_constants", "find_raster", "read_raster", "sample"]

SUFFIXES = (".npy", ".npz")


class RasterError(ValueError):
    """A raster that cannot be used; `key` is the case key at fault (file or extent)."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


class Raster(NamedTuple):
    """Values at the nodes (float64, 1D or 2D, at least 2 nodes along each axis) and the
    extent they span: (x_min, x_max) or (x_min, x_max, y_min, y_max)."""
    values: np.ndarray
    extent: tuple


class AxisConstants(NamedTuple):
    """What sampling along one axis needs: the extent's ends, nodes per unit length
    (n - 1) / (hi - lo), and the number of nodes."""
    lo: float
    hi: float
    scale: float
    nodes: int


def find_raster(file: str, case_dir=None) -> Path:
    """The raster file's absolute path: as given if absolute, else relative to the case
    file's folder and, if not there, to the current folder (as a model path is found, so a
    path given with --set still works)."""
    path = Path(file)
    if path.suffix not in SUFFIXES:
        raise RasterError("file", f"expected a .npy or .npz file, got {file!r}")
    if path.is_absolute():
        places = {"": path}
    else:
        places = {f"the case file's folder ({case_dir})": Path(case_dir) / path} if case_dir is not None else {}
        if case_dir is None or Path(case_dir).resolve() != Path.cwd().resolve():
            places[f"the current folder ({Path.cwd()})"] = Path.cwd() / path
    for candidate in places.values():
        if candidate.is_file():
            return candidate.resolve()
    looked = " or ".join(name for name in places if name)
    raise RasterError("file", f"no file {file!r}" + (f" in {looked}" if looked else ""))


def read_raster(path, extent=None, dim: int = 2) -> Raster:
    """The raster of a .npy file (`extent` required) or of an .npz file holding arrays
    `values` and, unless `extent` is given (which wins), `extent`. A 1D grid reads a 1D
    array, 2D and 3D grids a 2D one (sampled at (x, y), the same at every z)."""
    path = Path(path)
    values, stored = _load(path)
    ndim = 1 if dim == 1 else 2
    values = _checked_values(values, ndim, path.name, dim)
    if extent is None and stored is None:
        raise RasterError("extent", f"missing: {path.name} holds no extent (an .npz file may hold it as an array "
                                    f"'extent'), so the case must give [x_min, x_max{', y_min, y_max' * (ndim == 2)}]")
    where = ("extent", "") if extent is not None else ("file", f"the 'extent' array in {path.name}: ")
    return Raster(values, _checked_extent(extent if extent is not None else stored, ndim, *where))


def _load(path: Path):
    """(values, extent or None) as stored in the file, unchecked; no pickles."""
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False), None
        with np.load(path, allow_pickle=False) as data:
            if "values" not in data.files:
                held = ", ".join(data.files) or "none"
                raise RasterError("file", f"{path.name} holds no array 'values' (it has {held})")
            return data["values"], data["extent"] if "extent" in data.files else None
    except RasterError:
        raise
    except (OSError, ValueError, EOFError) as err:  # (not a numpy file, a pickle, truncated)
        raise RasterError("file", f"cannot read {path}: {err}") from None


def _checked_values(values, ndim: int, name: str, dim: int) -> np.ndarray:
    """The values as float64, refused unless real numbers of the right dimension, at least two
    nodes along each axis, every one finite."""
    values = np.asarray(values)
    needs = f"a {dim}D grid needs a {ndim}D array of values at the raster's nodes, at least 2 along each axis"
    if values.ndim != ndim or min(values.shape, default=0) < 2:
        raise RasterError("file", f"{name} holds an array of shape {values.shape}; {needs}")
    if values.dtype.kind not in "iuf":
        raise RasterError("file", f"{name} holds {values.dtype} values; expected real numbers")
    values = values.astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        count = f"{int(bad.sum())} values that are" if bad.sum() > 1 else "a value that is"
        raise RasterError("file", f"{name} has {count} NaN or infinite, the first at index "
                                  f"{first if ndim > 1 else first[0]}")
    return np.ascontiguousarray(values)


def _checked_extent(extent, ndim: int, key: str, prefix: str) -> tuple:
    """(x_min, x_max[, y_min, y_max]) as floats, each axis increasing."""
    names = ["x_min", "x_max", "y_min", "y_max"][:2 * ndim]
    flat = np.asarray(extent).ravel() if not isinstance(extent, (list, tuple)) else extent
    if len(flat) != 2 * ndim or not all(_is_finite_number(v) for v in flat):
        raise RasterError(key, f"{prefix}expected [{', '.join(names)}] ({2 * ndim} finite numbers), "
                               f"got {list(np.asarray(flat).tolist())}")
    flat = tuple(float(v) for v in flat)
    for axis in range(ndim):
        lo, hi = flat[2 * axis], flat[2 * axis + 1]
        if not lo < hi:
            label = "xy"[axis]
            raise RasterError(key, f"{prefix}must increase along each axis, got {label}_min = {lo!r} "
                                   f">= {label}_max = {hi!r}")
    return flat


def _is_finite_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(float(value))


def axis_constants(raster: Raster) -> list:
    """An AxisConstants per axis of the raster: the host and the device sample with the same
    numbers, so they agree to rounding."""
    return [AxisConstants(raster.extent[2 * d], raster.extent[2 * d + 1],
                          (n - 1) / (raster.extent[2 * d + 1] - raster.extent[2 * d]), n)
            for d, n in enumerate(raster.values.shape)]


def _node_and_fraction(coordinate, axis: AxisConstants):
    """(i, t): the node below the clamped coordinate (at most the last but one, so that node
    i + 1 exists) and how far the point lies towards node i + 1, 0 <= t <= 1."""
    s = (np.minimum(np.maximum(coordinate, axis.lo), axis.hi) - axis.lo) * axis.scale
    i = np.minimum(np.floor(s), axis.nodes - 2).astype(np.int64)
    return i, s - i


def sample(raster: Raster, x, y=None) -> np.ndarray:
    """The raster at points (x, y) (x alone for a 1D raster): bilinear (linear) interpolation
    of the nodes around each point, coordinates clamped to the extent."""
    axes = axis_constants(raster)
    v = raster.values
    i, t = _node_and_fraction(np.asarray(x, dtype=np.float64), axes[0])
    if v.ndim == 1:
        return (1.0 - t) * v[i] + t * v[i + 1]
    j, u = _node_and_fraction(np.asarray(y, dtype=np.float64), axes[1])
    return (1.0 - t) * ((1.0 - u) * v[i, j] + u * v[i, j + 1]) + t * ((1.0 - u) * v[i + 1, j] + u * v[i + 1, j + 1])
