"""The last axis, contiguous in memory, through warp shuffles (CUDA): a thread per face slot of
that axis, each lane solving the face below its cell and taking the flux of the face above
from the next lane. Either in a sweep of its own (the plan's LastAxis.SHUFFLE_SWEEP) or inside
the walk along x, which then solves both (LastAxis.SHUFFLE_IN_WALK). A thread's lane is its
loop index mod 32; the thread layouts are the plan's (KernelPlan.shuffle_*_layout). Skipping
idle tiles (kernels/idle.py), a warp skips where none of its lanes has an active cell: a lane of
a working warp in an idle tile computes, and its cells come out as they went in.
"""
import taichi as ti

from ..layout import component
from .faces import FaceScheme, SweepContext, face_functions, make_flux_divergence, newest_cell
from .indexing import with_axis
from .plan import WARP
from .stage import make_stage_update
from .sweeps import walk_parts

ALL_LANES = 0xFFFFFFFF


@ti.func
def _shuffle_i32(x, up: ti.template()):
    """x of the previous lane (up = True) or of the next one (up = False)."""
    moved = x
    if ti.static(up):
        moved = ti.simt.warp.shfl_up_i32(ti.u32(ALL_LANES), x, 1)
    else:
        moved = ti.simt.warp.shfl_down_i32(ti.u32(ALL_LANES), x, 1)
    return moved


@ti.func
def _shuffle_f32(x, up: ti.template()):
    return ti.bit_cast(_shuffle_i32(ti.bit_cast(x, ti.i32), up), ti.f32)


@ti.func
def _shuffle_f64(x, up: ti.template()):
    """A 64-bit value moves as two 32-bit halves (the shuffles are 32-bit)."""
    bits = ti.bit_cast(x, ti.i64)
    low = _shuffle_i32(ti.cast(bits, ti.i32), up)
    high = _shuffle_i32(ti.cast(bits >> 32, ti.i32), up)
    return ti.bit_cast((ti.cast(high, ti.i64) << 32) | ti.cast(ti.cast(low, ti.u32), ti.i64), ti.f64)


@ti.func
def _no_lane(busy):
    """No lane of the warp is busy (a warp vote: every lane gets the same answer, so a warp
    skips as a whole and its shuffles keep every lane)."""
    return ti.simt.warp.any_nonzero(ti.u32(ALL_LANES), ti.cast(busy, ti.i32)) == 0


def shuffled(vector, n: int, dtype, up: bool):
    """Every component of a vector of n values taken from the neighbouring lane."""
    move = _shuffle_f32 if dtype == ti.f32 else _shuffle_f64
    return ti.Vector([move(component(vector, k), up) for k in range(n)])


def index_in_rows(row, row_shape, last_index):
    """The index vector of row number `row` of a row-major grid of row_shape, with
    `last_index` along the last axis."""
    index, rest = [], row
    for d in reversed(range(len(row_shape))):
        index.insert(0, rest % row_shape[d])
        rest = rest // row_shape[d]
    return ti.Vector(index + [last_index])


def make_shuffle_walk(ctx: SweepContext, axis: int, scheme: FaceScheme, per_cell: bool, across=()):
    """The sweep that walks axis (x) and also solves the last axis, a thread per cell of it:
    each lane solves the face below its cell there and takes the face above from the next lane,
    then stores R or, as the stage's last sweep (fused, with the faces along the `across` axes
    between), applies the stage update. Lanes run the same number of walk steps (a shuffle
    needs the whole warp)."""
    phys, plan, dtype, cells, dim = ctx.phys, ctx.plan, ctx.dtype, ctx.cells, ctx.dim
    last_axis = dim - 1
    last = len(plan.walked) == 1  # the walk along x is the stage's only sweep (fused, or 2D)
    faces_last = face_functions(ctx, last_axis, scheme)
    g = scheme.recon.ghost
    length, n, n_last = plan.segments[axis], cells[axis], cells[last_axis]
    n_primitive, n_flux, n_conserved = phys.W.n, phys.n_flux, phys.U.n
    lead_in = plan.lead_in(per_cell)
    layout = plan.shuffle_walk_layout(axis, lead_in)
    row_shape, slots_per_row, stride, total_slots, threads = layout
    prefetch, counting, fallbacks, clock = plan.prefetch, plan.counts_faces, ctx.fallbacks, ctx.clock
    block_dim = plan.block_dim or None
    inv_dx = ctx.inv_dx
    idle, skips = ctx.idle, plan.skip_idle
    faces, walk_step, flux_divergence, across_divergence, load_cell, update = walk_parts(ctx, axis, scheme, per_cell,
                                                                                         across, last)
    # skipping idle tiles: the threads of the listed columns only, where segments tile the tiles
    columns = idle.column_walk(row_shape, length, slots_per_row, stride, total_slots) if skips else None
    listed = columns is not None
    slot_of_listed = columns[1] if listed else None
    n_counters = fallbacks.shape[0] if counting else 1

    def thread_count():
        """The loop's bound (plain Python, inlined while compiling)."""
        return idle.listed_columns_times(columns[0]) if listed else threads

    @ti.kernel
    def shuffle_walk(time_fraction: ti.f64, a: float, c0: float, c1: float, c2: float, stage_bits: ti.i32,
                     flags: ti.template()):
        dt, t, running = clock.stage(time_fraction)
        dt_dx = dt * inv_dx[axis]
        dt_dx_last = dt * inv_dx[last_axis]
        ti.loop_config(block_dim=block_dim)
        for thread in range(thread_count()):
            if not running:  # the device clock has halted (kernels/clock.py)
                continue
            lane = thread % WARP
            slot = (thread // WARP) * stride + lane
            if ti.static(listed):
                slot = slot_of_listed(thread)
            clamped = ti.min(slot, total_slots - 1)  # lanes past the end compute, write nothing
            f = clamped % slots_per_row - (lead_in - 1)  # this lane's face along the last axis: f - 1/2
            segment = index_in_rows(clamped // slots_per_row, row_shape, ti.min(ti.max(f, 0), n_last - 1))
            # Lanes with a face: those after the warp's lead-in (per cell: the lane before them
            # gives them the upper state of the cell below) but the last, whose face only
            # serves the previous lane; owners also have the cell f.
            solver = slot < total_slots and lane >= lead_in - 1 and lane < WARP - 1 and f >= 0
            owner = solver and f < n_last
            first = component(segment, axis) * length
            end = ti.min(first + length, n)
            if ti.static(skips):  # (the warp's segments' tiles and their neighbours idle: nothing changes)
                if _no_lane(idle.segment_active(segment, axis, first, end)):
                    continue
            f_lo = ti.Vector.zero(dtype, n_flux)
            upper = ti.Vector.zero(dtype, n_primitive)
            replaced = 0
            zero = ti.Vector.zero(dtype, n_conserved)
            u, r_old, u0 = zero, zero, zero  # the values of the next cell updated
            if ti.static(prefetch):
                u, r_old, u0 = load_cell(with_axis(segment, axis, first, dim), stage_bits, flags)
            newest = newest_cell(ctx, faces.cells_at, g, segment, first - lead_in)
            for step in range(lead_in + length):
                i = first - lead_in + step
                walking = i < end  # past the axis's end a lane repeats its last cell
                ahead = ti.min(i + 1, n - 1)
                i = ti.min(i, n - 1)
                I = with_axis(segment, axis, i, dim)
                f_hi, replaced_here = ti.Vector.zero(dtype, n_flux), 0
                walk_step(segment, i, ahead, first, dt_dx, f_hi, replaced_here, upper, newest)
                # The lead-in steps (i below the segment, maybe below the grid) only prepare the
                # walked face below the first cell; the step count is the same in every lane,
                # so the branch is too.
                f_below, replaced_below = ti.Vector.zero(dtype, n_flux), 0
                lower_last, upper_last = ti.Vector.zero(dtype, n_primitive), ti.Vector.zero(dtype, n_primitive)
                if step >= lead_in:
                    if ti.static(not prefetch):
                        u, r_old, u0 = load_cell(I, stage_bits, flags)
                    if ti.static(per_cell):  # cell f (f = -1: a ghost cell), centred stencil
                        lower_last, upper_last = faces_last.cell_faces(faces_last.cells_at(I, f + 1 - g, 2 * g - 1),
                                                                       I, f, dt_dx_last)
                    else:
                        f_below, replaced_below = faces_last.face_flux(faces_last.cells_at(I, f - g, 2 * g), I, f - 1,
                                                                       dt_dx_last)
                if ti.static(per_cell):  # the upper state of cell f - 1 from the previous lane
                    left = shuffled(upper_last, n_primitive, dtype, True)  # (every lane)
                    if step >= lead_in:
                        f_below, replaced_below = faces_last.solve(left, lower_last, I, ti.max(f, 0) - 1, dt_dx_last)
                f_above = shuffled(f_below, n_flux, dtype, False)  # every lane: the next one's face
                live = walking and solver
                if live and owner and (step >= lead_in or first == 0):
                    replaced += replaced_here
                if live and step >= lead_in:
                    replaced += replaced_below  # (the face above the last cell: f = n_last)
                    if owner:
                        rhs = flux_divergence(f_lo, f_hi, u, axis) + flux_divergence(f_below, f_above, u, last_axis)
                        if ti.static(across):
                            rhs_across, replaced_across = across_divergence(I, u, dt)
                            rhs += rhs_across
                            replaced += replaced_across
                        update(I, rhs, u, r_old, u0, dt, a, c0, c1, c2, t, stage_bits, flags)
                    if ti.static(prefetch):
                        u, r_old, u0 = load_cell(with_axis(segment, axis, ti.min(ahead, end - 1), dim), stage_bits,
                                                 flags)
                f_lo = f_hi
            if ti.static(counting):
                if replaced != 0:
                    if ti.static(listed):  # (more warps than counters may run: they add atomically)
                        fallbacks[(thread // WARP) % n_counters] += replaced
                    else:
                        fallbacks[thread // WARP] += replaced

    return shuffle_walk


def make_shuffle_sweep(ctx: SweepContext, scheme: FaceScheme, per_cell: bool):
    """The last axis in a sweep of its own, a thread per face slot, the stage's last sweep."""
    phys, plan, dtype, cells, dim = ctx.phys, ctx.plan, ctx.dtype, ctx.cells, ctx.dim
    axis = dim - 1
    faces = face_functions(ctx, axis, scheme)
    g = scheme.recon.ghost
    n = cells[axis]
    n_primitive, n_flux = phys.W.n, phys.n_flux
    lead_in = plan.lead_in(per_cell)
    row_shape, slots_per_row, stride, total_slots, threads = plan.shuffle_sweep_layout(lead_in)
    counting, fallbacks, clock = plan.counts_faces, ctx.fallbacks, ctx.clock
    block_dim = plan.block_dim or None
    inv_dx = ctx.inv_dx
    idle, skips = ctx.idle, plan.skip_idle
    flux_divergence = make_flux_divergence(ctx)
    load_cell, update = make_stage_update(ctx, True)

    @ti.kernel
    def shuffle_sweep(time_fraction: ti.f64, a: float, c0: float, c1: float, c2: float, stage_bits: ti.i32,
                      flags: ti.template()):
        dt, t, running = clock.stage(time_fraction)
        dt_dx = dt * inv_dx[axis]
        ti.loop_config(block_dim=block_dim)
        for thread in range(threads):
            if not running:  # the device clock has halted (kernels/clock.py)
                continue
            lane = thread % WARP
            slot = (thread // WARP) * stride + lane
            clamped = ti.min(slot, total_slots - 1)  # lanes past the end compute, write nothing
            f = clamped % slots_per_row - (lead_in - 1)  # this lane's face is f - 1/2 (cells f-1 | f)
            row = clamped // slots_per_row
            row_start = index_in_rows(row, row_shape, 0)
            cell = with_axis(row_start, axis, ti.min(ti.max(f, 0), n - 1), dim)
            if ti.static(skips):
                if _no_lane(idle.cell_active(cell)):
                    continue
            u, r_old, u0 = load_cell(cell, stage_bits, flags)  # first: their latency hides behind the flux
            f_lo, replaced_here = ti.Vector.zero(dtype, n_flux), 0
            if ti.static(per_cell):  # the cell above the face, its upper state to the next lane
                lower, upper = faces.cell_faces(faces.cells_at(row_start, f + 1 - g, 2 * g - 1), row_start, f, dt_dx)
                left = shuffled(upper, n_primitive, dtype, True)  # lane 0: its own, never used
                f_lo, replaced_here = faces.solve(left, lower, row_start, ti.max(f, 0) - 1, dt_dx)
            else:
                f_lo, replaced_here = faces.face_flux(faces.cells_at(row_start, f - g, 2 * g), row_start, f - 1,
                                                      dt_dx)
            f_hi = shuffled(f_lo, n_flux, dtype, False)  # face f + 1/2, the next lane's
            # A face belongs to the lanes after the warp's lead-in and before its last, whose
            # face the next warp solves again.
            owner = slot < total_slots and lane >= lead_in - 1 and lane < WARP - 1 and f >= 0
            if ti.static(counting):
                if owner and replaced_here != 0:
                    fallbacks[thread // WARP] += replaced_here
            if owner and f < n:
                update(cell, flux_divergence(f_lo, f_hi, u, axis), u, r_old, u0, dt, a, c0, c1, c2, t, stage_bits,
                       flags)

    return shuffle_sweep
