"""The per-cell passes over every listed block: W from U (the model's repair() of an
inadmissible cell first, as the uniform passes do: kernels/reductions.py), and the check of a
new state (the largest CFL rate over the leaves at their own level's cell widths, the first
inadmissible cell, the model's global values). The diagnostics' totals and extrema:
leaf_reductions.py."""

import numpy as np
import taichi as ti

from ...bound_model import is_finite
from ...layout import component, permute
from ..indexing import int64_min
from ..ordered import ordered_bits, ordered_value
from ..reductions import repair_func, repaired_primitive_func
from .pool import pool_index

NO_BAD_CELL = -1  # (a bad cell's key is its index, reduced by maximum)


def int64_lowest() -> int:
    return int(np.iinfo(np.int64).min)


def make_cell_passes(pool):
    """(primitives, check, publish_globals, restore or None) and the `CheckFields` the check
    reduces into (and the repairs are counted in)."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    U, W, active = pool.U, pool.W, pool.active
    model_globals = list(phys.model.globals)
    n_globals = max(len(model_globals), 1)
    cells = (N,) * dim
    fields = CheckFields(n_globals, pool.capacity, 2 + len(model_globals), "repair" in phys.model.functions)
    repaired_primitive = repaired_primitive_func(phys, U, slot_repairs(phys, U, fields.repairs))

    @ti.func
    def block_cell(J):
        slot = active[component(J, 0)]
        return slot, pool_index(slot, [component(J, 1 + d) for d in range(dim)])

    @ti.kernel
    def primitives(n_active: ti.i32):
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            _, I = block_cell(J)
            W[I] = repaired_primitive(I)

    n_keys = 2 + len(model_globals)  # rate, bad cell, the model's globals
    check_rows = _check_rows_kernel(pool, fields)

    @ti.kernel
    def combine(n_active: ti.i32):
        """The blocks' keys into the whole forest's (one atomic a block); the blocks' reset."""
        fields.keys[None] = ti.Vector([0, NO_BAD_CELL] + [int64_min() for _ in range(len(model_globals))], ti.i64)
        for b in range(n_active):
            slot = active[b]
            for k in ti.static(range(n_keys)):
                ti.atomic_max(fields.keys[None][k], fields.slot_keys[slot, k])
                if ti.static(k == 0):
                    fields.slot_keys[slot, k] = 0
                elif ti.static(k == 1):
                    fields.slot_keys[slot, k] = NO_BAD_CELL
                else:
                    fields.slot_keys[slot, k] = int64_min()
        fields.rate[None] = ordered_value(fields.keys[None][0])
        fields.bad[None] = fields.keys[None][1]
        for k in ti.static(range(len(model_globals))):
            fields.globals_max[None][k] = ordered_value(fields.keys[None][2 + k])

    def check(n_active: int):
        check_rows(n_active)
        combine(n_active)

    @ti.kernel
    def publish_globals():
        for k in ti.static(range(len(model_globals))):
            phys.globals_field[None][k] = fields.globals_max[None][k]

    @ti.kernel
    def restore_kernel(n_active: ti.i32):
        """U back to U0, the state the last step started from."""
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            _, I = block_cell(J)
            U[I] = pool.U0[I]

    restore = restore_kernel if pool.U0 is not None else None
    return primitives, check, publish_globals, restore, fields


def _check_rows_kernel(pool, fields):
    """check_rows(n_active): the check's pass over the rows of the listed blocks (see below)."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    U, W, active, level, level_inv_dx = pool.U, pool.W, pool.active, pool.level, pool.level_inv_dx
    to_normal = [phys.W.rotation(d, True) for d in range(dim)]
    model_globals = list(phys.model.globals)
    block_cells = N ** dim
    rows = (N,) * (dim - 1)
    repairs = "repair" in phys.model.functions
    repaired_now = slot_repairs(phys, U, fields.repairs)

    @ti.kernel
    def check_rows(n_active: ti.i32):
        """W of every leaf cell; per block the largest CFL rate, an inadmissible cell (slot *
        N^d + cell, the largest such) and the model's globals, as order-preserving integer keys
        reduced per row in registers, then per block by atomics (on one address for the whole
        grid they were compare-and-swap loops contended by every thread: 17x slower steps).
        A row where repair() changed a cell is visited again (the `again` pass), W then read
        from the stored U, as the uniform check does (kernels/reductions.py): a later check of
        the same state (a checkpoint's, a resumed run's) finds the same W bit for bit."""
        for J in ti.grouped(ti.ndrange(n_active, *rows)):
            slot = active[component(J, 0)]
            inv_h = level_inv_dx[level[slot]]
            rate = 0.0
            bad = ti.cast(NO_BAD_CELL, ti.i64)
            keys = ti.Vector([int64_min() for _ in range(max(len(model_globals), 1))], ti.i64)
            repaired = 0
            for again in ti.static(range(2 if repairs else 1)):
                if ti.static(again == 0) or repaired != 0:
                    for i in range(N):
                        I = pool_index(slot, [i] + [component(J, 1 + d) for d in range(dim - 1)])
                        w = phys.prim(U[I])
                        if ti.static(repairs and again == 0):
                            if repaired_now(I, w):
                                repaired = 1
                                continue
                        W[I] = w
                        finite = True  # (every signal speed: ti.max drops a NaN one, kernels/reductions.py)
                        for d in ti.static(range(dim)):
                            smin, smax = phys.signal_speeds(permute(w, to_normal[d]))
                            rate = ti.max(rate, ti.max(ti.abs(smin), ti.abs(smax)) * component(inv_h, d))
                            finite = (finite & is_finite(ti.cast(smin, phys.dtype), phys.dtype)
                                      & is_finite(ti.cast(smax, phys.dtype), phys.dtype))
                        if not (phys.admissible(w) & finite):
                            linear = ti.cast(slot, ti.i64) * block_cells + ti.cast(i, ti.i64) * N ** (dim - 1)
                            for d in ti.static(range(dim - 1)):
                                linear += ti.cast(component(J, 1 + d), ti.i64) * N ** (dim - 2 - d)
                            bad = ti.max(bad, linear)
                        for k in ti.static(range(len(model_globals))):
                            keys[k] = ti.max(keys[k], ordered_bits(phys.global_value(model_globals[k], w)))
            ti.atomic_max(fields.slot_keys[slot, 0], ordered_bits(rate))
            if bad != NO_BAD_CELL:  # (rare)
                ti.atomic_max(fields.slot_keys[slot, 1], bad)
            for k in ti.static(range(len(model_globals))):
                ti.atomic_max(fields.slot_keys[slot, 2 + k], keys[k])

    return check_rows


def slot_repairs(phys, U, counts=None):
    """The uniform check's repair_func (kernels/reductions.py) on the pool: each repaired cell
    counted in `counts` at its block's slot (None: not counted: the copies of other ranks'
    leaves, whose owners count them). Compiled in only for a model with repair()."""
    if counts is None:
        return repair_func(phys, U)

    @ti.func
    def count(I):
        ti.atomic_add(counts[component(I, 0)], ti.cast(1, ti.i64))
    return repair_func(phys, U, count)


class CheckFields:
    """What the check reduces into (read back by the solver), and the cells the
    model's repair() changed, per block slot (take_repair_count)."""

    def __init__(self, n_globals: int, capacity: int, n_keys: int, counts_repairs: bool):
        self.slot_keys = ti.field(ti.i64, shape=(capacity, n_keys))
        keys = np.full((capacity, n_keys), int64_lowest(), dtype=np.int64)
        keys[:, 0], keys[:, 1] = 0, NO_BAD_CELL
        self.slot_keys.from_numpy(keys)
        self.keys = ti.Vector.field(n_keys, ti.i64, shape=())
        self.rate = ti.field(ti.f64, shape=())
        self.bad = ti.field(ti.i64, shape=())
        self.globals_max = ti.Vector.field(n_globals, ti.f64, shape=())
        self.repairs = ti.field(ti.i64, shape=capacity)
        self._take_repairs = summed_and_cleared(self.repairs) if counts_repairs else None

    def take_repair_count(self) -> int:
        """Cells changed by the model's repair() since the last call (this rank's leaves): 0
        for a model without repair(), nothing read; else the per-slot counts summed and cleared
        on the device, 8 bytes read back (the whole array read and then filled took 0.55 ms a
        diagnostics row at 32,768 slots on an H200, this 0.1 ms: docs/amr.md)."""
        return int(self._take_repairs()) if self._take_repairs is not None else 0


def summed_and_cleared(counts):
    """A kernel returning the sum of per-slot counts (an i64 field), each cleared as it is
    added: a diagnostics row reads 8 bytes instead of the whole array."""
    @ti.kernel
    def take() -> ti.i64:
        total = ti.cast(0, ti.i64)
        for slot in range(counts.shape[0]):
            total += counts[slot]
            counts[slot] = 0
        return total
    return take
