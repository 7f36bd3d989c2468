"""The stage of a pool of blocks: per axis one launch over every listed block's rows, each
thread walking its row's faces and updating its cells, as the uniform sweeps do:

    R = a R + dt (-dF/dx)        (the first axis; later axes add to R)
    U = c0 U0 + c1 U + c2 R      (the last axis, with the model's source and after_step)

The fluxes through every block's own faces are computed first, into the pool's face register
(`fill_register`); the sweeps solve the faces inside a block and read its two end faces from
there. Where the level jumps, the coarse side reads the mean of the fine faces' fluxes, so
what leaves one side enters the other and every total is kept to round-off at every stage
(the advected variables' face velocity and a model's balance values travel in the same flux
vector, so non-conservative terms and well-balanced sources see the same faces as the
conservative ones).

The face numerics are the uniform sweeps' (kernels/faces.py: face_functions), given the pool's
W with the slot as axis 0; only the cell widths differ, read per level at run time.
"""

import taichi as ti

from ...layout import component
from ..faces import SweepContext, face_functions, make_flux_divergence
from .ghosts import pool_index
from .pool import FINER, face_direction


def pool_contexts(pool, plan):
    """(the pool's sweep context, with the slot as axis 0; the block's physical context, cell
    widths 1: the divergence is scaled by the level's 1/dx at run time)."""
    phys, dim = pool.phys, pool.dim
    n_conserved = phys.U.n
    to_normal = [phys.W.rotation(d, True) for d in range(dim)]
    to_global = [phys.U.rotation(d, False) + list(range(n_conserved, phys.n_flux)) for d in range(dim)]
    common = dict(phys=phys, plan=plan, dtype=pool.dtype, lower=pool.lower, offset=(), U=pool.U, U0=pool.U0,
                  R=pool.R, W=pool.W, fallbacks=None, clock=None)
    on_pool = SweepContext(cells=(pool.capacity,) + pool.block_shape, dx=(1.0,) * (dim + 1),
                           inv_dx=[1.0] * (dim + 1), to_normal_W=[None] + to_normal,
                           to_global_F=[None] + to_global, **common)
    physical = SweepContext(cells=pool.block_shape, dx=(1.0,) * dim, inv_dx=[1.0] * dim, to_normal_W=to_normal,
                            to_global_F=to_global, **common)
    return on_pool, physical


def _row_cell(dim, axis, i, J, first):
    """Per axis the index of cell i along `axis` of the row J[first:] names."""
    parts, t = [], first
    for d in range(dim):
        if d == axis:
            parts.append(i)
        else:
            parts.append(component(J, t))
            t += 1
    return parts


def make_stage_kernels(pool, plan, scheme, fallbacks):
    """(fill_register, [walk along axis 0, 1, ...]) of one face scheme."""
    phys, dim, N = pool.phys, pool.dim, pool.N
    on_pool, physical = pool_contexts(pool, plan)
    divergence = make_flux_divergence(physical)
    U, U0, R, W, register = pool.U, pool.U0, pool.R, pool.W, pool.face_register
    active, level, relation, neighbour = pool.active, pool.level, pool.relation, pool.neighbour
    level_dx, level_inv_dx, origin, lower = pool.level_dx, pool.level_inv_dx, pool.origin, pool.lower
    rows = (N,) * (dim - 1)
    cells = (N,) * dim
    half = N // 2
    n_fine = 2 ** (dim - 1)
    has_source = "source" in phys.model.functions
    has_after_step = "after_step" in phys.model.functions
    static = phys.static_indices
    reads_u_early = len(phys.advected_indices) > 0
    balanced = phys.n_balance > 0
    keeps_u0 = U0 is not None
    g = scheme.recon.ghost
    faces = [face_functions(on_pool, axis + 1, scheme) for axis in range(dim)]

    def computed(axis):
        functions = faces[axis]

        @ti.func
        def flux(index, i, dt_dx):
            """The flux through face i + 1/2 along axis of the row `index` is in."""
            stencil = functions.cells_at(index, i - g + 1, 2 * g)
            f, replaced = functions.face_flux(stencil, index, i, dt_dx)
            if replaced:
                ti.atomic_add(fallbacks[component(index, 0)], ti.cast(replaced, ti.i64))
            return f
        return flux

    fluxes = [computed(axis) for axis in range(dim)]

    @ti.kernel
    def fill_register(n_active: ti.i32, dt: pool.dtype):
        """The fluxes through every block face but those whose neighbour is finer (whose flux
        is the mean of the fine side's): the sweeps then solve only the faces inside a block,
        with one copy of the face numerics each (three made the walks spill registers)."""
        for axis, side in ti.static([(a, s) for a in range(dim) for s in (0, 1)]):
            direction = face_direction(dim, axis, side)
            for J in ti.grouped(ti.ndrange(n_active, *rows)):
                slot = active[component(J, 0)]
                if relation[slot, direction] != FINER:
                    dt_dx = dt * component(level_inv_dx[level[slot]], axis)
                    index = pool_index(slot, _row_cell(dim, axis, -1 if side == 0 else N - 1, J, 1))
                    row = [slot, axis, side] + [component(J, 1 + t) for t in range(dim - 1)]
                    register[ti.Vector(row)] = fluxes[axis](index, -1 if side == 0 else N - 1, dt_dx)

    def fine_faces(axis):
        @ti.func
        def fine_flux(slot, J, side: ti.template(), q: ti.template()):
            """The q-th of the fine faces' fluxes (from their register) that make up the block's
            face on `side` of row J, whose neighbour there is finer."""
            octant = (1 if side == 0 else 0) << axis
            fine_rows = []
            t = 0
            for d in ti.static(range(dim)):
                if ti.static(d != axis):
                    r = component(J, 1 + t)
                    octant += (r // half) << d
                    fine_rows.append(2 * (r % half))
                    t += 1
            fine = neighbour[slot, face_direction(dim, axis, side), octant]
            return register[ti.Vector([fine, axis, 1 - side] + [fine_rows[k] + ((q >> k) & 1) for k in range(dim - 1)])]
        return fine_flux

    def block_face(axis):
        fine_flux = fine_faces(axis)

        @ti.func
        def flux(slot, J, side: ti.template()):
            """The flux through the block's face on `side` of row J, from the register: where
            the neighbour is finer, the mean of the fine faces' fluxes."""
            f = ti.Vector.zero(pool.dtype, phys.n_flux)
            if relation[slot, face_direction(dim, axis, side)] != FINER:
                f = register[ti.Vector([slot, axis, side] + [component(J, 1 + t) for t in range(dim - 1)])]
            else:
                for q in ti.static(range(n_fine)):
                    f += fine_flux(slot, J, side, q)
                f *= 1.0 / n_fine
            return f
        return flux

    def cell_divergence(axis):
        """-dF/dx of a cell (its widths' 1/dx not applied). For a model with balance terms (a
        well-balanced source: shallow water's bed slope), a cell beside finer blocks takes the
        mean of the divergences with each fine face, not the divergence with their mean flux:
        the balance terms are not linear in the face values, and only face by face do they
        cancel the pressure of a lake at rest (the mean flux left its surface 4.9e-6 off across a
        bump in 15 steps: tests/test_amr.py)."""
        fine_flux = fine_faces(axis)

        @ti.func
        def of_cell(slot, J, i, f_lo, f_hi, u):
            rhs = divergence(f_lo, f_hi, u, axis)
            if ti.static(balanced):
                if i == 0 and relation[slot, face_direction(dim, axis, 0)] == FINER:
                    rhs *= 0.0
                    for q in ti.static(range(n_fine)):
                        rhs += divergence(fine_flux(slot, J, 0, q), f_hi, u, axis)
                    rhs *= 1.0 / n_fine
                elif i == N - 1 and relation[slot, face_direction(dim, axis, 1)] == FINER:
                    rhs *= 0.0
                    for q in ti.static(range(n_fine)):
                        rhs += divergence(f_lo, fine_flux(slot, J, 1, q), u, axis)
                    rhs *= 1.0 / n_fine
            return rhs
        return of_cell

    def cell_update(axis):
        first, last = axis == 0, axis == dim - 1
        of_cell = cell_divergence(axis)

        @ti.func
        def step_cell(I, slot, J, i, lvl, inv_h, f_lo, f_hi, dt, t, a, c0, c1, c2, save_u0, ends_step):
            """R (and on the last axis U) of cell I, i along the axis in row J, from the fluxes
            through its two faces."""
            u = ti.Vector.zero(pool.dtype, phys.U.n)
            if ti.static(last or reads_u_early):
                u = U[I]
            r = dt * (of_cell(slot, J, i, f_lo, f_hi, u) * inv_h)
            if ti.static(first):
                if a != 0.0:
                    r += a * R[I]
            else:
                r += R[I]
            if ti.static(last):
                update(I, slot, lvl, r, u, dt, t, c0, c1, c2, save_u0, ends_step)
            else:
                R[I] = r
        return step_cell

    def walk(axis):
        """A thread per row along the axis, each face solved once: where the rows' next cells
        are neighbours in memory (every axis but the last)."""
        face, flux, step_cell = block_face(axis), fluxes[axis], cell_update(axis)

        @ti.kernel
        def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
                  c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
            for J in ti.grouped(ti.ndrange(n_active, *rows)):
                slot = active[component(J, 0)]
                lvl = level[slot]
                inv_h = component(level_inv_dx[lvl], axis)
                dt_dx = dt * inv_h
                f_lo = face(slot, J, 0)
                for i in range(N):
                    I = pool_index(slot, _row_cell(dim, axis, i, J, 1))
                    f_hi = ti.Vector.zero(pool.dtype, phys.n_flux)
                    if i == N - 1:
                        f_hi = face(slot, J, 1)
                    else:
                        f_hi = flux(I, i, dt_dx)
                    step_cell(I, slot, J, i, lvl, inv_h, f_lo, f_hi, dt, t, a, c0, c1, c2, save_u0, ends_step)
                    f_lo = f_hi
        return sweep

    def per_cell(axis):
        """A thread per cell, its two faces solved (each face twice): the last axis, whose rows
        lie along memory, so that a warp's threads read neighbouring addresses (a walk along
        it strides by a row: 5.7% of the uniform rate at 16^3 blocks on an H200)."""
        face, flux, step_cell = block_face(axis), fluxes[axis], cell_update(axis)

        @ti.kernel
        def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
                  c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
            for J in ti.grouped(ti.ndrange(n_active, *cells)):
                slot = active[component(J, 0)]
                lvl = level[slot]
                inv_h = component(level_inv_dx[lvl], axis)
                dt_dx = dt * inv_h
                i = component(J, 1 + axis)
                row = ti.Vector([component(J, 0)] + [component(J, 1 + d) for d in range(dim) if d != axis])
                I = pool_index(slot, [component(J, 1 + d) for d in range(dim)])
                f_lo = ti.Vector.zero(pool.dtype, phys.n_flux)
                f_hi = ti.Vector.zero(pool.dtype, phys.n_flux)
                if i == 0:
                    f_lo = face(slot, row, 0)
                else:
                    f_lo = flux(pool_index(slot, _row_cell(dim, axis, i - 1, row, 1)), i - 1, dt_dx)
                if i == N - 1:
                    f_hi = face(slot, row, 1)
                else:
                    f_hi = flux(I, i, dt_dx)
                step_cell(I, slot, row, i, lvl, inv_h, f_lo, f_hi, dt, t, a, c0, c1, c2, save_u0, ends_step)
        return sweep

    @ti.func
    def update(I, slot, lvl, r_in, u, dt, t, c0, c1, c2, save_u0, ends_step):
        """U of cell I from its R (with the source) and the stage's coefficients; R stored."""
        r = r_in
        if ti.static(has_source):
            widths = level_dx[lvl]
            x = ti.Vector([lower[d] + (component(origin[slot], d) + component(I, d + 1) + 0.5) * component(widths, d)
                           for d in range(dim)] + [0.0] * (3 - dim))
            r += dt * phys.source(u, W[I], x, t)
        u_new = c1 * u + c2 * r
        if ti.static(keeps_u0):
            if c0 != 0.0:
                u_new += c0 * U0[I]
            if save_u0 != 0:
                U0[I] = u
        if ti.static(has_after_step):
            if ends_step != 0:
                widths = level_dx[lvl]
                least = ti.min(*[component(widths, d) for d in range(dim)]) if dim > 1 else component(widths, 0)
                u_new = phys.after_step(u_new, dt, least)
        for k in ti.static(static):
            u_new[k] = u[k]
        U[I] = u_new
        R[I] = r

    sweeps = [walk(axis) if axis < dim - 1 or dim == 1 else per_cell(axis) for axis in range(dim)]
    return fill_register, sweeps
