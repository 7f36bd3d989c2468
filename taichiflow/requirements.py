"""Checks that a case asks only for what its model provides, before anything compiles.

What each choice needs (model hooks, roles) is read from registry.py, so a solver, a
reconstructed-variables transform or a boundary kind registered there is checked here with
no change to this file. Each failure names the case file, the key and what the model lacks,
and suggests a choice that works. Taichi-free: it only reads the model's declaration.
"""
from __future__ import annotations

from . import registry
from .errors import ModelError, did_you_mean

__all__ = ["check_case_against_model", "missing_hooks"]


def _lacks_hook(model, hook: str) -> bool:
    return hook not in model.functions


def _lacks_role(model, role: str) -> bool:
    return getattr(model, role, None) is None


def missing_hooks(model, scheme) -> list[str]:
    """What `model` lacks for the Riemann solver and wave speeds of `scheme` (empty: nothing):
    roles by name, then functions as "@model.name".

    The registry says what each choice needs: hllc the velocity/density/pressure roles
    (Batten's contact speed) and hllc_star; a solver that reads wave_speeds also the hooks
    of the estimate (einfeldt: roe_speeds)."""
    solver = registry.riemann_solvers.get(scheme.get("riemann", "hllc"))
    if solver.provided_by is not None and solver.name not in model.solvers:
        return [f"its own Riemann solver '{solver.name}' (model '{solver.provided_by}' provides one)"]
    hooks = list(solver.needs_hooks)
    if "wave_speeds" in solver.options:
        hooks += registry.wave_speeds.get(scheme.get("wave_speeds", "davis")).needs_hooks
    return ([role for role in solver.needs_roles if _lacks_role(model, role)]
            + [f"@model.{hook}" for hook in hooks if _lacks_hook(model, hook)])


def _one_of(items) -> str:
    """a, b or c."""
    items = list(items)
    return " or ".join(items) if len(items) <= 2 else ", ".join(items[:-1]) + " or " + items[-1]


def _quoted_or(names) -> str:
    """'a', 'b' or 'c'."""
    return _one_of(f"'{name}'" for name in names)


def _working_solvers(model) -> str:
    """The Riemann solvers (with their wave speeds, where they read them) the model supports,
    e.g. "'rusanov', 'hll' with 'davis' speeds, 'force' or 'musta'"."""
    choices = []
    for solver in registry.riemann_solvers.entries():
        if "wave_speeds" not in solver.options:
            if not missing_hooks(model, {"riemann": solver.name}):
                choices.append(f"'{solver.name}'")
            continue
        speeds = [speed for speed in registry.wave_speeds.names()
                  if not missing_hooks(model, {"riemann": solver.name, "wave_speeds": speed})]
        if speeds:
            choices.append(f"'{solver.name}' with {_quoted_or(speeds)} speeds")
    return _one_of(choices)


def _builds_recon_and_solver(scheme: dict) -> bool:
    """Whether the case's method builds the reconstruction and Riemann solver it names (a
    method with its own face flux, SHASTA, ignores them: they need nothing of the model)."""
    return not registry.methods.get(scheme.get("method", registry.FINITE_VOLUME)).own_flux


def _check_riemann(scheme: dict, model, where: str) -> None:
    if not _builds_recon_and_solver(scheme):
        return
    missing = missing_hooks(model, scheme)
    if missing:
        raise ModelError(f"{where}: [scheme] riemann = '{scheme['riemann']}' (wave_speeds = "
                         f"'{scheme['wave_speeds']}') needs the model '{model.name}' to declare "
                         f"{', '.join(missing)}; use {_working_solvers(model)}")


def _check_variables(scheme: dict, model, where: str) -> None:
    chosen = registry.reconstructed_variables.get(scheme["variables"])
    missing = [hook for hook in chosen.needs_hooks if _lacks_hook(model, hook)]
    if missing:
        working = [entry.name for entry in registry.reconstructed_variables.entries()
                   if not any(_lacks_hook(model, hook) for hook in entry.needs_hooks)]
        raise ModelError(f"{where}: [scheme] variables = '{chosen.name}' needs the model "
                         f"'{model.name}' to declare {', '.join('@model.' + h for h in missing)}; "
                         f"use {_quoted_or(working)}")
    recon = registry.reconstructions.get(scheme["reconstruction"])
    if recon.variables is not None and chosen.name not in recon.variables and _builds_recon_and_solver(scheme):
        reason = f" ({recon.variables_reason})" if recon.variables_reason else ""
        raise ModelError(f"{where}: [scheme] variables = '{chosen.name}' does not combine with "
                         f"reconstruction = '{recon.name}'{reason}")


def _check_method(scheme: dict, model, where: str) -> None:
    """What the method needs of the model: conservation form throughout, and the hooks of
    its reconstructed variables (finite differences' characteristics: the Jacobians too)."""
    method = registry.methods.get(scheme.get("method", registry.FINITE_VOLUME))
    if method.conservative_only and (model.advected or model.balance):
        what = (f"advects {', '.join(model.advected)} non-conservatively" if model.advected
                else "has face balance terms (face_balance, cell_balance)")
        raise ModelError(f"{where}: [scheme] method = '{method.name}' needs every equation in conservation "
                         f"form, but model '{model.name}' {what}; use method = '{registry.FINITE_VOLUME}'")
    if scheme.get("dimensional_splitting") and "source" in model.functions:
        raise ModelError(f"{where}: [scheme] dimensional_splitting: model '{model.name}' has a source term, which "
                         f"the sweeps add once per stage and a split step would add once per axis; leave it false")
    if scheme.get("density_limiter") and _lacks_role(model, "density"):
        raise ModelError(f"{where}: [scheme] density_limiter limits the density, which model '{model.name}' does "
                         f"not name (Model(density=...)); leave it false")
    missing = [hook for hook in method.hooks_for(scheme["variables"]) if _lacks_hook(model, hook)]
    if missing:
        raise ModelError(f"{where}: [scheme] method = '{method.name}' with variables = '{scheme['variables']}' "
                         f"needs the model '{model.name}' to declare {', '.join('@model.' + h for h in missing)}; "
                         f"use variables = '{method.default_variables}'")


def _check_model_limits(case: dict, model, where: str) -> None:
    """The grid dimensions a model is written for, and the variables a model with face balance
    terms must be reconstructed in where it declares them (a lake at rest stays at rest only in
    those; a relativistic model's four-velocity is a preference, conserved variables work too)."""
    dim = len(case["grid"]["cells"])
    if dim not in model.dimensions:
        raise ModelError(f"{where}: [grid] cells: model '{model.name}' is written for "
                         f"{_one_of(f'{d}D' for d in model.dimensions)} grids, not {dim}D")
    variables = case["scheme"]["variables"]
    if model.balance and "to_reconstructed" in model.functions and variables != "primitive":
        raise ModelError(f"{where}: [scheme] variables = '{variables}': model '{model.name}' balances its faces "
                         "in the variables it declares (to_reconstructed); use variables = 'primitive'")


def _check_fields(case: dict, model, where: str) -> None:
    known = list(model.primitive.names) + list(model.derived)
    for name in case["output"]["fields"]:
        if name not in known:
            raise ModelError(f"{where}: [output] fields: '{name}' is not a field of model "
                             f"'{model.name}'{did_you_mean(name, known)}; fields: {known}")


def _check_boundaries(case: dict, model, where: str) -> None:
    """Every boundary kind is a registered one (never a default) whose roles, variables and
    parameters the model has (a hydraulic kind reads a depth h and gravity g)."""
    for axis in "xyz"[:len(case["grid"]["cells"])]:
        for kind in dict.fromkeys(case["boundary"][axis]):
            entry = registry.boundary_kinds.get(kind)
            for role in entry.needs_roles:
                if _lacks_role(model, role):
                    reason = f" {entry.role_reason}" if entry.role_reason else ""
                    raise ModelError(f"{where}: [boundary] {axis} = '{kind}' needs a model that names its "
                                     f"{role} (Model({role}=...)){reason}")
            needed = ([(f"primitive variable '{name}'", name in model.primitive.names)
                       for name in entry.needs_variables]
                      + [(f"parameter '{name}'", name in model.params) for name in entry.needs_params])
            missing = [what for what, present in needed if not present]
            if missing:
                needed = [what for what, _ in needed]
                raise ModelError(f"{where}: [boundary] {axis} = '{kind}' needs a model with {' and '.join(needed)}; "
                                 f"model '{model.name}' has no {' or '.join(missing)}")


def check_case_against_model(case: dict, model, where: str) -> None:
    """Raise ModelError if the case asks its model for a hook or role it does not declare."""
    scheme = case["scheme"]
    _check_riemann(scheme, model, where)
    _check_variables(scheme, model, where)
    _check_method(scheme, model, where)
    _check_model_limits(case, model, where)
    _check_fields(case, model, where)
    _check_boundaries(case, model, where)
