"""What a failed run says: where the state went bad, in which variable, and what to change.

What to change is the model, not the scheme, where one of the model's functions turns a finite
state near the bad cell into NaN: `explain` evaluates them there, as plain Python on the host
(model_host.py), before it advises a lower cfl or a more diffusive scheme."""
from __future__ import annotations

import numpy as np

from .. import checkpoint
from .. import registry
from ..kernels.plan import density_limiter_unfit
from ..resolved import SchemeTable
from .model_blame import model_blame


def bad_cell_message(model, w, cell, when: str, failing: str | None = None) -> str:
    """'inadmissible <when> at cell (i, j, k): <the first bad variable and why>'."""
    return f"inadmissible {when} at cell {cell}: {bad_variable(model, w, failing)}"


def bad_variable(model, w, failing: str | None = None) -> str:
    """The first bad variable of a bad cell's state w and why. A finite state with its positives
    > 0 failed the model's admissible() or gave a non-finite signal speed (the step check's
    test: kernels/reductions.py); `failing` says which where the host found it ("the model's
    sound_speed() returned nan": model_blame.blame_of_state)."""
    names, w = model.primitive.component_names(), [float(v) for v in w]
    variable = next((f"{n} = {v!r}" for n, v in zip(names, w) if not np.isfinite(v)), None)
    if variable is None:
        variable = next((f"{n} = {w[model.primitive.index(n)]!r} (must be > 0)"
                         for n in model.positive if not w[model.primitive.index(n)] > 0), None)
    if variable is None:
        state = dict(zip(names, w))
        variable = (f"a signal speed is not finite ({failing})" if failing else
                    f"the model's admissible() is false, or a signal speed is not finite, for {state}"
                    if "admissible" in model.functions else f"a signal speed is not finite for {state}")
    return variable


# The robust choices the advice suggests, first the most robust (registry: diffusive).
ROBUST_RECONSTRUCTION = ("plm", "minmod")
ROBUST_RIEMANN = ("hll", "rusanov")


def _more_diffusive(scheme: SchemeTable) -> list:
    """The changes of reconstruction and Riemann solver towards the robust ones."""
    changes = []
    if not registry.reconstructions.get(scheme.reconstruction).diffusive:
        changes.append(f"reconstruction = '{ROBUST_RECONSTRUCTION[0]}' with limiter = '{ROBUST_RECONSTRUCTION[1]}'")
    elif scheme.reconstruction == "plm" and scheme.limiter != ROBUST_RECONSTRUCTION[1]:
        changes.append(f"limiter = '{ROBUST_RECONSTRUCTION[1]}'")
    if not registry.riemann_solvers.get(scheme.riemann).diffusive:
        changes.append(f"riemann = '{ROBUST_RIEMANN[0]}'")
    elif scheme.riemann != ROBUST_RIEMANN[1]:
        changes.append(f"riemann = '{ROBUST_RIEMANN[1]}'")
    return changes


def advice(scheme, out_dir, emptied: bool = False) -> str:
    """The likely fixes for a blow-up, given what the case already does: never the scheme
    that failed (the registry says which choices are the robust ones). `scheme`: the case's
    SchemeTable (or its mapping: keys it leaves out take the schema's defaults); `emptied`: the
    bad cell's density is not positive (then the density limiter, where the scheme can take it)."""
    scheme = SchemeTable.of(scheme)
    tips = [f"a lower [scheme] cfl (now {scheme.cfl:g})"]
    if not scheme.positivity_fallback:
        tips.append("[scheme] positivity_fallback = true")
    if emptied and not scheme.density_limiter and density_limiter_unfit(scheme) is None:
        tips.append("[scheme] density_limiter = true (a cell beside much denser ones whose face densities take up "
                    "theirs empties: docs/cases.md)")
    method = registry.methods.get(scheme.method)
    if method.own_flux:  # its faces use neither the reconstruction nor the Riemann solver: its own keys
        tips += [f"another [scheme] {key} (now {_or(getattr(scheme, key, None), default):g})"
                 for key, default in method.options]
    elif _more_diffusive(scheme):
        tips.append("a more diffusive scheme ([scheme] " + ", ".join(_more_diffusive(scheme)) + ")")
    integrator = scheme.integrator
    if not registry.integrators.get(integrator).ssp:
        tips.append(f"a strong-stability-preserving integrator ([scheme] integrator = 'ssprk3'; '{integrator}' "
                    "may break in a stage the positivity that a forward Euler step keeps)")
    text = "Try " + ", or ".join(tips) + "."
    saved = sorted(out_dir.glob(checkpoint.PATTERN)) if out_dir else []
    if saved:
        text += (f" The last good checkpoint is {saved[-1]} (--restart it with the changed case, naming each "
                 f"changed [scheme] key with --allow-change KEY).")
    return text


def _or(value, default):
    """A key the case may leave out (None): the method's default."""
    return default if value is None else value


def explain(sim, linear_index: int, blame: str | None = None, w=None) -> str:
    """What to change after a failed step: the model function that turns a finite state near the
    bad cell into a non-finite value (run/model_blame.py; then neither the cfl nor the scheme is
    advised), else the scheme's advice; `blame`: that sentence where it is already known (the
    bad cell's own state: model_blame.blame_of_state). Collective: the rank owning the cell
    searches, and tells the others."""
    if blame:
        return blame
    solver = sim.solver
    rank, local = sim.share.owner(linear_index, solver.halo.rank)
    solver.refresh_primitives()  # (W of the state now held: the last good one where it was kept)
    blame = model_blame(sim, solver.cell(local)) if local is not None else None
    blame = solver.halo.bcast(blame, root=rank)
    return blame or advice(sim.resolved.scheme, sim.out_dir, emptied=lost_density(sim.model, w))


def lost_density(model, w) -> bool:
    """Whether the bad cell's state `w` (primitive, None: unknown) has a density that is not
    positive (NaN included), for a model that names its density."""
    if w is None or not model.density:
        return False
    return not float(np.asarray(w, dtype=float)[model.primitive.index(model.density)]) > 0.0
