"""Ideal MHD with GLM divergence cleaning (Dedner et al. 2002), ideal gas (docs/physics.md 1.3).

Heaviside-Lorentz units: the magnetic pressure is |B|^2 / 2 and E = p/(gamma - 1)
+ rho |v|^2 / 2 + |B|^2 / 2 (Gaussian-unit set-ups divide B by sqrt(4 pi)).

Divergence cleaning, mixed GLM as AthenaPK does it: psi carries div B away at the cleaning
speed ch, the largest signal speed |v_n| + c_f over the grid each step (a global value; with
cfl * dx / dt, AthenaPK's choice, it is the same number on a grid of cubes), and is damped
after each step, psi <- psi exp(-glm_alpha ch dt / h) (h the least cell width). At each face
B_n and psi come from their own 2x2 problem (Mignone & Tzeferacos 2010, eq. 24), so every
Riemann solver sees one B_n on both sides; the finite-difference method splits B_n and psi
with ch, the rest with the local fast speed. glm_alpha = 0 keeps psi undamped; cleaning off
altogether: ch_scale = 0 (psi and its flux stay zero, B_n's flux is zero).
"""
import math

import taichi as ti

from taichiflow import Model

model = Model(
    "mhd",
    conserved={"rho": 1, "mom": 3, "E": 1, "B": 3, "psi": 1},
    primitive={"rho": 1, "vel": 3, "p": 1, "B": 3, "psi": 1},
    params={"gamma": 5.0 / 3.0, "glm_alpha": 0.1, "ch_scale": 1.0},
    ranges={"gamma": "> 1", "glm_alpha": ">= 0", "ch_scale": ">= 0"},
    velocity="vel", density="rho", pressure="p",
    positive=("rho", "p"),
    globals={"ch": "max"},
    sample={"rho": 1.0, "vel": [0.1, -0.2, 0.3], "p": 0.6, "B": [0.8, 0.5, -0.3], "psi": 0.0},
    description="Ideal MHD, GLM divergence cleaning, Heaviside-Lorentz units",
    exact_wave_speeds=True,   # u_n -/+ c_f are the extreme waves once the face pair resolves B_n, psi
)


@ti.func
def fast_speed(W, gamma, axis):
    """c_f along `axis`: sqrt((a^2 + b^2 + sqrt((a^2 + b^2)^2 - 4 a^2 b_n^2)) / 2)."""
    inv_rho = 1.0 / W.rho
    a2 = gamma * W.p * inv_rho
    b2 = W.B.dot(W.B) * inv_rho
    bn2 = W.B[axis] * W.B[axis] * inv_rho
    total = a2 + b2
    return ti.sqrt(0.5 * (total + ti.sqrt(ti.max(total * total - 4.0 * a2 * bn2, 0.0))))


@model.to_primitive
def to_primitive(U, gamma):
    vel = U.mom * (1.0 / U.rho)
    p = (gamma - 1.0) * (U.E - 0.5 * U.rho * vel.dot(vel) - 0.5 * U.B.dot(U.B))
    return model.W(rho=U.rho, vel=vel, p=p, B=U.B, psi=U.psi)


@model.to_conserved
def to_conserved(W, gamma):
    return model.U(rho=W.rho, mom=W.rho * W.vel,
                   E=W.p * (1.0 / (gamma - 1.0)) + 0.5 * W.rho * W.vel.dot(W.vel) + 0.5 * W.B.dot(W.B),
                   B=W.B, psi=W.psi)


@model.flux
def flux(W, U, ch):
    un, bn = W.vel[0], W.B[0]
    total_pressure = W.p + 0.5 * W.B.dot(W.B)
    return model.U(rho=U.rho * un,
                   mom=U.mom * un - bn * W.B + total_pressure * model.ex,
                   E=(U.E + total_pressure) * un - bn * W.vel.dot(W.B),
                   B=W.B * un - bn * W.vel + W.psi * model.ex,   # (the normal component: vn bn - bn vn + psi)
                   psi=ch * ch * bn)


@model.wave_speeds
def wave_speeds(W, gamma):
    cf = fast_speed(W, gamma, 0)
    return ti.Vector([W.vel[0] - cf, W.vel[0] + cf])


@model.global_value("ch")
def cleaning_speed(W, gamma, ch_scale):
    """The largest |v_d| + c_f along any axis: the cleaning speed is its maximum over the grid."""
    fastest = 0.0
    for d in ti.static(range(3)):
        fastest = ti.max(fastest, ti.abs(W.vel[d]) + fast_speed(W, gamma, d))
    return ch_scale * fastest


@model.face_states
def glm_face_states(WL, WR, ch):
    """B_n and psi from the exact solution of their 2x2 system (speeds -ch, +ch) at the face."""
    inv = ti.select(ch > 0.0, 0.5 / ch, 0.0)  # (no cleaning, ch = 0: the mean of the two sides)
    bn = 0.5 * (WL.B[0] + WR.B[0]) - (WR.psi - WL.psi) * inv
    psi = 0.5 * (WL.psi + WR.psi) - 0.5 * ch * (WR.B[0] - WL.B[0])
    BL = ti.Vector([bn, WL.B[1], WL.B[2]])
    BR = ti.Vector([bn, WR.B[1], WR.B[2]])
    return (model.W(rho=WL.rho, vel=WL.vel, p=WL.p, B=BL, psi=psi),
            model.W(rho=WR.rho, vel=WR.vel, p=WR.p, B=BR, psi=psi))


@model.after_step
def damp_psi(U, dt, h, ch, glm_alpha):
    """Mixed GLM's parabolic part as a split step: psi *= exp(-glm_alpha ch dt / h)."""
    return model.U(rho=U.rho, mom=U.mom, E=U.E, B=U.B, psi=U.psi * ti.exp(-glm_alpha * ch * dt / h))


@model.splitting_speeds
def splitting_speeds(W, gamma, ch):
    """Flux splitting (finite differences): B_n and psi form the linear 2x2 system of speeds
    -ch, +ch, split exactly with ch; the rest with the local fast speed."""
    s = ti.abs(W.vel[0]) + fast_speed(W, gamma, 0)
    return model.U(rho=s, mom=ti.Vector([s, s, s]), E=s, B=ti.Vector([ch, s, s]), psi=ch)


@model.riemann_solver("hlld", doc="HLLD (Miyoshi & Kusano 2005): resolves the Alfven, slow and contact waves")
def hlld(WL, WR, gamma, ch):
    """Five-wave HLLD flux of Miyoshi & Kusano (2005, J. Comput. Phys. 208, 315). B_n is one
    value on both sides (glm_face_states), psi too, so their fluxes are the GLM ones.

    The contact speed sM comes first, from scalars alone; it says which side's states the face
    lies among, and only that side's flux, energies and conserved state are formed. The flux is
    F + s (U* - U) + s* (U** - U*), each term kept only where its wave has crossed the face: the
    same values as the six-way choice of the paper, without branches."""
    bn = 0.5 * (WL.B[0] + WR.B[0])
    cf = ti.max(fast_speed(WL, gamma, 0), fast_speed(WR, gamma, 0))
    uL, uR = WL.vel[0], WR.vel[0]
    sL = ti.min(uL, uR) - cf
    sR = ti.max(uL, uR) + cf
    ptL = WL.p + 0.5 * WL.B.dot(WL.B)
    ptR = WR.p + 0.5 * WR.B.dot(WR.B)
    mL = WL.rho * (sL - uL)  # mass fluxes through the outer waves
    mR = WR.rho * (sR - uR)
    inv_m = 1.0 / (mR - mL)
    sM = (mR * uR - mL * uL - ptR + ptL) * inv_m
    pt_star = (mR * ptL - mL * ptR + mL * mR * (uR - uL)) * inv_m
    left = sM >= 0.0
    W = model.W(rho=ti.select(left, WL.rho, WR.rho), vel=ti.select(left, WL.vel, WR.vel),
                p=ti.select(left, WL.p, WR.p), B=ti.select(left, WL.B, WR.B),
                psi=ti.select(left, WL.psi, WR.psi))
    s = ti.select(left, sL, sR)
    U = to_conserved(W, gamma)
    rhoL, velL, BL = _star_state(WL, sL, sM, bn)
    rhoR, velR, BR = _star_state(WR, sR, sM, bn)
    rho, vel, B = ti.select(left, rhoL, rhoR), ti.select(left, velL, velR), ti.select(left, BL, BR)
    E = ((s - W.vel[0]) * U.E - ti.select(left, ptL, ptR) * W.vel[0] + pt_star * sM
         + bn * (W.vel.dot(W.B) - vel.dot(B))) / (s - sM)
    sqrtL, sqrtR = ti.sqrt(rhoL), ti.sqrt(rhoR)
    sign = ti.select(bn >= 0.0, 1.0, -1.0)
    inv_sum = 1.0 / (sqrtL + sqrtR)
    v2 = (sqrtL * velL + sqrtR * velR + sign * (BR - BL)) * inv_sum
    B2 = (sqrtL * BR + sqrtR * BL + sign * sqrtL * sqrtR * (velR - velL)) * inv_sum
    v2 = ti.Vector([sM, v2[1], v2[2]])
    B2 = ti.Vector([bn, B2[1], B2[2]])
    sqrt_side = ti.select(left, sqrtL, sqrtR)
    s_alfven = sM + ti.select(left, -1.0, 1.0) * ti.abs(bn) / sqrt_side
    E2 = E + ti.select(left, -1.0, 1.0) * sign * sqrt_side * (vel.dot(B) - v2.dot(B2))
    outer_crossed = ti.select(left, sL < 0.0, sR >= 0.0)
    alfven_crossed = outer_crossed & ti.select(left, s_alfven < 0.0, s_alfven >= 0.0)
    star = _pack(rho, vel, E, B, W.psi)
    result = _flat(flux(W, U, ch))
    result += ti.select(outer_crossed, s * (star - _flat(U)), 0.0)
    result += ti.select(alfven_crossed, s_alfven * (_pack(rho, v2, E2, B2, W.psi) - star), 0.0)
    return model.U(rho=result[0], mom=ti.Vector([result[1], result[2], result[3]]), E=result[4],
                   B=ti.Vector([result[5], result[6], result[7]]), psi=result[8])


@ti.func
def _wave_structure(W, gamma):
    """The speeds and normalisation of the seven ideal-MHD waves along x (Roe & Balsara 1996,
    Stone et al. 2008 eqs. A10-A17): (a^2, c_a, c_f, c_s, alpha_f, alpha_s, beta_y, beta_z,
    sign B_x, sqrt rho). With delta = c_a^2 + c_t^2 - a^2 and s = sqrt(delta^2 + 4 a^2 c_t^2)
    = c_f^2 - c_s^2, alpha_f^2 = (a^2 - c_s^2) / s and alpha_s^2 = (c_f^2 - a^2) / s, each
    numerator taken in the form without cancellation (the smaller one is 2 a^2 c_t^2 /
    (s + |delta|)): so alpha_f^2 + alpha_s^2 = 1 and alpha_f^2 c_f^2 + alpha_s^2 c_s^2 = a^2
    hold to round-off, and where B_t = 0 one alpha is exactly 0 with no threshold (Athena's
    branches for c_f = a, c_s = a); at the triple point (B_t = 0, c_a = a: s = 0) alpha_f = 1.
    beta = B_t / |B_t|, scaled first by its largest component (no underflow); (1, 0) where
    B_t = 0. sign B_x is +1 where B_x = 0."""
    inv_rho = 1.0 / W.rho
    a2 = gamma * W.p * inv_rho
    ca2 = W.B[0] * W.B[0] * inv_rho
    ct2 = (W.B[1] * W.B[1] + W.B[2] * W.B[2]) * inv_rho
    delta = ca2 + ct2 - a2
    s = ti.sqrt(delta * delta + 4.0 * a2 * ct2)
    cf2 = 0.5 * (a2 + ca2 + ct2 + s)
    cs2 = a2 * ca2 / cf2  # (the product of the roots: accurate where c_s is small)
    q = s + ti.abs(delta)
    smaller = 2.0 * a2 * ct2 / ti.select(q > 0.0, q, 1.0)
    n_f = ti.select(delta > 0.0, smaller, 0.5 * q)  # a^2 - c_s^2
    n_s = ti.select(delta > 0.0, 0.5 * q, smaller)  # c_f^2 - a^2
    total = n_f + n_s
    alpha_f = ti.select(total > 0.0, ti.sqrt(n_f / ti.select(total > 0.0, total, 1.0)), 1.0)
    alpha_s = ti.select(total > 0.0, ti.sqrt(n_s / ti.select(total > 0.0, total, 1.0)), 0.0)
    scale = ti.max(ti.abs(W.B[1]), ti.abs(W.B[2]))
    by = W.B[1] / ti.select(scale > 0.0, scale, 1.0)
    bz = W.B[2] / ti.select(scale > 0.0, scale, 1.0)
    bt = ti.sqrt(by * by + bz * bz)
    beta_y = ti.select(scale > 0.0, by / ti.select(scale > 0.0, bt, 1.0), 1.0)
    beta_z = ti.select(scale > 0.0, bz / ti.select(scale > 0.0, bt, 1.0), 0.0)
    sign = ti.select(W.B[0] < 0.0, -1.0, 1.0)
    return (a2, ti.sqrt(ca2), ti.sqrt(cf2), ti.sqrt(cs2), alpha_f, alpha_s, beta_y, beta_z, sign,
            ti.sqrt(W.rho))


@model.eigenvectors
def eigenvectors(W, gamma, ch):
    """(L, R) of the primitive system along x, W = (rho, v, p, B, psi), for characteristic
    reconstruction. Columns of R, by speed: -c_h, v_x - c_f, v_x - c_a, v_x - c_s, v_x
    (entropy), v_x + c_s, v_x + c_a, v_x + c_f, +c_h; rows of L likewise, L R = I.

    The seven MHD waves are Roe & Balsara's (1996) in primitive variables with the
    normalisation of Stone et al. (2008, ApJS 178, 137, appendix A, eqs. A12 and A18):
    density amplitudes rho alpha_f, rho alpha_s, 1 for the fast, slow and entropy waves, unit
    tangential velocity for the Alfven waves, the left rows of the magnetosonic waves scaled
    by 1/(2 a^2). With alpha_f, alpha_s and beta_y, beta_z of _wave_structure they stay
    finite and independent where waves coincide: B_t = 0 (beta fixed at (1, 0), the fast or
    the slow pair then Alfvenic), B_x = 0 (c_s = c_a = 0: the slow and Alfven pairs span the
    tangential discontinuity), and the triple point c_a = c_s = c_f = a (alpha_f = 1: the
    fast pair is sound).

    B_n and psi: along x they form the GLM pair B_x,t + psi_x = 0, psi_t + c_h^2 B_x,x = 0 of
    speeds -c_h, +c_h, whose characteristic variables (B_x -/+ psi / c_h) / 2 are the first
    and last rows: face_states solves that pair exactly, taking each wave's variable from its
    upwind side, so each is reconstructed (limited) as one variable. The seven MHD waves take
    B_x as a parameter (the coupling of B_x,x into their rows is left out): that is the
    structure the face solution has, one B_n across the Riemann fan once the pair is resolved
    (Mignone & Tzeferacos 2010; PLUTO's solvers likewise leave the solved pair out), and the
    coupled Jacobian has no complete set of eigenvectors where c_h equals a fast speed, which
    it does in the grid's fastest cell (c_h is that maximum). Without cleaning (c_h = 0: psi
    stays zero) B_x and psi pass through unchanged."""
    a2, ca, cf, cs, af, als, by, bz, sign, root = _wave_structure(W, gamma)
    rho = W.rho
    # the GLM pair, (B_x, psi) -> (B_x -/+ psi / c_h) / 2 and back; without cleaning, the identity
    cleaning = ch > 0.0
    inv_2ch = ti.select(cleaning, 0.5 / ti.select(cleaning, ch, 1.0), 0.0)
    l_bx_minus, l_bx_plus, l_psi_plus = ti.select(cleaning, 0.5, 1.0), ti.select(cleaning, 0.5, 0.0), \
        ti.select(cleaning, inv_2ch, 1.0)
    r_psi_minus, r_bx_plus, r_psi_plus = -ti.select(cleaning, ch, 0.0), ti.select(cleaning, 1.0, 0.0), \
        ti.select(cleaning, ch, 1.0)
    qs, qf = sign * als * cs, sign * af * cf
    a_s, a_f = als * ti.sqrt(a2) * root, af * ti.sqrt(a2) * root
    n = 0.5 / a2
    nr = n / rho
    h = 0.5 / root
    # columns: -ch, v-cf, v-ca, v-cs, v, v+cs, v+ca, v+cf, +ch; rows: rho, vx, vy, vz, p, Bx, By, Bz, psi
    R = ti.Matrix([
        [0.0, rho * af, 0.0, rho * als, 1.0, rho * als, 0.0, rho * af, 0.0],
        [0.0, -cf * af, 0.0, -cs * als, 0.0, cs * als, 0.0, cf * af, 0.0],
        [0.0, qs * by, -bz, -qf * by, 0.0, qf * by, bz, -qs * by, 0.0],
        [0.0, qs * bz, by, -qf * bz, 0.0, qf * bz, -by, -qs * bz, 0.0],
        [0.0, rho * a2 * af, 0.0, rho * a2 * als, 0.0, rho * a2 * als, 0.0, rho * a2 * af, 0.0],
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, r_bx_plus],
        [0.0, a_s * by, -sign * root * bz, -a_f * by, 0.0, -a_f * by, -sign * root * bz, a_s * by, 0.0],
        [0.0, a_s * bz, sign * root * by, -a_f * bz, 0.0, -a_f * bz, sign * root * by, a_s * bz, 0.0],
        [r_psi_minus, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, r_psi_plus]])
    L = ti.Matrix([
        [0.0, 0.0, 0.0, 0.0, 0.0, l_bx_minus, 0.0, 0.0, -inv_2ch],
        [0.0, -n * af * cf, n * qs * by, n * qs * bz, nr * af, 0.0, nr * a_s * by, nr * a_s * bz, 0.0],
        [0.0, 0.0, -0.5 * bz, 0.5 * by, 0.0, 0.0, -sign * h * bz, sign * h * by, 0.0],
        [0.0, -n * als * cs, -n * qf * by, -n * qf * bz, nr * als, 0.0, -nr * a_f * by, -nr * a_f * bz, 0.0],
        [1.0, 0.0, 0.0, 0.0, -1.0 / a2, 0.0, 0.0, 0.0, 0.0],
        [0.0, n * als * cs, n * qf * by, n * qf * bz, nr * als, 0.0, -nr * a_f * by, -nr * a_f * bz, 0.0],
        [0.0, 0.0, 0.5 * bz, -0.5 * by, 0.0, 0.0, -sign * h * bz, sign * h * by, 0.0],
        [0.0, n * af * cf, -n * qs * by, -n * qs * bz, nr * af, 0.0, nr * a_s * by, nr * a_s * bz, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, l_bx_plus, 0.0, 0.0, l_psi_plus]])
    return L, R


@model.eigenvalues
def eigenvalues(W, gamma, ch):
    """The speeds of eigenvectors' columns: -c_h, v_x - c_f, v_x - c_a, v_x - c_s, v_x,
    v_x + c_s, v_x + c_a, v_x + c_f, +c_h."""
    a2, ca, cf, cs, af, als, by, bz, sign, root = _wave_structure(W, gamma)
    u = W.vel[0]
    return ti.Vector([-ch, u - cf, u - ca, u - cs, u, u + cs, u + ca, u + cf, ch])


@ti.func
def _star_state(W, s, sM, bn):
    """(rho, v, B) behind the outer (fast) wave s (Miyoshi & Kusano eqs. 43-47); where that
    wave and the Alfven wave coincide (denominator ~ 0) v and B across stay as they were."""
    u = W.vel[0]
    rho = W.rho * (s - u) / (s - sM)
    denominator = W.rho * (s - u) * (s - sM) - bn * bn
    scale = W.rho * (s - u) * (s - u) + bn * bn
    vel = W.vel
    B = W.B
    if ti.abs(denominator) > 1e-8 * scale:
        inv = 1.0 / denominator
        vel = W.vel - bn * W.B * (sM - u) * inv
        B = W.B * (W.rho * (s - u) * (s - u) - bn * bn) * inv
    vel = ti.Vector([sM, vel[1], vel[2]])
    B = ti.Vector([bn, B[1], B[2]])
    return rho, vel, B


@ti.func
def _pack(rho, vel, E, B, psi):
    """The conserved state (rho, rho v, E, B, psi) as one flat vector, in the layout's order."""
    return ti.Vector([rho, rho * vel[0], rho * vel[1], rho * vel[2], E, B[0], B[1], B[2], psi])


@ti.func
def _flat(U):
    return ti.Vector([U.rho, U.mom[0], U.mom[1], U.mom[2], U.E, U.B[0], U.B[1], U.B[2], U.psi])


# --- derived fields and the reductions of diagnostics.csv -----------------------------------

@model.derive("magnetic_field")
def magnetic_field(W):
    return W.B.norm()


@model.derive("beta")
def plasma_beta(W):
    """Gas over magnetic pressure, 2 p / |B|^2."""
    return 2.0 * W.p / ti.max(W.B.dot(W.B), 1e-300)


@model.derive("mach", reduce=("max", "rms"))
def sonic_mach(W, gamma):
    return W.vel.norm() / ti.sqrt(gamma * W.p / W.rho)


@model.derive("alfven_mach")
def alfven_mach(W):
    return W.vel.norm() * ti.sqrt(W.rho) / ti.max(W.B.norm(), 1e-300)


@model.derive("kinetic_energy", reduce="sum")
def kinetic_energy(W):
    return 0.5 * W.rho * W.vel.dot(W.vel)


@model.derive("magnetic_energy", reduce="sum")
def magnetic_energy(W):
    return 0.5 * W.B.dot(W.B)


@model.derive("div_B", reduce=("max", "rms"), gradients=True)
def normalised_div_b(W, grad, h):
    """|div B| h / |B|: the centred divergence in units of the field over a cell."""
    div = grad.B[0, 0] + grad.B[1, 1] + grad.B[2, 2]
    return ti.abs(div) * h / ti.max(W.B.norm(), 1e-300)


@model.derive("current", gradients=True)
def current_density(W, grad, h):
    """|curl B| (Heaviside-Lorentz: the current density)."""
    curl = ti.Vector([grad.B[2, 1] - grad.B[1, 2], grad.B[0, 2] - grad.B[2, 0], grad.B[1, 0] - grad.B[0, 1]])
    return curl.norm()


# --- set-up: eigenmodes for linear-wave initial states (plain Python) ---------------------

@model.linear_waves
def linear_waves(state, params):
    """Right eigenvectors of the primitive system along the wave normal x (Roe & Balsara 1996
    with Athena++'s normalisation, Stone et al. 2008 eq. B21: dW/dU of its conserved vectors),
    for `state` in the wave frame: {name: (perturbation of W, speed)}; "fast", "alfven",
    "slow" move right (+), "fast_left" ... left, "entropy" with the flow. Degenerate states as
    Athena++: B_t = 0 -> beta = (1, 0); alpha_f = 1 where c_f = c_s or c_f <= a."""
    gamma = params["gamma"]
    rho, vx, p = state["rho"], state["vel"][0], state["p"]
    bx, by, bz = state["B"]
    a2 = gamma * p / rho
    ca2, ct2 = bx * bx / rho, (by * by + bz * bz) / rho
    gap = ca2 + ct2 - a2
    cf2 = 0.5 * (a2 + ca2 + ct2 + math.sqrt(gap * gap + 4.0 * a2 * ct2))
    cs2 = a2 * ca2 / cf2
    cf, ca, cs, a = math.sqrt(cf2), math.sqrt(ca2), math.sqrt(cs2), math.sqrt(a2)
    bt = math.hypot(by, bz)
    beta_y, beta_z = (1.0, 0.0) if bt == 0.0 else (by / bt, bz / bt)
    alpha_f, alpha_s = 1.0, 0.0
    tiny = 1e-12 * cf2  # (round-off in c_f^2 - a^2 would give alphas of sqrt(1e-16))
    if cf2 - cs2 > tiny and a2 - cs2 <= tiny:
        alpha_f, alpha_s = 0.0, 1.0
    elif cf2 - cs2 > tiny and cf2 - a2 > tiny:
        alpha_f, alpha_s = math.sqrt((a2 - cs2) / (cf2 - cs2)), math.sqrt((cf2 - a2) / (cf2 - cs2))
    sign = -1.0 if bx < 0.0 else 1.0
    root = math.sqrt(rho)

    def mode(d_rho, d_vel, d_p, d_b):
        return {"rho": d_rho, "vel": list(d_vel), "p": d_p, "B": [0.0, *d_b], "psi": 0.0}

    waves = {}
    for suffix, s in (("", 1.0), ("_left", -1.0)):
        waves["fast" + suffix] = (mode(alpha_f, [s * alpha_f * cf / rho, -s * alpha_s * cs * sign * beta_y / rho,
                                                  -s * alpha_s * cs * sign * beta_z / rho], alpha_f * a2,
                                       [a * alpha_s * beta_y / root, a * alpha_s * beta_z / root]), vx + s * cf)
        waves["slow" + suffix] = (mode(alpha_s, [s * alpha_s * cs / rho, s * alpha_f * cf * sign * beta_y / rho,
                                                  s * alpha_f * cf * sign * beta_z / rho], alpha_s * a2,
                                       [-a * alpha_f * beta_y / root, -a * alpha_f * beta_z / root]), vx + s * cs)
        waves["alfven" + suffix] = (mode(0.0, [0.0, s * beta_z / rho, -s * beta_y / rho], 0.0,
                                         [-sign * beta_z / root, sign * beta_y / root]), vx + s * ca)
    waves["entropy"] = (mode(1.0, [0.0, 0.0, 0.0], 0.0, [0.0, 0.0]), vx)
    return waves
