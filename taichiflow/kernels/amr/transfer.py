"""Blocks of the pool to and from the host, one launch for a whole list of slots: the leaves'
primitive values for snapshots, their conserved values for checkpoints and back for restarts.
Arrays are (count, N, ..., n) in row-major cell order."""
import numpy as np
import taichi as ti

from ...layout import component
from ..indexing import numpy_dtype
from ..reductions import repaired_primitive_func
from .cells import slot_repairs
from .pool import pool_index


def make_block_transfers(pool):
    """(gather_primitive, gather_conserved, scatter_conserved): slots in, arrays out (or in)."""
    dim, N, dtype = pool.dim, pool.N, pool.dtype
    cells = (N,) * dim
    per_block = N ** dim

    @ti.func
    def row_of(J):
        row = component(J, 0) * per_block
        for d in ti.static(range(dim)):
            row += component(J, 1 + d) * N ** (dim - 1 - d)
        return row

    def gather_of(field, n: int):
        """gather(slots) of one of the pool's fields (each its own kernel: a field passed as a
        template argument is not indexed with the pool's offsets)."""
        @ti.kernel
        def gather_kernel(slots: ti.types.ndarray(dtype=ti.i32, ndim=1), values: ti.types.ndarray(dtype=dtype, ndim=2),
                          count: ti.i32):
            for J in ti.grouped(ti.ndrange(count, *cells)):
                row = row_of(J)
                v = field[pool_index(slots[component(J, 0)], [component(J, 1 + d) for d in range(dim)])]
                for c in ti.static(range(n)):
                    values[row, c] = v[c]

        def gather(slots: np.ndarray) -> np.ndarray:
            out = np.zeros((len(slots) * per_block, n), dtype=numpy_dtype(dtype))
            gather_kernel(np.ascontiguousarray(slots, dtype=np.int32), out, len(slots))
            return out.reshape((len(slots),) + cells + (n,))

        return gather

    @ti.kernel
    def scatter_kernel(slots: ti.types.ndarray(dtype=ti.i32, ndim=1), values: ti.types.ndarray(dtype=dtype, ndim=2),
                       count: ti.i32):
        for J in ti.grouped(ti.ndrange(count, *cells)):
            row = row_of(J)
            u = ti.Vector([values[row, c] for c in ti.static(range(pool.phys.U.n))], dt=dtype)
            pool.U[pool_index(slots[component(J, 0)], [component(J, 1 + d) for d in range(dim)])] = u

    def scatter_conserved(slots: np.ndarray, values: np.ndarray) -> None:
        flat = np.ascontiguousarray(values.reshape(len(slots) * per_block, -1), dtype=numpy_dtype(dtype))
        scatter_kernel(np.ascontiguousarray(slots, dtype=np.int32), flat, len(slots))

    return gather_of(pool.W, pool.phys.W.n), gather_of(pool.U, pool.phys.U.n), scatter_conserved


def make_slab_transfers(pool):
    """(pack, unpack): listed cells of the pool to and from one contiguous buffer, one launch
    each, for the copies of other ranks' leaves (parallel/amr_exchange.py). `rows` is an int64
    (count, 4) array of (slot, row of the block along its last axis, the row's cells as bits,
    where its first cell goes in the buffer): a thread a row. The buffer holds U's vectors.
    Unpacking writes W = prim(U) of each cell too: a copy's W is read only where its U arrived,
    so no pass over the copies' whole blocks is needed. A cell the model's repair() changes
    there is repaired as its owner's check or primitives repair it (uncounted: the owner counts)."""
    dim, N, dtype, phys, U, W = pool.dim, pool.N, pool.dtype, pool.phys, pool.U, pool.W
    vector = ti.types.vector(phys.U.n, dtype)
    repaired_primitive = repaired_primitive_func(phys, U, slot_repairs(phys, U))  # (uncounted)

    @ti.func
    def cell(rows: ti.template(), k, i):
        """The pool index of cell i along the last axis of listed row k."""
        row = ti.cast(rows[k, 1], ti.i32)
        return pool_index(ti.cast(rows[k, 0], ti.i32), [(row // N ** (dim - 2 - d)) % N for d in range(dim - 1)] + [i])

    def copier(to_buffer: bool):
        @ti.kernel
        def copy(rows: ti.types.ndarray(dtype=ti.i64, ndim=2), buffer: ti.types.ndarray(dtype=vector, ndim=1),
                 count: ti.i32):
            for k in range(count):
                at = ti.cast(rows[k, 3], ti.i32)
                for i in range(N):
                    if (rows[k, 2] >> i) & 1:
                        I = cell(rows, k, i)
                        if ti.static(to_buffer):
                            buffer[at] = U[I]
                        else:
                            U[I] = buffer[at]
                            W[I] = repaired_primitive(I)
                        at += 1
        return copy

    return copier(True), copier(False)
