"""Blocks of the pool to the host: a list of slots in, an array (count, N, ..., nW) of their
cells' primitive values out (row-major), one launch for all of them."""
import numpy as np
import taichi as ti

from ...layout import component
from ..indexing import numpy_dtype
from .pool import pool_index


def make_primitive_gather(pool):
    """gather(slots) -> the interior W of those blocks."""
    dim, N, dtype, n = pool.dim, pool.N, pool.dtype, pool.phys.W.n
    cells = (N,) * dim
    per_block = N ** dim

    @ti.kernel
    def gather_kernel(slots: ti.types.ndarray(dtype=ti.i32, ndim=1), values: ti.types.ndarray(dtype=dtype, ndim=2),
                      count: ti.i32):
        for J in ti.grouped(ti.ndrange(count, *cells)):
            row = component(J, 0) * per_block
            for d in ti.static(range(dim)):
                row += component(J, 1 + d) * N ** (dim - 1 - d)
            w = pool.W[pool_index(slots[component(J, 0)], [component(J, 1 + d) for d in range(dim)])]
            for c in ti.static(range(n)):
                values[row, c] = w[c]

    def gather(slots: np.ndarray) -> np.ndarray:
        out = np.zeros((len(slots) * per_block, n), dtype=numpy_dtype(dtype))
        gather_kernel(slots, out, len(slots))
        return out.reshape((len(slots),) + cells + (n,))

    return gather
