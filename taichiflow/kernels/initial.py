"""A case's initial primitive state, built on the device for one block of the grid.

taichiflow/initial.py builds the whole grid in numpy on the host: about a minute for a
1024x256x256 cavity array, and no use once each MPI rank holds only its block. This module
compiles the same recipe into one kernel per block. Every choice (region shapes, sharp or
smoothed weights, perturbation kinds, the dimension) is made here in Python and unrolled with
ti.static, so the kernel holds no branch on the case.

Each cell repeats the numpy code's arithmetic, operation for operation and in the same order,
in f64: the two agree up to the rounding of tanh, sin, exp and pow (and of a formula's
transcendental functions; its + - * / and a raster's sampling agree bit for bit on the CPU),
and the blocks of a grid reassemble the whole-grid result bit for bit. Constants enter the
kernel as ti.f64(...): a bare float literal would take default_fp, which is f32 in f32 runs.

That is the point value at each cell centre, what a finite-difference scheme holds. A finite
volume scheme holds cell averages of the conserved variables: with `average` the fill takes
the Gauss-Legendre average of U = to_conserved(W(x)) over each cell (every region, smoothed
or sharp, and every perturbation sampled at the nodes) and stores W = to_primitive(<U>).
A point value differs from the average by O(h^2), which caps a fifth-order finite-volume
scheme at second order on smooth data (docs/numerics.md).

Every step is a ti.func (w, x, table) -> w. `table` is the one ndarray of rows the kernel
takes when a perturbation needs more data than constants can carry (a turbulence field's
modes, a raster's nodes), else None: a case without such a perturbation compiles the kernel it
always did, with no argument more. A formula's expression is compiled in: formula.evaluate
runs on Taichi values while the kernel compiles, so its tree becomes the kernel's arithmetic.
"""
import math
from typing import Callable, NamedTuple

import numpy as np
import taichi as ti
from taichi.lang.expr import Expr

from ..formula import FormulaError, check_variable_names, evaluate, parse_formula
from ..initial import _offsets, load_raster, named_region, state_vector, variable_slot, velocity_slots, wave_terms
from ..layout import component
from ..rasters import AxisConstants, axis_constants
from ..turbulence import draw_modes

__all__ = ["make_initial_fill", "CellAverage", "MAX_BLOCK_CELLS"]

MAX_BLOCK_CELLS = 2 ** 31  # a block's ndrange is linearised in 32 bits


class CellAverage(NamedTuple):
    """Cell averages of the conserved variables: `points` Gauss-Legendre nodes per axis;
    to_conserved and to_primitive are Taichi functions of flat f64 vectors (the model's,
    bound to its parameters in f64), U having n_conserved components."""
    points: int
    n_conserved: int
    to_conserved: Callable
    to_primitive: Callable


def make_initial_fill(initial: dict, primitive_layout, grid_cells, lower, upper, params: dict, dtype,
                      block_offset=None, block_cells=None, average: "CellAverage | None" = None):
    """fill(W): writes into W[I], 0 <= I < block_cells, the primitive state that
    initial_primitive gives global cell block_offset + I of the grid_cells grid (the whole
    grid by default), or with `average` the primitive state of the cell average of U. W is a
    vector field of nW components and dtype, maybe with ghost layers and offsets, which are
    left untouched. Errors in the case surface here, before any compilation, as the same
    ValueErrors the numpy code raises."""
    grid_cells = tuple(int(n) for n in grid_cells)
    dim = len(grid_cells)
    block_offset, block_cells = _block_extent(grid_cells, block_offset, block_cells)
    state_at, tables, n_primitive = initial_state_func(initial, primitive_layout, dim, lower, upper, params)
    cell_center = _cell_center_func(grid_cells, lower, upper, block_offset)

    cell_state = state_at
    if average is not None:
        cell_state = _cell_average_func(state_at, average, grid_cells, lower, upper)
    fill_block = _fill_kernel(cell_state, cell_center, block_cells, dtype, tables.array())

    def fill(W):
        _check_field(W, n_primitive, dtype, block_cells)
        fill_block(W)

    return fill


def initial_state_func(initial: dict, primitive_layout, dim: int, lower, upper, params: dict):
    """(ti.func (x, table) -> the f64 primitive state at point x, the ModeTables its table
    rows come from, the number of primitive variables): the case's recipe, compiled in."""
    background = state_vector(initial["background"], primitive_layout)
    steps = [_region_step(region, initial["background"], primitive_layout, dim)
             for region in initial.get("regions", ())]
    tables = ModeTables()
    setup = _Setup(_offsets(primitive_layout), initial, params or {}, dim, lower, upper, tables)
    steps += _perturbation_steps(initial, setup)
    background_state = _constant_vector(background)

    @ti.func
    def state_at(x, table: ti.template()):
        w = background_state()
        for step in ti.static(steps):
            w = step(w, x, table)
        return w

    return state_at, tables, len(background)


class ModeTables:
    """Rows of data that perturbations read at run time (a turbulence field's thousands of
    modes, a raster's nodes: too many to compile in as constants), stacked into the one float64
    array that the fill kernel takes as an ndarray argument; each perturbation reads its own
    rows, from column 0. Tables of any number and width combine: the array is as wide as the
    widest (a raster's nodes along y), narrower ones padded with zeros."""

    def __init__(self):
        self._tables = []
        self.rows = 0

    def add(self, table: np.ndarray) -> int:
        """Append the rows of the 2D `table`; returns the index of the first."""
        table = np.asarray(table, dtype=np.float64)
        if table.ndim != 2:
            raise ValueError(f"a table of rows must be 2D, got shape {table.shape}")
        start = self.rows
        self._tables.append(table)
        self.rows += len(table)
        return start

    def array(self):
        """All rows as one C-contiguous float64 array, or None when no perturbation has any."""
        if not self._tables:
            return None
        width = max(table.shape[1] for table in self._tables)
        return np.ascontiguousarray(np.vstack([np.pad(table, ((0, 0), (0, width - table.shape[1])))
                                               for table in self._tables]))


def _fill_kernel(cell_state, cell_center, block_cells, dtype, table):
    """fill_block(W): the kernel that writes the block's states. With mode tables it takes them
    as an ndarray argument; without, it is the kernel it always was (no argument more)."""
    if table is None:
        @ti.kernel
        def fill_block(W: ti.template()):
            for I in ti.grouped(ti.ndrange(*block_cells)):
                W[I] = ti.cast(cell_state(cell_center(I), None), dtype)

        return fill_block

    @ti.kernel
    def fill_block_with_modes(W: ti.template(), modes: ti.types.ndarray(dtype=ti.f64, ndim=2)):
        for I in ti.grouped(ti.ndrange(*block_cells)):
            W[I] = ti.cast(cell_state(cell_center(I), modes), dtype)

    return lambda W: fill_block_with_modes(W, table)


def _block_extent(grid_cells, block_offset, block_cells):
    """(offset, cells) of the block as tuples of ints, checked to lie inside the grid and to
    have fewer than 2^31 cells."""
    dim = len(grid_cells)
    offset = tuple(int(i) for i in (block_offset if block_offset is not None else (0,) * dim))
    cells = tuple(int(n) for n in (block_cells if block_cells is not None else
                                   [n - i for n, i in zip(grid_cells, offset)]))
    if len(offset) != dim or len(cells) != dim:
        raise ValueError(f"block_offset {offset} and block_cells {cells} need {dim} entries, one per grid axis")
    if any(i < 0 or n < 1 or i + n > g for i, n, g in zip(offset, cells, grid_cells)):
        raise ValueError(f"the block of {cells} cells at {offset} does not lie inside the grid {grid_cells}")
    total = math.prod(cells)
    if total >= MAX_BLOCK_CELLS:
        raise ValueError(f"the block {cells} has {total} cells; a block's loop indexes cells in 32 bits "
                         f"and needs fewer than 2^31 = {MAX_BLOCK_CELLS}: split the grid into more blocks")
    return offset, cells


def _check_field(W, n_components: int, dtype, block_cells):
    """W must be a vector field of the state's size and dtype, large enough for the block
    (Taichi does not expose a field's offset, so whether it starts at or below 0 is the caller's)."""
    if getattr(W, "n", None) != n_components or getattr(W, "m", 1) != 1:
        raise ValueError(f"W must be a vector field of {n_components} components, got {W!r}")
    if W.dtype != dtype:
        raise ValueError(f"W holds {W.dtype}, the fill was compiled for {dtype}")
    if len(W.shape) != len(block_cells) or any(s < n for s, n in zip(W.shape, block_cells)):
        raise ValueError(f"W (shape {W.shape}) cannot hold the block's {block_cells} cells")


def _constant_vector(values):
    """A ti.func returning `values` as an f64 vector, each entry an exact f64 constant."""
    values = [float(v) for v in values]
    n = len(values)

    @ti.func
    def constant():
        v = ti.Vector.zero(ti.f64, n)
        for k in ti.static(range(n)):
            v[k] = ti.f64(values[k])
        return v

    return constant


def _cell_center_func(grid_cells, lower, upper, block_offset):
    """ti.func: (x, y, z) of block cell I, zeros on the axes the grid lacks, computed as
    cell_centers does: lower + (upper - lower) * (i + 0.5) / n, i the global index."""
    dim = len(grid_cells)
    origin = [float(lower[d]) for d in range(dim)]
    length = [float(upper[d] - lower[d]) for d in range(dim)]
    count = [float(n) for n in grid_cells]
    first = [float(i) for i in block_offset]

    @ti.func
    def cell_center(I):
        x = ti.Vector.zero(ti.f64, 3)
        for d in ti.static(range(dim)):
            index = ti.cast(I[d], ti.f64) + ti.f64(first[d])  # exact: integers below 2^53
            x[d] = ti.f64(origin[d]) + ti.f64(length[d]) * (index + ti.f64(0.5)) / ti.f64(count[d])
        return x

    return cell_center


def _cell_average_func(state_at, average: CellAverage, grid_cells, lower, upper):
    """ti.func (x, table) -> to_primitive of the Gauss-Legendre average of to_conserved(state_at) over
    the cell centred at x: points^dim nodes, one run-time loop over them (an unrolled loop
    of 125 copies of every region and perturbation compiles for minutes)."""
    dim = len(grid_cells)
    half_width = [0.5 * (float(upper[d]) - float(lower[d])) / grid_cells[d] for d in range(dim)]
    average_over = gauss_average_func(state_at, average, dim)

    @ti.func
    def cell_average(x, table: ti.template()):
        return average_over(x, half_width, table)

    return cell_average


def gauss_average_func(state_at, average: CellAverage, dim: int):
    """ti.func (x, half widths, table) -> as _cell_average_func's, over the cell of those half
    widths: Python floats (compiled in) or an f64 vector (a block's level, at run time)."""
    points = int(average.points)
    nodes, weights = np.polynomial.legendre.leggauss(points)
    to_conserved, to_primitive, n_conserved = average.to_conserved, average.to_primitive, average.n_conserved

    @ti.func
    def node_and_weight(k):
        """Node k of the rule on [-1, 1] and its weight, by a static table."""
        node, weight = ti.f64(0.0), ti.f64(0.0)
        for j in ti.static(range(points)):
            if k == j:
                node, weight = ti.f64(float(nodes[j])), ti.f64(float(weights[j]) / 2.0)
        return node, weight

    @ti.func
    def cell_average(x, half_width: ti.template(), table: ti.template()):
        total = ti.Vector.zero(ti.f64, n_conserved)
        for q in range(points ** dim):
            y = x
            w = ti.f64(1.0)
            rest = q
            for d in ti.static(range(dim)):
                node, weight = node_and_weight(rest % points)
                rest //= points
                y[d] = x[d] + _f64(half_width[d]) * node
                w *= weight
            total += w * to_conserved(state_at(y, table))
        return to_primitive(total)

    return cell_average


def _f64(value):
    """A Python float as an exact f64 constant (what ti.f64(value) compiles to in a kernel's
    own source); a Taichi value as it is."""
    return Expr(value, dtype=ti.f64) if isinstance(value, float) else value


# --- region shapes: signed distance to the surface, negative inside (initial._DISTANCE) -----

def _half_space_distance(region, dim: int):
    normal = np.asarray(region["normal"][:dim], dtype=float)
    norm = float(np.linalg.norm(normal))
    terms = [(d, float(p), float(n)) for d, p, n in zip(range(dim), region["point"], normal)]

    @ti.func
    def distance(x):
        total = ti.f64(0.0)
        for t in ti.static(range(len(terms))):
            total += (x[terms[t][0]] - ti.f64(terms[t][1])) * ti.f64(terms[t][2])
        return -total / ti.f64(norm)

    return distance


def _box_distance(region, dim: int):
    terms = [(d, float(0.5 * (lo + hi)), float(0.5 * (hi - lo)))  # centre, half-width, as _box has them
             for d, lo, hi in zip(range(dim), region["lower"], region["upper"])]
    n = len(terms)

    @ti.func
    def distance(x):
        q = ti.Vector.zero(ti.f64, n)
        for t in ti.static(range(n)):
            q[t] = ti.abs(x[terms[t][0]] - ti.f64(terms[t][1])) - ti.f64(terms[t][2])
        squares = ti.max(q[0], ti.f64(0.0)) * ti.max(q[0], ti.f64(0.0))
        largest = q[0]
        for t in ti.static(range(1, n)):
            squares += ti.max(q[t], ti.f64(0.0)) * ti.max(q[t], ti.f64(0.0))
            largest = ti.max(largest, q[t])
        return ti.sqrt(squares) + ti.min(largest, ti.f64(0.0))

    return distance


def _sphere_distance(region, dim: int):
    terms = [(d, float(c)) for d, c in zip(range(dim), region["center"])]
    radius = float(region["radius"])

    @ti.func
    def distance(x):
        total = ti.f64(0.0)
        for t in ti.static(range(len(terms))):
            gap = x[terms[t][0]] - ti.f64(terms[t][1])
            total += gap * gap
        return ti.sqrt(total) - ti.f64(radius)

    return distance


def _cylinder_distance(region, dim: int):
    axis = np.array(region["axis"], dtype=float)  # a copy: the case's own list stays as it was
    axis /= np.linalg.norm(axis)
    n = min(3, len(axis))
    unit = [float(a) for a in axis[:n]]
    center = [float(c) for _, c in zip(range(dim), region["center"])]  # axes beyond: offsets of 0.0
    known = len(center)
    radius = float(region["radius"])

    @ti.func
    def distance(x):
        offset = ti.Vector.zero(ti.f64, 3)
        for d in ti.static(range(known)):
            offset[d] = x[d] - ti.f64(center[d])
        along = ti.f64(0.0)
        for d in ti.static(range(n)):
            along += offset[d] * ti.f64(unit[d])
        total = ti.f64(0.0)
        for d in ti.static(range(n)):
            radial = offset[d] - along * ti.f64(unit[d])
            total += radial * radial
        return ti.sqrt(total) - ti.f64(radius)

    return distance


_DISTANCE = {"half_space": _half_space_distance, "box": _box_distance, "sphere": _sphere_distance,
             "cylinder": _cylinder_distance}


def _weight_func(region, dim: int):
    """ti.func: how much of the region's state point x takes, as initial.region_weight:
    0.5 (1 - tanh(distance / smoothing)) when smoothed, else 1 inside and 0 outside."""
    distance = _DISTANCE[region["shape"]](region, dim)
    width = float(region.get("smoothing", 0.0))

    @ti.func
    def weight(x):
        s = ti.f64(0.0)
        if ti.static(width > 0):
            s = ti.f64(0.5) * (ti.f64(1.0) - ti.tanh(distance(x) / ti.f64(width)))
        else:
            s = ti.select(distance(x) < ti.f64(0.0), ti.f64(1.0), ti.f64(0.0))
        return s

    return weight


def _region_step(region, background_table, primitive_layout, dim: int):
    """ti.func w, x -> (1 - s) w + s w_region: the region blended over the state so far; its
    missing variables come from the background."""
    inside = _constant_vector(state_vector({**background_table, **region["state"]}, primitive_layout))
    weight = _weight_func(region, dim)

    @ti.func
    def blend(w, x, table: ti.template()):
        s = weight(x)
        return (ti.f64(1.0) - s) * w + s * inside()

    return blend


# --- perturbations (initial.PERTURB), validated on the host with the same messages ----------

class _Setup(NamedTuple):
    """What a perturbation's step is built from: flat indices of the primitive variables,
    the [initial] table, the model's parameters, the grid's dimension and box, and the mode
    tables that steps reading per-mode data at run time add their rows to."""
    offsets: dict
    initial: dict
    params: dict
    dim: int
    lower: tuple
    upper: tuple
    tables: ModeTables


def _perturbation_steps(initial, setup: _Setup) -> list:
    """ti.func (w, x, table) -> w per perturbation, in order; `table` is the fill's ndarray of
    mode rows (None when no perturbation has any)."""
    steps = []
    for n, perturbation in enumerate(initial.get("perturbations", ())):
        where = f"[[initial.perturbations]] #{n + 1}"
        steps.append(_PERTURBATION[perturbation["kind"]](perturbation, setup, where))
    return steps


def _sine_step(p, setup: _Setup, where):
    """ti.func w, x: w[variable] += amplitude sin(k . x + phase), times a region's weight
    when one is named."""
    offsets, initial, dim = setup.offsets, setup.initial, setup.dim
    if p["variable"] not in offsets:
        raise ValueError(f"{where}: unknown variable '{p['variable']}'; choose from {sorted(offsets)}")
    weight = None
    if "region" in p:
        regions = initial.get("regions", ())
        if p["region"] >= len(regions):
            raise ValueError(f"{where}: region {p['region']} does not exist (there are {len(regions)})")
        weight = _weight_func(regions[p["region"]], dim)
    in_region = weight is not None
    wavenumber = [float(k) for _, k in zip(range(3), p["wavenumber"])]
    phase, amplitude, slot = float(p["phase"]), float(p["amplitude"]), offsets[p["variable"]]

    @ti.func
    def perturb(w, x, table: ti.template()):
        argument = ti.f64(0.0)
        for d in ti.static(range(len(wavenumber))):
            argument += ti.f64(wavenumber[d]) * x[d]
        bump = ti.f64(amplitude) * ti.sin(argument + ti.f64(phase))
        if ti.static(in_region):
            bump = bump * weight(x)
        w[slot] += bump
        return w

    return perturb


def _isentropic_vortex_step(p, setup: _Setup, where):
    """ti.func w, x: Shu's isentropic vortex superposed on the state, as the numpy code does
    it (same constants, same order of operations)."""
    offsets, params = setup.offsets, setup.params
    missing = [k for k in ("rho", "vel_x", "vel_y", "p") if k not in offsets] + (
        [] if "gamma" in params else ["parameter gamma"])
    if missing:
        raise ValueError(f"{where}: isentropic_vortex needs a model with rho, vel, p and gamma; missing {missing}")
    gamma, beta = float(params["gamma"]), float(p["strength"])
    cx, cy = float(p["center"][0]), float(p["center"][1])
    cooling = (gamma - 1.0) * beta ** 2 / (8.0 * gamma * math.pi ** 2)
    swirl = beta / (2.0 * math.pi)
    exponent = 1.0 / (gamma - 1.0)
    rho, vx, vy, pressure = offsets["rho"], offsets["vel_x"], offsets["vel_y"], offsets["p"]

    @ti.func
    def perturb(w, x, table: ti.template()):
        dx, dy = x[0] - ti.f64(cx), x[1] - ti.f64(cy)
        bump = ti.exp(ti.f64(0.5) * (ti.f64(1.0) - dx * dx - dy * dy))
        entropy = w[pressure] / w[rho] ** ti.f64(gamma)
        temperature = w[pressure] / w[rho] - ti.f64(cooling) * (bump * bump)
        w[vx] -= ti.f64(swirl) * bump * dy
        w[vy] += ti.f64(swirl) * bump * dx
        new_rho = (temperature / entropy) ** ti.f64(exponent)
        w[rho] = new_rho
        w[pressure] = new_rho * temperature
        return w

    return perturb


def _turbulence_step(p, setup: _Setup, where):
    """ti.func w, x: w[velocity] += sum_m a_m cos(k_m . x) + b_m sin(k_m . x), the modes drawn on
    the host (turbulence.draw_modes) and read from the fill's table, rows start..start+count
    (k, a, b): a run-time loop, so thousands of modes compile as fast as one."""
    dim = setup.dim
    slots = velocity_slots(p, setup.offsets, dim, where)
    table = draw_modes(p, dim, setup.lower, setup.upper, where).table()
    start = setup.tables.add(table)
    stop = start + len(table)

    @ti.func
    def perturb(w, x, modes: ti.template()):
        v = ti.Vector.zero(ti.f64, dim)
        for m in range(start, stop):
            argument = ti.f64(0.0)
            for d in ti.static(range(dim)):
                argument += modes[m, d] * x[d]
            cosine, sine = ti.cos(argument), ti.sin(argument)
            for d in ti.static(range(dim)):
                v[d] += modes[m, 3 + d] * cosine + modes[m, 6 + d] * sine
        for d in ti.static(range(dim)):
            w[slots[d]] += v[d]
        return w

    return perturb


def _linear_wave_step(p, setup: _Setup, where):
    """ti.func w, x: w += amplitude R_W cos(k . x + phase), R_W the model's eigenvector in the
    lab frame (resolved on the host by run.states), its nonzero components as constants."""
    terms = wave_terms(p, setup.offsets, where)
    wavenumber = [float(k) for k in p["wavenumber"][:setup.dim]]
    phase = float(p["phase"])

    @ti.func
    def perturb(w, x, table: ti.template()):
        argument = ti.f64(0.0)
        for d in ti.static(range(len(wavenumber))):
            argument += ti.f64(wavenumber[d]) * x[d]
        wave = ti.cos(argument + ti.f64(phase))
        for t in ti.static(range(len(terms))):
            w[terms[t][0]] += ti.f64(terms[t][1]) * wave
        return w

    return perturb


# --- formulas and rasters: a variable set to, or increased by, a value (initial._set_or_add) ---

def _set_or_add_func(p, setup: _Setup, where):
    """ti.func (w, value, x) -> w: w[variable] = value ("set") or += value ("add"); inside a
    named region with its weight s, as a region blends: (1 - s) w + s value, or w + value s."""
    slot = variable_slot(p, setup.offsets, where)
    region = named_region(p, setup.initial, where)
    weight = None if region is None else _weight_func(region, setup.dim)
    in_region, add = weight is not None, p.get("operation", "set") == "add"

    @ti.func
    def set_or_add(w, value, x):
        if ti.static(add and in_region):
            w[slot] += value * weight(x)
        elif ti.static(add):
            w[slot] += value
        elif ti.static(in_region):
            s = weight(x)
            w[slot] = (ti.f64(1.0) - s) * w[slot] + s * value
        else:
            w[slot] = value
        return w

    return set_or_add


TAICHI_FUNCTIONS = {"min": ti.min, "max": ti.max, "abs": ti.abs, "sqrt": ti.sqrt, "exp": ti.exp, "log": ti.log,
                    "sin": ti.sin, "cos": ti.cos, "tan": ti.tan, "tanh": ti.tanh, "atan2": ti.atan2}


def _formula_step(p, setup: _Setup, where):
    """ti.func w, x: the formula's tree evaluated on Taichi values as the kernel compiles (the
    same tree and order of operations as the host's numpy), its numbers as f64 constants."""
    set_or_add = _set_or_add_func(p, setup, where)
    formula = parse_formula(p["expression"])
    try:
        check_variable_names(formula, [n for n in setup.offsets if n + '_x' not in setup.offsets])
    except FormulaError as err:
        raise ValueError(f"{where}: expression: {err}") from None
    numbers, offsets = formula.numbers, setup.offsets

    def value_of(w, x, y, z, constants):
        """Plain Python, called inside the ti.func below with Taichi values: builds the IR."""
        return evaluate(formula, (x, y, z), constants, TAICHI_FUNCTIONS, lambda name: component(w, offsets[name]))

    @ti.func
    def perturb(w, x, table: ti.template()):
        constants = [ti.f64(numbers[k]) for k in ti.static(range(len(numbers)))]
        return set_or_add(w, value_of(w, x[0], x[1], x[2], constants), x)

    return perturb


def _node_and_fraction_func(axis: AxisConstants):
    """ti.func c -> (i, t) along one raster axis, as rasters._node_and_fraction: the coordinate
    clamped to the extent, the node below it (at most the last but one) and the fraction
    towards the next."""
    lo, hi, scale, last = axis.lo, axis.hi, axis.scale, axis.nodes - 2

    @ti.func
    def node_and_fraction(c):
        s = (ti.min(ti.max(c, ti.f64(lo)), ti.f64(hi)) - ti.f64(lo)) * ti.f64(scale)
        i = ti.min(ti.cast(ti.floor(s), ti.i32), last)
        return i, s - ti.cast(i, ti.f64)

    return node_and_fraction


def _raster_step(p, setup: _Setup, where):
    """ti.func w, x: the raster's bilinear (1D: linear) interpolation at x, as rasters.sample
    computes it, its nodes read from the fill's table (rows start.., a 1D raster in column 0)."""
    set_or_add = _set_or_add_func(p, setup, where)
    raster = load_raster(p, setup.dim, where)
    flat = raster.values.ndim == 1
    start = setup.tables.add(raster.values[:, None] if flat else raster.values)
    axes = [_node_and_fraction_func(axis) for axis in axis_constants(raster)]
    along_x, along_y = axes[0], axes[-1]

    @ti.func
    def perturb(w, x, nodes: ti.template()):
        i, t = along_x(x[0])
        value = ti.f64(0.0)
        if ti.static(flat):
            value = (ti.f64(1.0) - t) * nodes[start + i, 0] + t * nodes[start + i + 1, 0]
        else:
            j, u = along_y(x[1])
            value = ((ti.f64(1.0) - t) * ((ti.f64(1.0) - u) * nodes[start + i, j] + u * nodes[start + i, j + 1])
                     + t * ((ti.f64(1.0) - u) * nodes[start + i + 1, j] + u * nodes[start + i + 1, j + 1]))
        return set_or_add(w, value, x)

    return perturb


_PERTURBATION = {"sine": _sine_step, "isentropic_vortex": _isentropic_vortex_step, "turbulence": _turbulence_step,
                 "linear_wave": _linear_wave_step, "formula": _formula_step, "raster": _raster_step}
