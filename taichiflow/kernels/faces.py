"""The flux through a face along one axis, from the W stencil around it, and what the sweeps
share about faces: the stencil of a walk (with its newest cell loaded a step ahead) and the
divergence of a cell's two face fluxes.

Every choice (reconstruction, Riemann solver, reconstructed variables, axis, fallback) is
resolved in Python while the kernel compiles.
"""
from typing import Callable, NamedTuple

import taichi as ti
from taichi.lang import impl

from ..layout import component, permute
from .indexing import with_axis


class FaceScheme(NamedTuple):
    """The numerics of a face: reconstruction, Riemann solver, reconstructed variables; or,
    for the finite-difference method, the split flux of the stencil (numerics/splitting.py),
    and for a method with its own face flux (SHASTA, numerics/shasta.py) that flux, with a
    Stencil in place of the reconstruction and no solver."""
    recon: object
    riemann: Callable
    variables: object
    split_flux: Callable = None
    limit_density: Callable = None  # per-cell face states: (mean W, lower, upper) -> limited (numerics/positivity.py)
    limit_flux: Callable = None     # a face's flux: (4-cell W stencil, flux, dt_dx) -> (bounded, limited) (the same)


class Stencil(NamedTuple):
    """The stencil of a method's own face flux: `ghost` cells on each side of the face (the
    sweeps read a reconstruction's ghost the same way)."""
    name: str
    ghost: int
    predicted: bool = False  # (no time predictor: as a Reconstruction without one)


class FaceFunctions(NamedTuple):
    """The face fluxes along one axis (see face_functions)."""
    cells_at: Callable     # (index, start, count) -> W of `count` cells along the axis from `start`, in the
    #                        normal frame; `index` gives the other axes' indices
    solve: Callable        # (wL, wR, index, i, dt_dx) -> (flux of face i + 1/2, face states replaced)
    face_flux: Callable    # (2g-cell stencil, index, i, dt_dx) -> solve of its reconstructed states
    cell_faces: Callable   # ((2g-1)-cell stencil, index, i, dt_dx) -> the lower and upper face states of the
    #                        middle cell, i (along the axis; `index` gives the other axes' indices)


class SweepContext(NamedTuple):
    """What every sweep of a solver reads: the bound model, fields, frames and constants."""
    phys: object
    plan: object
    dtype: object
    cells: tuple
    dx: tuple
    lower: tuple
    offset: tuple          # the block's first cell in the whole grid (a decomposed grid), else ()
    inv_dx: list
    U: object
    U0: object
    R: object
    W: object
    fallbacks: object
    clock: object
    to_normal_W: list      # per axis: W into the frame whose x is that axis
    to_global_F: list      # per axis: a flux back from it (the advected terms' face velocity last)
    idle: object = None    # the idle tiles whose segments a walk skips (kernels/idle.py)
    read_w: object = None  # a Taichi function (index, axis) -> W there, in place of W[index], the index
    #                        maybe off the array along axis (a pool of blocks reads across its blocks'
    #                        faces: kernels/amr/pool.py)
    predicted: object = None  # the cells' states half a step ahead, W's shape and ghost layers, for a
    #                           reconstruction with a predictor over every axis (kernels/predictor.py)

    @property
    def dim(self) -> int:
        return len(self.cells)


def face_functions(ctx: SweepContext, axis: int, scheme: FaceScheme) -> FaceFunctions:
    """The face fluxes along axis of one face scheme."""
    phys, W, dim, fallback = ctx.phys, ctx.W, ctx.dim, ctx.plan.fallback
    recon, riemann, variables, split_flux, limit_density, limit_flux = scheme
    g = recon.ghost  # the stencil is 2 g cells wide; W may have more ghost layers
    normal = ctx.to_normal_W[axis]
    to_global = ctx.to_global_F[axis]
    face_pair = "face_states" in phys.model.functions
    balance = phys.n_balance > 0
    static = phys.static_indices
    counting = getattr(riemann, "counts_fallbacks", False)
    limited = limit_density is not None

    read_w = ctx.read_w
    direct = read_w is None  # (W read as W[index])
    predicted = recon.predicted
    states_ahead = ctx.predicted
    if predicted and (states_ahead is None or not direct):
        raise ValueError(f"{recon.name} predicts every axis: its sweeps need the states ahead, on one block")

    @ti.func
    def half_step_change(index, i, w):
        """Cell i's half-step change of U (normal frame), from its state ahead and its W."""
        return phys.cons(permute(states_ahead[with_axis(index, axis, i, dim)], normal)) - phys.cons(w)

    def cells_at(index, start, count):
        if not direct:
            return [permute(read_w(with_axis(index, axis, start + k, dim), axis), normal) for k in range(count)]
        return [permute(impl.subscript(None, W, with_axis(index, axis, start + k, dim)), normal)
                for k in range(count)]

    if split_flux is not None:
        return FaceFunctions(cells_at, None, _split_face_flux(split_flux, to_global), None)

    @ti.func
    def solve(wL, wR, index, i, dt_dx):
        """Flux (global frame) through the face between cells i and i + 1 from its
        reconstructed states, and the number of them replaced by the first-order
        values of those cells (loaded only then: no registers held for them)."""
        left, right = wL, wR
        replaced = 0
        if ti.static(fallback):
            if not phys.admissible(left):
                if ti.static(direct):
                    left = permute(W[with_axis(index, axis, i, dim)], normal)
                else:
                    left = permute(read_w(with_axis(index, axis, i, dim), axis), normal)
                replaced += 1
            if not phys.admissible(right):
                if ti.static(direct):
                    right = permute(W[with_axis(index, axis, i + 1, dim)], normal)
                else:
                    right = permute(read_w(with_axis(index, axis, i + 1, dim), axis), normal)
                replaced += 1
        if ti.static(face_pair and not balance):  # the model's own pair of face states (GLM's B_n and psi)
            left, right = phys.face_states(left, right)
        if ti.static(counting):  # (FORCE's faces that fell back to Lax-Friedrichs count as replaced)
            flux, fell_back = riemann_flux(left, right, dt_dx)
            replaced += fell_back
            return permute(flux, to_global), replaced
        return permute(riemann_flux(left, right, dt_dx), to_global), replaced

    def riemann_flux(left, right, dt_dx):
        """The solver's flux; for a model with static fields or balance terms (plain Python, run
        while compiling: other models' kernels are built as before, with no variable more) the
        static components zeroed (a solver's diffusion would move them) and each side's balance
        values after it, below then above."""
        if not (balance or static):
            return riemann(left, right, dt_dx)
        solved_left, solved_right = phys.face_states(left, right) if face_pair and balance else (left, right)
        result = riemann(solved_left, solved_right, dt_dx)
        flux, fell_back = result if counting else (result, None)  # (a counting solver: its count too)
        flux = ti.Vector([0.0 if k in static else component(flux, k) for k in range(flux.n)])
        if balance:
            flux = _joined(flux, phys.face_balance(left, solved_left), phys.face_balance(right, solved_right))
        return (flux, fell_back) if counting else flux

    @ti.func
    def face_flux(stencil: ti.template(), index, i, dt_dx):
        """Flux through face i + 1/2, in the middle of a 2g-cell stencil."""
        transformed, context = variables.forward(stencil, g)
        wL, wR = variables.backward(*reconstructed_faces(transformed, stencil, index, i, dt_dx), context)
        return solve(wL, wR, index, i, dt_dx)

    def reconstructed_faces(transformed, stencil, index, i, dt_dx):
        """The face's two states (plain Python, run while compiling); a predicted
        reconstruction also takes the half-step changes of the cells on each side."""
        if not predicted:
            return recon.face_states(transformed, dt_dx)
        changes = [half_step_change(index, i + k, stencil[g - 1 + k]) for k in range(2)]
        return recon.face_states(transformed, dt_dx, changes)

    def reconstructed_cell(transformed, stencil, index, i, dt_dx):
        """A cell's two face states (see reconstructed_faces)."""
        if not predicted:
            return recon.cell_states(transformed, dt_dx)
        return recon.cell_states(transformed, dt_dx, half_step_change(index, i, stencil[g - 1]))

    @ti.func
    def cell_faces(stencil: ti.template(), index: ti.template(), i: ti.template(), dt_dx):
        """States on the lower and upper face of cell i, the middle of 2g - 1 cells."""
        transformed, context = variables.forward(stencil, g)
        lower, upper = variables.backward(*reconstructed_cell(transformed, stencil, index, i, dt_dx), context)
        if ti.static(limited):
            lower, upper = limit_density(stencil[g - 1], lower, upper)
        return lower, upper

    if limit_flux is not None:  # (face_flux calls solve by this name: the bounded one, then)
        solve = _bounded_solve(solve, limit_flux, cells_at, to_global)
    return FaceFunctions(cells_at, solve, face_flux, cell_faces)


def _bounded_solve(solve, limit_flux, cells_at, to_global):
    """solve with the face's flux limited so that the updates of the two cells beside it stay
    admissible ([scheme] positivity_limiter, numerics/positivity.py), from the W of the 4 cells
    around it; a face that was limited counts as replaced. A separate function: the kernels of
    schemes without the limiter are built as before."""
    to_normal = [0] * len(to_global)
    for k, p in enumerate(to_global):
        to_normal[p] = k

    @ti.func
    def bounded_solve(wL, wR, index, i, dt_dx):
        flux, replaced = solve(wL, wR, index, i, dt_dx)
        bounded, limited = limit_flux(cells_at(index, i - 1, 4), permute(flux, to_normal), dt_dx)
        return permute(bounded, to_global), replaced + limited

    return bounded_solve


def _joined(*vectors):
    """One Taichi vector of the components of several, in order."""
    return ti.Vector([component(v, k) for v in vectors for k in range(v.n)])


def _split_face_flux(split_flux, to_global):
    """face_flux of the finite-difference method and of a method with its own face flux: no
    face states, so none is replaced, but a flux that counts its own fallbacks (SHASTA's
    Lax-Friedrichs faces) reports them (the plan makes these fluxes per face: kernels/plan.py)."""
    counting = getattr(split_flux, "counts_fallbacks", False)

    @ti.func
    def face_flux(stencil: ti.template(), index, i, dt_dx):
        if ti.static(counting):
            flux, fell_back = split_flux(stencil, dt_dx)
            return permute(flux, to_global), fell_back
        return permute(split_flux(stencil, dt_dx), to_global), 0

    return face_flux


def walk_stencil(ctx: SweepContext, cells_at, g, segment, i, count, newest):
    """The `count` cells ending at i + g along a walk (cells_at's axis). Where prefetching, the
    last is `newest`, loaded a step ahead (see newest_cell)."""
    if ctx.plan.prefetch:
        return cells_at(segment, i + g + 1 - count, count - 1) + [newest]
    return cells_at(segment, i + g + 1 - count, count)


def newest_cell(ctx: SweepContext, cells_at, g, segment, i):
    """W of cell i + g, the one a walk's stencil at cell i reads first: it comes from DRAM, the
    others from L1. Loaded one step ahead on a GPU (zeros elsewhere), its latency hides behind
    the step's faces instead of stalling them."""
    if ctx.plan.prefetch:
        return cells_at(segment, i + g, 1)[0]
    return ti.Vector.zero(ctx.dtype, ctx.phys.W.n)


def make_flux_divergence(ctx: SweepContext):
    """-dF/dx along an axis from the fluxes through a cell's two faces (and u div v for the
    model's advected variables, from the face velocity the flux carries after U; and the
    model's cell balance term from the balance values the faces carry after that)."""
    phys, inv_dx = ctx.phys, ctx.inv_dx
    n_conserved = phys.U.n
    advected, face_velocity = phys.advected_indices, phys.U.n
    m, first_balance = phys.n_balance, phys.n_transport
    to_global_U = [phys.U.rotation(d, False) for d in range(ctx.dim)]

    @ti.func
    def flux_divergence(f_lo, f_hi, u, axis: ti.template()):
        rhs = ti.Vector([component(f_lo, k) - component(f_hi, k) for k in range(n_conserved)]) * inv_dx[axis]
        for k in ti.static(advected):
            rhs[k] += u[k] * (f_hi[face_velocity] - f_lo[face_velocity]) * inv_dx[axis]
        if ti.static(m > 0):  # the lower face's upper side, the upper face's lower side
            lower = ti.Vector([component(f_lo, first_balance + m + k) for k in range(m)])
            upper = ti.Vector([component(f_hi, first_balance + k) for k in range(m)])
            rhs += permute(phys.cell_balance(lower, upper), to_global_U[axis]) * inv_dx[axis]
        return rhs

    return flux_divergence
