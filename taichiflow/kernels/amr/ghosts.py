"""The ghost layers of every leaf block of the pool.

A stencil runs along one axis, so only the face regions of a block's ghost layers are ever
read (no edges or corners). Each face's ghost cells come from what borders it:

- the same level: none; a reader of W takes the neighbour's own cells there
  (kernels/amr/pool.py: make_w_reader): a pass copying them wrote 12 bytes a line across
  the contiguous axis, 0.9 ms of a 256^3 stage in 16^3 blocks on an H200;
- a finer level: restriction, W of the volume average of the 2^d fine cells' U;
- a coarser level: prolongation, limited linear from the coarse cell and its neighbours
  along each axis (minmod of the two one-sided differences of W: no new extremum, so the
  admissible set of a positive density or pressure is kept);
- the domain's boundary: the boundary kind's copy (zero gradient, mirror, constant state).

The other faces are listed per axis by the pool (pool.pulled_faces, pool.coarser_faces), so
the two fill launches run over those only (none in a forest of one level). Prolongation reads
the coarse block's cells beside the fine block, so it runs in the second launch, after every
other face is filled. Those coarse ghost cells never come from a coarser level again: under
2:1 balance (faces, edges and corners) a block two levels coarser is at least one block
width (N >= 2g coarse cells) away from the fine block.
"""

import taichi as ti

from ...layout import component
from ...numerics.reconstruction import minmod
from .listed_loops import listed_cells
from .pool import FINER, face_direction, pool_index, row_cell

ZERO_GRADIENT = ("outflow", "absorbing")
MIRRORED = ("wall", "symmetry")
SUPPORTED_KINDS = ("periodic", "inflow") + ZERO_GRADIENT + MIRRORED


def make_ghost_fill(pool, kinds: tuple, inflow):
    """(fill_near, fill_from_coarser): the two passes filling the ghost layers of the listed
    faces of every leaf block (after W). kinds: per axis the kinds of the domain's lower and
    upper face."""
    dim, W = pool.dim, pool.W
    # per face: its axis and side, its direction in the tables, the boundary kind, the offset across
    faces = [(axis, side, face_direction(dim, axis, side), kinds[axis][side],
              [(-1 if side == 0 else 1) if d == axis else 0 for d in range(dim)]) for axis in range(dim)
             for side in (0, 1)]
    for _, _, _, kind, _ in faces:
        if kind not in SUPPORTED_KINDS:
            raise ValueError(f"boundary kind {kind!r} is not supported with [amr] (supported: "
                             f"{', '.join(SUPPORTED_KINDS)})")
    ghost_cells, ghost_cell = _ghost_cells(pool)
    total, listed_cell = listed_cells(dim, ghost_cells)

    def fill_kernel(listed, value):
        """The kernel that fills the ghost cells of the faces in `listed` with value(slot,
        axis, side, layer, parts)."""
        @ti.kernel
        def fill(counts: ti.types.vector(3, ti.i32)):
            for n in range(total(counts)):  # (every axis' faces in one launch: listed_loops.py)
                for axis in ti.static(range(dim)):
                    J, here = listed_cell(n, counts, axis)
                    if here:
                        slot, side, k, parts = ghost_cell(listed, J, axis)
                        if side == 0:
                            W[pool_index(slot, parts)] = value(slot, axis, 0, k, parts)
                        else:
                            W[pool_index(slot, parts)] = value(slot, axis, 1, k, parts)
        return fill

    # the faces whose neighbour is finer or the boundary, then those whose neighbour is coarser
    # (prolongation reads the coarse block's cells the first pass filled)
    fill_pulled = fill_kernel(pool.pulled_faces, _pulled_value(pool, faces, inflow))
    fill_coarser = fill_kernel(pool.coarser_faces, _prolonged_value(pool, faces))

    def fill_near():
        """Every ghost cell from a finer block or the boundary."""
        if any(pool.n_pulled):
            fill_pulled(list(pool.n_pulled) + [0] * (3 - dim))

    def fill_from_coarser():
        if any(pool.n_coarser):
            fill_coarser(list(pool.n_coarser) + [0] * (3 - dim))

    return fill_near, fill_from_coarser


def _pulled_value(pool, faces, inflow):
    """pulled(slot, axis, side, layer k, parts): a ghost cell of the face (axis, side) from a
    finer block (restriction) or on the domain's boundary (its kind's copy)."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    U, W, relation, neighbour = pool.U, pool.W, pool.relation, pool.neighbour
    n_children = 2 ** dim
    vel = phys.W.index(phys.model.velocity) if phys.model.velocity else None

    @ti.func
    def restricted(fine_slot, parts):
        """W of the mean U of the 2^d fine cells under coarse ghost cell `parts` (per axis the
        fine block's local index of the first of each pair)."""
        total = ti.Vector.zero(pool.dtype, phys.U.n)
        for s in ti.static(range(n_children)):
            total += U[pool_index(fine_slot, [parts[d] + ((s >> d) & 1) for d in range(dim)])]
        return phys.prim(total * (1.0 / n_children))

    @ti.func
    def from_finer(slot, direction: ti.template(), offset: ti.template(), parts):
        """Restriction: the fine block holding the 2^d cells under ghost cell `parts`."""
        octant = 0
        fine = []
        for d in ti.static(range(dim)):
            f = 2 * parts[d]
            block = f // N  # (floor: negative below the block)
            octant += (block - 2 * offset[d]) << d
            fine.append(f - block * N)
        return restricted(neighbour[slot, direction, octant], fine)

    @ti.func
    def boundary_value(slot, axis: ti.template(), side: ti.template(), kind: ti.template(), k, parts):
        """Ghost layer k of a face on the domain's boundary, from the block's own cells."""
        inside = list(parts)
        w = ti.Vector.zero(pool.dtype, phys.W.n)
        if ti.static(kind in ZERO_GRADIENT):
            inside[axis] = 0 if side == 0 else N - 1
            w = W[pool_index(slot, inside)]
        elif ti.static(kind in MIRRORED):
            inside[axis] = k if side == 0 else N - 1 - k
            mirror = W[pool_index(slot, inside)]
            w = ti.Vector([-component(mirror, c) if c == vel + axis else component(mirror, c)
                           for c in range(phys.W.n)])
        elif ti.static(kind == "inflow"):
            w = inflow[axis, side]
        return w

    @ti.func
    def pulled(slot, axis: ti.template(), side: ti.template(), k, parts):
        """A ghost cell from a finer block (restriction) or on the domain's boundary."""
        w = ti.Vector.zero(pool.dtype, phys.W.n)
        if relation[slot, faces[2 * axis + side][2]] == FINER:
            w = from_finer(slot, faces[2 * axis + side][2], faces[2 * axis + side][4], parts)
        else:
            w = boundary_value(slot, axis, side, faces[2 * axis + side][3], k, parts)
        return w
    return pulled


def _prolonged_value(pool, faces):
    """prolonged(slot, axis, side, layer k, parts): a ghost cell of a fine block's face (axis,
    side) from the coarse block across it."""
    dim, N, W, neighbour, origin, read_w = pool.dim, pool.N, pool.W, pool.neighbour, pool.origin, pool.read_w

    @ti.func
    def prolonged(slot, axis: ti.template(), side: ti.template(), k, parts):
        """Limited linear W of the fine ghost cell `parts` from the coarse block across."""
        direction, offset = faces[2 * axis + side][2], faces[2 * axis + side][4]
        coarse = neighbour[slot, direction, 0]
        cell = []
        for d in ti.static(range(dim)):
            bit = (component(origin[slot], d) // N) & 1  # the block's place in its parent
            cell.append(bit * (N // 2) + parts[d] // 2 - ((bit + offset[d]) // 2) * N)
        centre = W[pool_index(coarse, cell)]
        w = centre
        for d in ti.static(range(dim)):
            below = read_w(pool_index(coarse, [cell[e] - (1 if e == d else 0) for e in range(dim)]), 1 + d)
            above = read_w(pool_index(coarse, [cell[e] + (1 if e == d else 0) for e in range(dim)]), 1 + d)
            sign = 0.25 * (2 * (parts[d] & 1) - 1)  # the fine cell's side of the coarse centre
            w += sign * minmod(centre - below, above - centre)
        return w
    return prolonged


def _ghost_cells(pool):
    """(ghost_cells(axis), ghost_cell(listed, J, axis)): the loop shape over a listed face's
    ghost cells and a cell of it."""
    dim, N, g = pool.dim, pool.N, pool.ghost
    rows = (N,) * (dim - 1)

    def layer_first(axis):
        """Where a face's ghost cells' layer index lies in J: after the block for a face across
        a strided axis, last for the contiguous axis, so that neighbouring threads write
        neighbouring addresses (the layer first there left each thread a line of its own:
        0.9 ms a face at 256^3 in 16^3 blocks on an H200, against 0.09 ms across the others)."""
        return axis != dim - 1

    def ghost_cells(axis):
        """The ghost cells of a face across axis: (listed block, layer, the other axes' indices),
        the layer last along the contiguous axis."""
        return (g,) + rows if layer_first(axis) else rows + (g,)

    layer_index = [1 if layer_first(axis) else dim for axis in range(dim)]  # (where J has the layer,
    rows_index = [2 if layer_first(axis) else 1 for axis in range(dim)]   # and the other axes' indices)

    @ti.func
    def ghost_cell(listed, J, axis: ti.template()):
        """(slot, side, layer, per axis the cell index) of ghost cell J (see ghost_cells) of the
        listed face J[0] along axis (an entry slot * 2 + side of `listed`)."""
        entry = listed[axis, component(J, 0)]
        side = entry % 2
        k = component(J, layer_index[axis])
        i = (-1 - k) * (1 - side) + (N + k) * side
        return entry // 2, side, k, row_cell(dim, axis, i, J, rows_index[axis])
    return ghost_cells, ghost_cell
