"""Special-relativistic hydrodynamics of an ideal gas (docs/physics.md 1.4), c = 1.

Laboratory-frame conserved variables (Marti & Mueller 2003): D = rho W, S = rho h W^2 v,
tau = rho h W^2 - p - D (the energy less the rest mass, which keeps its digits where the flow
is slow), with W = 1 / sqrt(1 - |v|^2) the Lorentz factor and h = 1 + gamma/(gamma - 1) p / rho
the specific enthalpy. Primitives (rho, vel, p).

Primitive recovery: the pressure is the root of f(p) = (gamma - 1)/gamma ((E + p)/W^2 - D/W) - p
with v = S / (E + p), E = tau + D. Newton's iteration, with f'(p) = (|v|^2 c_s^2 - 1) / gamma (Marti
& Mueller's derivative of gamma f), starts at the pressure the state would have with E + p = E,
and never steps below halfway to the pressure at which |v| would reach 1. It converges
quadratically: 3.5 to 4.5 steps on average in f32 and in f64 over random states with W up to
20 and p/rho from 1e-4 to 1e2 (with a step of 1/gamma of Newton's it
converged linearly: 20 to 45 steps, and f64's rate was 9.2x below f32's, until 2026-11-27). It stops once a step
is below sqrt(u) p (u the rounding unit of the precision: the new p's error is then about u),
when a step within 4096 u (E + p) no longer shrinks (a cold gas whose pressure is below the
rounding of E: f is noise there), or after 60 steps. One division and one root a step. In f64
kernels the start is the pressure iterated to f32's rounding in f32 (its divisions and roots
cost a fraction of f64's on a GPU), and one f64 Newton step and one chord step (the first
step's derivative again: no division) finish it (H200, seed 000's scheme at 128^3: f64 8%,
then 3% faster, docs/performance.md). A U that no fluid has
(E^2 <= |S|^2 + D^2, or D <= 0: every ideal gas with gamma <= 2 has E^2 > |S|^2 + D^2) comes
out with p = -1 (to a margin of 1e-6 of E^2 - D^2, the rounding of a cold gas in f32), which the
framework's admissibility check catches (face fallback, FORCE's
Lax-Friedrichs fallback, retry, or a stop naming the cell). The Lorentz factor of a physical
state is capped at lorentz_max (a case parameter): |v| never reaches 1.

The reconstruction works on the spatial part of the four-velocity, W v, not on v: limited
slopes of v can give a face state with |v| > 1, those of W v cannot (W v maps back to
v = u / sqrt(1 + |u|^2) for any u).
"""
import math

import taichi as ti

from taichiflow import Model
from taichiflow.precision import unit_roundoff
from taichiflow.relativity import extreme_speeds, four_velocity, lorentz, velocity_of

model = Model(
    "srhd",
    conserved={"D": 1, "mom": 3, "tau": 1},
    primitive={"rho": 1, "vel": 3, "p": 1},
    params={"gamma": 5.0 / 3.0, "lorentz_max": 1.0e3},
    ranges={"gamma": ("> 1", "<= 2"), "lorentz_max": "> 1"},  # (the recovery assumes gamma <= 2)
    velocity="vel", density="rho", pressure="p",
    positive=("rho", "p"),
    sample={"rho": 1.0, "vel": [0.3, -0.2, 0.1], "p": 0.6},
    description="Special-relativistic hydrodynamics, ideal gas, c = 1",
    exact_wave_speeds=True,
)


@ti.func
def sound_speed_squared(rho, p, gamma):
    """c_s^2 = gamma p / (rho h)."""
    return gamma * p / (rho + gamma / (gamma - 1.0) * p)


@model.to_conserved
def to_conserved(W, gamma):
    w = lorentz(W.vel)
    v2 = W.vel.dot(W.vel)
    D = W.rho * w
    enthalpy_density = W.rho + gamma / (gamma - 1.0) * W.p  # rho h
    # tau = rho h W^2 - p - D, written without the cancellation of rho W^2 against rho W
    tau = gamma / (gamma - 1.0) * W.p * w * w - W.p + D * v2 * w * w / (w + 1.0)
    return model.U(D=D, mom=enthalpy_density * w * w * W.vel, tau=tau)


@ti.func
def _newton_step(D, S, E, p, p_least, gamma, one, half, tiny):
    """newton_step with its constants as arguments, in the precision the iteration runs in (an
    f64 literal beside f32 values would turn the arithmetic back into f64)."""
    z = E + p
    r2 = ti.max(z * z - S * S, tiny * z * z)
    r = ti.sqrt(r2)
    z_p_bar = (gamma - one) / gamma * (r2 - D * r)
    z_rho_h = D * r + gamma / (gamma - one) * p * z
    new_p = p + gamma * (z_p_bar - p * z) * z_rho_h / (z_rho_h * z - S * S * gamma * p)
    return ti.max(new_p, half * (p + p_least))


@ti.func
def _start_pressure(D, S, E, p_least, gamma, one, tiny):
    """start_pressure with its constants as arguments (as _newton_step)."""
    r2 = ti.max(E * E - S * S, tiny * E * E)
    r = ti.sqrt(r2)
    return ti.max((gamma - one) / gamma * (r2 - D * r) / E, p_least)


@ti.func
def newton_step(D, S, E, p, p_least, gamma):
    """One step of the pressure's Newton iteration from p: p - f / f' with f = p_bar - p and
    f' = (v^2 c_s^2 - 1) / gamma, where p_bar = (gamma - 1)/gamma (rho h - rho) is the pressure
    the conserved state implies for a trial p (c_s^2 = gamma p / (rho h), v^2 = S^2 / z^2,
    rho h = r^2 / z, rho = D r / z with z = E + p, r = sqrt(z^2 - S^2)), all multiplied
    through by z^2: one division and one root. Never below halfway to p_least."""
    return _newton_step(D, S, E, p, p_least, gamma, 1.0, 0.5, 1e-30)


@ti.func
def start_pressure(D, S, E, p_least, gamma):
    """The pressure the state would have with E + p = E: (gamma - 1)/gamma (E/W^2 - D/W) at
    v = S / E (not below p_least)."""
    return _start_pressure(D, S, E, p_least, gamma, 1.0, 1e-30)


@ti.func
def _pressure_in_f32(D, S, E, p_least, gamma):
    """The pressure to f32's rounding, iterated in f32 (an f64 recovery's start: f32's divisions
    and roots cost a fraction of f64's on a GPU, and Newton from there needs two f64 steps
    instead of four or five); a state f32 cannot hold (out of its range) comes out non-finite
    or below p_least, and the caller starts from its own start_pressure then."""
    d, s, e = ti.cast(D, ti.f32), ti.cast(S, ti.f32), ti.cast(E, ti.f32)
    least, g = ti.cast(p_least, ti.f32), ti.cast(gamma, ti.f32)
    one, half, tiny = ti.cast(1.0, ti.f32), ti.cast(0.5, ti.f32), ti.cast(1e-30, ti.f32)
    p = _start_pressure(d, s, e, least, g, one, tiny)
    step = e + p
    iteration = 0
    while iteration < 30:
        iteration += 1
        new_p = _newton_step(d, s, e, p, least, g, one, half, tiny)
        new_step = ti.abs(new_p - p)
        if new_step >= step:
            break  # f32's rounding (or a cold gas whose p is below it: f64 goes on from here)
        p, step = new_p, new_step
        if step <= ti.cast(2.0 ** -12, ti.f32) * p:
            break  # the new p's error is about f32's rounding unit
    return p


@ti.func
def _finish_from_f32(D, S, E, p, p_least, gamma):
    """(p, the last step) from a pressure at f32's rounding (relative error e about 1e-7): one
    Newton step, then one with the first step's derivative (the chord): its error is about
    e^2 * e, below f64's rounding, for one root and no division (two Newton steps: two roots
    and two divisions). A last step above 2^-40 p (a start f32 could not resolve: a cold gas)
    leaves the caller's Newton loop to go on from here."""
    z = E + p
    r2 = ti.max(z * z - S * S, 1e-30 * z * z)
    r = ti.sqrt(r2)
    z_rho_h = D * r + gamma / (gamma - 1.0) * p * z
    slope = gamma * z_rho_h / (z_rho_h * z - S * S * gamma * p)  # -1/f' (f multiplied by z)
    new_p = ti.max(p + ((gamma - 1.0) / gamma * (r2 - D * r) - p * z) * slope, 0.5 * (p + p_least))
    z = E + new_p
    r2 = ti.max(z * z - S * S, 1e-30 * z * z)
    r = ti.sqrt(r2)
    chord_p = ti.max(new_p + ((gamma - 1.0) / gamma * (r2 - D * r) - new_p * z) * slope, 0.5 * (new_p + p_least))
    return chord_p, ti.abs(chord_p - new_p)


@model.to_primitive
def to_primitive(U, gamma, lorentz_max):
    E = U.tau + U.D
    S = U.mom.norm()
    p_least = ti.max(S - E, 0.0)  # below it |v| = S / (E + p) would reach 1
    noise = 4096.0 * unit_roundoff()  # (of E + p) f's rounding where p is far below E (a cold gas)
    p = 0.0
    iteration = 0
    if ti.static(unit_roundoff() < 2.0 ** -30):  # f64: the start iterated to f32's rounding in f32
        p = ti.cast(_pressure_in_f32(U.D, S, E, p_least, gamma), ti.f64)
        if p >= p_least and p < 1e300:  # (NaN fails both)
            p, last_step = _finish_from_f32(U.D, S, E, p, p_least, gamma)
            if last_step <= 2.0 ** -40 * p:
                iteration = 60  # converged: the loop below is skipped
        else:
            p = start_pressure(U.D, S, E, p_least, gamma)
    else:
        p = start_pressure(U.D, S, E, p_least, gamma)
    step = E + p  # (more than any step)
    while iteration < 60:  # (a while loop: never the kernel's parallel loop)
        iteration += 1
        new_p = newton_step(U.D, S, E, p, p_least, gamma)
        new_step = ti.abs(new_p - p)
        if new_step >= step and new_step <= noise * (E + p):
            break  # rounding: the step no longer shrinks
        p, step = new_p, new_step
        if step <= unit_roundoff() ** 0.5 * p:
            break  # quadratic convergence: the new p's error is about the rounding unit
    vel = U.mom * (1.0 / (E + p))  # (one division, not one a component)
    v_max2 = 1.0 - 1.0 / (lorentz_max * lorentz_max)
    v2 = vel.dot(vel)
    if v2 > v_max2:  # the Lorentz factor's ceiling
        vel *= ti.sqrt(v_max2 / v2)
    # E^2 - |S|^2 - D^2 = tau (tau + 2 D) - |S|^2, without the rounding of tau + D (a cold gas);
    # a margin of 1e-6 of it: a cold gas moving at W = 1.5 has p within f32's rounding of it
    excess = U.tau * (U.tau + 2.0 * U.D)
    if not (excess - S * S > -1e-6 * excess and U.D > 0.0):
        p = -1.0  # no fluid has this U (gamma <= 2): inadmissible, never a state made up for it
    return model.W(rho=U.D * ti.sqrt(1.0 - vel.dot(vel)), vel=vel, p=p)


@model.flux
def flux(W, U):
    vn = W.vel[0]
    return model.U(D=U.D * vn, mom=U.mom * vn + W.p * model.ex, tau=U.mom[0] - U.D * vn)


@model.wave_speeds
def wave_speeds(W, gamma):
    return extreme_speeds(W.vel, sound_speed_squared(W.rho, W.p, gamma))


@model.admissible
def admissible(W):
    """|vel| < 1: slower than light."""
    return W.vel.dot(W.vel) < 1.0


@model.to_reconstructed
def to_four_velocity(W):
    """W v in place of v: any reconstructed value maps back to |v| < 1."""
    return model.W(rho=W.rho, vel=four_velocity(W.vel), p=W.p)


@model.from_reconstructed
def from_four_velocity(V):
    return model.W(rho=V.rho, vel=velocity_of(V.vel), p=V.p)


# --- derived fields ----------------------------------------------------------------------

@model.derive("lorentz_factor", reduce="max")
def lorentz_factor(W):
    return lorentz(W.vel)


@model.derive("energy_density")
def energy_density(W, gamma):
    """e = rho + p / (gamma - 1): the rest-frame energy density, rest mass included."""
    return W.rho + W.p / (gamma - 1.0)


# --- set-up: eigenmodes for linear-wave initial states (plain Python) ---------------------

@model.linear_waves
def linear_waves(W, params):
    """The right-going sound wave and the entropy wave of a state at rest, with unit density
    amplitude: (d rho, d v, d p) = (1, c_s / rho, c_s^2 h) for sound (de = h d rho)."""
    if any(W["vel"]):
        raise ValueError("srhd's linear waves are those of a state at rest: set vel = [0, 0, 0]")
    gamma = params["gamma"]
    rho, p = W["rho"], W["p"]
    h = 1.0 + gamma / (gamma - 1.0) * p / rho
    c = math.sqrt(gamma * p / (rho * h))
    return {"sound": ({"rho": 1.0, "vel": [c / rho, 0.0, 0.0], "p": c * c * h}, c),
            "entropy": ({"rho": 1.0}, 0.0)}
