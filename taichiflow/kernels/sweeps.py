"""The walking sweep: each thread walks a segment of cells along an axis, computing the face
fluxes in order and, from the two faces of each cell, the stage update (kernels/stage.py).

Walking keeps the flux of the shared face in registers, so no flux array exists and each face
is solved once (plus one per segment); the W stencil is re-read from cache (a register window
of it measured no faster and compiled 3x slower; docs/performance.md). Per cell (the plan's
per_cell) each cell is reconstructed once for both of its faces and its upper face state is
carried to the next face; per face both states of a face come from its own stencil. Both
evaluate the same formulas (bit for bit on a CPU; CUDA fuses multiply-adds differently in the
two loops). A fused stage's walk along x also solves both faces of each cell along the axes
across it, each from its own stencil, and applies the stage update.

One step of a walk (`make_walk_step`) serves this sweep and the walk with warp shuffles
(kernels/shuffles.py).
"""
from typing import Callable, NamedTuple

import taichi as ti

from ..layout import component
from .faces import FaceScheme, SweepContext, face_functions, make_flux_divergence, newest_cell, walk_stencil
from .indexing import linear_index, with_axis
from .stage import make_stage_update


def make_walk_step(ctx: SweepContext, faces, g: int, per_cell: bool):
    """One step of a walk along the faces' axis at cell i: the flux through face i + 1/2 into
    f_hi and the face states replaced there into replaced_here (from face first - 1/2 on, per
    cell), carrying the upper face state of the cell below (`upper`) and the W of the cell the
    next step reads first (`newest`, from cell `ahead`). Every argument is the caller's own
    variable (a template): the step writes f_hi, replaced_here, upper and newest in place."""
    cells_at, solve, face_flux, cell_faces = faces

    @ti.func
    def walk_step(segment: ti.template(), i: ti.template(), ahead: ti.template(), first: ti.template(),
                  dt_dx: ti.template(), f_hi: ti.template(), replaced_here: ti.template(), upper: ti.template(),
                  newest: ti.template()):
        if ti.static(per_cell):  # centred on cell i + 1
            stencil = walk_stencil(ctx, cells_at, g, segment, i, 2 * g - 1, newest)
            newest = newest_cell(ctx, cells_at, g, segment, ahead)
            lower, next_upper = cell_faces(stencil, segment, i + 1, dt_dx)
            if i >= first - 1:
                f_hi, replaced_here = solve(upper, lower, segment, i, dt_dx)
            upper = next_upper
        else:
            stencil = walk_stencil(ctx, cells_at, g, segment, i, 2 * g, newest)
            newest = newest_cell(ctx, cells_at, g, segment, ahead)
            f_hi, replaced_here = face_flux(stencil, segment, i, dt_dx)

    return walk_step


def make_across_divergence(ctx: SweepContext, scheme: FaceScheme, across: tuple):
    """-dF/dx along the axes across a fused walk and the face states replaced there; a face's
    replacements count in the cell below it (the lowest face's in cell 0). The two faces of an
    axis go through one run-time loop: one copy of the face code per axis in the kernel (the
    compile time of unrolled faces: docs/performance.md)."""
    dtype, inv_dx, n_flux = ctx.dtype, ctx.inv_dx, ctx.phys.n_flux
    n_conserved = ctx.phys.U.n
    g = scheme.recon.ghost
    across_faces = [face_functions(ctx, d, scheme) for d in across]
    flux_divergence = make_flux_divergence(ctx)

    @ti.func
    def across_divergence(I, u, dt):
        rhs, replaced = ti.Vector.zero(dtype, n_conserved), 0
        for a in ti.static(range(len(across))):
            i = component(I, across[a])
            dt_dx = dt * inv_dx[across[a]]
            f_lo = ti.Vector.zero(dtype, n_flux)
            for side in range(2):  # the face below the cell, then the one above it
                f, replaced_here = across_faces[a].face_flux(across_faces[a].cells_at(I, i - g + side, 2 * g), I,
                                                             i - 1 + side, dt_dx)
                if side == 0:
                    f_lo = f
                else:  # as a walk does: the same rounding whichever axis a flow goes along
                    rhs += flux_divergence(f_lo, f, u, across[a])
                if side == 1 or i == 0:
                    replaced += replaced_here
        return rhs, replaced

    return across_divergence


class WalkParts(NamedTuple):
    """The Taichi functions a walking kernel is made of."""
    faces: object
    walk_step: Callable
    flux_divergence: Callable
    across_divergence: Callable
    load_cell: Callable
    update: Callable


def walk_parts(ctx: SweepContext, axis: int, scheme: FaceScheme, per_cell: bool, across, last: bool) -> WalkParts:
    """The pieces of a walk along axis (the walking sweep's and the shuffle walk's)."""
    faces = face_functions(ctx, axis, scheme)
    return WalkParts(faces, make_walk_step(ctx, faces, scheme.recon.ghost, per_cell), make_flux_divergence(ctx),
                     make_across_divergence(ctx, scheme, across), *make_stage_update(ctx, last))


def make_walk_sweep(ctx: SweepContext, axis: int, last: bool, scheme: FaceScheme, per_cell: bool, across=()):
    """The walking flux-and-update kernel of one axis; `last`: the stage's last sweep (it
    updates U); `across`: the axes whose faces a fused stage's walk also solves."""
    phys, plan, dtype, cells, dim = ctx.phys, ctx.plan, ctx.dtype, ctx.cells, ctx.dim
    ranges = plan.sweep_ranges(axis)
    seg_shape = [b for _, b in ranges]
    length, n = plan.segments[axis], cells[axis]
    g = scheme.recon.ghost
    n_conserved, n_primitive, n_flux = phys.U.n, phys.W.n, phys.n_flux
    lead_in = plan.lead_in(per_cell)
    prefetch, counting, fallbacks, clock = plan.prefetch, plan.counts_faces, ctx.fallbacks, ctx.clock
    block_dim = plan.block_dim or None  # None: Taichi's default
    inv_dx = ctx.inv_dx
    idle, skips = ctx.idle, plan.skip_idle
    faces, walk_step, flux_divergence, across_divergence, load_cell, update = walk_parts(ctx, axis, scheme, per_cell,
                                                                                         across, last)

    @ti.kernel
    def walk_sweep(time_fraction: ti.f64, a: float, c0: float, c1: float, c2: float, stage_bits: ti.i32,
                   flags: ti.template()):
        dt, t, running = clock.stage(time_fraction)
        dt_dx = dt * inv_dx[axis]
        ti.loop_config(block_dim=block_dim)
        for segment in ti.grouped(ti.ndrange(*ranges)):
            if not running:  # the device clock has halted (kernels/clock.py)
                continue
            first = component(segment, axis) * length
            if ti.static(skips):  # (a tile and its neighbours idle: nothing here can change)
                if not idle.segment_active(segment, axis, first, ti.min(first + length, n)):
                    continue
            f_lo = ti.Vector.zero(dtype, n_flux)
            upper = ti.Vector.zero(dtype, n_primitive)  # per cell: the last cell's upper face state
            replaced = 0
            end = ti.min(first + length, n)
            # the values of the cell updated next, loaded one iteration ahead on a GPU
            zero = ti.Vector.zero(dtype, n_conserved)
            u, r_old, u0 = zero, zero, zero
            if ti.static(prefetch):
                u, r_old, u0 = load_cell(with_axis(segment, axis, first, dim), stage_bits, flags)
            newest = newest_cell(ctx, faces.cells_at, g, segment, first - lead_in)
            for i in range(first - lead_in, end):
                # f_hi: the flux through face i + 1/2, once i >= first - 1
                f_hi, replaced_here = ti.Vector.zero(dtype, n_flux), 0
                walk_step(segment, i, ti.min(i + 1, n - 1), first, dt_dx, f_hi, replaced_here, upper, newest)
                if i >= first or first == 0:  # count each face once: the upper faces it owns
                    replaced += replaced_here
                if i >= first:
                    I = with_axis(segment, axis, i, dim)
                    if ti.static(not prefetch):
                        u, r_old, u0 = load_cell(I, stage_bits, flags)
                    rhs = flux_divergence(f_lo, f_hi, u, axis)
                    if ti.static(across):
                        rhs_across, replaced_across = across_divergence(I, u, dt)
                        rhs += rhs_across
                        replaced += replaced_across
                    update(I, rhs, u, r_old, u0, dt, a, c0, c1, c2, t, stage_bits, flags)
                    if ti.static(prefetch):
                        ahead = with_axis(segment, axis, ti.min(i + 1, end - 1), dim)
                        u, r_old, u0 = load_cell(ahead, stage_bits, flags)
                f_lo = f_hi
            if ti.static(counting):
                if replaced != 0:
                    fallbacks[ti.cast(linear_index(segment, seg_shape), ti.i32)] += replaced

    return walk_sweep
