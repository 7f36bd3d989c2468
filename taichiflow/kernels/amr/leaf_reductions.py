"""Per leaf, what a diagnostics row reads: the f64 totals of U (conservation is judged by
them) and the least and largest value of every primitive variable (min_p, max_p: a collapse's
pressure peak), as the uniform grid's rows have them.

Two launches each. A thread per (leaf, column of cells along the last axis) reduces its column
over the other axes in a fixed order: neighbouring threads read neighbouring cells. Then a
thread per leaf combines its N columns in order and writes the first n leaves' results into
the numpy array the host reads (n rows, not the pool's capacity). The order depends on the
block alone, so one rank and many give the same bits (the host adds the leaves exactly:
exact_sum.column_sums). A thread per leaf walking its N^d cells took 2.1 ms for each of the
two, and reading back fields of the whole pool 0.8 and 1.2 ms, of the cavity array's 16.9 ms
step (H200, f32, 17M leaf cells in 4,341 blocks of 16^3).
"""
import numpy as np
import taichi as ti

from ...layout import component
from .pool import pool_index


class LeafReductions:
    """totals(n) and extrema(n) of the first n listed leaves; per slot N columns of partials."""

    def __init__(self, pool):
        phys, dim, N = pool.phys, pool.dim, pool.N
        nU, nW, dtype = phys.U.n, phys.W.n, pool.dtype
        self.numpy_dtype = np.float64 if dtype == ti.f64 else np.float32
        self.n_conserved, self.n_primitive = nU, nW
        self.column_totals = ti.Vector.field(nU, ti.f64, shape=(pool.capacity, N))
        self.column_low = ti.Vector.field(nW, dtype, shape=(pool.capacity, N))
        self.column_high = ti.Vector.field(nW, dtype, shape=(pool.capacity, N))
        U, W, active, level, level_dx = pool.U, pool.W, pool.active, pool.level, pool.level_dx
        column_totals, column_low, column_high = self.column_totals, self.column_low, self.column_high
        across = N ** (dim - 1)  # the cells of one column

        @ti.func
        def column_cell(slot, k, linear):
            """Cell `linear` (the other axes' indices, the first slowest) of column k."""
            return pool_index(slot, [(linear // N ** (dim - 2 - d)) % N for d in range(dim - 1)] + [k])

        @ti.kernel
        def sum_columns(n_active: ti.i32):
            for b, k in ti.ndrange(n_active, N):
                slot = active[b]
                total = ti.Vector.zero(ti.f64, nU)
                for linear in range(across):
                    total += ti.cast(U[column_cell(slot, k, linear)], ti.f64)
                column_totals[b, k] = total

        @ti.kernel
        def block_totals(n_active: ti.i32, out: ti.types.ndarray(dtype=ti.f64, ndim=2)):
            for b in range(n_active):
                volume = ti.cast(1.0, ti.f64)
                for d in ti.static(range(dim)):
                    volume *= ti.cast(component(level_dx[level[active[b]]], d), ti.f64)
                total = ti.Vector.zero(ti.f64, nU)
                for k in range(N):
                    total += column_totals[b, k]
                total *= volume
                for c in ti.static(range(nU)):
                    out[b, c] = total[c]

        @ti.kernel
        def column_extrema(n_active: ti.i32):
            for b, k in ti.ndrange(n_active, N):
                slot = active[b]
                low = W[column_cell(slot, k, 0)]
                high = low
                for linear in range(1, across):
                    w = W[column_cell(slot, k, linear)]
                    low = ti.min(low, w)
                    high = ti.max(high, w)
                column_low[b, k] = low
                column_high[b, k] = high

        @ti.kernel
        def block_extrema(n_active: ti.i32, low_out: ti.types.ndarray(dtype=dtype, ndim=2),
                          high_out: ti.types.ndarray(dtype=dtype, ndim=2)):
            for b in range(n_active):
                low = column_low[b, 0]
                high = column_high[b, 0]
                for k in range(1, N):
                    low = ti.min(low, column_low[b, k])
                    high = ti.max(high, column_high[b, k])
                for c in ti.static(range(nW)):
                    low_out[b, c] = low[c]
                    high_out[b, c] = high[c]

        self._sum_columns, self._block_totals = sum_columns, block_totals
        self._column_extrema, self._block_extrema = column_extrema, block_extrema

    def totals(self, n: int) -> np.ndarray:
        """(n, conserved variables): per leaf the f64 sum of U times its cell volume."""
        out = np.zeros((n, self.n_conserved))
        if n:
            self._sum_columns(n)
            self._block_totals(n, out)
        return out

    def extrema(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(least, largest) W per leaf, each (n, primitive variables) in the pool's precision;
        W must be current (after the check)."""
        low = np.zeros((n, self.n_primitive), self.numpy_dtype)
        high = np.zeros_like(low)
        if n:
            self._column_extrema(n)
            self._block_extrema(n, low, high)
        return low, high


def reduction_bytes(phys, block_cells: int, size: int) -> int:
    """Device bytes a slot's partials cost (solver.slot_bytes): N columns of f64 totals and of
    the least and largest W."""
    return block_cells * (8 * phys.U.n + 2 * size * phys.W.n)
