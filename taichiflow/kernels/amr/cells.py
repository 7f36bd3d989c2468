"""The per-cell passes over every listed block: W from U, and the check of a new state (the
largest CFL rate over the leaves at their own level's cell widths, the first inadmissible
cell, the model's global values), and the f64 totals of U that conservation is judged by."""

import taichi as ti

from ...layout import component, permute
from .ghosts import pool_index

NO_BAD_CELL = -1


def make_cell_passes(pool):
    """(primitives, check, totals, publish_globals) kernels; the check's results are in the
    fields of the returned `CheckFields`."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    U, W, active, level, level_inv_dx = pool.U, pool.W, pool.active, pool.level, pool.level_inv_dx
    to_normal = [phys.W.rotation(d, True) for d in range(dim)]
    model_globals = list(phys.model.globals)
    n_globals = max(len(model_globals), 1)
    cells = (N,) * dim
    block_cells = N ** dim
    fields = CheckFields(n_globals, phys.U.n)

    @ti.func
    def block_cell(J):
        slot = active[component(J, 0)]
        return slot, pool_index(slot, [component(J, 1 + d) for d in range(dim)])

    @ti.kernel
    def primitives(n_active: ti.i32):
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            _, I = block_cell(J)
            W[I] = phys.prim(U[I])

    @ti.kernel
    def check(n_active: ti.i32):
        """W of every leaf cell; the largest CFL rate, an inadmissible cell (slot * N^d + cell,
        the largest such) and the model's globals, each reduced by maximum."""
        fields.rate[None] = 0.0
        fields.bad[None] = NO_BAD_CELL
        for k in ti.static(range(len(model_globals))):
            fields.globals_max[None][k] = -1e300
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            slot, I = block_cell(J)
            w = phys.prim(U[I])
            W[I] = w
            inv_h = level_inv_dx[level[slot]]
            rate = 0.0
            for d in ti.static(range(dim)):
                smin, smax = phys.signal_speeds(permute(w, to_normal[d]))
                rate = ti.max(rate, ti.max(ti.abs(smin), ti.abs(smax)) * component(inv_h, d))
            ti.atomic_max(fields.rate[None], ti.cast(rate, ti.f64))
            if not phys.admissible(w):
                linear = ti.cast(slot, ti.i64) * block_cells
                for d in ti.static(range(dim)):
                    linear += ti.cast(component(J, 1 + d), ti.i64) * N ** (dim - 1 - d)
                ti.atomic_max(fields.bad[None], linear)
            for k in ti.static(range(len(model_globals))):
                ti.atomic_max(fields.globals_max[None][k], ti.cast(phys.global_value(model_globals[k], w), ti.f64))

    @ti.kernel
    def publish_globals():
        for k in ti.static(range(len(model_globals))):
            phys.globals_field[None][k] = fields.globals_max[None][k]

    @ti.kernel
    def totals(n_active: ti.i32):
        """The f64 sum over the leaves of U times the cell volume of its level."""
        fields.total[None] = ti.Vector.zero(ti.f64, phys.U.n)
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            slot, I = block_cell(J)
            volume = ti.cast(1.0, ti.f64)
            for d in ti.static(range(dim)):
                volume *= ti.cast(component(pool.level_dx[level[slot]], d), ti.f64)
            fields.total[None] += ti.cast(U[I], ti.f64) * volume

    return primitives, check, publish_globals, totals, fields


class CheckFields:
    """What the check and the totals reduce into (read back by the solver)."""

    def __init__(self, n_globals: int, n_conserved: int):
        self.rate = ti.field(ti.f64, shape=())
        self.bad = ti.field(ti.i64, shape=())
        self.globals_max = ti.Vector.field(n_globals, ti.f64, shape=())
        self.total = ti.Vector.field(n_conserved, ti.f64, shape=())
