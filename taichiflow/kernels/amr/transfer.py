"""Blocks of the pool to and from the host: a list of slots and an array (count, N, ..., n) of
their cells' values (row-major), one launch for all of them."""

from typing import Callable, NamedTuple

import numpy as np
import taichi as ti

from ...layout import component
from ..indexing import numpy_dtype
from .ghosts import pool_index


class BlockTransfer(NamedTuple):
    numpy_dtype: object
    scatter: Callable            # (slots, U values) -> None
    gather_conserved: Callable   # slots -> U values
    gather_primitive: Callable   # slots -> W values (interior cells)


def make_block_transfer(pool) -> BlockTransfer:
    dim, N, dtype = pool.dim, pool.N, pool.dtype
    cells = (N,) * dim
    per_block = N ** dim
    rows = ti.types.ndarray(dtype=dtype, ndim=2)
    slot_list = ti.types.ndarray(dtype=ti.i32, ndim=1)

    @ti.func
    def place(J):
        """(pool index, row of the host array) of cell J[1:] of listed block J[0]."""
        row = component(J, 0) * per_block
        for d in ti.static(range(dim)):
            row += component(J, 1 + d) * N ** (dim - 1 - d)
        return pool_index(0, [component(J, 1 + d) for d in range(dim)]), row

    @ti.kernel
    def scatter_kernel(slots: slot_list, values: rows, count: ti.i32):
        for J in ti.grouped(ti.ndrange(count, *cells)):
            I, row = place(J)
            I[0] = slots[component(J, 0)]
            pool.U[I] = ti.Vector([values[row, c] for c in range(pool.phys.U.n)])

    def make_gather(field, n):
        @ti.kernel
        def gather_kernel(slots: slot_list, values: rows, count: ti.i32):
            for J in ti.grouped(ti.ndrange(count, *cells)):
                I, row = place(J)
                I[0] = slots[component(J, 0)]
                w = field[I]
                for c in ti.static(range(n)):
                    values[row, c] = w[c]

        def gather(slots: np.ndarray) -> np.ndarray:
            out = np.zeros((len(slots) * per_block, n), dtype=numpy_dtype(dtype))
            gather_kernel(slots, out, len(slots))
            return out.reshape((len(slots),) + cells + (n,))
        return gather

    def scatter(slots: np.ndarray, values: np.ndarray) -> None:
        flat = np.ascontiguousarray(values, dtype=numpy_dtype(dtype)).reshape(len(slots) * per_block, -1)
        scatter_kernel(slots, flat, len(slots))

    return BlockTransfer(numpy_dtype(dtype), scatter, make_gather(pool.U, pool.phys.U.n),
                         make_gather(pool.W, pool.phys.W.n))
