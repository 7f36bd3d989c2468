"""Face-state reconstructions on a stencil of primitive (or other) vectors.

Each reconstruction has a ghost width g and two views of the same numbers:

- `face_states(stencil, dt_dx)` takes the 2g cell vectors around the face between cells i-1
  and i (cells i-g .. i+g-1) and returns the left and right states at that face;
- `cell_states(stencil, dt_dx)` takes the 2g - 1 cell vectors centred on cell i and returns
  the values at its lower and upper faces (the right state of face i-1/2, the left state of
  face i+1/2), bit for bit what face_states gives there. A sweep walking along an axis calls
  it once per cell, so the work a cell's two face values share (WENO smoothness indicators,
  PLM slopes, the MUSCL-Hancock predictor) is done once.

dt_dx (time step over cell width) is used only by schemes with a time predictor
(MUSCL-Hancock). Operations are component-wise on vectors. Every choice (scheme, limiter,
theta, epsilon) is made here in Python while the kernels compile: the Taichi functions below
contain no branch on the scheme. registry.py names the reconstructions and limiters (with
their stencil reach and the options they read) and points at the factories here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import taichi as ti

from .. import registry


@dataclass(frozen=True)
class Reconstruction:
    name: str
    ghost: int
    face_states: Callable
    cell_states: Callable
    # A reconstruction with a time predictor over every axis (MUSCL-Hancock on 2D and 3D grids):
    # half_step(a, b, c, dt_dx) is the change of cell b's conserved state over half a step from
    # the flux difference along one axis (normal frame; the kernel sums the axes before the
    # sweeps, kernels/predictor.py), and face_states/cell_states take the changes of the cells
    # they reconstruct as one more argument.
    half_step: Callable = None

    @property
    def predicted(self) -> bool:
        return self.half_step is not None


# --- slope limiters ---------------------------------------------------------------------
# A limiter maps the backward and forward differences (a, b) of a cell to its limited
# slope. All vanish unless a and b have the same strict sign; that factor is
# _same_sign(a, b) times a magnitude built from |a| and |b| with min/max/select only.


@ti.func
def _sign(x):
    return ti.select(x > 0.0, 1.0, 0.0) - ti.select(x < 0.0, 1.0, 0.0)


@ti.func
def _same_sign(a, b):
    """+1 or -1 where a and b share that sign; 0 where they differ or one is zero."""
    return 0.5 * (_sign(a) + _sign(b))


@ti.func
def minmod(a, b):
    return _same_sign(a, b) * ti.min(ti.abs(a), ti.abs(b))


@ti.func
def monotonized_central(a, b):
    return _same_sign(a, b) * ti.min(2.0 * ti.abs(a), 2.0 * ti.abs(b), 0.5 * ti.abs(a + b))


def generalized_minmod(theta: float = 1.5):
    """minmod(theta a, (a + b) / 2, theta b): theta = 1 is minmod, theta = 2 is MC."""
    theta = float(theta)

    @ti.func
    def limiter(a, b):
        return _same_sign(a, b) * ti.min(theta * ti.abs(a), 0.5 * ti.abs(a + b), theta * ti.abs(b))

    return limiter


@ti.func
def van_leer(a, b):
    """Harmonic mean 2ab / (a + b); the select keeps a = b = 0 free of 0/0."""
    total = ti.abs(a) + ti.abs(b)
    return _same_sign(a, b) * 2.0 * ti.abs(a) * ti.abs(b) / ti.select(total > 0.0, total, 1.0)


# Cygert et al. (2013) write MINBEE and SUPERBEE as functions xi(r) of r = a / b (docs/physics.md
# 2.2.2). As a slope, the limited value is xi(r) b; with a and b of one sign that is xi evaluated
# with r -> |a| and 1 -> |b| (xi is built of min/max of terms linear in r and 1), times the common
# sign. No division, so b = 0 needs no special case.


@ti.func
def _minbee_xi(r, one):
    return ti.max(0.0, ti.min(one, r))


@ti.func
def _superbee_xi(r, one):
    return ti.max(0.0, ti.min(2.0 * r, one), ti.min(r, 2.0 * one))


@ti.func
def minbee(a, b):
    """MINBEE, xi(r) = max(0, min(1, r)): the same slope as minmod."""
    return _same_sign(a, b) * _minbee_xi(ti.abs(a), ti.abs(b))


@ti.func
def superbee(a, b):
    """SUPERBEE, xi(r) = max(0, min(2r, 1), min(r, 2)): the most compressive TVD slope."""
    return _same_sign(a, b) * _superbee_xi(ti.abs(a), ti.abs(b))


def make_limiter(scheme: dict):
    """The slope limiter a case's [scheme] names; a limiter that reads options (theta of
    generalized minmod) is built with the scheme's values of them."""
    entry = registry.limiters.get(scheme.get("limiter", "mc"))
    function = entry.load()
    if not entry.options:
        return function
    return function(**{option: scheme[option] for option in entry.options if option in scheme})


# --- piecewise constant and piecewise linear ----------------------------------------------
def first_order_faces(stencil, dt_dx):
    return stencil[0], stencil[1]


def first_order_cell(stencil, dt_dx):
    return stencil[0], stencil[0]


def make_plm(limiter):
    """(face_states, cell_states) of the limited linear profile."""

    @ti.func
    def ends(a, b, c):
        """Values of the middle cell's linear profile at its lower and upper faces."""
        half_slope = 0.5 * limiter(b - a, c - b)
        return b - half_slope, b + half_slope

    def face_states(stencil, dt_dx):
        a, b, c, d = stencil
        _, left = ends(a, b, c)
        right, _ = ends(b, c, d)
        return left, right

    def cell_states(stencil, dt_dx):
        return ends(*stencil)

    return face_states, cell_states


# --- WENO ---------------------------------------------------------------------------------
# A WENO face value of 2g - 1 cells is biased towards the middle cell and lies on its upper
# face; the value on its lower face is the same function of the mirrored cells. Both use the
# middle cell's smoothness indicators, written so that mirroring the cells mirrors them bit for
# bit: a cell computes them once for its two faces, and mirror-symmetric data stay symmetric.


def _upwind_pair(value, g: int):
    """face_states from a one-sided face value on 2g - 1 cells."""

    def face_states(s, dt_dx):
        return value(*s[0:2 * g - 1]), value(*s[2 * g - 1:0:-1])

    return face_states


def _splat(cell):
    """cell_states from a function of the 2g - 1 cells (no time predictor)."""

    def cell_states(s, dt_dx):
        return cell(*s)

    return cell_states


def _unit_free(epsilon, n: int):
    """(indicators, mean square) -> (indicators, eps) for the weights, the same in any unit of
    the values (see WenoEpsilon): f64 (not normalised) adds relative times the mean square of
    the n values to the absolute floor and keeps its divide-free factors; f32 divides the
    indicators by the mean square (+ floor) instead, since 1/(eps + beta)^2 of an epsilon that
    scales with the data would leave the f32 range for data of ~1e-4 (pressures in GPa)."""
    relative, floor = float(epsilon.relative), float(epsilon.floor)
    if epsilon.normalised:
        def scaled(betas, sum_of_squares):  # (plain Python: inlined where a Taichi function calls it)
            r = 1.0 / (sum_of_squares * (1.0 / n) + floor)
            return [beta * r for beta in betas], relative
    else:
        def scaled(betas, sum_of_squares):
            return betas, relative * (1.0 / n) * sum_of_squares + floor
    return scaled


def make_weno3(epsilon):
    """Third-order WENO (Jiang & Shu 1996, r = 2): candidates on {i-1, i} and {i, i+1}.
    Returns (face value, cell's two face values). epsilon: a WenoEpsilon."""
    scaled = _unit_free(epsilon, 3)

    @ti.func
    def factors(a, b, c):
        """The indicator factors of {a, b} and {b, c} (mirror-symmetric sums)."""
        betas, eps = scaled([(b - a) ** 2, (c - b) ** 2], (a * a + c * c) + b * b)
        return 1.0 / (eps + betas[0]) ** 2, 1.0 / (eps + betas[1]) ** 2

    @ti.func
    def combine(a, b, c, f_lower, f_upper):
        """Value between b and c from the indicator factors of {a, b} and {b, c}."""
        alpha0, alpha1 = (1.0 / 3.0) * f_lower, (2.0 / 3.0) * f_upper
        return (alpha0 * (-0.5 * a + 1.5 * b) + alpha1 * (0.5 * (b + c))) / (alpha0 + alpha1)

    @ti.func
    def value(a, b, c):
        f_lower, f_upper = factors(a, b, c)
        return combine(a, b, c, f_lower, f_upper)

    @ti.func
    def cell(a, b, c):
        f_lower, f_upper = factors(a, b, c)
        return combine(c, b, a, f_upper, f_lower), combine(a, b, c, f_lower, f_upper)

    return value, cell


@ti.func
def _weno5_smoothness(a, b, c, d, e):
    """Jiang & Shu indicators of the three candidate stencils; (e, d, c, b, a) gives
    (beta2, beta1, beta0) bit for bit (sums are commutative, not associative)."""
    beta0 = 13.0 / 12.0 * ((a + c) - 2.0 * b) ** 2 + 0.25 * ((a + 3.0 * c) - 4.0 * b) ** 2
    beta1 = 13.0 / 12.0 * ((b + d) - 2.0 * c) ** 2 + 0.25 * (b - d) ** 2
    beta2 = 13.0 / 12.0 * ((e + c) - 2.0 * d) ** 2 + 0.25 * ((e + 3.0 * c) - 4.0 * d) ** 2
    return beta0, beta1, beta2


SIXTH = 1.0 / 6.0  # a product, not a division: f64 kernels (no fast-math) keep divisions, each
                   # a multi-instruction sequence on a GPU; these were 30 of 78 per face


@ti.func
def _weno5_candidates(a, b, c, d, e):
    q0 = (2.0 * a - 7.0 * b + 11.0 * c) * SIXTH
    q1 = (-b + 5.0 * c + 2.0 * d) * SIXTH
    q2 = (2.0 * c + 5.0 * d - e) * SIXTH
    return q0, q1, q2


def _js_factors(divide_free: bool):
    """Jiang & Shu (1996): alpha_k = d_k / (eps + beta_k)^2.

    divide_free: the factors times their common denominator s0 s1 s2, s_k = (eps + beta_k)^2,
    which the weights' normalisation cancels: (s1 s2, s0 s2, s0 s1), no division."""

    @ti.func
    def factors(beta0, beta1, beta2, eps):
        return 1.0 / (eps + beta0) ** 2, 1.0 / (eps + beta1) ** 2, 1.0 / (eps + beta2) ** 2

    @ti.func
    def scaled_factors(beta0, beta1, beta2, eps):
        s0, s1, s2 = (eps + beta0) ** 2, (eps + beta1) ** 2, (eps + beta2) ** 2
        return s1 * s2, s0 * s2, s0 * s1

    return scaled_factors if divide_free else factors


def _z_factors(divide_free: bool):
    """Borges et al. (2008): alpha_k = d_k (1 + (tau5 / (beta_k + eps))^2), tau5 = |beta0 - beta2|.

    tau5 is O(h^5) on smooth data, much smaller than the beta_k, so the weights stay close
    to the linear ones (also at critical points, where JS weights drift). divide_free: times
    u0 u1 u2, u_k = (beta_k + eps)^2: (u_k + tau5^2) u_i u_j."""

    @ti.func
    def factors(beta0, beta1, beta2, eps):
        tau5 = ti.abs(beta0 - beta2)
        return 1.0 + (tau5 / (beta0 + eps)) ** 2, 1.0 + (tau5 / (beta1 + eps)) ** 2, 1.0 + (tau5 / (beta2 + eps)) ** 2

    @ti.func
    def scaled_factors(beta0, beta1, beta2, eps):
        tau_squared = (beta0 - beta2) ** 2
        u0, u1, u2 = (beta0 + eps) ** 2, (beta1 + eps) ** 2, (beta2 + eps) ** 2
        return (u0 + tau_squared) * (u1 * u2), (u1 + tau_squared) * (u0 * u2), (u2 + tau_squared) * (u0 * u1)

    return scaled_factors if divide_free else factors


def make_weno5(factors, epsilon):
    """Fifth-order WENO, alpha_k = d_k factor_k(beta, eps) with linear weights d = (0.1, 0.6, 0.3).
    Returns (face value, cell's two face values). epsilon: a WenoEpsilon."""
    scaled = _unit_free(epsilon, 5)

    @ti.func
    def stencil_factors(a, b, c, d, e):
        """The three factors; (e, d, c, b, a) gives them mirrored bit for bit."""
        betas, eps = scaled(_weno5_smoothness(a, b, c, d, e), ((a * a + e * e) + (b * b + d * d)) + c * c)
        return factors(betas[0], betas[1], betas[2], eps)

    @ti.func
    def combine(a, b, c, d, e, f0, f1, f2):
        """Value between c and d from the cells a..e and the factors of their stencils."""
        q0, q1, q2 = _weno5_candidates(a, b, c, d, e)
        alpha0, alpha1, alpha2 = 0.1 * f0, 0.6 * f1, 0.3 * f2
        # times a reciprocal: in f64 (no fast-math) a shorter sequence than a division, +6% on an H200
        return (alpha0 * q0 + alpha1 * q1 + alpha2 * q2) * (1.0 / (alpha0 + alpha1 + alpha2))

    @ti.func
    def value(a, b, c, d, e):
        f0, f1, f2 = stencil_factors(a, b, c, d, e)
        return combine(a, b, c, d, e, f0, f1, f2)

    @ti.func
    def cell(a, b, c, d, e):
        f0, f1, f2 = stencil_factors(a, b, c, d, e)
        return combine(e, d, c, b, a, f2, f1, f0), combine(a, b, c, d, e, f0, f1, f2)

    return value, cell


# --- MUSCL-Hancock --------------------------------------------------------------------------
def _state_maps(phys, variables: str):
    """(x -> (w, u), u -> x) between the reconstructed variables x and the model's W and U (a
    model's own reconstructed variables, to_reconstructed, where it declares them)."""
    if variables == "primitive" and "to_reconstructed" in phys.model.functions:
        def states(x):
            w = phys.from_reconstructed(x)
            return w, phys.cons(w)
        return states, (lambda u: phys.to_reconstructed(phys.prim(u)))
    if variables == "primitive":
        return (lambda x: (x, phys.cons(x))), phys.prim
    if variables == "conserved":
        return (lambda x: (phys.prim(x), x)), (lambda u: u)
    raise ValueError(f"muscl_hancock evolves primitive or conserved variables, not '{variables}'")


def _half_step_of_ends(phys, states):
    """(ends, dt_dx) -> (U of the two ends, the half-step change of U from their flux difference
    along the normal, with the advected scalars' phi div(u) term): plain Python, inlined where a
    Taichi function calls it, shared by both MUSCL-Hancock predictors."""
    nU, advected = phys.U.n, list(phys.advected_indices)

    def advected_source(u, w_minus, w_plus):
        """phi div(u) for advected scalars, whose flux is phi u_n (zeros for the others)."""
        mask = ti.Vector([1.0 if k in advected else 0.0 for k in range(nU)])
        return mask * u * (phys.normal_velocity(w_plus) - phys.normal_velocity(w_minus))

    def half_step(x_minus, x_plus, dt_dx):
        w_minus, u_minus = states(x_minus)
        w_plus, u_plus = states(x_plus)
        change = 0.5 * dt_dx * (phys.flux(w_minus, u_minus) - phys.flux(w_plus, u_plus))
        if ti.static(len(advected) > 0):
            change += 0.5 * dt_dx * advected_source(0.5 * (u_minus + u_plus), w_minus, w_plus)
        return u_minus, u_plus, change

    return half_step


def make_muscl_hancock(limiter, phys, variables: str = "primitive"):
    """MUSCL-Hancock (Toro ch. 14; Cygert et al. 2013, eqs. 8-9; docs/physics.md 2.2.4): each cell's
    limited linear profile is evolved by dt/2 with the physical flux, which makes the scheme second
    order in time with a single (Euler) stage. The normal-direction flux alone enters the
    predictor: the 1D scheme, and each axis' step of a split one."""
    states, from_cons = _state_maps(phys, variables)
    half_step = _half_step_of_ends(phys, states)

    @ti.func
    def evolved_ends(x, delta, dt_dx):
        """Boundary values x -/+ delta/2 of one cell, both advanced by half a time step."""
        u_minus, u_plus, change = half_step(x - 0.5 * delta, x + 0.5 * delta, dt_dx)
        return from_cons(u_minus + change), from_cons(u_plus + change)

    @ti.func
    def cell_ends(a, b, c, dt_dx):
        return evolved_ends(b, limiter(b - a, c - b), dt_dx)

    def face_states(stencil, dt_dx):
        a, b, c, d = stencil
        _, left = cell_ends(a, b, c, dt_dx)
        right, _ = cell_ends(b, c, d, dt_dx)
        return left, right

    def cell_states(stencil, dt_dx):
        return cell_ends(*stencil, dt_dx)

    return face_states, cell_states


def make_unsplit_muscl_hancock(limiter, phys, variables: str = "primitive"):
    """MUSCL-Hancock on a 2D or 3D grid, as Cygert et al. (2013) write it (their eq. 9): a
    cell's boundary values along every axis move by the same half-step change, the sum over the
    axes of each axis' flux difference between the ends of its own limited profile. With the
    normal flux alone (make_muscl_hancock) the scheme is first order in time and, by a von
    Neumann analysis of linear advection, unstable at every Courant number on 2D and 3D grids;
    with every axis it is second order and stable for cfl <= 1/dimension (docs/physics.md
    2.2.4). The change is summed once per cell before the sweeps (kernels/predictor.py), which
    need each cell's slopes along the axes across them."""
    states, from_cons = _state_maps(phys, variables)
    half_step_of_ends = _half_step_of_ends(phys, states)

    @ti.func
    def half_step(a, b, c, dt_dx):
        """The change of cell b's U over half a step from the flux along this axis (normal frame)."""
        delta = limiter(b - a, c - b)
        _, _, change = half_step_of_ends(b - 0.5 * delta, b + 0.5 * delta, dt_dx)
        return change

    @ti.func
    def cell_ends(a, b, c, change):
        """Boundary values of cell b along this axis, both moved by the cell's change."""
        delta = limiter(b - a, c - b)
        _, u_minus = states(b - 0.5 * delta)
        _, u_plus = states(b + 0.5 * delta)
        return from_cons(u_minus + change), from_cons(u_plus + change)

    def face_states(stencil, dt_dx, changes):
        a, b, c, d = stencil
        _, left = cell_ends(a, b, c, changes[0])
        right, _ = cell_ends(b, c, d, changes[1])
        return left, right

    def cell_states(stencil, dt_dx, change):
        return cell_ends(*stencil, change)

    return face_states, cell_states, half_step


# --- the factory ----------------------------------------------------------------------------
def divide_free_weights(dtype) -> bool:
    """WENO5 factors scaled by their common denominator, in f64: there fast-math is off and
    each division is a Newton sequence of chained DFMA (3 of the 5 divisions per variable and
    cell; 150 of the 335 divisions and roots of an f64 WENO5 + HLLC + LSRK3 cell-step,
    tools/count_flops.py). f32 keeps them: fast-math makes each one reciprocal, and the scaled
    factors, up to (eps + beta)^4 (JS) or ^6 (Z), overflow its range (3e38) once beta passes
    ~1e9 (pressures in pascals)."""
    return dtype == ti.f64


class WenoEpsilon(NamedTuple):
    """The epsilon of the WENO weights at a stencil, relative to the mean square of the
    stencil's values. The smoothness indicators are squares of differences of the values, so
    the weights are then the same in any unit of the reconstructed quantity: an absolute
    epsilon (the textbook 1e-6) left them linear at a water-air interface in the project's units
    (GPa, mm/us), where every beta is far below 1e-6, and a stiff mode of HLLC grew there
    (docs/numerics.md). normalised: the indicators are divided by the mean square (f32), else
    the epsilon multiplied by it (f64); floor keeps either finite on data that are all zero."""
    relative: float
    floor: float
    normalised: bool


# The default relative epsilons. Jiang & Shu's weights need an epsilon above the indicators of
# smooth data (relative variations over a cell below ~1e-3 give linear weights): with a tiny one
# WENO3 measured order 2.07 instead of 2.5 on the entropy wave (tests/test_reconstruction.py).
# WENO-Z's weights stay near linear on smooth data whatever epsilon (Borges et al. 2008 advise
# 1e-40), and a tiny one makes them react to the first deviation from uniform data, which a
# water-air interface needs (docs/numerics.md, two-phase flow).
WENO_JS_EPSILON, WENO_Z_EPSILON = 1e-6, 1e-40


def weno_epsilon(scheme: dict, dtype=None, default: float = WENO_JS_EPSILON) -> WenoEpsilon:
    """The case's relative WENO epsilon and the floors the precision needs: on uniform data
    (beta = 0) the weights are d/eps^2 (JS) or d (tau/eps)^2 (Z), which must stay finite and
    normal, or they turn into inf/inf. f32 raises the relative epsilon to 1e-15 (1/eps^2 = 1e30,
    below the f32 maximum 3e38 with room for the numerators) and adds 1e-30 to the mean square it
    divides by; f64 adds 1e-40 to the epsilon, where its divide-free weights of zero data, eps^4
    (JS) and eps^6 (Z), stay normal (1e-240 > 2e-308): far below any data's squares in any unit."""
    eps = float(scheme.get("weno_epsilon", default))
    if dtype == ti.f32:
        return WenoEpsilon(max(eps, 1e-15), 1e-30, True)
    return WenoEpsilon(eps, 1e-40, False)



# WENO face functions: (epsilon, divide-free weights) -> (face value, cell's two face values)
def weno3_functions(epsilon: WenoEpsilon, divide_free: bool):
    return make_weno3(epsilon)


def weno5_functions(epsilon: WenoEpsilon, divide_free: bool):
    return make_weno5(_js_factors(divide_free), epsilon)


def weno5z_functions(epsilon: WenoEpsilon, divide_free: bool):
    return make_weno5(_z_factors(divide_free), epsilon)


# --- the reconstructions the registry names: (scheme, phys) -> Reconstruction --------------
def _dtype(phys):
    return phys.dtype if phys is not None else None


def make_first_order(scheme: dict, phys=None) -> Reconstruction:
    return Reconstruction("first_order", 1, first_order_faces, first_order_cell)


def make_plm_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    limiter_name = scheme.get("limiter", "mc")
    return Reconstruction(f"plm-{limiter_name}", 2, *make_plm(make_limiter(scheme)))


def _weno(name: str, ghost: int, functions, scheme: dict, phys, default_epsilon=WENO_JS_EPSILON) -> Reconstruction:
    eps = weno_epsilon(scheme, _dtype(phys), default_epsilon)
    value, cell = functions(eps, divide_free_weights(_dtype(phys)))
    return Reconstruction(name, ghost, _upwind_pair(value, ghost), _splat(cell))


def make_weno3_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno3", 2, weno3_functions, scheme, phys)


def make_weno5_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno5", 3, weno5_functions, scheme, phys)


def make_weno5z_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno5z", 3, weno5z_functions, scheme, phys, WENO_Z_EPSILON)


def make_muscl_hancock_reconstruction(scheme: dict, phys) -> Reconstruction:
    """scheme["unsplit_axes"]: the axes one step's fluxes cross together (the grid's dimension,
    1 where the step is split by axes); above one the predictor takes every axis."""
    limiter_name = scheme.get("limiter", "mc")
    variables = scheme.get("variables", "primitive")
    if scheme.get("unsplit_axes", 1) > 1:
        return Reconstruction(f"muscl_hancock-{limiter_name}", 2,
                              *make_unsplit_muscl_hancock(make_limiter(scheme), phys, variables))
    states = make_muscl_hancock(make_limiter(scheme), phys, variables)
    return Reconstruction(f"muscl_hancock-{limiter_name}", 2, *states)


# --- lookups by name --------------------------------------------------------------------------
def stencil_reach(name: str) -> int:
    """Cells a reconstruction reads on each side of a face (its ghost width), known before
    it is built: speed choices depend on it (kernels.plan: RECONSTRUCT_PER_FACE, FUSE_MAX_GHOST).
    An unknown name raises UnknownNameError (a ValueError) naming the choices."""
    return registry.reconstructions.get(name).reach


def make_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    """The reconstruction a case's [scheme] asks for; phys serves time predictors."""
    entry = registry.reconstructions.get(scheme["reconstruction"])
    if entry.needs_model and phys is None:
        raise ValueError(f"{entry.name} is built from the model's physics (phys), which was not given")
    built = entry.load()(scheme, phys)
    if built.ghost != entry.reach:
        raise ValueError(f"reconstruction '{entry.name}' reads {built.ghost} cells a side, but the "
                         f"registry says {entry.reach}")
    return built
