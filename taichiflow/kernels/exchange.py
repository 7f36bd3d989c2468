"""The halo seam over MPI (kernels/halo.py): ghost layers between blocks, and reductions over
blocks, through host buffers.

A block's ghost layers along an axis come from its neighbours' outermost `ghost` layers of
cells: a kernel copies those slabs of W into a contiguous numpy array, MPI swaps them with
the neighbour (Sendrecv, both directions in turn; MPI.PROC_NULL where the face is the grid's,
whose kind fills it), another kernel copies what arrived into the ghost cells. Only the
faces' slabs, not edges and corners: every stencil of the sweeps (and the gradients of
derived fields) runs along one axis. Reductions: the rate, the model's globals and the
diagnostics' maxima as maxima, the first bad cell as a minimum of its index in the whole
grid, sums as sums (in another order than one rank's: the totals agree to rounding, the
states bit for bit).
"""
import numpy as np
import taichi as ti

from ..layout import component
from .halo import SingleBlock
from .indexing import with_axis
from .ordered import NO_BAD_CELL


class BlockExchange(SingleBlock):
    """One rank's block of a decomposed grid (parallel/decomposition.py)."""

    def __init__(self, comm, decomposition, block, periodic, ghost: int, n_primitive: int, dtype):
        self.comm = comm
        self.ranks, self.rank = comm.size, comm.rank
        self.grid_cells = tuple(decomposition.cells)
        self.block = block
        self.decomposition = decomposition
        self.ghost, self.dtype, self.n = ghost, dtype, n_primitive
        self.dim = len(block.cells)
        self.neighbours = [tuple(decomposition.neighbour(block.rank, axis, side, periodic[axis]) for side in (0, 1))
                           for axis in range(self.dim)]
        self._copies = {}   # (axis, first layer, to_buffer): kernel
        self._buffers = {}  # (axis, kind): numpy array of one slab

    def describe(self, arch: str) -> str:
        """run.log's line on the split and on the path the ghost layers take."""
        dims = "x".join(str(n) for n in self.decomposition.dims)
        try:
            aware = self.comm.cuda_aware()
        except OSError:  # (no /proc: not Linux)
            aware = None
        said = {True: "CUDA-aware", False: "not CUDA-aware", None: "CUDA-awareness unknown"}[aware]
        path = "host buffers"
        if arch == "cuda":
            path += (" (device buffers through a CUDA-aware MPI are not built yet)" if aware
                     else f" (this MPI is {said}: device buffers would need one that is)")
        return (f"MPI: {self.ranks} ranks, {dims} blocks (rank {self.rank}'s {list(self.block.cells)} cells); "
                f"{self.comm.library()}, {said}; ghost layers exchanged through {path}")

    # --- ghost layers -------------------------------------------------------------------------
    def exchange_ghosts(self, W) -> None:
        for axis, (lower, upper) in enumerate(self.neighbours):
            if lower is None and upper is None:
                continue
            n, g = self.block.cells[axis], self.ghost
            # my lowest layers go down while the layers above my top come up, then the reverse
            self._swap(W, axis, send_from=0, dest=lower, recv_into=n, source=upper, tag=2 * axis)
            self._swap(W, axis, send_from=n - g, dest=upper, recv_into=-g, source=lower, tag=2 * axis + 1)

    def _swap(self, W, axis, send_from, dest, recv_into, source, tag):
        null = self.comm.MPI.PROC_NULL
        send, recv = self._buffer(axis, "send"), self._buffer(axis, "recv")
        if dest is not None:
            self._copy(W, axis, send_from, True)(send)
        self.comm.exchange(send, null if dest is None else dest, recv, null if source is None else source, tag)
        if source is not None:
            self._copy(W, axis, recv_into, False)(recv)

    def _buffer(self, axis, kind):
        key = (axis, kind)
        if key not in self._buffers:
            shape = [self.ghost if d == axis else n for d, n in enumerate(self.block.cells)]
            self._buffers[key] = np.empty(shape + [self.n], dtype=np.float32 if self.dtype == ti.f32 else np.float64)
        return self._buffers[key]

    def _copy(self, W, axis, first, to_buffer):
        """Kernel copying layers first .. first + ghost along axis between W and a slab buffer."""
        key = (axis, first, to_buffer)
        if key not in self._copies:
            dim, n, dtype = self.dim, self.n, self.dtype
            shape = [self.ghost if d == axis else c for d, c in enumerate(self.block.cells)]

            @ti.kernel
            def copy(buffer: ti.types.ndarray(dtype=ti.types.vector(n, dtype), ndim=dim)):
                for J in ti.grouped(ti.ndrange(*shape)):
                    I = with_axis(J, axis, component(J, axis) + first, dim)
                    if ti.static(to_buffer):
                        buffer[J] = W[I]
                    else:
                        W[I] = buffer[J]

            self._copies[key] = copy
        return self._copies[key]

    # --- reductions ---------------------------------------------------------------------------
    def combine(self, values, how: str):
        op = {"sum": self.comm.allreduce_sum, "min": self.comm.allreduce_min, "max": self.comm.allreduce_max}[how]
        return op(np.asarray(values))

    def global_index(self, linear_index: int) -> int:
        if linear_index == NO_BAD_CELL:
            return NO_BAD_CELL
        local = np.unravel_index(int(linear_index), self.block.cells)
        return int(np.ravel_multi_index([i + o for i, o in zip(local, self.block.offset)], self.grid_cells))

    def owner(self, global_index: int) -> tuple:
        cell = np.unravel_index(int(global_index), self.grid_cells)
        for block in self.decomposition.blocks():
            local = [i - o for i, o in zip(cell, block.offset)]
            if all(0 <= i < n for i, n in zip(local, block.cells)):
                mine = int(np.ravel_multi_index(local, block.cells)) if block.rank == self.rank else None
                return block.rank, mine
        raise ValueError(f"cell {cell} is outside the grid {self.grid_cells}")

    def reduce_check(self, check, rate: float, bad):
        """The rate and first bad cell over the blocks; the model's globals too (the check
        published this block's)."""
        local = NO_BAD_CELL if bad is None else self.global_index(bad)
        rate = float(self.comm.allreduce_max(np.array([rate]))[0])
        bad = int(self.comm.allreduce_min(np.array([local], dtype=np.int64))[0])
        check.set_global_keys(self.comm.allreduce_max(check.global_key_values()))
        return rate, (None if bad == NO_BAD_CELL else bad)

    def finish_step(self, check) -> None:
        """The check's merge, its values over the blocks (one read back and allreduce a step),
        then the device clock plans the next dt from them."""
        merged = check.merge_for_blocks()
        running, rate_key, bad = int(merged[0]), merged[1], int(merged[2])
        keys = np.asarray(merged[3:], dtype=np.int64)
        if self.comm.any(running):  # (the clocks of all blocks halt together: their inputs are global)
            rate_key = self.comm.allreduce_max(np.array([rate_key], dtype=np.int64))[0]
            bad = int(self.comm.allreduce_min(np.array([self.global_index(bad)], dtype=np.int64))[0])
            keys = self.comm.allreduce_max(keys)
        check.finish_merged(int(rate_key), bad, keys)

    def bcast(self, value, root: int = 0):
        return self.comm.bcast(value, root)

    def any(self, flag: bool) -> bool:
        return self.comm.any(flag)
