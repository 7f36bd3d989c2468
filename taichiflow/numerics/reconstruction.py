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
from typing import Callable

import taichi as ti

from .. import registry


@dataclass(frozen=True)
class Reconstruction:
    name: str
    ghost: int
    face_states: Callable
    cell_states: Callable


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


def make_weno3(eps: float):
    """Third-order WENO (Jiang & Shu 1996, r = 2): candidates on {i-1, i} and {i, i+1}.
    Returns (face value, cell's two face values)."""
    eps = float(eps)

    @ti.func
    def factor(x, y):
        return 1.0 / (eps + (y - x) ** 2) ** 2

    @ti.func
    def combine(a, b, c, f_lower, f_upper):
        """Value between b and c from the indicator factors of {a, b} and {b, c}."""
        alpha0, alpha1 = (1.0 / 3.0) * f_lower, (2.0 / 3.0) * f_upper
        return (alpha0 * (-0.5 * a + 1.5 * b) + alpha1 * (0.5 * (b + c))) / (alpha0 + alpha1)

    @ti.func
    def value(a, b, c):
        return combine(a, b, c, factor(a, b), factor(b, c))

    @ti.func
    def cell(a, b, c):
        f_lower, f_upper = factor(a, b), factor(b, c)
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


def _js_factors(eps: float, divide_free: bool):
    """Jiang & Shu (1996): alpha_k = d_k / (eps + beta_k)^2.

    divide_free: the factors times their common denominator s0 s1 s2, s_k = (eps + beta_k)^2,
    which the weights' normalisation cancels: (s1 s2, s0 s2, s0 s1), no division."""
    eps = float(eps)

    @ti.func
    def factors(beta0, beta1, beta2):
        return 1.0 / (eps + beta0) ** 2, 1.0 / (eps + beta1) ** 2, 1.0 / (eps + beta2) ** 2

    @ti.func
    def scaled_factors(beta0, beta1, beta2):
        s0, s1, s2 = (eps + beta0) ** 2, (eps + beta1) ** 2, (eps + beta2) ** 2
        return s1 * s2, s0 * s2, s0 * s1

    return scaled_factors if divide_free else factors


def _z_factors(eps: float, divide_free: bool):
    """Borges et al. (2008): alpha_k = d_k (1 + (tau5 / (beta_k + eps))^2), tau5 = |beta0 - beta2|.

    tau5 is O(h^5) on smooth data, much smaller than the beta_k, so the weights stay close
    to the linear ones (also at critical points, where JS weights drift). divide_free: times
    u0 u1 u2, u_k = (beta_k + eps)^2: (u_k + tau5^2) u_i u_j."""
    eps = float(eps)

    @ti.func
    def factors(beta0, beta1, beta2):
        tau5 = ti.abs(beta0 - beta2)
        return 1.0 + (tau5 / (beta0 + eps)) ** 2, 1.0 + (tau5 / (beta1 + eps)) ** 2, 1.0 + (tau5 / (beta2 + eps)) ** 2

    @ti.func
    def scaled_factors(beta0, beta1, beta2):
        tau_squared = (beta0 - beta2) ** 2
        u0, u1, u2 = (beta0 + eps) ** 2, (beta1 + eps) ** 2, (beta2 + eps) ** 2
        return (u0 + tau_squared) * (u1 * u2), (u1 + tau_squared) * (u0 * u2), (u2 + tau_squared) * (u0 * u1)

    return scaled_factors if divide_free else factors


def make_weno5(factors):
    """Fifth-order WENO, alpha_k = d_k factor_k(beta) with linear weights d = (0.1, 0.6, 0.3).
    Returns (face value, cell's two face values)."""

    @ti.func
    def combine(a, b, c, d, e, f0, f1, f2):
        """Value between c and d from the cells a..e and the factors of their stencils."""
        q0, q1, q2 = _weno5_candidates(a, b, c, d, e)
        alpha0, alpha1, alpha2 = 0.1 * f0, 0.6 * f1, 0.3 * f2
        # times a reciprocal: in f64 (no fast-math) a shorter sequence than a division, +6% on an H200
        return (alpha0 * q0 + alpha1 * q1 + alpha2 * q2) * (1.0 / (alpha0 + alpha1 + alpha2))

    @ti.func
    def value(a, b, c, d, e):
        beta0, beta1, beta2 = _weno5_smoothness(a, b, c, d, e)
        f0, f1, f2 = factors(beta0, beta1, beta2)
        return combine(a, b, c, d, e, f0, f1, f2)

    @ti.func
    def cell(a, b, c, d, e):
        beta0, beta1, beta2 = _weno5_smoothness(a, b, c, d, e)
        f0, f1, f2 = factors(beta0, beta1, beta2)
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


def make_muscl_hancock(limiter, phys, variables: str = "primitive"):
    """MUSCL-Hancock (Toro ch. 14; Cygert et al. 2013, eqs. 8-9; docs/physics.md 2.2.4): each cell's
    limited linear profile is evolved by dt/2 with the physical flux, which makes the scheme second
    order in time with a single (Euler) stage. Only the normal-direction flux enters the predictor."""
    states, from_cons = _state_maps(phys, variables)
    nU, advected = phys.U.n, list(phys.advected_indices)

    def advected_source(u, w_minus, w_plus):
        """phi div(u) for advected scalars, whose flux is phi u_n (zeros for the others)."""
        mask = ti.Vector([1.0 if k in advected else 0.0 for k in range(nU)])
        return mask * u * (phys.normal_velocity(w_plus) - phys.normal_velocity(w_minus))

    @ti.func
    def evolved_ends(x, delta, dt_dx):
        """Boundary values x -/+ delta/2 of one cell, both advanced by half a time step."""
        w_minus, u_minus = states(x - 0.5 * delta)
        w_plus, u_plus = states(x + 0.5 * delta)
        change = 0.5 * dt_dx * (phys.flux(w_minus, u_minus) - phys.flux(w_plus, u_plus))
        if ti.static(len(advected) > 0):
            change += 0.5 * dt_dx * advected_source(0.5 * (u_minus + u_plus), w_minus, w_plus)
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


# --- the factory ----------------------------------------------------------------------------
def divide_free_weights(dtype) -> bool:
    """WENO5 factors scaled by their common denominator, in f64: there fast-math is off and
    each division is a Newton sequence of chained DFMA (3 of the 5 divisions per variable and
    cell; 150 of the 335 divisions and roots of an f64 WENO5 + HLLC + LSRK3 cell-step,
    tools/count_flops.py). f32 keeps them: fast-math makes each one reciprocal, and the scaled
    factors, up to (eps + beta)^4 (JS) or ^6 (Z), overflow its range (3e38) once beta passes
    ~1e9 (pressures in pascals)."""
    return dtype == ti.f64


def weno_epsilon(scheme: dict, dtype=None) -> float:
    """The case's WENO epsilon, raised where the precision needs it: on uniform data
    (beta = 0) the weights are d/eps^2 (JS) or d (tau/eps)^2 (Z), which must stay finite
    and normal, or they turn into inf/inf. f32 floors eps at 1e-15 (1/eps^2 = 1e30, below
    the f32 maximum 3e38 with room for the numerators); f64 at 1e-40, where its divide-free
    weights of uniform data, eps^4 (JS) and eps^6 (Z), stay normal (1e-240 > 2e-308)."""
    eps = float(scheme.get("weno_epsilon", 1e-6))
    return max(eps, 1e-15 if dtype == ti.f32 else 1e-40)


# WENO face functions: (epsilon, divide-free weights) -> (face value, cell's two face values)
def weno3_functions(eps: float, divide_free: bool):
    return make_weno3(eps)


def weno5_functions(eps: float, divide_free: bool):
    return make_weno5(_js_factors(eps, divide_free))


def weno5z_functions(eps: float, divide_free: bool):
    return make_weno5(_z_factors(eps, divide_free))


# --- the reconstructions the registry names: (scheme, phys) -> Reconstruction --------------
def _dtype(phys):
    return phys.dtype if phys is not None else None


def make_first_order(scheme: dict, phys=None) -> Reconstruction:
    return Reconstruction("first_order", 1, first_order_faces, first_order_cell)


def make_plm_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    limiter_name = scheme.get("limiter", "mc")
    return Reconstruction(f"plm-{limiter_name}", 2, *make_plm(make_limiter(scheme)))


def _weno(name: str, ghost: int, functions, scheme: dict, phys) -> Reconstruction:
    eps = weno_epsilon(scheme, _dtype(phys))
    value, cell = functions(eps, divide_free_weights(_dtype(phys)))
    return Reconstruction(name, ghost, _upwind_pair(value, ghost), _splat(cell))


def make_weno3_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno3", 2, weno3_functions, scheme, phys)


def make_weno5_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno5", 3, weno5_functions, scheme, phys)


def make_weno5z_reconstruction(scheme: dict, phys=None) -> Reconstruction:
    return _weno("weno5z", 3, weno5z_functions, scheme, phys)


def make_muscl_hancock_reconstruction(scheme: dict, phys) -> Reconstruction:
    limiter_name = scheme.get("limiter", "mc")
    states = make_muscl_hancock(make_limiter(scheme), phys, scheme.get("variables", "primitive"))
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
