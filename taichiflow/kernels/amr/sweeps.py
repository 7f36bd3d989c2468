"""The stage of a pool of blocks: per axis one launch over every listed block, as the uniform
sweeps do,

    R = a R + dt (-dF/dx)        (the first axis; later axes add to R)
    U = c0 U0 + c1 U + c2 R      (the last axis, with the model's source and after_step)

with the faces of kernels/amr/fluxes.py (PoolFaces: a block's end faces replaced by the
register's where the level jumps). Every axis but the last is walked, a thread per row, each
face solved once (the block's lower face in a lead-in step; a stencil reaching past the
block reads the block across or the ghost layers: kernels/amr/pool.py, make_w_reader). On a
GPU the last axis, whose rows lie along memory, takes a thread per face as the uniform
shuffle sweep does (kernels/shuffles.py): each lane solves the face below its cell and takes
the one above from the next lane, so a warp's threads read neighbouring addresses and each
face is solved once (a walk along it strides by a row: 5.7% of the uniform rate; a thread per
cell solving both of its faces took 0.95 ms of a 256^3 stage in 16^3 blocks on an H200, a
thread per face 0.89 ms, the walks along x and y 0.56 and 0.65 ms: docs/amr.md). On a CPU
every axis is walked.
"""
import taichi as ti

from ...layout import component
from ..plan import WARP
from ..shuffles import shuffled
from .pool import pool_index, row_cell


def make_sweeps(pool, faces, shuffles: bool) -> list:
    """The sweep kernels of one stage, axis by axis: (n_active, dt, t, a, c0, c1, c2, save_u0,
    ends_step) each; `shuffles`: the last axis through warp shuffles (CUDA)."""
    dim = pool.dim
    update = _stage_update(pool)
    return [_shuffle_sweep(pool, faces, axis, update) if shuffles and axis == dim - 1
            else _walk(pool, faces, axis, update) for axis in range(dim)]


def _row_start(pool, axis):
    level, level_inv_dx, active = pool.level, pool.level_inv_dx, pool.active

    @ti.func
    def start(J, dt):
        """(slot, level, 1/dx along the axis, dt/dx) of listed block J[0]."""
        slot = active[component(J, 0)]
        lvl = level[slot]
        inv_h = component(level_inv_dx[lvl], axis)
        return slot, lvl, inv_h, dt * inv_h
    return start


def _cell_step(pool, faces, axis, update):
    """(load, step_cell): a cell's U and R, loaded before the fluxes that use them are solved
    (their latency then hides behind the face numerics, as in the uniform sweeps:
    kernels/stage.py), and its update from the fluxes through its two faces."""
    phys, dim = pool.phys, pool.dim
    U, R = pool.U, pool.R
    first, last = axis == 0, axis == dim - 1
    reads_u_early = len(phys.advected_indices) > 0
    of_cell = faces.cell_divergence[axis]

    @ti.func
    def load(I, a):
        """U (where this sweep reads it) and R (where it adds to it) of cell I; zeros else."""
        u = ti.Vector.zero(pool.dtype, phys.U.n)
        r_old = ti.Vector.zero(pool.dtype, phys.U.n)
        if ti.static(last or reads_u_early):
            u = U[I]
        if ti.static(first):
            if a != 0.0:
                r_old = R[I]
        else:
            r_old = R[I]
        return u, r_old

    @ti.func
    def step_cell(I, slot, J, i, lvl, inv_h, f_lo, f_hi, u, r_old, dt, t, a, c0, c1, c2, save_u0, ends_step):
        """R (and on the last axis U) of cell I, i along the axis in row J, from the fluxes
        through its two faces and its loaded values."""
        r = dt * (of_cell(slot, J, i, f_lo, f_hi, u) * inv_h)
        if ti.static(first):
            if a != 0.0:
                r += a * r_old
        else:
            r += r_old
        if ti.static(last):
            update(I, slot, lvl, r, u, dt, t, c0, c1, c2, save_u0, ends_step)
        else:
            R[I] = r
    return load, step_cell


def _walk(pool, faces, axis, update):
    """A thread per row along the axis, each face solved once, the block's lower face in a
    lead-in step (one copy of the face numerics in the kernel)."""
    N, dim, n_flux = pool.N, pool.dim, pool.phys.n_flux
    face, flux, start = faces.block_face[axis], faces.flux[axis], _row_start(pool, axis)
    load, step_cell = _cell_step(pool, faces, axis, update)
    count = faces.count_fallbacks
    rows = (N,) * (dim - 1)

    @ti.kernel
    def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
              c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
        for J in ti.grouped(ti.ndrange(n_active, *rows)):
            slot, lvl, inv_h, dt_dx = start(J, dt)
            f_lo = ti.Vector.zero(pool.dtype, n_flux)
            u, r_old = load(pool_index(slot, row_cell(dim, axis, 0, J, 1)), a)
            for step in range(N + 1):
                i = step - 1
                I = pool_index(slot, row_cell(dim, axis, i, J, 1))
                f_hi, replaced = flux(I, i, dt_dx)  # face i + 1/2
                if i == -1:
                    f_hi, replaced = face(slot, J, 0, f_hi, replaced)
                elif i == N - 1:
                    f_hi, replaced = face(slot, J, 1, f_hi, replaced)
                count(slot, replaced)
                if i >= 0:
                    step_cell(I, slot, J, i, lvl, inv_h, f_lo, f_hi, u, r_old, dt, t, a, c0, c1, c2, save_u0,
                              ends_step)
                    u, r_old = load(pool_index(slot, row_cell(dim, axis, ti.min(i + 1, N - 1), J, 1)), a)
                f_lo = f_hi
    return sweep


def _shuffle_sweep(pool, faces, axis, update):
    """A thread per face slot of the axis (N + 1 a row, rows back to back), WARP - 1 slots a
    warp: lane l solves face f - 1/2 and takes face f + 1/2 from lane l + 1; the last lane's
    face only serves the lane before it (the next warp solves it again)."""
    N, dim, n_flux, dtype = pool.N, pool.dim, pool.phys.n_flux, pool.dtype
    face, flux, start = faces.block_face[axis], faces.flux[axis], _row_start(pool, axis)
    load, step_cell = _cell_step(pool, faces, axis, update)
    count = faces.count_fallbacks
    slots_per_row, stride, rows_per_block = N + 1, WARP - 1, N ** (dim - 1)

    @ti.kernel
    def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
              c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
        total = n_active * rows_per_block * slots_per_row
        for thread in range((total + stride - 1) // stride * WARP):
            lane = thread % WARP
            at = (thread // WARP) * stride + lane
            clamped = ti.min(at, total - 1)  # lanes past the end compute, write nothing
            f = clamped % slots_per_row  # this lane's face: f - 1/2
            row = clamped // slots_per_row
            J = ti.Vector([row // rows_per_block] + [(row // N ** (dim - 2 - d)) % N for d in range(dim - 1)])
            slot, lvl, inv_h, dt_dx = start(J, dt)
            I = pool_index(slot, row_cell(dim, axis, ti.min(f, N - 1), J, 1))
            u, r_old = load(I, a)
            f_below, replaced = flux(pool_index(slot, row_cell(dim, axis, f - 1, J, 1)), f - 1, dt_dx)
            if f == 0:
                f_below, replaced = face(slot, J, 0, f_below, replaced)
            elif f == N:
                f_below, replaced = face(slot, J, 1, f_below, replaced)
            owner = at < total and lane < WARP - 1  # (the one lane whose face slot this is: the
            if owner:                               # warps solve the faces at their seams twice)
                count(slot, replaced)
            f_above = shuffled(f_below, n_flux, dtype, False)  # (every lane: the next one's face)
            if owner and f < N:
                step_cell(I, slot, J, f, lvl, inv_h, f_below, f_above, u, r_old, dt, t, a, c0, c1, c2, save_u0,
                          ends_step)
    return sweep


def _stage_update(pool):
    phys, dim = pool.phys, pool.dim
    U, U0, R, W = pool.U, pool.U0, pool.R, pool.W
    level_dx, origin, lower = pool.level_dx, pool.origin, pool.lower
    has_source = "source" in phys.model.functions
    has_after_step = "after_step" in phys.model.functions
    static = phys.static_indices
    keeps_u0 = U0 is not None

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
    return update
