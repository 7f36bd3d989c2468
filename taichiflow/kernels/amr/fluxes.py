"""The faces of a pool of blocks: the flux through a face inside a block, the fluxes through
every block's own faces (the register), and a cell's -dF/dx from its two faces.

The sweeps solve every face of a block from its ghost layers, its two end faces too (a face
between blocks of one level is solved by both, with the same code on the same values). Where
the level jumps, the fine side's fluxes are computed first, into the pool's face register
(`fill_register`, over the listed jump faces only), and both sides read them there: the fine
block its own, the coarse block their mean, so what leaves one side enters the other and
every total is kept to round-off at every stage
(the advected variables' face velocity and a model's balance values travel in the same flux
vector, so non-conservative terms and well-balanced sources see the same faces as the
conservative ones).

The face numerics are the uniform sweeps' (kernels/faces.py: face_functions), given the pool's
W with the slot as axis 0; only the cell widths differ, read per level at run time.
"""

import taichi as ti

from ...layout import component
from ..faces import SweepContext, face_functions, make_flux_divergence
from .listed_loops import listed_cells
from .pool import COARSER, FINER, face_direction, pool_index, row_cell


def pool_contexts(pool, plan):
    """(the pool's sweep context, with the slot as axis 0; the block's physical context, cell
    widths 1: the divergence is scaled by the level's 1/dx at run time)."""
    phys, dim = pool.phys, pool.dim
    n_conserved = phys.U.n
    to_normal = [phys.W.rotation(d, True) for d in range(dim)]
    to_global = [phys.U.rotation(d, False) + list(range(n_conserved, phys.n_flux)) for d in range(dim)]
    common = dict(phys=phys, plan=plan, dtype=pool.dtype, lower=pool.lower, offset=(), U=pool.U, U0=pool.U0,
                  R=pool.R, W=pool.W, fallbacks=None, clock=None, read_w=pool.read_w)
    on_pool = SweepContext(cells=(pool.capacity,) + pool.block_shape, dx=(1.0,) * (dim + 1),
                           inv_dx=[1.0] * (dim + 1), to_normal_W=[None] + to_normal,
                           to_global_F=[None] + to_global, **common)
    physical = SweepContext(cells=pool.block_shape, dx=(1.0,) * dim, inv_dx=[1.0] * dim, to_normal_W=to_normal,
                            to_global_F=to_global, **common)
    return on_pool, physical


class PoolFaces:
    """Per axis the Taichi functions of a pool's faces (see the module docstring), and the
    function that fills the face register; the sweeps (kernels/amr/sweeps.py) call them."""

    def __init__(self, pool, plan, scheme, fallbacks):
        self.pool, self.dim, self.N = pool, pool.dim, pool.N
        on_pool, physical = pool_contexts(pool, plan)
        self._divergence = make_flux_divergence(physical)
        self._face_functions = [face_functions(on_pool, axis + 1, scheme) for axis in range(self.dim)]
        self._ghost = scheme.recon.ghost
        self._density_limited = scheme.limit_density is not None
        self._fallbacks = fallbacks
        axes = range(self.dim)
        self.flux = [self._computed(axis) for axis in axes]
        self.fine_flux = [self._fine_faces(axis) for axis in axes]
        self.block_face = [self._block_face(axis) for axis in axes]
        self.count_fallbacks = self._fallback_counter()
        self.cell_divergence = [self._cell_divergence(axis) for axis in axes]
        self.fill_register = self._register_kernel()

    def _computed(self, axis):
        functions, g, limited = self._face_functions[axis], self._ghost, self._density_limited

        @ti.func
        def flux(index, i, dt_dx):
            """(the flux through face i + 1/2 along axis of the row `index` is in, its states
            replaced by first-order ones: count_fallbacks counts those a sweep uses). With
            [scheme] density_limiter the face takes the upper state of cell i and the lower one
            of cell i + 1 as each cell's two face states are limited together (both cells
            reconstructed whole from the face's 2g cells: a face at a time, the limiter acts as
            on the uniform grid, which reconstructs each cell once for its two faces)."""
            stencil = functions.cells_at(index, i - g + 1, 2 * g)
            if ti.static(limited):
                _, upper = functions.cell_faces(stencil[:2 * g - 1], index, i, dt_dx)
                lower, _ = functions.cell_faces(stencil[1:], index, i + 1, dt_dx)
                return functions.solve(upper, lower, index, i, dt_dx)
            return functions.face_flux(stencil, index, i, dt_dx)
        return flux

    def _fallback_counter(self):
        fallbacks = self._fallbacks

        @ti.func
        def count(slot, replaced):
            """Face states replaced, per block slot (an atomic only where there are any)."""
            if replaced != 0:
                ti.atomic_add(fallbacks[slot], ti.cast(replaced, ti.i64))
        return count

    def _register_kernel(self):
        pool, dim, N, fluxes = self.pool, self.dim, self.N, self.flux
        level, jumps, register, level_inv_dx = pool.level, pool.coarser_faces, pool.face_register, pool.level_inv_dx
        total, listed_cell = listed_cells(dim, lambda axis: (N,) * (dim - 1))

        @ti.kernel
        def fill_register(n_jumps: ti.types.vector(3, ti.i32), dt: pool.dtype):
            """The fluxes through the block faces whose neighbour is coarser (listed), as
            the fine side solves them: both sides then read them from here (the coarse one
            their mean), so what leaves one enters the other bit for bit."""
            for n in range(total(n_jumps)):  # (every axis' faces in one launch: listed_loops.py)
                for axis in ti.static(range(dim)):
                    J, here = listed_cell(n, n_jumps, axis)
                    if here:
                        entry = jumps[axis, component(J, 0)]
                        slot, side = entry // 2, entry % 2
                        dt_dx = dt * component(level_inv_dx[level[slot]], axis)
                        i = side * N - 1  # the face i + 1/2: the block's lower or upper one
                        index = pool_index(slot, row_cell(dim, axis, i, J, 1))
                        row = [slot, axis, side] + [component(J, 1 + t) for t in range(dim - 1)]
                        f, _ = fluxes[axis](index, i, dt_dx)
                        register[ti.Vector(row)] = f

        def fill(dt: float):
            counts = list(pool.n_coarser) + [0] * (3 - dim)
            if any(counts):
                fill_register(counts, dt)
        return fill

    def _fine_faces(self, axis):
        dim, half = self.dim, self.N // 2
        neighbour, register = self.pool.neighbour, self.pool.face_register

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

    def _block_face(self, axis):
        dim, fine_flux, n_fine = self.dim, self.fine_flux[axis], 2 ** (self.dim - 1)
        relation, register, dtype, n_flux = self.pool.relation, self.pool.face_register, self.pool.dtype, \
            self.pool.phys.n_flux

        @ti.func
        def flux(slot, J, side: ti.template(), solved, replaced):
            """(the flux through the block's face on `side` of row J, the states replaced in
            it) given the one the sweep `solved` there from the ghost layers with `replaced`:
            where the level jumps, the register's (where the neighbour is finer, the mean of
            the fine faces' fluxes), the solved one unused and its states not counted (its
            ghost layers may come from another rank's copy, refreshed only where read)."""
            f, counted = solved, replaced
            across = relation[slot, face_direction(dim, axis, side)]
            if across == COARSER:
                f = register[ti.Vector([slot, axis, side] + [component(J, 1 + t) for t in range(dim - 1)])]
                counted = 0
            elif across == FINER:
                f = ti.Vector.zero(dtype, n_flux)
                for q in ti.static(range(n_fine)):
                    f += fine_flux(slot, J, side, q)
                f *= 1.0 / n_fine
                counted = 0
            return f, counted
        return flux

    def _cell_divergence(self, axis):
        """-dF/dx of a cell (its widths' 1/dx not applied). For a model with balance terms (a
        well-balanced source: shallow water's bed slope), a cell beside finer blocks takes the
        mean of the divergences with each fine face, not the divergence with their mean flux:
        the balance terms are not linear in the face values, and only face by face do they
        cancel the pressure of a lake at rest (the mean flux left its surface 4.9e-6 off across a
        bump in 15 steps: tests/test_amr.py)."""
        dim, N, divergence, fine_flux = self.dim, self.N, self._divergence, self.fine_flux[axis]
        n_fine, relation = 2 ** (dim - 1), self.pool.relation
        balanced = self.pool.phys.n_balance > 0

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
