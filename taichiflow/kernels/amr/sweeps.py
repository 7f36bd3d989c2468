"""The stage of a pool of blocks: per axis one launch over every listed block, as the uniform
sweeps do,

    R = a R + dt (-dF/dx)        (the first axis; later axes add to R)
    U = c0 U0 + c1 U + c2 R      (the last axis, with the model's source and after_step)

with the faces of kernels/amr/fluxes.py (PoolFaces: the block's end faces from the register).
Every axis but the last is walked, a thread per row, each face solved once; the last axis,
whose rows lie along memory, takes a thread per cell, so that a warp's threads read
neighbouring addresses (a walk along it strides by a row: 5.7% of the uniform rate at 16^3
blocks on an H200, docs/amr.md).
"""
import taichi as ti

from ...layout import component
from .pool import pool_index, row_cell


def make_sweeps(pool, faces) -> list:
    """The sweep kernels of one stage, axis by axis: (n_active, dt, t, a, c0, c1, c2, save_u0,
    ends_step) each."""
    dim = pool.dim
    update = _stage_update(pool)
    return [_walk(pool, faces, axis, update) if axis < dim - 1 or dim == 1 else _per_cell(pool, faces, axis, update)
            for axis in range(dim)]


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
    phys, dim = pool.phys, pool.dim
    U, R = pool.U, pool.R
    first, last = axis == 0, axis == dim - 1
    reads_u_early = len(phys.advected_indices) > 0
    of_cell = faces.cell_divergence[axis]

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


def _walk(pool, faces, axis, update):
    """A thread per row along the axis, each face solved once."""
    N, dim, n_flux = pool.N, pool.dim, pool.phys.n_flux
    face, flux, start = faces.block_face[axis], faces.flux[axis], _row_start(pool, axis)
    step_cell = _cell_step(pool, faces, axis, update)
    rows = (N,) * (dim - 1)

    @ti.kernel
    def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
              c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
        for J in ti.grouped(ti.ndrange(n_active, *rows)):
            slot, lvl, inv_h, dt_dx = start(J, dt)
            f_lo = face(slot, J, 0)
            for i in range(N):
                I = pool_index(slot, row_cell(dim, axis, i, J, 1))
                f_hi = ti.Vector.zero(pool.dtype, n_flux)
                if i == N - 1:
                    f_hi = face(slot, J, 1)
                else:
                    f_hi = flux(I, i, dt_dx)
                step_cell(I, slot, J, i, lvl, inv_h, f_lo, f_hi, dt, t, a, c0, c1, c2, save_u0, ends_step)
                f_lo = f_hi
    return sweep


def _per_cell(pool, faces, axis, update):
    """A thread per cell, its two faces solved (each face twice)."""
    N, dim, n_flux = pool.N, pool.dim, pool.phys.n_flux
    face, flux, start = faces.block_face[axis], faces.flux[axis], _row_start(pool, axis)
    step_cell = _cell_step(pool, faces, axis, update)
    cells = (N,) * dim

    @ti.kernel
    def sweep(n_active: ti.i32, dt: pool.dtype, t: pool.dtype, a: pool.dtype, c0: pool.dtype, c1: pool.dtype,
              c2: pool.dtype, save_u0: ti.i32, ends_step: ti.i32):
        for J in ti.grouped(ti.ndrange(n_active, *cells)):
            slot, lvl, inv_h, dt_dx = start(J, dt)
            i = component(J, 1 + axis)
            row = ti.Vector([component(J, 0)] + [component(J, 1 + d) for d in range(dim) if d != axis])
            I = pool_index(slot, [component(J, 1 + d) for d in range(dim)])
            f_lo = ti.Vector.zero(pool.dtype, n_flux)
            f_hi = ti.Vector.zero(pool.dtype, n_flux)
            if i == 0:
                f_lo = face(slot, row, 0)
            else:
                f_lo = flux(pool_index(slot, row_cell(dim, axis, i - 1, row, 1)), i - 1, dt_dx)
            if i == N - 1:
                f_hi = face(slot, row, 1)
            else:
                f_hi = flux(I, i, dt_dx)
            step_cell(I, slot, row, i, lvl, inv_h, f_lo, f_hi, dt, t, a, c0, c1, c2, save_u0, ends_step)
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
