"""Which model function made a step fail, where one did.

A model whose sound_speed returns NaN where rho > 1.5 made runs end with "rho = nan ... Try a
lower [scheme] cfl": the NaN came from the model, and no cfl avoids it. After a failed step the
bad cell's neighbourhood is read back (the last good state, where it was kept) and the model's
functions that the scheme calls are evaluated there as plain Python on the host
(model_host.py: nothing is compiled, no kernel changes): first on the states themselves, then on
the states a forward-Euler step of the failed step's dt predicts along each axis line through
the bad cell, with Rusanov's fluxes and with centred ones (a high-order scheme's stages move
further than the first, less than the second), which is where a stage usually first meets
the values the model cannot take (the last good state never holds them: a NaN there would have
failed the step before).
The first function that returns a non-finite value from a finite, admissible state is named
with that state. Functions that Python scope cannot run are skipped: then nothing is said.
"""
from __future__ import annotations

import itertools
import time

import numpy as np

from .. import model_host, registry
from ..resolved import SchemeTable

# The search stops after this many seconds (the states are read and evaluated one by one) ...
SEARCH_SECONDS = 10.0
# ... or after this many cells: the cube of the stencil's reach around the bad cell, and the
# axis lines as far as a step's stages carry a NaN (the bad cell reported is the grid's first).
SEARCH_CELLS = 1000


def model_blame(sim, cell: tuple) -> str | None:
    """The sentence naming the model function that returns a non-finite value near `cell` (in
    this rank's block; W current), or None (then the scheme is what to change)."""
    solver, model = sim.solver, sim.model
    context = _Context(sim)
    deadline = time.monotonic() + SEARCH_SECONDS
    read = {}
    for candidate in candidate_cells(cell, solver.cells, solver.ghost, len(sim.stages)):
        if time.monotonic() > deadline:
            return None
        w = read[candidate] = np.array(solver.primitive_at(candidate))
        if _admissible(model, w, context.values):
            found = context.first_non_finite(w, _neighbours(solver, candidate, read), _centre(sim, candidate))
            if found is not None:
                return _blame_text(model, found, context.global_cell(candidate), sim.step_count)
    for dissipation, axis in itertools.product((1.0, 0.0), range(len(solver.cells))):
        found = _predicted_on_line(context, read, cell, axis, dissipation, deadline)
        if found is not None:
            return found
    return None


def blame_of_state(sim, w, cell: tuple, origin: str) -> tuple[str, str] | None:
    """(what failed, as "the model's sound_speed() returned nan", and the blame sentence) of the
    first function in use that returns a non-finite value at w, the state the check found bad at
    `cell` (the whole grid's index), where w is finite and admissible: there the check's test
    was a non-finite signal speed (kernels/reductions.py). None where no function is found."""
    model = sim.model
    w = np.asarray(w, dtype=float)
    context = _Context(sim)
    if not _admissible(model, w, context.values):
        return None
    found = context.first_non_finite(w, [None] * context.dim, _centre(sim, cell, whole=True))
    if found is None:
        return None
    name, what = _failed(model, found)
    return f"the model's {name}() {what}", _blame_text(model, found, tuple(cell), sim.step_count, predicted=origin)


class _Context:
    """What every evaluation of one failure shares: the model, the functions the scheme uses,
    the parameter and global values, the grid and the failed step's time and dt."""

    def __init__(self, sim):
        solver = sim.solver
        self.model, self.sim, self.solver = sim.model, sim, solver
        self.values = {**sim.params, **_global_values(solver.phys)}
        self.roles = roles_in_use(sim.model, sim.resolved.scheme)
        self.dim = len(solver.cells)
        self.first = tuple(solver.offset) or (0,) * self.dim
        self.dt, self.t, self.h = sim.last_dt, sim.t, min(solver.dx)

    def global_cell(self, cell: tuple) -> tuple:
        """A cell of this block as the whole grid numbers it."""
        return tuple(int(i) + int(o) for i, o in zip(cell, self.first))

    def first_non_finite(self, w, neighbours, x):
        """(role, axis, the states shown, its result (None: it did not return), the parameters
        and globals it took) of the first function in use that returns a non-finite value at
        the finite state w, along each axis for the functions of a face's normal frame;
        `neighbours[axis]`: the next cell's state along it (the pairs' right state), or None."""
        for role in self.roles:
            axes = range(self.dim) if model_host.in_normal_frame(role) else [None]
            for axis in axes:
                found = self._on_axis(role, w, neighbours[axis] if axis is not None else None, axis, x)
                if found is not None:
                    return found
        return None

    def _on_axis(self, role, w, other, axis, x):
        """One function at w (in `axis`'s normal frame, unless None), with the pair's other
        state where it takes two."""
        model = self.model
        if axis is not None:
            w = w[model.primitive.rotation(axis, True)]
            other = other[model.primitive.rotation(axis, True)] if other is not None else None
        W = model_host.view(model.primitive, w)
        if role == "to_conserved":
            return _evaluate(model, role, self.values, (W,), axis, (w,))
        u = _host(model, "to_conserved", (W,), self.values, model.conserved)
        if u is None or not np.all(np.isfinite(u)):
            return None
        pair = other is not None and model.leading_args(role)[:2] == ("WL", "WR")
        arguments = model_host.arguments(model, role, W, model_host.view(model.conserved, u),
                                         model_host.view(model.primitive, other) if pair else None,
                                         x=x, t=self.t, dt=self.dt, h=self.h)
        if arguments is None:
            return None
        return _evaluate(model, role, self.values, arguments, axis, (w, other) if pair else (w,))


def roles_in_use(model, scheme) -> list[str]:
    """The model's functions a step of this scheme (a SchemeTable, or its mapping) calls on cell
    and face states (those one state can be given to), in the order they are evaluated:
    to_conserved first."""
    scheme = SchemeTable.of(scheme)
    used = ["to_conserved", "to_primitive", *[r for r in model.functions if r.startswith("global:")], "flux",
            "sound_speed", "wave_speeds", "face_states", "to_reconstructed", "source", "after_step"]
    if "einfeldt" in (scheme.wave_speeds, scheme.retry.wave_speeds):
        used.append("roe_speeds")
    if "characteristic" in str(scheme.variables):
        used += ["eigenvectors", "eigenvalues", "jacobians"]
    if scheme.method == registry.FINITE_DIFFERENCE:
        used.append("splitting_speeds")
    return [role for role in used if role in model.functions]


def candidate_cells(cell: tuple, cells: tuple, reach: int, stages: int) -> list[tuple]:
    """The bad cell, then the cells within `reach` of it along every axis, and those on its axis
    lines within reach x stages, nearest first (among the equally near, the later cells of the
    grid first: the bad cell reported is the first of the grid's bad cells), inside `cells`."""
    dim = len(cells)
    offsets = set(itertools.product(range(-reach, reach + 1), repeat=dim))
    for axis in range(dim):
        for step in range(-reach * stages, reach * stages + 1):
            offsets.add(tuple(step if k == axis else 0 for k in range(dim)))
    ordered = sorted(offsets, key=lambda o: (sum(abs(v) for v in o), tuple(-v for v in o)))
    shifted = [tuple(c + o for c, o in zip(cell, offset)) for offset in ordered]
    return [c for c in shifted if all(0 <= i < n for i, n in zip(c, cells))][:SEARCH_CELLS]


def _predicted_on_line(context, read: dict, cell: tuple, axis: int, dissipation: float,
                       deadline: float) -> str | None:
    """The blame for a state that a forward-Euler step of the failed step's dt predicts on the
    line through `cell` along `axis` (its cells already read), or None; `dissipation` 1 for
    Rusanov's fluxes, 0 for centred ones."""
    model, solver = context.model, context.solver
    line = [cell]
    for step in (-1, 1):  # (the cells read next to each other along the axis, both ways)
        while (following := tuple(i + step * (k == axis) for k, i in enumerate(line[0 if step < 0 else -1]))) in read:
            line.insert(0 if step < 0 else len(line), following)
    states = [read[c] for c in line]
    ratio = context.dt / solver.dx[axis]
    for k, predicted in euler_step(model, context.values, states, axis, ratio, dissipation):
        if time.monotonic() > deadline:
            return None
        if predicted is None or not _admissible(model, predicted, context.values):
            continue
        found = context.first_non_finite(predicted, [None] * context.dim, _centre(context.sim, line[k]))
        if found is not None:
            where = context.global_cell(line[k])
            return _blame_text(model, found, where, context.sim.step_count,
                               predicted=f"the state a forward-Euler step of dt = {context.dt:.6g} along "
                                         f"{'xyz'[axis]} with {'Rusanov' if dissipation else 'centred'} fluxes "
                                         f"predicts for cell {where} from the state at step "
                                         f"{context.sim.step_count}")
    return None


def euler_step(model, values: dict, states: list, axis: int, ratio: float, dissipation: float):
    """(index, W) of each inner cell of a line of neighbouring states (global frame) after one
    forward-Euler step along `axis` (ratio = dt / dx) with the fluxes (f_L + f_R) / 2 -
    dissipation * s_max (U_R - U_L) / 2; W None where the host cannot tell (a state of the
    three it reads that the host cannot evaluate finitely)."""
    to_normal, to_global = model.primitive.rotation(axis, True), model.primitive.rotation(axis, False)
    parts = [_state_and_flux(model, values, w[to_normal]) if _admissible(model, w, values) else None for w in states]
    for k in range(1, len(parts) - 1):
        if any(part is None for part in parts[k - 1:k + 2]):
            yield k, None
            continue
        face = [_face_flux(parts[j], parts[j + 1], dissipation) for j in (k - 1, k)]
        u = parts[k][0] - ratio * (face[1] - face[0])
        w = _host(model, "to_primitive", (model_host.view(model.conserved, u),), values, model.primitive)
        yield k, (w[to_global] if w is not None else None)


def _state_and_flux(model, values: dict, w):
    """(U, F, the largest signal speed) of a normal-frame state on the host, or None."""
    W = model_host.view(model.primitive, w)
    u = _host(model, "to_conserved", (W,), values, model.conserved)
    f = (_host(model, "flux", (W, model_host.view(model.conserved, u)), values, model.conserved)
         if u is not None else None)
    speeds = _signal_speeds(model, values, W, w)
    if f is None or speeds is None or not all(np.all(np.isfinite(a)) for a in (u, f, speeds)):
        return None
    return u, f, float(np.max(np.abs(speeds)))


def _signal_speeds(model, values: dict, W, w):
    """(smin, smax) of the model's wave_speeds, or u_n -/+ sound_speed; None if unknown."""
    if "wave_speeds" in model.functions:
        return _host(model, "wave_speeds", (W,), values)
    if "sound_speed" not in model.functions or model.velocity is None:
        return None
    c = _host(model, "sound_speed", (W,), values)
    un = w[model.primitive.index(model.velocity, 0)]
    return None if c is None else np.array([un - c[0], un + c[0]])


def _face_flux(left, right, dissipation: float):
    """The flux between two (U, F, speed) states: Rusanov's (dissipation 1) or centred (0)."""
    return 0.5 * (left[1] + right[1]) - 0.5 * dissipation * max(left[2], right[2]) * (right[0] - left[0])


def _host(model, role, arguments, values, layout=None):
    """A function's flat result on the host (a state of `layout` in its order, if given), None
    where Python scope cannot run it."""
    try:
        with model_host.time_limit(model_host.TIME_LIMIT_S, role):
            result = model_host.call(model, role, arguments, values)
            return model_host.flat_state(layout, result) if layout else model_host.flat_values(result)
    except (model_host.HostUnsupported, model_host.DidNotReturn):
        return None


def _evaluate(model, role, values, arguments, axis, shown):
    """(role, axis, the states shown, the result (None: it did not return), the parameters and
    globals it took) where the result is not finite; None where it is, or where nothing is
    known (Python scope cannot run it, or a value it takes is not finite)."""
    taken = {name: values.get(name, np.nan) for name in model.extra_args(role)}
    if not all(np.isfinite(v) for v in taken.values()):
        return None
    try:
        with model_host.time_limit(model_host.TIME_LIMIT_S, role):
            result = model_host.flat_values(model_host.call(model, role, arguments, values))
    except model_host.HostUnsupported:
        return None
    except model_host.DidNotReturn:
        return role, axis, shown, None, taken
    return None if np.all(np.isfinite(result)) else (role, axis, shown, result, taken)


def _admissible(model, w, values: dict) -> bool:
    """Finite, the declared positives > 0, and the model's admissible() (with its parameters'
    `values`) where Python scope runs it: a state for which NaN is the model's right answer
    (sqrt of p < 0) blames nothing. (Without the values a model whose admissible() takes
    parameters was never asked, and the two-phase model was blamed for the NaN sound speed of
    a state with (Gamma + 1) p + Pi < 0, which its admissible() refuses.)"""
    if not np.all(np.isfinite(w)) or any(not w[model.primitive.index(n)] > 0 for n in model.positive):
        return False
    if "admissible" not in model.functions:
        return True
    verdict = _host(model, "admissible", (model_host.view(model.primitive, w),), values)
    return verdict is None or bool(np.all(verdict))


def _global_values(phys) -> dict:
    """The model's global values (GLM's ch) as the step check last reduced them, by name."""
    if not phys.model.globals:
        return {}
    reduced = np.asarray(phys.globals_field.to_numpy(), dtype=float).ravel()
    return {name: float(reduced[k]) for k, name in enumerate(phys.model.globals)}


def _neighbours(solver, cell: tuple, read: dict) -> list:
    """W of the next cell along each axis (a face pair's right state), None past the block."""
    found = []
    for axis, n in enumerate(solver.cells):
        after = tuple(i + (k == axis) for k, i in enumerate(cell))
        if after[axis] < n and after not in read:
            read[after] = np.array(solver.primitive_at(after))
        found.append(read.get(after) if after[axis] < n else None)
    return found


def _centre(sim, cell: tuple, whole: bool = False) -> tuple:
    """The cell's centre as three coordinates (0 along the axes the grid lacks), for source();
    `cell` in this rank's block, or in the whole grid (`whole`)."""
    solver = sim.solver
    first = (not whole and tuple(solver.offset)) or (0,) * len(cell)
    x = [lo + (i + o + 0.5) * h for lo, i, o, h in zip(sim.lower, cell, first, solver.dx)]
    return tuple(x + [0.0] * (3 - len(x)))


def _failed(model, found) -> tuple[str, str]:
    """(the function's name, what it did: 'returned nan', 'did not return within 5 s')."""
    role, result = found[0], found[3]
    name = getattr(model_host.python_function(model, role), "__name__", role)
    return name, (f"did not return within {model_host.TIME_LIMIT_S:g} s" if result is None else
                  "returned " + (f"{result[0]:.6g}" if result.size == 1 else
                                 "[" + ", ".join(f"{v:.6g}" for v in result) + "]"))


def _blame_text(model, found, cell: tuple, step: int, predicted: str = "") -> str:
    """The sentence naming the function, what it returned and the state it got."""
    _, axis, shown, _, taken = found
    name, what = _failed(model, found)
    states = " and ".join(model_host.describe(model.primitive, w) for w in shown)
    frame = (f" (its vectors turned to a face normal to {'xyz'[axis]})"
             if axis and model.primitive.vectors else "")
    params = "".join(f", {n} = {v:.6g}" for n, v in taken.items())
    origin = predicted or f"cell {cell}'s state at step {step}"
    return (f"The model's {name}() ({model.source_file}) {what} for the finite, admissible state "
            f"{states}{frame}{params} ({origin}): the model, not the scheme, fails there (no cfl "
            f"avoids it); make {name}() finite for such states.")
