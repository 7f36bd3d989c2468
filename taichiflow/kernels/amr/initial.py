"""A case's initial state on every listed block of the pool, each at its own level's cell
width: the uniform fill's recipe (kernels/initial.py), cell centres and averaging widths read
per level at run time, so one kernel fills every level. A block at the root level of a grid
that is all one level gets the uniform fill's numbers bit for bit (the same f64 arithmetic)."""

import numpy as np
import taichi as ti

from ...layout import component
from ..initial import CellAverage, gauss_average_func, initial_state_func
from .pool import pool_index


def make_pool_fill(pool, initial: dict, primitive_layout, roots, lower, upper, params: dict,
                   average: CellAverage | None):
    """fill(): W and U = cons(W) of every listed block of the pool."""
    phys, dim, N, dtype = pool.phys, pool.dim, pool.N, pool.dtype
    state_at, tables, _ = initial_state_func(initial, primitive_layout, dim, lower, upper, params)
    average_over = gauss_average_func(state_at, average, dim) if average is not None else None
    origin_x = [float(a) for a in lower]
    length = [float(b) - float(a) for a, b in zip(lower, upper)]
    counts = ti.Vector.field(dim, ti.f64, shape=pool.max_level + 1)  # the cells across the domain per level
    for level in range(pool.max_level + 1):
        counts[level] = [float(roots[d] * N * 2 ** level) for d in range(dim)]
    table = tables.array()
    modes = table if table is not None else np.zeros((1, 1))
    cells = (N,) * dim
    averaging = average_over is not None
    U, W, active, level_of, origin = pool.U, pool.W, pool.active, pool.level, pool.origin

    @ti.kernel
    def fill_blocks(n_active: ti.i32, rows: ti.types.ndarray(dtype=ti.f64, ndim=2)):
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            slot = active[component(J, 0)]
            count = counts[level_of[slot]]
            x = ti.Vector.zero(ti.f64, 3)
            half = ti.Vector.zero(ti.f64, dim)
            for d in ti.static(range(dim)):
                index = ti.cast(component(origin[slot], d) + component(J, 1 + d), ti.f64)
                x[d] = ti.f64(origin_x[d]) + ti.f64(length[d]) * (index + ti.f64(0.5)) / count[d]
                half[d] = 0.5 * ti.f64(length[d]) / count[d]
            w = ti.Vector.zero(ti.f64, phys.W.n)
            if ti.static(averaging):
                w = average_over(x, half, rows)
            else:
                w = state_at(x, rows)
            I = pool_index(slot, [component(J, 1 + d) for d in range(dim)])
            W[I] = ti.cast(w, dtype)
            U[I] = phys.cons(W[I])

    def fill():
        fill_blocks(pool.n_active, modes)

    return fill
