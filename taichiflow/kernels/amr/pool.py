"""The forest on the device: a fixed-capacity pool of block slots and the tables that say
which slots hold leaves and who borders whom.

Every state array has the slot as its outermost index (U[slot, i, j, k]); one kernel launch
covers every listed leaf (a thread finds its block through `active`), never one launch per
block (Parthenon lost 8.3x at 16^3 that way). Cell widths are per level and read at run time
(`level_dx`), so one compiled kernel serves every level. The host's forest (taichiflow/mesh)
decides the layout; `upload` copies its tables here after each regrid.
"""

import numpy as np
import taichi as ti

from ...layout import component
from ...mesh.slots import RELATION_CODES
from ..state_arrays import StateArrays
from .staging import MAX_AXES, ROW_HEAD, FaceLists, Staged, face_counts, face_direction, row_directions, staged

# relation codes of mesh.device_tables: the block across a face is at the same level, one
# coarser, one finer, or there is the domain's boundary
SAME, COARSER, FINER, BOUNDARY = (RELATION_CODES[kind] for kind in ("same", "coarser", "finer", "boundary"))


class BlockPool:
    """Device arrays of `capacity` blocks of `block_cells`^dim cells and their tables."""

    def __init__(self, phys, dim: int, block_cells: int, ghost: int, capacity: int, max_level: int,
                 extent: tuple, roots: tuple, keep_u0: bool):
        if block_cells < 2 * ghost or block_cells % 2:
            raise ValueError(f"[amr] block_cells = {block_cells}: must be even and at least twice the scheme's "
                             f"{ghost} ghost layers (its prolonged ghost cells then come from one coarse block)")
        self.phys, self.dim, self.N, self.ghost = phys, dim, block_cells, ghost
        self.capacity, self.max_level = capacity, max_level
        self.dtype = phys.dtype
        cells = (block_cells,) * dim
        self.block_shape = cells
        state = StateArrays(self.dtype)
        self.U = state.vector(phys.U.n, cells, slots=capacity)
        self.U0 = state.vector(phys.U.n, cells, slots=capacity) if keep_u0 else None
        self.R = state.vector(phys.U.n, cells, slots=capacity)
        self.W = state.vector(phys.W.n, cells, ghosts=ghost, slots=capacity)
        state.place()
        rows = (block_cells,) * (dim - 1)
        # the flux through each block face whose neighbour is coarser, as the fine side computed it
        # (the coarse side takes the mean of its fine faces': kernels/amr/fluxes.py)
        self.face_register = ti.Vector.field(phys.n_flux, self.dtype, shape=(capacity, dim, 2) + rows)
        self.level = ti.field(ti.i32, shape=capacity)
        self.origin = ti.Vector.field(dim, ti.i32, shape=capacity)
        self.neighbour = ti.field(ti.i32, shape=(capacity, 3 ** dim, 2 ** dim))
        self.relation = ti.field(ti.i32, shape=(capacity, 3 ** dim))
        self.active = ti.field(ti.i32, shape=capacity)
        # the levels the geometric regions ask of each slot's leaf and of its parent (criteria.py)
        self.asked = ti.field(ti.i32, shape=capacity)
        self.parent_asked = ti.field(ti.i32, shape=capacity)
        # per axis the faces of listed blocks (slot * 2 + side) whose neighbour across is coarser
        # (their ghost layers prolonged, their flux kept in the register: kernels/amr/fluxes.py),
        # and those whose ghost layers are pulled from a finer block or the block itself (the
        # domain's boundary); the rest, between blocks of one level, have none: `read_w` reads
        # the block across (make_w_reader)
        self.coarser_faces = ti.field(ti.i32, shape=(dim, 2 * capacity))
        self.pulled_faces = ti.field(ti.i32, shape=(dim, 2 * capacity))
        self.n_coarser = self.n_pulled = (0,) * dim
        self.level_dx = ti.Vector.field(dim, self.dtype, shape=max_level + 1)
        self.level_inv_dx = ti.Vector.field(dim, self.dtype, shape=max_level + 1)
        self.n_active = 0
        self.lower = tuple(float(a) for a, _ in extent)
        for level in range(max_level + 1):
            widths = [(float(b) - float(a)) / (roots[d] * block_cells * 2 ** level) for d, (a, b) in enumerate(extent)]
            self.level_dx[level] = widths
            self.level_inv_dx[level] = [1.0 / h for h in widths]
        self.R.fill(0.0)
        self.faces = FaceLists(dim, capacity)  # (the host's masks of the listed faces)
        self.write_row, self.write_listed = self._staged_writers()
        self._write_staged = self._staged_kernel()
        self.read_w = make_w_reader(self)  # (every kernel reading W past a block's face)

    def _staged_writers(self):
        """(write_row(rows, r), write_listed(listed, counts, first, k)): ti.funcs writing row r
        of a Staged's rows into the tables, and entry k of its listed array (the active list,
        then the faces per kind and axis; counts[first:] are Staged.counts[1:])."""
        level, origin, neighbour, relation, dim = self.level, self.origin, self.neighbour, self.relation, self.dim
        active, kinds, asked, parent_asked = self.active, (self.coarser_faces, self.pulled_faces), self.asked, \
            self.parent_asked
        directions, fan = row_directions(dim), 2 ** dim

        @ti.func
        def write_row(rows: ti.template(), r):
            slot = rows[r, 0]
            level[slot] = rows[r, 1]
            asked[slot] = rows[r, 2]
            parent_asked[slot] = rows[r, 3]
            for d in ti.static(range(dim)):
                origin[slot][d] = rows[r, ROW_HEAD + d]
            for q in ti.static(range(len(directions))):
                base = ROW_HEAD + dim + q * (1 + fan)
                relation[slot, directions[q]] = rows[r, base]
                for o in ti.static(range(fan)):
                    neighbour[slot, directions[q], o] = rows[r, base + 1 + o]

        @ti.func
        def write_listed(listed: ti.template(), counts, first: ti.template(), k):
            start = counts[first]
            if k < start:
                active[k] = listed[k]
            for kind in ti.static(range(len(kinds))):
                for axis in ti.static(range(dim)):
                    n = counts[first + 1 + MAX_AXES * kind + axis]
                    if start <= k and k < start + n:
                        kinds[kind][axis, k - start] = listed[k]
                    start += n
        return write_row, write_listed

    def _staged_kernel(self):
        write_row, write_listed = self.write_row, self.write_listed

        @ti.kernel
        def write_staged(rows: ti.types.ndarray(dtype=ti.i32, ndim=2), listed: ti.types.ndarray(dtype=ti.i32, ndim=1),
                         counts: ti.types.vector(2 + 2 * MAX_AXES, ti.i32)):
            """A Staged upload (kernels/amr/regrid.py's apply does the same after a regrid's moves)."""
            for r in range(counts[0]):
                write_row(rows, r)
            for k in range(listed.shape[0]):
                write_listed(listed, counts, 1, k)
        return write_staged

    def upload(self, tables, regions) -> None:
        """The forest's tables (mesh.device_tables) and the levels its regions ask
        (criteria.RegionSlots) onto the device: every row, or where tables.changed lists the
        rows an update wrote, those, staged (a whole neighbour table is 28 bytes a slot per
        direction in 3D: 42 MB at 49,152 slots, tens of milliseconds)."""
        if tables.changed is not None:
            update = self.stage(tables, regions)
            self._write_staged(*padded(update))
            self.took(update)
            return
        self.asked.from_numpy(regions.asked.astype(np.int32))
        self.parent_asked.from_numpy(regions.parent_asked.astype(np.int32))
        self.level.from_numpy(tables.level.astype(np.int32))
        self.origin.from_numpy(tables.origin.astype(np.int32).reshape(self.capacity, self.dim))
        self.neighbour.from_numpy(tables.neighbour.astype(np.int32))
        self.relation.from_numpy(tables.relation.astype(np.int32))
        active = np.full(self.capacity, -1, dtype=np.int32)
        active[:len(tables.active)] = tables.active
        self.active.from_numpy(active)
        self.n_active = len(tables.active)
        self.faces.masks[:] = False
        self.faces.set_slots(tables, np.asarray(tables.active, np.int64))
        counts = []
        for field, kind in zip((self.coarser_faces, self.pulled_faces), self.faces.lists()):
            faces = np.full((self.dim, 2 * self.capacity), -1, dtype=np.int32)
            for axis, listed in enumerate(kind):
                faces[axis, :len(listed)] = listed
            field.from_numpy(faces)
            counts.append(tuple(len(listed) for listed in kind))
        self.n_coarser, self.n_pulled = counts

    def stage(self, tables, regions) -> Staged:
        """The upload of an update of the tables (tables.changed), made on the host."""
        return staged(tables, self.faces, regions)

    def took(self, update: Staged) -> None:
        """The host's counts after `update` reached the device."""
        self.n_active = update.counts[1]
        self.n_coarser = face_counts(update.counts, 0)[:self.dim]
        self.n_pulled = face_counts(update.counts, 1)[:self.dim]

    def resident_bytes(self) -> int:
        """Device bytes of the pool's state arrays and its face register."""
        size = 4 if self.dtype == ti.f32 else 8
        fields = [f for f in (self.U, self.U0, self.R, self.W, self.face_register) if f is not None]
        return sum(int(np.prod(f.shape)) * f.n * size for f in fields)


def make_w_reader(pool):
    """read_w(index, axis): W at pool index (slot, i, j, k), whose cell may lie up to the ghost
    width beyond its block along index axis `axis` (1 + the block's axis; 0: along any one):
    there, where the block across is of the same level, its own cell (no ghost layer is
    filled for such faces: a pass writing them across the contiguous axis stored 12 bytes a
    line, 0.9 ms of a 256^3 stage in 16^3 blocks on an H200, as much as a sweep); elsewhere
    the block's ghost layer (filled from a finer or a coarser block, or by the boundary)."""
    dim, N, W, relation, neighbour = pool.dim, pool.N, pool.W, pool.relation, pool.neighbour

    @ti.func
    def across(slot, parts, d: ti.template()):
        """(slot, parts) of the cell `parts`, off its block along axis d at most, where it lies."""
        owner = slot
        if parts[d] < 0:
            if relation[slot, face_direction(dim, d, 0)] == SAME:
                owner = neighbour[slot, face_direction(dim, d, 0), 0]
                parts[d] += N
        elif parts[d] >= N:
            if relation[slot, face_direction(dim, d, 1)] == SAME:
                owner = neighbour[slot, face_direction(dim, d, 1), 0]
                parts[d] -= N
        return owner, parts

    @ti.func
    def read_w(index, axis: ti.template()):
        slot = component(index, 0)
        parts = ti.Vector([component(index, 1 + d) for d in range(dim)])
        if ti.static(axis == 0):
            for d in ti.static(range(dim)):
                slot, parts = across(slot, parts, d)
        else:
            slot, parts = across(slot, parts, axis - 1)
        return W[pool_index(slot, [parts[d] for d in range(dim)])]
    return read_w


def padded(update: Staged) -> tuple:
    """(rows, listed, counts) of a Staged as kernel arguments: arrays of at least one row."""
    rows = update.rows if len(update.rows) else np.zeros((1, update.rows.shape[1]), np.int32)
    listed = update.listed if len(update.listed) else np.zeros(1, np.int32)
    return rows, listed, list(update.counts)


def pool_index(slot, parts):
    """The pool index (slot, i, j, k) of a block's cell given per axis its index."""
    return ti.Vector([slot] + list(parts))


def row_cell(dim, axis, i, J, first):
    """Per axis the index of cell i along `axis` of the row whose other axes' indices are
    J[first], J[first + 1], ... (i may lie in the ghost layers: -1 - k below, N + k above)."""
    parts, t = [], first
    for d in range(dim):
        if d == axis:
            parts.append(i)
        else:
            parts.append(component(J, t))
            t += 1
    return parts
