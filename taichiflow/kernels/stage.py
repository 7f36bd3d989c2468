"""The integrator stage at the end of a sweep: a cell's values loaded early, then

    R = a R + dt (-dF/dx)            (every sweep; R stored unless it is the stage's last sweep)
    U = c0 U0 + c1 U + c2 R          (the stage's last sweep, with the model's source)
    U = after_step(U, dt, h)         (the step's last update, where the model has one)

as the stage's flags say (kernels/plan.py: StageFlags). Each flag is compiled in only where
some stage uses it (the kernel's union of flags, a template) and tested at run time against
the stage's own bits, so one kernel serves every stage.
"""
from typing import Callable, NamedTuple

import taichi as ti

from .faces import SweepContext
from .indexing import cell_center
from .plan import ENDS_STEP, READ_R, SAVE_U0, STORE_R, USE_U0


class StageUpdate(NamedTuple):
    load_cell: Callable   # (I, stage_bits, flags) -> (U, R, U0) of cell I (zeros for what the stage skips)
    update: Callable      # (I, rhs, u, r_old, u0, dt, a, c0, c1, c2, t, stage_bits, flags): R, U of cell I


def make_stage_update(ctx: SweepContext, last: bool) -> StageUpdate:
    """The loads and the update of a sweep; `last`: the stage's last sweep, which updates U."""
    phys, U, U0, R, W = ctx.phys, ctx.U, ctx.U0, ctx.R, ctx.W
    dtype, lower, dx, offset = ctx.dtype, ctx.lower, ctx.dx, ctx.offset
    n_conserved = phys.U.n
    has_source = "source" in phys.model.functions
    has_after_step = "after_step" in phys.model.functions
    static = phys.static_indices
    least_width = min(ctx.dx)
    reads_u = last or len(phys.advected_indices) > 0  # (sources are added on the last axis)

    @ti.func
    def load_cell(I, stage_bits, flags: ti.template()):
        """The values of cell I that its update reads (U, R, U0; zeros for those the stage does
        not read), loaded early: their latency then hides behind the flux computation (the R
        read after it kept the sweeps waiting: 0.69 against 0.47 ms per axis without it, H100,
        256^3)."""
        u, r, u0 = ti.Vector.zero(dtype, n_conserved), ti.Vector.zero(dtype, n_conserved), ti.Vector.zero(
            dtype, n_conserved)
        if ti.static(reads_u):
            u = U[I]
        if ti.static(flags.read_r):
            if stage_bits & READ_R:
                r = R[I]
        if ti.static(last and flags.use_u0):
            if stage_bits & USE_U0:
                u0 = U0[I]
        return u, r, u0

    @ti.func
    def update(I, rhs, u, r_old, u0, dt, a, c0, c1, c2, t, stage_bits, flags: ti.template()):
        """R (and in the last sweep U) of cell I from its -dF/dx and its values from load_cell."""
        r = dt * rhs
        if ti.static(flags.read_r):  # a stage that starts the register (a = 0) never reads it:
            if stage_bits & READ_R:   # no traffic, and no NaN of a failed step kept as 0 * NaN
                r += a * r_old
        if ti.static(last):
            if ti.static(has_source):
                r += dt * phys.source(u, W[I], cell_center(I, lower, dx, offset), t)
            u_new = c1 * u + c2 * r
            if ti.static(flags.use_u0):  # low-storage schemes never read U0
                if stage_bits & USE_U0:
                    u_new += c0 * u0
            if ti.static(flags.save_u0):
                if stage_bits & SAVE_U0:
                    U0[I] = u
            if ti.static(has_after_step and flags.ends_step):  # the model's split source, once a step
                if stage_bits & ENDS_STEP:
                    u_new = phys.after_step(u_new, dt, least_width)
            for k in ti.static(static):  # as they were, bit for bit (c0 u0 + c1 u rounds)
                u_new[k] = u[k]
            U[I] = u_new
            if ti.static(flags.store_r):
                if stage_bits & STORE_R:  # R the next stage never reads stays unwritten
                    R[I] = r
        else:
            R[I] = r

    return StageUpdate(load_cell, update)
