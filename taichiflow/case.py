"""Case files: TOML in, a checked and default-filled plain dict out.

A case file is pure data. Everything about it is checked here, once, against the
declarative `SCHEMA` below, so a typo fails in milliseconds with a message naming the
file and the key, not minutes later inside a kernel. What depends on the model
(primitive variable names, model parameters, output fields) is checked by the caller
once the model is loaded, through `validate_state`. The scheme and boundary choices come
from registry.py when a value is checked, so a name registered at run time is accepted.
numpy and stdlib only: no taichi.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import registry
from .case_overrides import apply_override
from .case_perturbations import Extent, check_formula, check_raster, check_turbulence, check_wave_vector
from .case_rules import (AXES, SIDES, check_amr, check_boundary, check_box, check_grid, check_half_space,
                         check_scheme, unused_scheme_keys)
from .errors import CaseError, suggest
from .region_coverage import regions_covering_no_cell
from .toml_text import dump_toml, show

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["CaseError", "SCHEMA", "dump_toml", "load_case", "schema_entries", "suggest",
           "validate_state"]

# --- where an error is ------------------------------------------------------------------

@dataclass
class _Context:
    """What every check shares: the file for messages, the grid dimension once known,
    and the paths set by --set (so their errors can say so)."""
    file: str
    stem: str
    dim: int | None = None
    overrides: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Loc:
    """A key's path in the case, which formats messages as 'file: [section] a.b: ...'."""
    ctx: _Context
    path: tuple = ()

    def __truediv__(self, part):
        return _Loc(self.ctx, self.path + (part,))

    @property
    def dotted(self) -> str:
        return ".".join(map(str, self.path))

    def label(self) -> str:
        section, *rest = map(str, self.path)
        return f"[{section}] " + ".".join(rest) if rest else f"[{section}]"

    def error(self, message: str) -> CaseError:
        return CaseError(f"{self.ctx.file}: {self.label()}: {message}{self._note()}")

    def unknown(self, key: str, choices) -> CaseError:
        what = "key" if self.path else "section"
        choices = list(choices)
        hint = suggest(key, choices) or f" (valid {what}s{' here' * bool(self.path)}: {', '.join(choices)})"
        where = self / key
        return CaseError(f"{self.ctx.file}: unknown {what} '{where.dotted}'{hint}{where._note()}")

    def _note(self) -> str:
        for path, text in self.ctx.overrides.items():
            n = min(len(path), len(self.path))
            if path[:n] == self.path[:n]:
                return f" (from --set '{text}')"
        return ""


# --- value checkers ---------------------------------------------------------------------

REQUIRED = object()  # a Key default: the key must be given
OMIT = object()      # a Key default: leave the key out of the resolved case


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_list(value, lengths):
    """The floats of a list of finite numbers whose length is allowed, else None."""
    if (isinstance(value, list) and len(value) in lengths
            and all(_is_number(v) and math.isfinite(v) for v in value)):
        return [float(v) for v in value]
    return None


MAX_QUADRATURE_POINTS = 16  # nodes per axis: exact to degree 31; 1000 took 26 s for 50 cells in 1D


def _range_text(name, gt=None, ge=None, le=None) -> str:
    """'0 < cfl <= 1', 'end > 0', 'max_steps >= 0'."""
    if le is None:
        return f"{name} > {gt}" if gt is not None else f"{name} >= {ge}"
    lower = f"{gt} < " if gt is not None else f"{ge} <= " if ge is not None else ""
    return f"{lower}{name} <= {le}"


class Spec:
    """Checks one value: returns it normalised, or raises CaseError at `at`."""
    expected = "a value"

    def check(self, value, at: _Loc):
        raise NotImplementedError

    def bad(self, value, at: _Loc) -> CaseError:
        return at.error(f"expected {self.expected}, got {show(value)}")


@dataclass(frozen=True)
class Key:
    """A key of a table: its checker and default (a value, REQUIRED, OMIT, or a function
    of the context for defaults that depend on the file name or the grid dimension)."""
    spec: Spec
    default: Any = REQUIRED

    def default_for(self, ctx: _Context):
        if callable(self.default):
            return self.default(ctx)
        return self.default if self.default in (REQUIRED, OMIT) else copy.deepcopy(self.default)


class Str(Spec):
    expected = "a string"

    def __init__(self, nonempty=False):
        self.nonempty = nonempty

    def check(self, value, at):
        if not isinstance(value, str):
            raise self.bad(value, at)
        if self.nonempty and not value.strip():
            raise at.error("must not be empty")
        return value


class Choice(Spec):
    """One of a set of values (strings, or e.g. true/false): fixed, or the names of a registry
    catalogue read when a value is checked (`Choice.of`)."""

    def __init__(self, *options, catalogue=None):
        self._options = options
        self._catalogue = catalogue

    @classmethod
    def of(cls, catalogue: registry.Catalogue) -> "Choice":
        """The names registered in `catalogue` at validation time, run-time entries included."""
        return cls(catalogue=catalogue)

    @property
    def options(self) -> tuple:
        return self._catalogue.names() if self._catalogue is not None else self._options

    @property
    def expected(self) -> str:
        return "one of " + ", ".join(map(show, self.options))

    def check(self, value, at):
        if any(type(value) is type(o) and value == o for o in self.options):
            return value
        words = [o for o in self.options if isinstance(o, str)]
        hint = suggest(value, words) if isinstance(value, str) else ""
        raise at.error(f"expected {self.expected}, got {show(value)}{hint}")


class Float(Spec):
    """A finite number, optionally bounded; integers become floats."""
    expected = "a number"

    def __init__(self, gt=None, ge=None, le=None):
        self.gt, self.ge, self.le = gt, ge, le

    def check(self, value, at):
        if not _is_number(value):
            raise self.bad(value, at)
        if not math.isfinite(value):
            raise at.error(f"expected a finite number, got {show(value)}")
        value = float(value)
        if ((self.gt is not None and not value > self.gt) or (self.ge is not None and not value >= self.ge)
                or (self.le is not None and not value <= self.le)):
            allowed = _range_text(at.path[-1], self.gt, self.ge, self.le)
            raise at.error(f"out of range: allowed {allowed}, got {show(value)}")
        return value


class Int(Spec):
    expected = "an integer"

    def __init__(self, ge=None, le=None):
        self.ge, self.le = ge, le

    def check(self, value, at):
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.bad(value, at)
        if (self.ge is not None and value < self.ge) or (self.le is not None and value > self.le):
            raise at.error(f"out of range: allowed {_range_text(at.path[-1], ge=self.ge, le=self.le)}, got {value}")
        return value


class Segments(Spec):
    """Cells per thread of the flux sweeps: one integer for every axis, one per axis, or []."""
    expected = "a positive integer or a list of 1 to 3 positive integers (one per grid axis)"

    def check(self, value, at):
        values = value if isinstance(value, list) and len(value) <= 3 else [value]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in values):
            raise self.bad(value, at)
        return value


class RankGrid(Spec):
    """MPI blocks per grid axis: [] (chosen from the number of ranks) or one positive integer
    per axis (checked against the grid's dimension and the ranks when the run starts)."""
    expected = "[] or a list of 1 to 3 positive integers (blocks per grid axis)"

    def check(self, value, at):
        if not isinstance(value, list) or len(value) > 3 or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value):
            raise self.bad(value, at)
        return list(value)


class StrList(Spec):
    expected = "a list of strings"

    def check(self, value, at):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(value, at)
        return list(value)


class NumberTable(Spec):
    """name -> number, names free (model parameters are checked against the model later)."""
    expected = "a table of numbers"

    def check(self, value, at):
        if not isinstance(value, dict):
            raise self.bad(value, at)
        return {name: Float().check(v, at / name) for name, v in value.items()}


class StrTable(Spec):
    """name -> text, names free (the units a case declares for its axes and fields)."""
    expected = "a table of strings"

    def check(self, value, at):
        if not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
            raise self.bad(value, at)
        return dict(value)


class Cells(Spec):
    """The grid size. Its length is the dimension D that later keys depend on, which is
    why [grid] comes before [boundary] and [initial] in SCHEMA."""
    expected = "a list of 1 to 3 positive integers"

    def check(self, value, at):
        if not (isinstance(value, list) and 1 <= len(value) <= 3
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value)):
            raise self.bad(value, at)
        at.ctx.dim = len(value)
        return list(value)


class GridVector(Spec):
    """One number per grid axis (grid lower/upper)."""

    def check(self, value, at):
        dim = at.ctx.dim
        out = _number_list(value, {dim})
        if out is None:
            raise at.error(f"expected a list of {dim} number{'s' * (dim > 1)} (one per grid axis), "
                           f"got {show(value)}")
        return out


class ShapeVector(Spec):
    """A region's point or direction: D or 3 numbers, padded to 3 with zeros."""

    def __init__(self, nonzero=False):
        self.nonzero = nonzero

    def check(self, value, at):
        lengths = sorted({at.ctx.dim, 3})
        out = _number_list(value, lengths)
        if out is None:
            raise at.error(f"expected a list of {' or '.join(map(str, lengths))} numbers, got {show(value)}")
        out += [0.0] * (3 - len(out))
        if self.nonzero and not any(out):
            raise at.error("must not be the zero vector")
        return out


class StateTable(Spec):
    """Primitive variables: numbers, or vectors padded to 3. Names and sizes belong to the
    model, so validate_state finishes the job once the model is known."""
    expected = "a table of primitive variables, e.g. {rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0}"

    def check(self, value, at):
        if not isinstance(value, dict):
            raise self.bad(value, at)
        out = {}
        for name, v in value.items():
            if name == "material":  # a name from [materials]; expanded once the model is known
                if not isinstance(v, str):
                    raise (at / name).error(f"expected a material name (a string), got {show(v)}")
                out[name] = v
            elif name == "region":  # inflow only: the (initial) state of that region
                if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                    raise (at / name).error(f"expected a region index >= 0, got {show(v)}")
                out[name] = v
            elif _is_number(v) and math.isfinite(v):
                out[name] = float(v)
            elif (vector := _number_list(v, {1, 2, 3})) is not None:
                out[name] = vector + [0.0] * (3 - len(vector))  # a list is always a 3-vector
            else:
                raise (at / name).error(f"expected a number or a list of 1 to 3 numbers, got {show(v)}")
        return out


class Materials(Spec):
    """[materials]: name -> {gamma, pc}, stiffened-gas parameters by name."""
    expected = "a table of materials, e.g. water = {gamma = 4.4, pc = 6e8}"
    entry = None  # set below, once Table exists

    def check(self, value, at):
        if not isinstance(value, dict):
            raise self.bad(value, at)
        return {name: Materials.entry.check(v, at / name) for name, v in value.items()}


class Table(Spec):
    """A table with a fixed set of keys; `post` checks rules that involve several keys."""
    expected = "a table"

    def __init__(self, keys: dict[str, Key], post=None):
        self.keys = keys
        self.post = post

    def check(self, value, at):
        if not isinstance(value, dict):
            raise self.bad(value, at)
        for name in value:
            if name not in self.keys:
                raise at.unknown(name, self.keys)
        out = {}
        for name, key in self.keys.items():
            raw = value[name] if name in value else key.default_for(at.ctx)
            if raw is OMIT:
                continue
            if raw is REQUIRED:
                raise (at / name).error("missing required key")
            out[name] = key.spec.check(raw, at / name)
        if self.post:
            self.post(out, at)
        return out


class Faces(Spec):
    """The boundary kinds of one axis: one kind for both faces, or [lower, upper]."""
    kind = Choice.of(registry.boundary_kinds)

    def __init__(self, axis: int):
        self.axis = axis

    @property
    def expected(self) -> str:
        return f"a boundary kind or a list [lower, upper] of them ({self.kind.expected})"

    def check(self, value, at):
        dim = at.ctx.dim
        if self.axis >= dim:
            raise at.error(f"the grid is {dim}-dimensional, so it has no {AXES[self.axis]} axis")
        if isinstance(value, str):
            value = [value, value]
        if not (isinstance(value, list) and len(value) == 2):
            raise self.bad(value, at)
        faces = [self.kind.check(v, at) for v in value]
        for kind in faces:
            if registry.boundary_kinds.get(kind).both_sides and faces[0] != faces[1]:
                raise at.error(f"'{kind}' must be on both faces of an axis, got {show(faces)}")
        return faces


class Series(Spec):
    """A value imposed on a boundary face: a number, or [time, value] pairs at increasing
    times (interpolated linearly, held beyond the ends)."""
    expected = "a number or a list of [time, value] pairs at increasing times"

    def __init__(self, ge=None):
        self.ge = ge

    def check(self, value, at):
        pairs = [[0.0, value]] if _is_number(value) else value
        pairs = [_number_list(pair, {2}) for pair in pairs] if isinstance(pairs, list) and pairs else [None]
        if any(pair is None for pair in pairs):
            raise self.bad(value, at)
        if any(later[0] <= earlier[0] for earlier, later in zip(pairs, pairs[1:])):
            raise at.error(f"the times must increase, got {show([t for t, _ in pairs])}")
        if self.ge is not None and min(v for _, v in pairs) < self.ge:
            raise at.error(f"out of range: allowed values >= {self.ge:g}, got {show(value)}")
        return pairs[0][1] if _is_number(value) else pairs


def _per_face(spec: Spec) -> Table:
    """A table with one optional key per face of the grid (x_lower ... z_upper)."""
    return Table({f"{axis}_{side}": Key(spec, OMIT) for axis in AXES for side in SIDES})


class Regions(Spec):
    """An array of tables whose keys depend on one selector key: [[initial.regions]] by
    their shape, [[initial.perturbations]] by their kind."""

    def __init__(self, shapes: dict[str, Table], selector: str = "shape", name: str = "initial.regions"):
        self.shapes = shapes
        self.selector = selector
        self.shape = Choice(*shapes)
        self.expected = f"an array of tables ([[{name}]])"

    def check(self, value, at):
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise self.bad(value, at)
        return [self.check_region(region, at / i) for i, region in enumerate(value)]

    def check_region(self, region, at):
        if self.selector not in region:
            raise (at / self.selector).error(f"missing required key ({self.shape.expected})")
        shape = self.shape.check(region[self.selector], at / self.selector)
        return self.shapes[shape].check(region, at)


# --- the schema ---------------------------------------------------------------------------

def _outflow_if_in_grid(axis):
    return lambda ctx: "outflow" if axis < ctx.dim else OMIT


def _default_cylinder_axis(ctx):
    return [0.0, 0.0, 1.0] if ctx.dim <= 2 else REQUIRED


_REGION_COMMON = {
    "shape": Key(Choice("half_space", "box", "sphere", "cylinder")),
    "state": Key(StateTable()),
    "smoothing": Key(Float(ge=0), 0.0),
}

SHAPES = {
    "half_space": Table({**_REGION_COMMON, "point": Key(ShapeVector()), "normal": Key(ShapeVector()),
                         "shock_pressure": Key(Float(gt=0), OMIT)},
                        post=check_half_space),
    "box": Table({**_REGION_COMMON, "lower": Key(ShapeVector()), "upper": Key(ShapeVector())},
                 post=check_box),
    "sphere": Table({**_REGION_COMMON, "center": Key(ShapeVector()), "radius": Key(Float(gt=0))}),
    "cylinder": Table({**_REGION_COMMON, "center": Key(ShapeVector()),
                       "axis": Key(ShapeVector(nonzero=True), _default_cylinder_axis),
                       "radius": Key(Float(gt=0))}),
}

# [[amr.regions]]: blocks that touch the shape are kept at least at `level` (mesh/regions.py).
_AMR_REGION_COMMON = {"shape": Key(Choice("box", "sphere", "cylinder")), "level": Key(Int(ge=1))}
AMR_REGIONS = {
    "box": Table({**_AMR_REGION_COMMON, "lower": Key(ShapeVector()), "upper": Key(ShapeVector())}, post=check_box),
    "sphere": Table({**_AMR_REGION_COMMON, "center": Key(ShapeVector()), "radius": Key(Float(gt=0))}),
    "cylinder": Table({**_AMR_REGION_COMMON, "center": Key(ShapeVector()), "radius": Key(Float(gt=0)),
                       "axis": Key(ShapeVector(nonzero=True), _default_cylinder_axis)}),
}

Materials.entry = Table({"gamma": Key(Float(gt=1)), "pc": Key(Float(ge=0), 0.0)})

PERTURBATION_KINDS = ("sine", "isentropic_vortex", "turbulence", "linear_wave", "formula", "raster")

PERTURBATIONS = {
    "sine": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "variable": Key(Str(nonempty=True)),
        "amplitude": Key(Float()),
        "wavenumber": Key(ShapeVector()),
        "phase": Key(Float(), 0.0),
        "region": Key(Int(ge=0), OMIT),
    }),
    "isentropic_vortex": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "center": Key(ShapeVector()),
        "strength": Key(Float()),
    }),
    # A Gaussian random velocity field with E(k) ~ k^-slope on n_min <= |n| <= n_max (turbulence.py).
    "turbulence": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "rms_velocity": Key(Float(gt=0)),
        "n_min": Key(Int(ge=1), 1),
        "n_max": Key(Int(ge=1)),
        "slope": Key(Float(), 2.0),
        "solenoidal_fraction": Key(Float(ge=0, le=1), 0.5),
        "seed": Key(Int(ge=0), 0),
    }, post=check_turbulence),
    # An eigenmode of the model along a wave vector (waves.py; the model's linear_waves hook).
    "linear_wave": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "wave": Key(Str(nonempty=True)),
        "amplitude": Key(Float()),
        "wavenumber": Key(ShapeVector()),
        "phase": Key(Float(), 0.0),
    }, post=check_wave_vector),
    # A variable set to (or increased by) a formula of x, y, z, or a raster file sampled bilinearly
    # (case_perturbations.py: the expression parses, the file is readable, its path made absolute).
    "formula": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "variable": Key(Str(nonempty=True)),
        "expression": Key(Str(nonempty=True)),
        "operation": Key(Choice("set", "add"), "set"),
        "region": Key(Int(ge=0), OMIT),
    }, post=check_formula),
    "raster": Table({
        "kind": Key(Choice(*PERTURBATION_KINDS)),
        "variable": Key(Str(nonempty=True)),
        "file": Key(Str(nonempty=True)),
        "extent": Key(Extent(), OMIT),
        "operation": Key(Choice("set", "add"), "set"),
        "region": Key(Int(ge=0), OMIT),
    }, post=check_raster),
}

# Section order matters: [grid] fixes the dimension used by [boundary] and [initial].
RECONSTRUCTIONS = Choice.of(registry.reconstructions)
LIMITERS = Choice.of(registry.limiters)
RIEMANN = Choice.of(registry.riemann_solvers)
WAVE_SPEEDS = Choice.of(registry.wave_speeds)
VARIABLES = Choice.of(registry.reconstructed_variables)
INTEGRATORS = Choice.of(registry.integrators)
METHODS = Choice.of(registry.methods)


SCHEMA = Table({
    "case": Key(Table({
        "name": Key(Str(), lambda ctx: ctx.stem),
        "description": Key(Str(), ""),
        "units": Key(StrTable(), {}),
    }), {}),
    "model": Key(Table({
        "name": Key(Str(nonempty=True)),
        "params": Key(NumberTable(), {}),
    }), {}),
    "run": Key(Table({
        "precision": Key(Choice("auto", "f32", "f64"), "auto"),
        "arch": Key(Choice("auto", "cpu", "cuda"), "auto"),
        "fast_math": Key(Choice("auto", True, False), "auto"),
        # Keep a device copy of the state at the start of each step (U0): a failed step is
        # then retried or written out as the last good state. false saves nU values per cell.
        "keep_last_good": Key(Choice(True, False), True),
        # Performance only (results are bit-identical): cells each thread walks along an axis
        # in the flux sweeps ([]: the measured defaults), and threads per GPU block (0: Taichi's).
        "segment": Key(Segments(), []),
        "block_dim": Key(Int(ge=0), 0),
        # Reconstruct each cell once for both its faces, or each face from its own stencil
        # (the same formulas; auto: the faster one where measured, kernels.plan.RECONSTRUCT_PER_FACE).
        "reconstruct": Key(Choice("auto", "cell", "face"), "auto"),
        # Solve the last axis with a thread per face, the neighbour's flux through a warp
        # shuffle, in a sweep of its own (true) or inside the walk along x ("walk"), instead
        # of walking segments of it (CUDA; auto: where measured faster, kernels.plan.SHUFFLE_LAST_AXIS).
        "shuffle": Key(Choice("auto", True, False, "walk"), "auto"),
        # One sweep per stage: the walk along x also solves each cell's faces along the other
        # axes (twice each, the last axis once with shuffle = "walk", but R and W cross memory
        # once; auto: kernels.plan.FUSE_MAX_GHOST, FUSED_SHUFFLE_MIN_GHOST).
        "fuse": Key(Choice("auto", True, False), "auto"),
        # Skip the tiles of idle_tile^D cells that are idle (the model's idle(): a dry bed) with
        # all their neighbours: their update would leave them as they are, bit for bit (auto: on
        # where the model declares idle; the sweeps then walk instead of shuffling).
        "skip_idle": Key(Choice("auto", True, False), "auto"),
        "idle_tile": Key(Int(ge=4), 16),
    }), {}),
    # Runs on several MPI ranks (mpirun -n K): the grid's split into blocks, one per rank.
    "parallel": Key(Table({
        "ranks": Key(RankGrid(), []),
        # Where ghost slabs wait between the device and MPI (parallel/staging.py).
        "exchange": Key(Choice("auto", "host", "pinned", "device", "nccl"), "auto"),
    }), {}),
    "materials": Key(Materials(), {}),
    "grid": Key(Table({
        "cells": Key(Cells()),
        "lower": Key(GridVector(), lambda ctx: [0.0] * ctx.dim),
        "upper": Key(GridVector()),
    }, post=check_grid), {}),
    # Adaptive mesh refinement (docs/amr.md): [grid] cells are the root level's, in blocks of
    # block_cells^D cells, each refined up to max_level times where the indicator asks for it.
    "amr": Key(Table({
        "block_cells": Key(Int(ge=4), 16),
        "max_level": Key(Int(ge=0), 2),
        "capacity": Key(Int(ge=0), 0),             # block slots on the device; 0: 64 x the root blocks, at least 512
        "grow": Key(Choice(True, False), True),    # a full pool is rebuilt twice as large (false: the run stops)
        "rebalance_above": Key(Float(ge=1), 1.1),  # MPI: the leaves shared out anew past this max/mean load
        "regrid_every": Key(Int(ge=1), 4),         # steps between two regrids
        "refine_above": Key(Float(gt=0), 0.8),     # Löhner's indicator (FLASH's defaults)
        "derefine_below": Key(Float(ge=0), 0.2),
        "gradient_above": Key(Float(ge=0), 0.0),   # also split where max |u+ - u-| / 2|u| exceeds it; 0: off
        "epsilon": Key(Float(ge=0), 0.01),
        "fields": Key(StrList(), []),              # primitive variables it reads; []: the model's density
        "regions": Key(Regions(AMR_REGIONS, name="amr.regions"), []),  # kept at least at their level
        "criteria_max_level": Key(Int(ge=0), OMIT),  # the criteria's finest level outside regions; max_level
    }, post=check_amr), OMIT),
    "scheme": Key(Table({
        "method": Key(METHODS, registry.FINITE_VOLUME),
        "reconstruction": Key(RECONSTRUCTIONS, "weno5"),
        "limiter": Key(LIMITERS, "mc"),
        "theta": Key(Float(ge=1, le=2), 1.5),
        "weno_epsilon": Key(Float(gt=0), OMIT),  # (each WENO's own default: numerics/reconstruction.py)
        "variables": Key(VARIABLES, OMIT),  # (the method's default: check_scheme)
        "riemann": Key(RIEMANN, OMIT),
        "wave_speeds": Key(WAVE_SPEEDS, "davis"),
        "musta_stages": Key(Int(ge=1), 3),
        # FORCE and MUSTA: a face whose Richtmyer state is inadmissible takes the Lax-Friedrichs flux
        "force_fallback": Key(Choice(True, False), False),
        # method = "shasta": its diffusion eta and anti-diffusion coefficient (defaults from the registry)
        "shasta_diffusion": Key(Float(gt=0, le=0.5), OMIT),
        "shasta_antidiffusion": Key(Float(ge=0, le=0.125), OMIT),
        "positivity_fallback": Key(Choice(True, False), True),
        # Zhang & Shu's scaling of a cell's face densities towards its mean (numerics/positivity.py)
        "density_limiter": Key(Choice(True, False), False),
        # Hu, Adams & Shu's limiter of each face flux toward Lax-Friedrichs: admissible cell means
        "positivity_limiter": Key(Choice(True, False), False),
        # Each axis a whole step of its own, one after the other (kernels/plan.py: split)
        "dimensional_splitting": Key(Choice(True, False), False),
        "integrator": Key(INTEGRATORS, "lsrk3"),
        "cfl": Key(Float(gt=0, le=1), 0.4),
        # A step that leaves an inadmissible cell is redone once with these scheme keys
        # (empty: no retry, the run stops). A posteriori order reduction, as in MOOD.
        "retry": Key(Table({
            "reconstruction": Key(RECONSTRUCTIONS, OMIT),
            "limiter": Key(LIMITERS, OMIT),
            "riemann": Key(RIEMANN, OMIT),
            "wave_speeds": Key(WAVE_SPEEDS, OMIT),
        }), {}),
    }, post=check_scheme), {}),
    "time": Key(Table({
        "end": Key(Float(gt=0)),
        "max_steps": Key(Int(ge=0), 0),
    }), {}),
    "boundary": Key(Table({
        **{axis: Key(Faces(i), _outflow_if_in_grid(i)) for i, axis in enumerate(AXES)},
        "inflow": Key(_per_face(StateTable()), {}),
        # what the hydraulic kinds impose, per face (registry.boundary_kinds: imposes); left out if none
        "discharge": Key(_per_face(Series(ge=0.0)), OMIT),
        "depth": Key(_per_face(Series(ge=0.0)), OMIT),
        "stage": Key(_per_face(Series()), OMIT),
    }, post=check_boundary), {}),
    "initial": Key(Table({
        "background": Key(StateTable()),
        "regions": Key(Regions(SHAPES), []),
        "perturbations": Key(Regions(PERTURBATIONS, "kind", "initial.perturbations"), []),
        # What a cell holds at t = 0: the average of U over it (Gauss-Legendre), or the value at
        # its centre; auto: averages for finite volumes, point values for finite differences.
        "values": Key(Choice("auto", "average", "point"), "auto"),
        "quadrature_points": Key(Int(ge=1, le=MAX_QUADRATURE_POINTS), 4),
    }), {}),
    "output": Key(Table({
        "interval": Key(Float(ge=0), 0.0),
        "fields": Key(StrList(), []),
        "diagnostics_every": Key(Int(ge=1), 1),
        "checkpoint_interval": Key(Float(ge=0), 0.0),
        "checkpoint_wall": Key(Float(ge=0), 0.0),
    }), {}),
})


def schema_entries(spec: Spec = SCHEMA, prefix: tuple = ()) -> dict[tuple, Spec]:
    """Every key the schema knows, as path -> checker (region keys under 'regions', all
    shapes merged); tests use it to keep docs/cases.md from drifting."""
    entries = {}
    tables = list(spec.shapes.values()) if isinstance(spec, Regions) else [spec]
    for table in tables:
        for name, key in getattr(table, "keys", {}).items():
            entries[prefix + (name,)] = key.spec
            entries.update(schema_entries(key.spec, prefix + (name,)))
    return entries


# --- loading -------------------------------------------------------------------------------

def load_case(path, overrides=()) -> dict:
    """Read a case file, apply --set overrides, validate and fill defaults.

    Returns plain nested data (dict/list/str/float/int/bool) plus "_source".
    """
    file = str(path)
    try:
        with open(path, "rb") as f:
            text = f.read()
        # (a UTF-8 byte-order mark, which some editors write, is no part of the TOML)
        raw = tomllib.loads(text.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except OSError as e:
        raise CaseError(f"{file}: cannot read case file: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CaseError(f"{file}: invalid TOML: {e}") from None
    ctx = _Context(file=file, stem=Path(path).stem)
    for text in [overrides] if isinstance(overrides, str) else overrides:
        ctx.overrides[apply_override(raw, text, SCHEMA.keys)] = text
    _declare_model_solvers(raw, Path(path))
    checked = SCHEMA.check(raw, _Loc(ctx))
    warnings = unused_scheme_keys(raw.get("scheme", {}), checked["scheme"], SCHEMA.keys["scheme"].spec.keys)
    warnings += regions_covering_no_cell(checked)
    return {"_source": file, **checked, **({"_warnings": warnings} if warnings else {})}


def _declare_model_solvers(raw: dict, path: Path) -> None:
    """Where [scheme] names a Riemann solver the registry does not know, load the case's model
    first: a model may provide its own (Model.riemann_solver, registered as it loads), which the
    schema then accepts. A model that fails to load is left for the run to report."""
    scheme = raw.get("scheme") if isinstance(raw.get("scheme"), dict) else {}
    retry = scheme.get("retry") if isinstance(scheme.get("retry"), dict) else {}
    names = [t.get("riemann") for t in (scheme, retry)]
    model = raw.get("model", {}).get("name") if isinstance(raw.get("model"), dict) else None
    if not isinstance(model, str) or all(not isinstance(n, str) or n in registry.riemann_solvers for n in names):
        return
    from .model import load_model  # (imports Taichi: only for such a case)
    folder = path.resolve().parent
    try:
        load_model(model, [folder.parent / "models"], base_dir=folder)
    except Exception:  # noqa: BLE001  (the run reports why the model does not load)
        pass


# --- model-dependent checks (run by the caller once the model is loaded) ------------------

def _sizes(primitive_layout) -> Mapping:
    """Accept a name -> size mapping or anything with one as `.sizes` (a model Layout)."""
    return getattr(primitive_layout, "sizes", primitive_layout)


def validate_state(table, primitive_layout, where, *, partial=False) -> dict:
    """Check a state against the model's primitive variables; returns it in layout order,
    scalars as floats and vectors padded to 3. `where` prefixes every message."""
    sizes = _sizes(primitive_layout)
    valid = ", ".join(sizes)
    if not isinstance(table, Mapping):
        raise CaseError(f"{where}: expected a table of primitive variables ({valid}), got {show(table)}")
    for name in table:
        if name not in sizes:
            raise CaseError(f"{where}: unknown variable '{name}'{suggest(name, sizes)}; "
                            f"the model's primitive variables are {valid}")
    missing = [name for name in sizes if name not in table]
    if missing and not partial:
        raise CaseError(f"{where}: missing variable{'s' * (len(missing) > 1)} "
                        f"{', '.join(missing)}; a full state needs {valid}")
    return {name: _state_value(table[name], size, f"{where}.{name}")
            for name, size in sizes.items() if name in table}


def _state_value(value, size, where):
    if size == 1:
        if not (_is_number(value) and math.isfinite(value)):
            raise CaseError(f"{where}: expected a number, got {show(value)}")
        return float(value)
    if size != 3:
        raise ValueError(f"primitive variable sizes must be 1 or 3, got {size} for {where}")
    vector = _number_list(value, {1, 2, 3})
    if vector is None:
        raise CaseError(f"{where}: expected a list of 1 to 3 numbers, got {show(value)}")
    return vector + [0.0] * (3 - len(vector))
