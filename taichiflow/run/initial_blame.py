"""Which state a case gave makes its initial state inadmissible.

The step check sees only the converted state of a cell: an SR background moving at 1.5 c
showed as "rho = nan" at cell (0, 0). When the very first check fails, each state the case
gives (the background, each region's) goes through the model's own W -> U -> W and its
admissibility test, and the first that fails is named with the values the user wrote and the
model's rule (its admissible() docstring). Kernels and fields made here come after every other
(the run is ending), so no solver kernel changes.
"""
from __future__ import annotations

import inspect

import numpy as np
import taichi as ti

from ..initial import state_vector
from ..resolved import InitialTable


def given_states(initial: InitialTable) -> list:
    """(where, state table) of the background and of each region (its missing variables from the
    background), in the order the fill lays them; the tables as the case file writes them."""
    background = initial.background.as_dict()
    states = [("[initial] background", background)]
    for n, region in enumerate(initial.regions):
        states.append((f"[initial] regions.{n}.state", {**background, **region.state.as_dict()}))
    return states


def first_inadmissible(phys, initial: InitialTable):
    """(where, the state given, the model's rule) of the first given state that no W -> U -> W of
    the model brings back admissible, or None (then the fill's blending made the bad cell)."""
    states = given_states(initial)
    if not states[0][1]:  # (no background given: nothing to blame)
        return None
    vectors = np.array([state_vector(state, phys.model.primitive) for _, state in states])
    ok = _admissible_after_round_trip(phys, vectors)
    for (where, state), good in zip(states, ok):
        if not good:
            return where, state, admissible_rule(phys.model)
    return None


def _admissible_after_round_trip(phys, vectors: np.ndarray) -> np.ndarray:
    n, width = vectors.shape
    w_in = ti.Vector.field(width, phys.dtype, shape=n)
    ok = ti.field(ti.i32, shape=n)
    w_in.from_numpy(vectors.astype(np.float64 if phys.dtype == ti.f64 else np.float32))

    @ti.kernel
    def check():
        for k in range(n):
            w = w_in[k]
            ok[k] = phys.admissible(w) & phys.admissible(phys.prim(phys.cons(w)))

    check()
    return ok.to_numpy().astype(bool)


def admissible_rule(model) -> str:
    """The model's admissible() docstring's first line, else what the framework checks."""
    function = model.functions.get("admissible")
    doc = inspect.getdoc(function) if function is not None else None
    positives = f"{', '.join(model.positive)} > 0" if model.positive else ""
    rule = doc.splitlines()[0].rstrip(".") if doc else ""
    return "; ".join(part for part in (positives, rule) if part) or "finite values"


def describe(state: dict) -> str:
    """'rho = 1, vel = [1.5, 0, 0], p = 1'."""
    return ", ".join(f"{name} = {value:g}" if not isinstance(value, list) else
                     f"{name} = [{', '.join(f'{v:g}' for v in value)}]" for name, value in state.items())
