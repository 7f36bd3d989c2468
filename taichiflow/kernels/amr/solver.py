"""PackSolver: a forest of equal blocks on the device, stepped with one launch per kernel over
every leaf, refined and coarsened on request.

A step of the integrator's stages, each

    W = prim(U)            (every leaf; after a step the check did it)
    ghost layers           where the level jumps or the domain ends: restriction, boundary
                           kinds, then prolongation (same-level faces read the block across)
    face register          the fine side's fluxes through faces where the level jumps
    sweeps, one per axis   R and U of every leaf cell (kernels/amr/fluxes.py)

then the check of the new state (CFL rate at each leaf's own cell width, admissibility, the
model's globals). One global time step (the finest cells' CFL limit) serves every level.
"""

import numpy as np
import taichi as ti

from ...errors import SimulationError
from ...exact_sum import column_sums
from ...mesh import Block, Forest, PoolFull, RegionLevels, assign_slots, device_tables, plan_regrid, updated_tables
from ...mesh.slot_arrays import aligned_slots
from ..state_arrays import ghosted_extent, itemsize
from ..plan import LastAxis
from ..solver import face_scheme
from .cells import NO_BAD_CELL, make_cell_passes, summed_and_cleared
from .criteria import RegionSlots, decoded
from .leaf_reductions import LeafReductions, reduction_bytes
from .fluxes import PoolFaces
from .ghosts import make_ghost_fill
from .pool import BlockPool, padded
from .regrid import make_regrid_kernels
from .sweeps import make_sweeps
from .transfer import make_block_transfers


class PoolExhausted(SimulationError):
    """A regrid (or a restart) needs more block slots than the pool has."""

    def __init__(self, needed: int, capacity: int):
        super().__init__(f"the forest needs {needed} block slots and the pool has {capacity}: raise [amr] capacity")
        self.needed, self.capacity = needed, capacity


def pool_full(err: PoolFull) -> PoolExhausted:
    return PoolExhausted(err.needed, err.capacity)


def slot_bytes(phys, plan, dim: int, block_cells: int) -> int:
    """Device bytes one block slot of a PackSolver's pool costs: the state arrays (W with its
    ghost layers, as kernels/state_arrays.py lays it out), the face register, the tables and
    the per-slot fields of the check, the regrid's indicators, the diagnostics' partials and the
    fallbacks.
    Known before the pool is allocated, so that its first size can be fitted to the device's
    free memory (run/build_amr.py); tests/test_amr_memory.py holds it to Taichi's count."""
    size = itemsize(phys.dtype)
    cells = block_cells ** dim
    arrays = (3 if plan.keep_last_good else 2) * cells * phys.U.n  # U, R (and U0)
    arrays += int(np.prod(ghosted_extent((block_cells,) * dim, plan.ghost, phys.dtype)[0])) * phys.W.n
    arrays += dim * 2 * block_cells ** (dim - 1) * phys.n_flux  # the face register
    tables = 4 * (3 ** dim * 2 ** dim + 3 ** dim + dim + 4 + 2 * 2 * dim)  # neighbour, relation, origin, level,
    #                                        active, asked, parent_asked, the two lists of faces
    n_keys = 2 + len(phys.model.globals)
    per_block = 8 * (n_keys + 1 + 1 + 2)  # check keys, repairs, fallbacks, indicators
    return arrays * size + tables + per_block + reduction_bytes(phys, block_cells, size)


class PackSolver:
    """The pool, its kernels and the host's forest of one adaptive run."""

    def __init__(self, phys, plan, forest, extent, kinds, inflow: dict, capacity: int,
                 indicator_fields=(0,), epsilon: float = 0.01, regions=()):
        if plan.split:
            raise ValueError("[amr] needs an unsplit scheme (dimensional splitting is not supported with blocks)")
        self.phys, self.plan, self.forest = phys, plan, forest
        self.dim, self.N = forest.dim, forest.block_cells
        self.extent = tuple((float(a), float(b)) for a, b in extent)
        self.region_levels = RegionLevels(regions, self.extent, forest.roots)
        self.pool = pool = BlockPool(phys, self.dim, self.N, plan.ghost, capacity, forest.max_level, self.extent,
                                     forest.roots, plan.keep_last_good)
        self.inflow = ti.Vector.field(phys.W.n, pool.dtype, shape=(max(self.dim, 1), 2))
        for (axis, side), values in inflow.items():
            self.inflow[axis, side] = ti.Vector(list(values))
        self.fallbacks = ti.field(ti.i64, shape=capacity)  # faces replaced, per block (one address: contended)
        self._take_fallbacks = summed_and_cleared(self.fallbacks) if plan.counts_faces else None
        self.fill_near, self.fill_from_coarser = make_ghost_fill(pool, kinds, self.inflow)
        shuffles = plan.last_axis is not LastAxis.WALKED  # (CUDA)
        # per scheme (the case's, then its retry scheme's if any) the register's kernel and the sweeps
        self._stepping = []
        for table in plan.schemes:
            faces = PoolFaces(pool, plan, face_scheme(phys, self.dim, table), self.fallbacks)
            self._stepping.append((faces.fill_register, make_sweeps(pool, faces, shuffles)))
        self.primitives, self._check, self._publish, self._restore, self.check_fields = make_cell_passes(pool)
        self._apply, self._indicate, self._second, self._gradient = make_regrid_kernels(
            pool, tuple(indicator_fields), epsilon)
        self.region_slots = RegionSlots(self.region_levels, capacity)
        self._gather, self._gather_conserved, self._scatter_conserved = make_block_transfers(pool)
        self._leaf_reductions = LeafReductions(pool)
        self._place(forest)

    def _place(self, forest) -> None:
        """The pool holding `forest`'s leaves in slots 0..n-1, its tables uploaded (their state
        unset). A pool too small is PoolExhausted."""
        self.forest = forest
        self.slots = self._assigned(forest, self.pool.capacity)
        self.tables = device_tables(forest, self.slots, self.pool.capacity, faces_only=True)
        self.region_slots.set(forest, self.slots.array)
        self.pool.upload(self.tables, self.region_slots)

    @property
    def n_owned(self) -> int:
        """The leaves this process steps: the first of the active list (all of them on one
        rank; on many, the copies of other ranks' leaves follow: parallel/amr_solver.py)."""
        return self.pool.n_active

    def while_refreshing(self, work) -> None:
        """work() while the copies of other ranks' leaves are brought up to date (one rank:
        none; parallel/amr_solver.py); work must not read the copies."""
        work()

    # --- the state ------------------------------------------------------------------------------
    @staticmethod
    def _assigned(forest, capacity):
        try:
            return assign_slots(forest, capacity)
        except PoolFull as err:
            raise pool_full(err) from None

    def cell_width(self, level: int) -> tuple:
        """Per axis the cell width at a level."""
        return tuple((b - a) / (r * self.N * 2 ** level) for (a, b), r in zip(self.extent, self.forest.roots))

    def primitive_blocks(self, leaves=None) -> dict:
        """{leaf: its W as an array (N,)*dim + (nW,)} of every leaf, or of `leaves` (current
        after a check)."""
        if leaves is None:
            leaves, slots = self.forest.leaves, self.slots.array
        else:
            leaves = list(leaves)
            slots = np.array([self.slots[b] for b in leaves], dtype=np.int64)
        data = self._gather(slots.astype(np.int32))
        return {b: data[k] for k, b in enumerate(leaves)}

    def conserved_blocks(self) -> np.ndarray:
        """The leaves' U in the forest's (Morton) order, an array (leaves, N, ..., nU)."""
        return self._gather_conserved(aligned_slots(self.forest, self.slots, self.pool.capacity).astype(np.int32))

    def load(self, leaves, conserved: np.ndarray) -> None:
        """Replace the forest by one of these leaves holding these U (a checkpoint's, in the order
        of `leaves`); W and the check current. A pool too small is a SimulationError naming the key."""
        old = self.forest
        self._place(Forest(old.roots, old.block_cells, old.max_level, old.periodic, leaves, known_balanced=True))
        self._scatter_loaded(leaves, conserved)
        self.check_state()

    def _scatter_loaded(self, leaves, conserved: np.ndarray) -> None:
        """U of `leaves` (in that order) into their slots."""
        self._scatter_conserved(np.array([self.slots[b] for b in leaves], dtype=np.int32), conserved)

    def totals(self) -> np.ndarray:
        """f64 totals of every conserved variable over the leaves (added exactly: the same bits
        in any order of the leaves, so on any number of ranks)."""
        return column_sums(self._block_totals())

    def extrema(self) -> tuple[np.ndarray, np.ndarray]:
        """(least, largest) of every primitive variable over the leaves (W current)."""
        low, high = self._block_extrema()
        return low.min(axis=0), high.max(axis=0)

    def _block_extrema(self) -> tuple[np.ndarray, np.ndarray]:
        """Per own leaf its least and largest W (leaves, variables)."""
        return self._leaf_reductions.extrema(self.n_owned)

    def _block_totals(self) -> np.ndarray:
        """f64 totals of every conserved variable per own leaf (leaves, variables)."""
        return self._leaf_reductions.totals(self.n_owned)

    # --- stepping -------------------------------------------------------------------------------
    def check_state(self):
        """W, the largest CFL rate and an inadmissible cell (None if none) of the current U."""
        self._check(self.pool.n_active)
        self._publish()
        bad = int(self.check_fields.bad[None])
        return float(self.check_fields.rate[None]), (None if bad == NO_BAD_CELL else self._cell_of(bad))

    def take_repair_count(self) -> int:
        """Cells the model's repair() changed since the last call (the check's and the
        primitives' repairs, as the uniform solver counts them)."""
        return self.check_fields.take_repair_count()

    def take_fallback_count(self) -> int:
        """Faces whose states or flux were replaced since the last call (plan.counts_faces: the
        positivity fallback, the positivity limiter, FORCE's fallback; 0 without any, nothing
        read). A face between two blocks is solved, and counted, by each of
        them, and not where the level jumps (the register's flux is used there:
        kernels/amr/fluxes.py); one block over a whole grid counts the uniform solver's
        (tests/test_positivity.py)."""
        return int(self._take_fallbacks()) if self._take_fallbacks is not None else 0

    def _cell_of(self, linear: int):
        """(leaf, cell index in it) of a check's linear cell index."""
        slot, cell = divmod(linear, self.N ** self.dim)
        at = int(np.flatnonzero(aligned_slots(self.forest, self.slots, self.pool.capacity) == slot)[0])
        block = Block(int(self.forest.levels[at]), tuple(self.forest.coords[at].tolist()))
        return block, tuple(int(i) for i in np.unravel_index(cell, (self.N,) * self.dim))

    def fill_ghosts(self):
        """The ghost layers of the faces where the level jumps or the domain ends (the others
        have none: kernels/amr/ghosts.py)."""
        self.fill_near()
        self.fill_from_coarser()

    def step(self, dt: float, t: float, retry: bool = False):
        """One step of dt from t (W current: after check_state); returns check_state's. retry:
        with the [scheme] retry fluxes, after `restore_last_good` of a step that left a bad cell."""
        n, stages = self.n_owned, self.plan.stages
        keep = self.pool.U0 is not None
        fill_register, sweeps = self._stepping[1 if retry else 0]
        for s, stage in enumerate(stages):
            if s > 0:  # (W of the copies' cells read comes with them: kernels/amr/transfer.py)
                self.while_refreshing(lambda: self.primitives(n))
            self.fill_ghosts()
            fill_register(dt)
            for sweep in sweeps:
                sweep(n, dt, t + stage.time * dt, stage.a, stage.c0, stage.c1, stage.c2, int(s == 0 and keep),
                      int(s == len(stages) - 1))
        return self.check_state()

    def restore_last_good(self) -> bool:
        """U back to the state at the start of the last step (False where it was not kept)."""
        if self._restore is None:
            return False
        self._restore(self.n_owned)
        self.check_state()
        return True

    # --- adapting -------------------------------------------------------------------------------
    def regrid(self, refine: set, derefine: set, ghosts_current: bool = False) -> bool:
        """Split the leaves in `refine`, merge the families all of whose leaves are in `derefine`
        (2:1 balance kept by the forest); see moved_to."""
        return self.moved_to(self.forest.refined(set(refine), set(derefine)), ghosts_current)

    def moved_to(self, new, ghosts_current: bool = False) -> bool:
        """The pool holding forest `new` (one regrid away from the current one): the new blocks
        filled on the device, then checked: W current and `checked` check_state's (rate, bad
        cell) of the new forest. False if nothing changed. A pool too small is PoolExhausted
        naming the key, the state untouched. ghosts_current: W and its ghost layers are those
        of the current U (as the indicators leave them), so they need no refresh. The host
        works on arrays only; the device gets one launch (regrid.py: apply)."""
        if new == self.forest:  # (the same object where a regrid changed nothing; else compares the leaf arrays)
            return False
        try:
            plan = plan_regrid(self.forest, self.slots, new, self.pool.capacity)
        except PoolFull as err:
            raise pool_full(err) from None
        if not ghosts_current:  # (prolongation reads the parents' outer neighbours)
            self.primitives(self.pool.n_active)
            self.fill_ghosts()
        self.tables = updated_tables(self.tables, self.forest, new, plan.slots, in_place=True)  # (the old ones are dropped)
        theirs, _ = new.tiling.matches(self.forest.tiling)
        self.region_slots.set(new, plan.slots.array, np.flatnonzero(theirs < 0))
        update = self.pool.stage(self.tables, self.region_slots)
        prolonged, restricted = plan.prolonged_moves, plan.restricted_moves
        rows, listed, counts = padded(update)
        self._apply(prolonged if len(prolonged) else np.zeros((1, 3), np.int32),
                    restricted if len(restricted) else np.zeros((1, restricted.shape[1]), np.int32),
                    rows, listed, [len(prolonged), len(restricted)] + counts)
        self.pool.took(update)
        self.forest, self.slots = new, plan.slots
        self.checked = self.check_state()  # (W of the new blocks, and the rate a step needs next)
        return True

    def adapt(self, criteria) -> bool:
        """One regrid by the indicators: split where Löhner's (or the model's own, if larger)
        exceeds criteria.refine_above or the relative gradient criteria.gradient_above (if set),
        merge where every child is below derefine_below and half gradient_above. Outside the
        regions the criteria refine up to criteria.up_to (finer blocks there merge); the
        regions' blocks are kept at least at their level, and may go up to max_level
        (criteria.leaf_flags: the device applies these rules and sends a byte a leaf; a regrid
        that changes nothing returns the same forest, and moved_to does nothing)."""
        refine, derefine = decoded(self._indicator_codes(criteria))
        return self.moved_to(self.forest.refined_where(refine, derefine), ghosts_current=True)

    def _indicator_codes(self, criteria) -> np.ndarray:
        """Each leaf's flags (criteria.py: REFINE, DEREFINE), in the forest's order, from the
        current W: one launch and one read."""
        self.fill_ghosts()
        codes = np.zeros(self.n_owned, np.int8)
        self._indicate(self.n_owned, list(criteria.thresholds()), [self.forest.max_level, criteria.up_to],
                       codes)
        return codes

    def leaf_cells(self) -> int:
        return len(self.forest.levels) * self.N ** self.dim  # (the arrays: no Block objects made each step)
