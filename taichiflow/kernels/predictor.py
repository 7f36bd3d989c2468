"""The half-step predictor of a reconstruction that predicts along every axis (MUSCL-Hancock
on a 2D or 3D grid, numerics/reconstruction.py: make_unsplit_muscl_hancock).

Before a stage's sweeps, one pass over the cells sums each cell's half-step change of U over
the axes (each axis' flux difference between the ends of the cell's limited profile along it)
and stores the state it leads to, prim(U + change), in an array shaped like W. The cell's
boundary values in every sweep then move by that change (kernels/faces.py). The array keeps
W's ghost layers, filled as W's are (the boundary kinds' copies, the halo exchange between
blocks): the faces on the grid's boundary read the change of the ghost cell beside them, and a
ghost cell's own slopes across the axis would need W's edges and corners, which no kernel fills.
"""
import taichi as ti

from ..layout import component, permute
from .indexing import with_axis


def make_predictor(ctx, scheme, copy_to_ghosts):
    """The kernel (time_fraction) filling ctx.predicted for one face scheme; copy_to_ghosts:
    the boundary copies of ctx.predicted (kernels/boundaries.py)."""
    phys, W, ahead, dim, cells, dtype = ctx.phys, ctx.W, ctx.predicted, ctx.dim, ctx.cells, ctx.dtype
    half_step, variables = scheme.recon.half_step, scheme.variables
    normal = ctx.to_normal_W
    to_global_U = [phys.U.rotation(d, False) for d in range(dim)]
    inv_dx, clock = ctx.inv_dx, ctx.clock

    @ti.kernel
    def predict(time_fraction: ti.f64):
        dt, t, running = clock.stage(time_fraction)
        for I in ti.grouped(ti.ndrange(*cells)):
            if running:
                w = W[I]
                change = ti.Vector.zero(dtype, phys.U.n)
                for d in ti.static(range(dim)):
                    i = component(I, d)
                    stencil = [permute(W[with_axis(I, d, i + k, dim)], normal[d]) for k in (-1, 0, 1)]
                    transformed, _ = variables.forward(stencil, 2)
                    change += permute(half_step(*transformed, dt * inv_dx[d]), to_global_U[d])
                w_ahead = phys.prim(phys.cons(w) + change)
                if not phys.admissible(w_ahead):  # (no change: the cell's profile at the step's start)
                    w_ahead = w
                ahead[I] = w_ahead
                copy_to_ghosts(I, w_ahead)

    return predict
