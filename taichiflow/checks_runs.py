"""Whole-solver checks of a model for `taichiflow check`: short runs on a periodic box.

These go through `Simulation` exactly as a case file would (load, load-time check, compile,
step), so they test the model together with the framework's update: a uniform state must
stay uniform, and the totals of the conserved variables must not drift. Each `Simulation`
re-initialises Taichi, so these run after the point-wise kernels are done with.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

CELLS = 8      # per axis: WENO5 needs 3 ghost cells, periodic copies need at least as many
STEPS = 5      # conservation: time steps of the random smooth state

CASE = """
[case]
name = "check"
[model]
name = {path}
params = {params}
[run]
arch = "cpu"
precision = "f64"
fast_math = false
[grid]
cells = {cells}
upper = {upper}
[scheme]
reconstruction = "{recon}"
riemann = "{riemann}"
integrator = "lsrk3"
cfl = 0.4
[time]
end = 1.0
[boundary]
{boundaries}
[initial]
background = {state}
"""


def _toml_state(layout, w) -> str:
    """A primitive state as a TOML inline table, floats written to round-trip exactly."""
    return "{ " + ", ".join(f"{name} = {value!r}" for name, value in layout.split(w).items()) + " }"


# A model file that is another one without its source (build_simulation's without_source).
WITHOUT_SOURCE = """\"\"\"{path} without its source: the run checks of `taichiflow check`.\"\"\"
from taichiflow.model import load_model

model = load_model({path!r})
del model.functions["source"], model.signatures["source"]
"""


def build_simulation(model_path, params: dict, layout, state, recon: str, riemann: str, dim: int = 3,
                     without_source: bool = False):
    """A Simulation of the uniform `state` on a periodic box of CELLS per axis in `dim`
    dimensions (the most the model is written for; CPU, f64, no fast math). `without_source`:
    the model's source switched off (a source changes a uniform state and the totals, rightly:
    the runs then test the flux, the update and the boundaries, as for a model without one)."""
    from .case import load_case
    from .run import Simulation

    with tempfile.TemporaryDirectory() as tmp:
        model_file = Path(model_path).resolve()
        if without_source:
            model_file = Path(tmp) / f"{model_file.stem}_without_source.py"
            model_file.write_text(WITHOUT_SOURCE.format(path=str(Path(model_path).resolve())))
        text = CASE.format(path=json.dumps(str(model_file)),
                           params="{ " + ", ".join(f"{k} = {float(v)!r}" for k, v in params.items()) + " }",
                           cells=[CELLS] * dim, upper=[1.0] * dim, recon=recon, riemann=riemann,
                           boundaries="\n".join(f'{axis} = "periodic"' for axis in "xyz"[:dim]),
                           state=_toml_state(layout, state))
        path = Path(tmp) / "check.toml"
        path.write_text(text)
        return Simulation(load_case(path))  # (the model file is read while the Simulation is built)


def per_component_scale(magnitudes: np.ndarray) -> np.ndarray:
    """|magnitudes| floored at 1e-3 of the largest, and at 1 where all are 0 (a state that is
    zero in every variable, then judged by absolute change): never a division by zero."""
    magnitudes = np.abs(magnitudes)
    largest = float(magnitudes.max()) if magnitudes.size else 0.0
    return np.maximum(magnitudes, 1e-3 * largest if largest > 0.0 else 1.0)


def conserved(sim) -> np.ndarray:
    """The conserved state of the interior, (cells, nU)."""
    return sim.solver.conserved_array().reshape(-1, sim.model.conserved.n)


def free_stream_error(sim, left_out=()):
    """Largest change of U over one full time step of the uniform initial state, relative
    per component to |U| (per_component_scale), the components left_out (a split source's)
    aside. Returns (error, cell index, component)."""
    before = conserved(sim)
    reference = before[0]
    sim.advance(sim.end_time, max_steps=sim.step_count + 1)
    after = conserved(sim)
    scale = per_component_scale(reference)
    change = np.abs(np.vstack([before, after]) - reference) / scale
    change = np.where(np.isfinite(change), change, np.inf)
    change[:, list(left_out)] = 0.0
    cell, comp = np.unravel_index(np.argmax(change), change.shape)
    return float(change[cell, comp]), int(cell) % len(before), int(comp)


def smooth_state(a: np.ndarray, b: np.ndarray, rng, shared: bool, dim: int = 3, fixed=()) -> np.ndarray:
    """A periodic smooth primitive field between states a and b on the box of CELLS per axis
    in `dim` dimensions: each component (or all together if `shared`, a convex combination)
    follows a + (b - a) (1 + sin(2 pi x + phi) sin(2 pi y + psi) sin(2 pi z + chi)) / 2 with
    random phases; the components `fixed` (a model's static fields, such as a bed, whose slope
    would be a source) keep a's value."""
    axis = (np.arange(CELLS) + 0.5) / CELLS
    X = np.meshgrid(*[axis] * dim, indexing="ij")
    n = 1 if shared else a.size
    phases = rng.uniform(0.0, 2 * np.pi, size=(n, 3))
    theta = np.stack([0.5 + 0.5 * np.prod([np.sin(2 * np.pi * X[d] + phases[k, d]) for d in range(dim)], axis=0)
                      for k in range(n)], axis=-1)
    w = a + (b - a) * theta
    w[..., list(fixed)] = a[list(fixed)]
    return w


def conservation_error(sim, w: np.ndarray, advected: list[int]):
    """Drift of the totals of U over STEPS steps from the primitive field w, relative per
    component to its L1 norm (per_component_scale); advected variables are left out (not
    conserved). Returns (error, component, steps taken)."""
    sim.set_primitive(w)
    before = sim.solver.reductions()[0]
    volume = float(np.prod(sim.solver.dx))
    l1 = np.abs(conserved(sim)).sum(axis=0) * volume
    start = sim.step_count
    sim.advance(sim.t + 1e3 * sim.end_time, max_steps=start + STEPS)
    after = sim.solver.reductions()[0]
    drift = np.abs(after - before) / per_component_scale(l1)
    drift = np.where(np.isfinite(drift), drift, np.inf)
    drift[advected] = 0.0
    comp = int(np.argmax(drift))
    return float(drift[comp]), comp, sim.step_count - start
