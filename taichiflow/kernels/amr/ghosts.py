"""The ghost layers of every leaf block of the pool, in two launches.

A stencil runs along one axis, so only the face regions of a block's ghost layers are ever
read (no edges or corners). Each face's ghost cells come from what borders it:

- the same level: a copy of the neighbour's W;
- a finer level: restriction, W of the volume average of the 2^d fine cells' U;
- a coarser level: prolongation, limited linear from the coarse cell and its neighbours
  along each axis (minmod of the two one-sided differences of W: no new extremum, so the
  admissible set of a positive density or pressure is kept);
- the domain's boundary: the boundary kind's copy (zero gradient, mirror, constant state).

Prolongation reads the coarse block's ghost layers next to the fine block, so it runs in a
second launch, after every other face is filled. Those coarse ghost cells never come from
a coarser level again: under 2:1 balance (faces, edges and corners) a block two levels
coarser is at least one block width (N >= 2g coarse cells) away from the fine block.
"""

import taichi as ti

from ...layout import component
from ...numerics.reconstruction import minmod
from .pool import BOUNDARY, COARSER, FINER, SAME, face_direction, pool_index, row_cell

ZERO_GRADIENT = ("outflow", "absorbing")
MIRRORED = ("wall", "symmetry")
SUPPORTED_KINDS = ("periodic", "inflow") + ZERO_GRADIENT + MIRRORED


def make_ghost_fill(pool, kinds: tuple, inflow):
    """(fill_near, fill_from_coarser): the two kernels filling the ghost layers of every listed
    block. kinds: per axis the kinds of the domain's lower and upper face."""
    phys, dim, N, g = pool.phys, pool.dim, pool.N, pool.ghost
    U, W, active, relation, neighbour, origin = pool.U, pool.W, pool.active, pool.relation, pool.neighbour, pool.origin
    n_children = 2 ** dim
    # per face: its axis and side, its direction in the tables, the boundary kind, the offset across
    faces = [(axis, side, face_direction(dim, axis, side), kinds[axis][side],
              [(-1 if side == 0 else 1) if d == axis else 0 for d in range(dim)]) for axis in range(dim)
             for side in (0, 1)]
    vel = phys.W.index(phys.model.velocity) if phys.model.velocity else None
    for _, _, _, kind, _ in faces:
        if kind not in SUPPORTED_KINDS:
            raise ValueError(f"boundary kind {kind!r} is not supported with [amr] (supported: "
                             f"{', '.join(SUPPORTED_KINDS)})")
    rows = (N,) * (dim - 1)

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
    def ghost_cell(J, axis: ti.template(), side: ti.template()):
        """(slot, layer, per axis the cell index) of ghost cell J = (listed block, layer, the
        other axes' indices) of the face (axis, side)."""
        return active[component(J, 0)], component(J, 1), row_cell(dim, axis, -1 - component(J, 1) if side == 0 else N + component(J, 1), J, 2)

    @ti.kernel
    def fill_near(n_active: ti.i32):
        """Every face ghost cell that does not come from a coarser block."""
        for axis, side, direction, kind, offset in ti.static(faces):
            for J in ti.grouped(ti.ndrange(n_active, g, *rows)):
                slot, k, parts = ghost_cell(J, axis, side)
                kind_here = relation[slot, direction]
                I = pool_index(slot, parts)
                if kind_here == SAME:
                    shifted = [parts[d] - offset[d] * N for d in range(dim)]
                    W[I] = W[pool_index(neighbour[slot, direction, 0], shifted)]
                elif kind_here == FINER:
                    W[I] = from_finer(slot, direction, offset, parts)
                elif kind_here == BOUNDARY:
                    W[I] = boundary_value(slot, axis, side, kind, k, parts)

    @ti.func
    def prolonged(slot, direction: ti.template(), offset: ti.template(), parts):
        """Limited linear W of the fine ghost cell `parts` from the coarse block across."""
        coarse = neighbour[slot, direction, 0]
        cell = []
        for d in ti.static(range(dim)):
            bit = (component(origin[slot], d) // N) & 1  # the block's place in its parent
            cell.append(bit * (N // 2) + parts[d] // 2 - ((bit + offset[d]) // 2) * N)
        centre = W[pool_index(coarse, cell)]
        w = centre
        for d in ti.static(range(dim)):
            below = W[pool_index(coarse, [cell[e] - (1 if e == d else 0) for e in range(dim)])]
            above = W[pool_index(coarse, [cell[e] + (1 if e == d else 0) for e in range(dim)])]
            sign = 0.25 * (2 * (parts[d] & 1) - 1)  # the fine cell's side of the coarse centre
            w += sign * minmod(centre - below, above - centre)
        return w

    @ti.kernel
    def fill_from_coarser(n_active: ti.i32):
        """Every face ghost cell whose neighbour is coarser (after fill_near)."""
        for axis, side, direction, kind, offset in ti.static(faces):
            for J in ti.grouped(ti.ndrange(n_active, g, *rows)):
                slot, _, parts = ghost_cell(J, axis, side)
                if relation[slot, direction] == COARSER:
                    W[pool_index(slot, parts)] = prolonged(slot, direction, offset, parts)

    return fill_near, fill_from_coarser
