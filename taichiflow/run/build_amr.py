"""From a loaded case with [amr] to a PackSolver holding its initial state, refined before the
first step so that initial interfaces and shocks start at the finest level."""
from __future__ import annotations

import functools

from ..bound_model import BoundModel
from ..errors import CaseError, ModelError
from ..kernels.amr.ghosts import SUPPORTED_KINDS
from ..kernels.amr.initial import make_pool_fill
from ..kernels.amr.criteria import Criteria
from ..kernels.amr.solver import PackSolver, PoolExhausted
from ..mesh import Forest, Region
from ..parallel.comm import world
from .. import registry
from ..registry import FINITE_VOLUME, methods
from ..resolved import AmrTable, ResolvedCase
from .build import Built, cell_average, plan_for, prepare


def amr_refusal(case) -> str | None:
    """Why the case's scheme cannot run with [amr] (None if it can); `case`: a ResolvedCase
    or case.load_case's dict."""
    case = ResolvedCase.of(case)
    scheme = case.scheme
    method = methods.get(scheme.method)
    if method.own_flux or method.name != FINITE_VOLUME:
        return f"[scheme] method = '{method.name}' is not supported with [amr] (finite volumes only)"
    if scheme.dimensional_splitting:
        return "[scheme] dimensional_splitting is not supported with [amr] (the blocks take unsplit steps)"
    if scheme.retry:
        return "[scheme] retry is not supported with [amr] yet: a step that leaves a bad cell stops the run"
    if registry.reconstructions.get(scheme.reconstruction).needs_model and case.dim > 1:
        return (f"[scheme] reconstruction = '{scheme.reconstruction}' is not supported with [amr] on 2D and 3D "
                f"grids yet (its predictor over every axis needs the states half a step ahead in the blocks' ghost "
                f"layers); use 'plm' with integrator = 'ssprk2'")
    for axis, kinds in enumerate(case.boundary_kinds):
        for kind in kinds:
            if kind not in SUPPORTED_KINDS:
                return (f"[boundary] {'xyz'[axis]} = '{kind}' is not supported with [amr] "
                        f"(supported: {', '.join(SUPPORTED_KINDS)})")
    return None


def roots_of(case: ResolvedCase) -> tuple:
    """Root blocks per axis: [grid] cells over [amr] block_cells, which must divide them."""
    n, cells = case.amr.block_cells, case.grid.cells
    if any(c % n for c in cells):
        raise CaseError(f"{case.source}: [grid] cells = {list(cells)} must be multiples of [amr] block_cells = {n} "
                        f"(the root level is made of whole blocks)")
    return tuple(c // n for c in cells)


def indicator_fields(case: ResolvedCase, model) -> tuple:
    """The primitive indices Löhner's indicator reads: [amr] fields, else the model's density
    (else its first primitive variable)."""
    names = case.amr.fields or [model.density or model.primitive.names[0]]
    indices = []
    for name in names:
        if name not in model.primitive.names or model.primitive.sizes[name] != 1:
            raise CaseError(f"{case.source}: [amr] fields: '{name}' is not a scalar primitive variable of the model "
                            f"(its scalars: {', '.join(n for n in model.primitive.names if model.primitive.sizes[n] == 1)})")
        indices.append(model.primitive.index(name))
    return tuple(indices)


def criteria_of(amr: AmrTable) -> Criteria:
    """The regrid's criteria: [amr] refine_above, derefine_below, gradient_above and the finest
    level they ask for outside the regions (AmrTable.criteria_up_to)."""
    return Criteria(amr.refine_above, amr.derefine_below, amr.gradient_above, amr.criteria_up_to)


def build_pack(case, initial: bool = True, capacity: int = 0) -> Built:
    """The PackSolver of a case with [amr] (a ResolvedCase, or case.load_case's dict), its
    initial state set and refined (initial=False: the root blocks with their state unset, for a
    restart or a larger pool to load its own; capacity: the pool's block slots, instead of [amr]
    capacity). A pool too small for the initial refinement is built again twice as large ([amr]
    grow; else PoolExhausted). Built.case is the case settled (run/build.py's prepare)."""
    case = ResolvedCase.of(case)
    while True:
        try:
            return _built_pack(case, initial, capacity)
        except PoolExhausted as full:
            if not case.amr.grow:
                raise
            capacity = max(2 * full.capacity, full.needed + full.needed // 4)


def _built_pack(case: ResolvedCase, initial: bool, capacity: int) -> Built:
    """build_pack with one pool size."""
    refusal = amr_refusal(case)
    if refusal:
        raise CaseError(f"{case.source}: {refusal}")
    amr, grid = case.amr, case.grid
    roots = roots_of(case)
    prepared = prepare(case, world())
    model, params = prepared.model, prepared.params
    kinds = case.boundary_kinds
    N, dim = amr.block_cells, len(roots)
    plan = plan_for(case, prepared.arch, prepared.precision, cells=(N,) * dim, kinds=kinds, model=model)
    phys = BoundModel(model, params, prepared.dtype)
    forest = Forest.uniform(roots, N, amr.max_level, tuple(k[0] == "periodic" for k in kinds))
    capacity = capacity or amr.pool_slots(len(forest.levels))
    extent = tuple(zip(grid.lower, grid.upper))
    try:
        solver = solver_class(amr, case.parallel.exchange)(phys, plan, forest, extent, kinds, prepared.inflow, capacity,
                                   indicator_fields(case, model), amr.epsilon, [Region.of(r) for r in amr.regions])
        fill = make_pool_fill(solver.pool, prepared.initial, model.primitive, roots, grid.lower, grid.upper, params,
                              cell_average(case, phys))
    except ValueError as err:
        raise ModelError(f"{case.source}: {err}") from None
    if initial:
        refine_initial_state(solver, fill, criteria_of(amr)._replace(derefine_below=-1.0))
    return Built(prepared.arch, prepared.precision, prepared.fast_math, model, params, plan, solver,
                 prepared.shock_jump, case=prepared.case)


def solver_class(amr: AmrTable, exchange: str = "auto"):
    """PackSolver on one rank; on many, each rank's share of the forest (parallel/amr_solver.py),
    its copies' cells moved through the staging [parallel] exchange names."""
    comm = world()
    if comm.size == 1:
        return PackSolver
    from ..parallel.amr_solver import RankPackSolver
    return functools.partial(RankPackSolver, comm=comm, rebalance_above=amr.rebalance_above, exchange=exchange)


def refine_initial_state(solver: PackSolver, fill, criteria: Criteria) -> None:
    """Fill the pool, then refine where the criteria ask and fill again at the new cell widths,
    a level per pass, until no block splits."""
    fill()
    solver.check_state()
    for _ in range(solver.forest.max_level):
        if not solver.adapt(criteria):
            break
        fill()
        solver.check_state()
