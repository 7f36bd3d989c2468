"""The model-dependent half of a case's states: materials, shocks, inflow from regions,
the model's part of perturbations.

A case names materials (`material = "water"`), asks for a shock by its pressure
(`shock_pressure` on a half-space region), an inflow equal to a region's state
(`{region = 0}`), or a perturbation that needs the model (a linear wave's eigenvector, the
velocity a turbulence field adds to); this module turns those into full primitive states and
resolved perturbations with the model's plain-Python set-up hooks and roles, then validates
them against the model's layout.
"""
from __future__ import annotations

import math

from .. import registry
from ..case import CaseError, suggest, validate_state
from ..resolved import Record, ResolvedCase, thawed
from ..waves import linear_wave_eigenvector


def _expand_material(table: Record, case: ResolvedCase, model, params: dict, where: str) -> dict:
    """A state table as the case file writes it (lists, not tuples: validate_state's input),
    with its material, if it names one, expanded into the model's variables."""
    table = table.as_dict()
    if "material" not in table:
        return table
    name = table["material"]
    materials = case.materials
    if name not in materials:
        raise CaseError(f"{where}: unknown material '{name}'{suggest(name, materials)}; "
                        f"[materials] defines {sorted(materials) or 'none'}")
    if "material" not in model.setup:
        raise CaseError(f"{where}: model '{model.name}' has no materials (no @model.material hook)")
    values = model.setup["material"](materials[name].gamma, materials[name].pc, params)
    rest = {k: v for k, v in table.items() if k != "material"}
    return {**values, **rest}


def resolve_states(case, model, params: dict) -> tuple[dict, dict, float | None]:
    """(initial with full region states, inflow face -> full state, shock pressure jump) of a
    ResolvedCase (or case.load_case's dict); the tables as the initial fill takes them: dicts."""
    case = ResolvedCase.of(case)
    where = case.source
    sizes = model.primitive.sizes
    initial = {"background": None, "regions": [], "perturbations": [], "values": case.initial.values,
               "quadrature_points": case.initial.quadrature_points}
    background = validate_state(_expand_material(case.initial.background, case, model, params,
                                                 f"{where}: [initial] background"),
                                sizes, f"{where}: [initial] background")
    regions, jump = [], None
    for n, given in enumerate(case.initial.regions):
        at = f"{where}: [initial] regions.{n}"
        state = validate_state(_expand_material(given.state, case, model, params, at + ".state"),
                               sizes, at + ".state", partial=True)
        region = {**given.as_dict(), "state": state}
        if "shock_pressure" in region:
            region["state"], region_jump = _shocked(region, {**background, **state}, model, params, at)
            jump = jump if jump is not None else region_jump
        regions.append(region)
    perturbations = [_resolved_perturbation(p.as_dict(), background, model, params,
                                            f"{where}: [initial] perturbations.{n}")
                     for n, p in enumerate(case.initial.perturbations)]
    initial.update(background=background, regions=regions, perturbations=perturbations)
    _require_positive(background, model, f"{where}: [initial] background")
    for n, region in enumerate(regions):
        _require_positive({**background, **region["state"]}, model, f"{where}: [initial] regions.{n}.state")

    inflow = {}
    for face, table in case.boundary.inflow.items():
        at = f"{where}: [boundary] inflow.{face}"
        if "region" in table:
            if table.region >= len(regions) or len(table) > 1:
                raise CaseError(f"{at}: {{region = N}} must be alone and name one of the "
                                f"{len(regions)} regions")
            inflow[face] = {**background, **regions[table.region]["state"]}
        else:
            inflow[face] = validate_state(_expand_material(table, case, model, params, at), sizes, at)
    return initial, inflow, jump


def _require_positive(state: dict, model, where: str) -> None:
    """CaseError naming the value given where a variable the model keeps positive is not (the
    state converted would show only its consequence: rho = 0 gave "vel_x = nan")."""
    for name in model.positive:
        value = state.get(name)
        if isinstance(value, (int, float)) and not value > 0:
            raise CaseError(f"{where}: {name} = {value!r}; model '{model.name}' needs {name} > 0 "
                            f"(its positive variables: {', '.join(model.positive)})")


def _shocked(region: dict, pre: dict, model, params: dict, where: str):
    """Post-shock state of a half-space region; the shock runs out of it (along -normal)."""
    if region["shape"] != "half_space":
        raise CaseError(f"{where}: shock_pressure needs shape = 'half_space'")
    if "shock_state" not in model.setup:
        raise CaseError(f"{where}: model '{model.name}' cannot compute shock states (no @model.shock_state)")
    p_post = region["shock_pressure"]
    if "p" not in pre or p_post <= pre["p"]:
        raise CaseError(f"{where}: shock_pressure {p_post!r} must exceed the pre-shock pressure {pre.get('p')!r}")
    length = math.sqrt(sum(n * n for n in region["normal"]))
    direction = [-n / length for n in region["normal"]]
    post = model.setup["shock_state"](dict(pre), p_post, direction, params)
    return post, p_post - pre["p"]


def _resolved_perturbation(p: dict, background: dict, model, params: dict, where: str) -> dict:
    """A copy of perturbation p with what the fill needs from the model: a turbulence field's
    velocity variable (`_velocity`), a linear wave's lab-frame eigenvector at the background
    state and its phase speed (`_eigenvector`, `_speed`). Keys with a leading underscore are
    never written to a saved case."""
    if p["kind"] == "turbulence":
        if not model.velocity:
            raise CaseError(f"{where}: turbulence needs a model with a velocity (Model(velocity=...)); "
                            f"model '{model.name}' has none")
        return {**p, "_velocity": model.velocity}
    if p["kind"] == "linear_wave":
        eigenvector, speed = linear_wave_eigenvector(p, background, model, params, where)
        return {**p, "_eigenvector": eigenvector, "_speed": speed}
    return dict(p)


def imposed_values(case: ResolvedCase) -> dict:
    """{(axis, side): {name: number or [[t, value], ...]}}: what each face of a kind that imposes
    values (a hydraulic discharge, depth or stage: registry.boundary_kinds) takes from [boundary]
    (series as lists, as kernels/hydraulic_boundaries.py takes them)."""
    boundary = case.boundary
    imposed = {}
    for axis, kinds in enumerate(case.boundary_kinds):
        for side, kind in enumerate(kinds):
            face = f"{'xyz'[axis]}_{('lower', 'upper')[side]}"
            names = registry.boundary_kinds.get(kind).imposes
            if names:
                imposed[(axis, side)] = {name: thawed(getattr(boundary, name)[face]) for name in names}
    return imposed
