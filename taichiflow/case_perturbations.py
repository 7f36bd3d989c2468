"""Checks of [[initial.perturbations]] that go beyond one key's type: rules between keys
(turbulence, linear waves), a formula's expression, a raster's file and extent.

case.py's schema calls these as the `post` checks of the perturbation tables, with the
table's checked keys and its location `at` (whose `error` names the file and the key). They
need nothing from case.py, which imports them, so they live apart and keep it short.
numpy and stdlib only: no taichi.
"""
from __future__ import annotations

import math
from pathlib import Path

from .formula import FormulaError, parse_formula
from .rasters import RasterError, find_raster, read_raster
from .toml_text import show

__all__ = ["Extent", "check_formula", "check_raster", "check_turbulence", "check_wave_vector"]

AXES = ("x", "y", "z")


def check_turbulence(p, at):
    """n_min <= n_max, and on a 1D grid a field that is not purely solenoidal (there is none)."""
    if p["n_max"] < p["n_min"]:
        raise (at / "n_max").error(f"must be >= n_min, got n_max = {p['n_max']} < n_min = {p['n_min']}")
    if at.ctx.dim == 1 and p["solenoidal_fraction"] == 1.0:
        raise (at / "solenoidal_fraction").error("1 leaves no velocity on a 1D grid (a field along x alone is "
                                                 "compressive); choose a value below 1")


def check_wave_vector(p, at):
    """A linear wave's k lies along the grid's axes (the eigenvector is taken along k) and is nonzero."""
    dim = at.ctx.dim
    k = p["wavenumber"]
    if not any(k[:dim]) or any(k[dim:]):
        axes = ", ".join(AXES[:dim])
        raise (at / "wavenumber").error(f"must be nonzero along the grid's axes ({axes}) and zero along the "
                                        f"others, got {show(k)}")


def check_formula(p, at):
    """The expression parses into the whitelisted tree (formula.py): a bad one fails when the
    case loads, not when a kernel compiles."""
    try:
        parse_formula(p["expression"])
    except FormulaError as err:
        raise (at / "expression").error(str(err)) from None


def check_raster(p, at):
    """The raster file exists (relative to the case file's folder, then the current folder)
    and holds finite values of the grid's dimension over an increasing extent. The resolved
    case keeps the file's absolute path, so the case.toml a run saves finds it from anywhere."""
    case_dir = Path(at.ctx.file).resolve().parent
    try:
        path = find_raster(p["file"], case_dir)
        read_raster(path, p.get("extent"), at.ctx.dim)
    except RasterError as err:
        raise (at / err.key).error(err.message) from None
    p["file"] = str(path)


class Extent:
    """A raster's extent as the case gives it: [x_min, x_max] on a 1D grid, [x_min, x_max,
    y_min, y_max] on 2D and 3D grids (a Spec of case.py: `check` returns the value normalised
    or raises at.error). Whether each axis increases is read_raster's check."""

    @staticmethod
    def expected(dim: int) -> str:
        return "[x_min, x_max]" if dim == 1 else "[x_min, x_max, y_min, y_max]"

    def check(self, value, at):
        count = 2 if at.ctx.dim == 1 else 4
        if not (isinstance(value, list) and len(value) == count and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)):
            raise at.error(f"expected {self.expected(at.ctx.dim)} ({count} numbers), got {show(value)}")
        return [float(v) for v in value]
