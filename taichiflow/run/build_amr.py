"""From a loaded case with [amr] to a PackSolver holding its initial state, refined before the
first step so that initial interfaces and shocks start at the finest level; and how large a
pool that ran full is built again (grown_capacity: as far as the device's memory allows)."""
from __future__ import annotations

import functools
import socket
from typing import NamedTuple

import taichi as ti

from ..bound_model import BoundModel
from ..errors import CaseError, ModelError
from ..kernels.amr.ghosts import SUPPORTED_KINDS
from ..kernels.amr.initial import make_pool_fill
from ..kernels.amr.criteria import Criteria
from ..kernels.amr.solver import PackSolver, PoolExhausted, slot_bytes
from ..mesh import Forest, Region
from ..parallel.comm import world
from .. import registry
from ..registry import FINITE_VOLUME, methods
from ..resolved import AmrTable, ResolvedCase
from . import device_memory
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


def build_pack(case, initial: bool = True, capacity: int = 0, note=lambda line: None) -> Built:
    """The PackSolver of a case with [amr] (a ResolvedCase, or case.load_case's dict), its
    initial state set and refined (initial=False: the root blocks with their state unset, for a
    restart or a larger pool to load its own; capacity: the pool's block slots, instead of [amr]
    capacity). A pool too small for the initial refinement is built again larger ([amr] grow:
    grown_capacity, whose lines go to `note`; else PoolExhausted). Built.case is the case
    settled (run/build.py's prepare)."""
    case = ResolvedCase.of(case)
    while True:
        try:
            return _built_pack(case, initial, capacity, note)
        except PoolExhausted as full:
            if not case.amr.grow:
                raise
            capacity = grown_capacity(full.capacity, full.needed, 0, note, "the initial refinement")
            note(f"the initial refinement needed {full.needed} block slots and the pool had {full.capacity}: "
                 f"built again with {capacity}")


def _built_pack(case: ResolvedCase, initial: bool, capacity: int, note) -> Built:
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
    capacity = capacity or first_capacity(amr, len(forest.levels), slot_bytes(phys, plan, dim, N), note)
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


# --- a full pool's growth, as far as the device's memory allows -------------------------------------
UNKNOWN_MEMORY = ("the device's free memory is unknown (run/device_memory.py): a full pool grows without a bound, "
                  "and a device too small for it ends the run with Taichi's allocation error")


class Fit(NamedTuple):
    """The most block slots a pool may have on one rank, and the numbers that decide it."""
    slots: int
    free: int       # bytes free on the rank's device, now
    pool: int       # bytes of the rank's current pool (all of Taichi's fields), released first
    staged: int     # bytes the move to the new pool stages beside it (the leaves' U)
    margin: int     # bytes kept free (run/device_memory.py)
    per_slot: int   # the current pool's bytes over its slots (its few fixed bytes counted per slot)
    sharing: int    # ranks sharing the device (each takes an equal part of what is free)
    where: str

    def describe(self) -> str:
        shared = f" (shared by {self.sharing} ranks)" if self.sharing > 1 else ""
        staged = f" and the {in_bytes(self.staged)} the move stages" if self.staged else ""
        pool = f" and the pool's {in_bytes(self.pool)}" if self.pool else ""
        return (f"{self.where} holds at most {self.slots} slots: {in_bytes(self.free)} free{shared}{pool}, less a "
                f"margin of {in_bytes(self.margin)}{staged}, at {self.per_slot:,} bytes a slot")


class PoolBeyondMemory(PoolExhausted):
    """A full pool that the device's memory cannot make large enough: the run stops as with
    [amr] grow = false (a checkpoint of the state before the regrid), never in Taichi's
    allocator."""

    def __init__(self, needed: int, capacity: int, fit: Fit, ranks: int = 1):
        super().__init__(needed, capacity)
        self.fit, self.resume_capacity = fit, needed + needed // 4
        more = (needed - fit.slots) * fit.per_slot
        self.args = (f"{'a rank' if ranks > 1 else 'the forest'} needs {needed} block slots and the pool has "
                     f"{capacity}, but {fit.describe()}: raise [amr] capacity to {needed} or more where "
                     f"{in_bytes(more)} more is free (a larger device{', or more ranks' if ranks > 1 else ''})",)


def in_bytes(n: int) -> str:
    """n bytes as a person reads them: 3 digits and a unit."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def grown_capacity(capacity: int, needed: int, staged: int, note, when: str) -> int:
    """The size a pool of `capacity` slots is built again with where the forest needs `needed`:
    twice as many (at least 5/4 of the need), or fewer where the device's memory holds fewer
    (memory_fit, every rank alike), said to `note`; PoolBeyondMemory where it cannot hold
    `needed`. staged: bytes the move to the new pool stages beside it."""
    larger = max(2 * capacity, needed + needed // 4)
    fit = memory_fit(capacity, staged)
    if fit is None:
        note(UNKNOWN_MEMORY)
        return larger
    if fit.slots < needed:
        raise PoolBeyondMemory(needed, capacity, fit, world().size)
    if fit.slots < larger:
        note(f"{when}: a pool of {larger} block slots would not fit, {fit.describe()}")
    return min(larger, fit.slots)


def memory_fit(capacity: int, staged: int, per_slot: int = 0) -> Fit | None:
    """The most slots every rank's pool may have once the current ones (of `capacity` slots)
    are released: the most constrained rank's Fit, the same on every rank (one gather); ranks
    that share a device share what it has free. None where no rank knows its memory. per_slot:
    the bytes a slot costs where no pool is allocated yet (else measured from the pool)."""
    arch = "cuda" if ti.lang.impl.current_cfg().arch == ti.cuda else "cpu"
    memory = device_memory.available(arch)
    pool = 0 if per_slot else device_memory.taichi_field_bytes()
    known = memory if (pool or per_slot) else None
    key = socket.gethostname() + (f":{device_memory.visible_device()}" if arch == "cuda" else "")
    ranks = _every_rank((key, known, pool, staged))
    keys = [rank[0] for rank in ranks]
    fits = [_fit(*rank[1:], per_slot or -(-rank[2] // capacity), keys.count(rank[0])) for rank in ranks if rank[1]]
    return min(fits, default=None)


def _fit(memory: device_memory.Memory, pool: int, staged: int, per_slot: int, sharing: int) -> Fit:
    """One rank's Fit: its part of what its device has free (the margin kept), plus its pool,
    less what the move stages, at `per_slot` bytes a slot."""
    budget = (memory.free - memory.margin) // sharing + pool - staged
    return Fit(max(budget, 0) // per_slot, memory.free, pool, staged, memory.margin, per_slot, sharing, memory.where)


def first_capacity(amr: AmrTable, root_blocks: int, per_slot: int, note) -> int:
    """The pool's first size: [amr] capacity where set, else AmrTable.pool_slots's default or,
    where the device's free memory holds fewer slots of `per_slot` bytes (every rank alike),
    those (said to `note`); a forest that then needs more stops as a full pool that cannot
    grow does (grown_capacity)."""
    default = amr.pool_slots(root_blocks, world().size)
    if amr.capacity:
        return default
    fit = memory_fit(default, 0, per_slot)
    if fit is None or fit.slots >= default:
        return default
    note(f"the first pool: {default} block slots would not fit, {fit.describe()}")
    return max(fit.slots, 1)


def _every_rank(entry) -> list:
    """Every rank's `entry`, in rank order (a collective: every rank calls it at once)."""
    comm = world()
    return [entry] if comm.size == 1 else comm.world.allgather(entry)
