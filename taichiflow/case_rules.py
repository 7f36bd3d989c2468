"""Case rules that tie several keys together, applied after a table's keys are checked
(the `post=` of case.Table): they need only the location object's error(), not the specs,
so they live apart from case.py and keep it short."""
from __future__ import annotations

import math

from . import registry
from .toml_text import show

AXES = ("x", "y", "z")


def check_ordered(lower, upper, at):
    """upper > lower along every grid axis (grid, box)."""
    for i in range(at.ctx.dim):
        if not upper[i] > lower[i]:
            raise (at / "upper").error(f"must be greater than lower along every grid axis, "
                                       f"got upper[{i}] = {upper[i]!r} <= lower[{i}] = {lower[i]!r}")


def check_grid(grid, at):
    check_ordered(grid["lower"], grid["upper"], at)


def check_box(region, at):
    check_ordered(region["lower"], region["upper"], at)


def check_half_space(region, at):
    if not any(region["normal"][:at.ctx.dim]):
        axes = ", ".join(AXES[:at.ctx.dim])
        raise (at / "normal").error(f"must have a nonzero component along the grid's axes ({axes}), "
                                    f"got {show(region['normal'])}")


def check_amr(amr, at):
    if amr["block_cells"] % 2:
        raise (at / "block_cells").error(f"must be even (a block splits into halves), got {amr['block_cells']}")
    for i, region in enumerate(amr["regions"]):
        if region["level"] > amr["max_level"]:
            raise (at / "regions" / i / "level").error(f"must be at most max_level ({amr['max_level']}), "
                                                       f"got {region['level']}")
    if amr.get("criteria_max_level", 0) > amr["max_level"]:
        raise (at / "criteria_max_level").error(f"must be at most max_level ({amr['max_level']}), "
                                                f"got {amr['criteria_max_level']}")
    if amr["derefine_below"] >= amr["refine_above"]:
        raise (at / "derefine_below").error(f"must be below refine_above ({amr['refine_above']}), "
                                            f"got {amr['derefine_below']}")


def unused_scheme_keys(written: dict, scheme: dict, keys: dict) -> list[str]:
    """Warnings for the [scheme] keys a case sets that its scheme does not read: a
    reconstruction's or Riemann solver's option beside another one (limiter beside weno5,
    wave_speeds beside rusanov), and every face key beside a method with its own flux (SHASTA).
    `written`: the table as the file has it; `keys`: the schema's keys. A key at its default is
    not warned about (a run's resolved case.toml lists every default)."""
    method = registry.methods.get(scheme["method"])
    defaults = {key: spec.default for key, spec in keys.items()} | {"riemann": method.default_riemann}
    given = {key: value for key, value in written.items() if key in keys and value != defaults[key]}
    options = {key for catalogue in (registry.reconstructions, registry.riemann_solvers)
               for entry in catalogue.entries() for key in entry.options} - {"variables"}
    if method.own_flux:
        read, unread = set(), options | {"reconstruction", "riemann"}
        chosen = f"method = '{method.name}' (its own flux)"
    else:
        recon = registry.reconstructions.get(scheme["reconstruction"])
        riemann = registry.riemann_solvers.get(scheme["riemann"])
        read, unread = set(recon.options) | set(riemann.options), options
        chosen = f"reconstruction = '{recon.name}' and riemann = '{riemann.name}'"
    return [f"[scheme] {key} = {given[key]!r} is not read by {chosen}: it has no effect"
            for key in given if key in unread and key not in read]


_AXES_WORDS = {1: "the axis", 2: "both axes", 3: "the three axes"}


def check_stable_cfl(scheme, at):
    """cfl no higher than the stable limit of a choice that has one (a registry entry's
    courant_sum): with dt = cfl / max over axes of (speed / dx), the Courant numbers of the d
    axes a step crosses together add up to as much as d cfl. FORCE-type fluxes cross every axis
    (their alpha is the dimension); a reconstruction's predictor and a one-stage integrator
    those of an unsplit step."""
    dim = at.ctx.dim
    unsplit = 1 if scheme.get("dimensional_splitting") else dim
    tables = [(scheme, at)] + [({**scheme, **scheme["retry"]}, at / "retry")] * bool(scheme.get("retry"))
    for table, where in tables:
        if registry.methods.get(table["method"]).own_flux:
            continue
        choices = [("reconstruction", registry.reconstructions.get(table["reconstruction"]), unsplit),
                   ("riemann", registry.riemann_solvers.get(table["riemann"]), dim),
                   ("integrator", registry.integrators.get(table["integrator"]), unsplit)]
        for key, entry, axes in choices:
            if entry.courant_sum is None or scheme["cfl"] <= entry.courant_sum / axes * (1 + 1e-12):
                continue
            limit = entry.courant_sum / axes
            shown = f"1/{axes}" if entry.courant_sum == 1.0 and axes > 1 else f"{limit:g}"
            raise (at / "cfl").error(
                f"{scheme['cfl']:g} is above {shown}, the stable limit of {key} = '{entry.name}'"
                f"{' (the retry scheme)' * (where is not at)} on a {dim}D grid: it is stable while the Courant "
                f"numbers of {_AXES_WORDS[axes]} add up to at most {entry.courant_sum:g}; set [scheme] cfl "
                f"<= {math.floor(limit * 1000) / 1000:g}")


def check_scheme(scheme, at):
    """The method's defaults for riemann and variables, the choices it refuses, and cfl within
    the stable limit of the choices (check_stable_cfl)."""
    method = registry.methods.get(scheme["method"])
    scheme.setdefault("riemann", method.default_riemann)
    scheme.setdefault("variables", method.default_variables)
    for other in registry.methods.entries():  # keys of one method: its defaults, refused for the others
        for key, default in other.options:
            if other is method:
                scheme.setdefault(key, default)
            elif key in scheme:
                raise (at / key).error(f"is read by method = '{other.name}' only, not '{method.name}'")
    if method.own_flux and scheme.get("retry"):
        raise (at / "retry").error(f"method = '{method.name}' uses no reconstruction or Riemann solver: a retry "
                                   f"with other ones would repeat the same step")
    tables = [(scheme, at)] + [(scheme["retry"], at / "retry")] * bool(scheme.get("retry"))
    for table, where in tables:
        for key, allowed in (("riemann", method.riemann), ("variables", method.variables)):
            if key in table and allowed is not None and table[key] not in allowed:
                raise (where / key).error(f"method = '{method.name}' takes {key} = "
                                          f"{' or '.join(repr(a) for a in allowed)}, not {table[key]!r}")
        recon = registry.reconstructions.get(table.get("reconstruction", scheme["reconstruction"]))
        if method.per_face and recon.needs_model and not method.own_flux:
            raise (where / "reconstruction").error(f"method = '{method.name}' reconstructs fluxes, which "
                                                   f"'{recon.name}' cannot (its predictor evolves states)")
    check_stable_cfl(scheme, at)


SIDES = ("lower", "upper")


def check_boundary(boundary, at):
    """Every face of a kind that takes a state (inflow) has one in [boundary.inflow], every face
    of a kind that imposes values (a hydraulic discharge, depth or stage) has them in [boundary]
    discharge, depth or stage, and only those faces do."""
    entries = registry.boundary_kinds.entries()
    takes_state = [entry.name for entry in entries if entry.needs_state]
    imposed = {name: [entry.name for entry in entries if name in entry.imposes]
               for entry in entries for name in entry.imposes}
    for axis in AXES:
        kinds = boundary.get(axis)
        for side, kind in zip(SIDES, kinds or (None, None)):
            face = f"{axis}_{side}"
            if kind in takes_state and face not in boundary["inflow"]:
                raise (at / axis).error(f"face {face} is '{kind}' but [boundary.inflow] has no {face} state")
            needs = registry.boundary_kinds.get(kind).imposes if kind else ()
            for name, takers in imposed.items():
                if name in needs and face not in boundary.get(name, {}):
                    raise (at / axis).error(f"face {face} is '{kind}', which imposes the {name}, but "
                                            f"[boundary] {name} has no {face} value")
            for table, takers in [("inflow", takes_state), *imposed.items()]:
                if face in boundary.get(table, {}) and kind not in takers:
                    why = (f"the grid has no {axis} axis" if kinds is None
                           else f"face {face} is '{kind}', not {' or '.join(map(repr, takers))}")
                    raise (at / table / face).error(f"a {'state' if table == 'inflow' else 'value'} is given "
                                                    f"but {why}")
