"""The halo seam over MPI (kernels/halo.py): ghost layers between blocks, and reductions over
blocks.

A block's ghost layers along an axis come from its neighbours' outermost `ghost` layers of
cells: a kernel packs each such slab of W into a contiguous buffer, the buffers reach MPI
(host, page-locked or device memory: parallel/staging.py), every face's slab is sent and
received at once, and another kernel unpacks what arrived into the ghost cells. Faces on the
grid's boundary are filled by their kind (kernels/boundaries.py). Only the faces' slabs, not
edges and corners: every stencil of the sweeps (and the gradients of derived fields) runs
along one axis. Reductions: the rate, the model's globals and the
diagnostics' maxima as maxima, the first bad cell as a minimum of its index in the whole
grid, sums as sums (in another order than one rank's: the totals agree to rounding, the
states bit for bit).
"""
import numpy as np
import taichi as ti

from ..layout import component
from .halo import SingleBlock
from .indexing import int64_max, with_axis
from .ordered import NO_BAD_CELL


class BlockExchange(SingleBlock):
    """One rank's block of a decomposed grid (parallel/decomposition.py)."""

    def __init__(self, comm, decomposition, block, periodic, ghost: int, n_primitive: int, dtype, staging):
        self.comm = comm
        self.ranks, self.rank = comm.size, comm.rank
        self.grid_cells = tuple(decomposition.cells)
        self.block = block
        self.decomposition = decomposition
        self.ghost, self.dtype, self.n = ghost, dtype, n_primitive
        self.dim = len(block.cells)
        self.staging = staging  # parallel/staging.py: where the slabs wait between device and MPI
        self.faces = []  # (axis, side, neighbour's rank) of each face shared with another block
        for axis in range(self.dim):
            for side in (0, 1):
                neighbour = decomposition.neighbour(block.rank, axis, side, periodic[axis])
                if neighbour is not None:
                    self.faces.append((axis, side, neighbour))
        shapes = [self._slab_shape(axis) for axis, _, _ in self.faces]
        self._sent = [staging.slab(shape) for shape in shapes]
        self._received = [staging.slab(shape) for shape in shapes]
        self._packs = [self._copy(axis, self._first_inside(axis, side), True) for axis, side, _ in self.faces]
        self._unpacks = [self._copy(axis, self._first_ghost(axis, side), False) for axis, side, _ in self.faces]
        self._values = None  # (the step's values to reduce, where the staging keeps arrays)
        self._pending = None  # the staging's handle of an exchange posted and not yet unpacked
        self._shared_axes = {axis for axis, _, _ in self.faces}

    @property
    def exchange_path(self) -> str:
        return self.staging.name

    def describe(self, arch: str) -> str:
        """run.log's line on the split and on the path the ghost layers take."""
        dims = "x".join(str(n) for n in self.decomposition.dims)
        try:
            aware = self.comm.cuda_aware()
        except OSError:  # (no /proc: not Linux)
            aware = None
        said = {True: "CUDA-aware", False: "not CUDA-aware", None: "CUDA-awareness unknown"}[aware]
        return (f"MPI: {self.ranks} ranks, {dims} blocks (rank {self.rank}'s {list(self.block.cells)} cells); "
                f"{self.comm.library()}, {said}; ghost layers exchanged through {self.staging.describe}, "
                f"every face at once, awaited by the first sweep that reads a shared axis")

    # --- ghost layers -------------------------------------------------------------------------
    def exchange_ghosts(self, W) -> None:
        """Every face's outermost layers to its neighbour and its ghost layers from it, all faces
        at once: no kernel reads an edge or a corner of the ghost region (every stencil runs
        along one axis), so the axes need no order."""
        self.begin_exchange(W)
        self.complete_exchange(W)

    def begin_exchange(self, W) -> None:
        """Pack every shared face and post all its messages at once; complete_exchange waits
        for them before the first sweep that reads a shared axis. A block split only along axes
        the stage's first sweep does not read (y in 3D with CUDA f32's unfused walk along x,
        which solves x and z) has them travel while that sweep runs, with NCCL on a stream of
        its own beside it. One post for all axes, not one per axis: that doubled the host's
        calls, and on a host-bound step measured slower (docs/scaling.md)."""
        if self._pending is not None:  # (a send still under way must not see its buffer packed again)
            self._finish(W)
        for pack, slab in zip(self._packs, self._sent):
            pack(W, slab.kernel)
        self.staging.after_pack(self._sent)
        # the layers I send across my face (axis, side) fill my neighbour's face (axis, 1 - side):
        # tagged with (axis, side), received there as (axis, 1 - side)'s
        sends = [(slab.mpi, rank, 2 * axis + side) for (axis, side, rank), slab in zip(self.faces, self._sent)]
        receives = [(slab.mpi, rank, 2 * axis + 1 - side)
                    for (axis, side, rank), slab in zip(self.faces, self._received)]
        self._pending = self.staging.post(self.comm, sends, receives)

    def complete_exchange(self, W, axes=None) -> bool:
        """The begun exchange's ghost layers unpacked, if `axes` (None: any) holds a shared
        axis; else it stays in flight. Whether this call completed one."""
        if self._pending is None or (axes is not None and not self._shared_axes.intersection(axes)):
            return False
        self._finish(W)
        return True

    def _finish(self, W) -> None:
        self.staging.wait(self._pending)
        self._pending = None
        self.staging.before_unpack(self._received)
        for unpack, slab in zip(self._unpacks, self._received):
            unpack(W, slab.kernel)

    def _slab_shape(self, axis):
        return [self.ghost if d == axis else n for d, n in enumerate(self.block.cells)] + [self.n]

    def _first_inside(self, axis, side):
        """The first of the `ghost` layers next to face (axis, side) inside the block."""
        return 0 if side == 0 else self.block.cells[axis] - self.ghost

    def _first_ghost(self, axis, side):
        return -self.ghost if side == 0 else self.block.cells[axis]

    def _copy(self, axis, first, to_buffer):
        """Kernel copying layers first .. first + ghost along axis between W and a slab buffer."""
        dim, n, dtype = self.dim, self.n, self.dtype
        shape = self._slab_shape(axis)[:-1]

        @ti.kernel
        def copy(W: ti.template(), buffer: ti.types.ndarray(dtype=ti.types.vector(n, dtype), ndim=dim)):
            for J in ti.grouped(ti.ndrange(*shape)):
                I = with_axis(J, axis, component(J, axis) + first, dim)
                if ti.static(to_buffer):
                    buffer[J] = W[I]
                else:
                    W[I] = buffer[J]

        return copy

    # --- reductions ---------------------------------------------------------------------------
    def combine(self, values, how: str):
        op = {"sum": self.comm.allreduce_sum, "min": self.comm.allreduce_min, "max": self.comm.allreduce_max}[how]
        return op(np.asarray(values))

    def global_index(self, linear_index: int) -> int:
        if linear_index == NO_BAD_CELL:
            return NO_BAD_CELL
        local = np.unravel_index(int(linear_index), self.block.cells)
        return int(np.ravel_multi_index([i + o for i, o in zip(local, self.block.offset)], self.grid_cells))

    def reduce_check(self, check, rate: float, bad):
        """The rate and first bad cell over the blocks; the model's globals too (the check
        published this block's)."""
        local = NO_BAD_CELL if bad is None else self.global_index(bad)
        rate = float(self.comm.allreduce_max(np.array([rate]))[0])
        bad = int(self.comm.allreduce_min(np.array([local], dtype=np.int64))[0])
        check.set_global_keys(self.comm.allreduce_max(check.global_key_values()))
        return rate, (None if bad == NO_BAD_CELL else bad)

    def finish_step(self, check) -> None:
        """The check's merge, its values over the blocks, then the device clock plans the next dt
        from them. The values stay where the staging keeps arrays: on the GPU with NCCL (the
        host never waits), else in a numpy array and one allreduce a step."""
        values = self._step_values(check)
        check.merge_into(values.kernel)
        if isinstance(values.kernel, np.ndarray):  # (already on the host: no kernel round trip)
            values.kernel[2] = -self.global_index(int(values.kernel[2]))
        else:
            self._negated_global_bad(values.kernel)
        self.staging.all_reduce_max(self.comm, values)
        check.finish_merged(values.kernel)

    def _step_values(self, check):
        if self._values is None:
            self._values = self.staging.array(check.block_value_count(), "int64")
            self._negated_global_bad = _negated_global_bad_kernel(self.block.cells, self.block.offset, self.grid_cells)
        return self._values

    def bcast(self, value, root: int = 0):
        return self.comm.bcast(value, root)

    def any(self, flag: bool) -> bool:
        return self.comm.any(flag)


def _negated_global_bad_kernel(block_cells, block_offset, grid_cells):
    """Kernel turning values[2], a bad cell's linear index in the block, into minus its index
    in the whole grid (NO_BAD_CELL into -NO_BAD_CELL): a maximum over the blocks then finds the
    first bad cell of the grid, as global_index and a minimum do on the host."""
    dim = len(block_cells)

    @ti.kernel
    def negated_global_bad(values: ti.types.ndarray(dtype=ti.i64, ndim=1)):
        local = values[2]
        index = ti.i64(0)
        if local == int64_max():
            index = int64_max()
        else:
            rest = local
            stride = ti.i64(1)
            for d in ti.static(list(reversed(range(dim)))):  # (the last axis varies fastest)
                cell = rest % block_cells[d]
                rest = rest // block_cells[d]
                index += (cell + block_offset[d]) * stride
                stride *= grid_cells[d]
        values[2] = -index

    return negated_global_bad
