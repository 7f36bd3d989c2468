"""The device side of a regrid: new blocks filled from the old ones, and the indicator that
asks for it.

- Prolongation (a block split into its children): conservative limited linear,
  U_child = U_c + sum_d +-(1/4) minmod(U_c - U_c-1, U_c+1 - U_c) per conserved component, so
  the 2^d children average back to the parent cell (to round-off) and no new extremum
  appears. A parent cell at its block's edge takes its outer neighbour from the ghost layer
  (U of its W): the ghost layers must be current.
- Restriction (2^d children merged): a parent cell is the mean of its 2^d child cells.
- Löhner's indicator (FLASH's form): per cell and chosen field, summed over the axes,
  E^2 = sum_d |u+ - 2u + u-|^2 / sum_d (|u+ - u| + |u - u-| + eps (|u+| + 2|u| + |u-|))^2;
  and the relative gradient G = max_d |u+ - u-| / (2 |u|), which sees what E misses: the
  smooth, nearly linear parts of a rarefaction. A model's own indicator (@model.refinement),
  if it has one, counts where it exceeds Löhner's. A block's values are its cells' largest.

A regrid reaches the device in one launch (`apply`): the new blocks prolonged and restricted
from the old ones (which read the old tables), then the tables' changed rows, the active list
and the listed faces (kernels/amr/staging.py). Numpy arrays passed to a kernel are copied to
and from a GPU around the launch, a wait each: one launch is one wait where the moves, the
rows and the lists took six. The criteria are applied on the device too (`indicate`, the rules
of kernels/amr/criteria.py), and come back as one byte a leaf (REFINE, DEREFINE), in the active
list's order, which is the leaves'.
"""

import taichi as ti

from ...layout import component
from ...numerics.reconstruction import minmod
from .criteria import DEREFINE, REFINE
from .pool import pool_index
from .staging import MAX_AXES


def _make_flags(pool, indicator, gradient):
    """The ti.func giving a leaf's REFINE and DEREFINE codes from its two indicators."""
    level, asked, parent_asked = pool.level, pool.asked, pool.parent_asked

    @ti.func
    def flags(slot, thresholds, levels):
        """REFINE and DEREFINE of the leaf in `slot` from its indicators (criteria.leaf_flags:
        thresholds = Criteria.thresholds(), levels = (max_level, criteria.up_to))."""
        second, steepest = indicator[slot], gradient[slot]
        lv, wanted = level[slot], asked[slot]
        steep = (second > thresholds[0]) | (steepest > thresholds[2])
        calm = (second < thresholds[1]) & (steepest < thresholds[3])
        finest = levels[1]
        if wanted > 0:
            finest = levels[0]
        code = 0
        if (steep & (lv < finest)) | (lv < wanted):
            code |= REFINE
        if (lv > 0) & (calm | (lv > finest)) & (parent_asked[slot] < lv):
            code |= DEREFINE
        return code

    return flags


def _make_conserved_at(pool):
    """The ti.func giving U of a block's cell, or of a ghost cell beside it (from its W)."""
    phys, dim, N, dtype, U, read_w = pool.phys, pool.dim, pool.N, pool.dtype, pool.U, pool.read_w

    @ti.func
    def conserved_at(slot, cell):
        """U of a cell of the block, or of a ghost cell beside it (from its W)."""
        inside = True
        for d in ti.static(range(dim)):
            inside = inside & (cell[d] >= 0) & (cell[d] < N)
        u = ti.Vector.zero(dtype, phys.U.n)
        if inside:
            u = U[pool_index(slot, cell)]
        else:
            u = phys.cons(read_w(pool_index(slot, cell), 0))
        return u

    return conserved_at


def make_regrid_kernels(pool, indicator_fields: tuple, epsilon: float):
    """(apply, indicate) kernels and the per-slot fields of the two indicators."""
    phys, dim, N, dtype = pool.phys, pool.dim, pool.N, pool.dtype
    U, W, active = pool.U, pool.W, pool.active
    cells = (N,) * dim
    rows = (N,) * (dim - 1)
    half = N // 2
    n_children = 2 ** dim
    indicator = ti.field(ti.f64, shape=pool.capacity)
    own_indicator = "refinement" in phys.model.functions
    gradient = ti.field(ti.f64, shape=pool.capacity)
    read_w = pool.read_w  # (a ghost cell beside a same-level block is that block's own)

    conserved_at = _make_conserved_at(pool)

    @ti.func
    def prolong(moves: ti.template(), J):
        """moves[k] = (parent's slot, child's slot, child's octant), k = J[0]."""
        k = component(J, 0)
        parent, child, octant = moves[k, 0], moves[k, 1], moves[k, 2]
        cell = [((octant >> d) & 1) * half + component(J, 1 + d) // 2 for d in range(dim)]
        centre = U[pool_index(parent, cell)]
        u = centre
        for d in ti.static(range(dim)):
            below = conserved_at(parent, [cell[e] - (1 if e == d else 0) for e in range(dim)])
            above = conserved_at(parent, [cell[e] + (1 if e == d else 0) for e in range(dim)])
            sign = 0.25 * (2 * (component(J, 1 + d) & 1) - 1)
            u += sign * minmod(centre - below, above - centre)
        U[pool_index(child, [component(J, 1 + d) for d in range(dim)])] = u

    @ti.func
    def restrict(moves: ti.template(), J):
        """moves[k] = (the children's slots by octant..., the parent's slot), k = J[0]."""
        k = component(J, 0)
        octant = 0
        fine = []
        for d in ti.static(range(dim)):
            octant += (component(J, 1 + d) // half) << d
            fine.append(2 * (component(J, 1 + d) % half))
        child = moves[k, octant]
        total = ti.Vector.zero(dtype, phys.U.n)
        for s in ti.static(range(n_children)):
            total += U[pool_index(child, [fine[d] + ((s >> d) & 1) for d in range(dim)])]
        U[pool_index(moves[k, n_children], [component(J, 1 + d) for d in range(dim)])] = total * (1.0 / n_children)

    write_row, write_listed = pool.write_row, pool.write_listed

    @ti.kernel
    def apply(prolonged: ti.types.ndarray(dtype=ti.i32, ndim=2), restricted: ti.types.ndarray(dtype=ti.i32, ndim=2),
              rows: ti.types.ndarray(dtype=ti.i32, ndim=2), listed: ti.types.ndarray(dtype=ti.i32, ndim=1),
              counts: ti.types.vector(4 + 2 * MAX_AXES, ti.i32)):
        """A regrid on the device: counts[0] prolongations, counts[1] restrictions (each loop
        runs after the one before: the moves read the old tables), then a Staged upload whose
        counts are counts[2:]."""
        for J in ti.grouped(ti.ndrange(counts[0], *cells)):
            prolong(prolonged, J)
        for J in ti.grouped(ti.ndrange(counts[1], *cells)):
            restrict(restricted, J)
        for r in range(counts[2]):
            write_row(rows, r)
        for k in range(listed.shape[0]):
            write_listed(listed, counts, 3, k)

    @ti.func
    def cell_indicators(slot, cell):
        """(Löhner's, or the model's own if larger; the largest relative gradient) of a cell."""
        centre = W[pool_index(slot, cell)]
        largest, steepest = 0.0, 0.0
        for f in ti.static(indicator_fields):
            second, first = 0.0, 0.0
            u = component(centre, f)
            for d in ti.static(range(dim)):
                above = [cell[e] + (1 if e == d else 0) for e in range(dim)]
                below = [cell[e] - (1 if e == d else 0) for e in range(dim)]
                up = component(read_w(pool_index(slot, above), 1 + d), f)
                down = component(read_w(pool_index(slot, below), 1 + d), f)
                second += (up - 2.0 * u + down) ** 2
                first += (ti.abs(up - u) + ti.abs(u - down)
                          + epsilon * (ti.abs(up) + 2.0 * ti.abs(u) + ti.abs(down))) ** 2
                if u != 0.0:
                    steepest = ti.max(steepest, ti.abs(up - down) / (2.0 * ti.abs(u)))
            if first > 0.0:
                largest = ti.max(largest, ti.sqrt(second / first))
        if ti.static(own_indicator):
            largest = ti.max(largest, phys.refinement(centre))
        return largest, steepest

    flags = _make_flags(pool, indicator, gradient)

    @ti.kernel
    def indicate(n_active: ti.i32, thresholds: ti.types.vector(4, ti.f64), levels: ti.types.vector(2, ti.i32),
                 codes: ti.types.ndarray(dtype=ti.i8, ndim=1)):
        """Both indicators of every listed block (W and its ghost layers current): a thread
        per row along x, its largest values then one atomic per row (an atomic per cell on
        the block's one address took 3.6 ms at 256^3 in 16^3 blocks on an H200, a stage's time);
        then per listed block its flags into codes[b]."""
        for b in range(n_active):
            indicator[active[b]] = 0.0
            gradient[active[b]] = 0.0
        for J in ti.grouped(ti.ndrange(n_active, *rows)):
            slot = active[component(J, 0)]
            largest, steepest = 0.0, 0.0
            for i in range(N):
                here, steep = cell_indicators(slot, [i] + [component(J, 1 + d) for d in range(dim - 1)])
                largest, steepest = ti.max(largest, here), ti.max(steepest, steep)
            ti.atomic_max(indicator[slot], ti.cast(largest, ti.f64))
            ti.atomic_max(gradient[slot], ti.cast(steepest, ti.f64))
        for b in range(n_active):
            codes[b] = ti.cast(flags(active[b], thresholds, levels), ti.i8)

    return apply, indicate, indicator, gradient
