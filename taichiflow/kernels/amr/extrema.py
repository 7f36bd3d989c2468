"""The least and largest value of every primitive variable over the leaves, for the
diagnostics rows (min_<W component>, max_<W component>, as the uniform grid's rows have them:
a collapse's pressure peak is max_p)."""
import numpy as np
import taichi as ti

from .pool import pool_index


def make_extrema(pool):
    """(kernel, fields): kernel(n) writes per listed block (the first n) its cells' least and
    largest W into fields.lowest[b] and fields.highest[b] (a thread a block, as the totals:
    no float atomics); W must be current (after the check)."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    W, active = pool.W, pool.active
    lowest = ti.Vector.field(phys.W.n, pool.dtype, shape=pool.capacity)
    highest = ti.Vector.field(phys.W.n, pool.dtype, shape=pool.capacity)
    block_cells = N ** dim

    @ti.kernel
    def extrema(n_active: ti.i32):
        for b in range(n_active):
            slot = active[b]
            low = W[pool_index(slot, [0] * dim)]
            high = low
            for linear in range(1, block_cells):
                w = W[pool_index(slot, [(linear // N ** (dim - 1 - d)) % N for d in range(dim)])]
                low = ti.min(low, w)
                high = ti.max(high, w)
            lowest[b] = low
            highest[b] = high
    return extrema, (lowest, highest)


def leaf_extrema(kernel, fields, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(per block least W, per block largest W) of the first n listed blocks, as numpy."""
    kernel(n)
    return fields[0].to_numpy()[:n], fields[1].to_numpy()[:n]
