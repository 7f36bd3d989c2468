"""Special-relativistic hydrodynamics of an ideal gas (docs/physics.md 1.4), c = 1.

Laboratory-frame conserved variables (Marti & Mueller 2003): D = rho W, S = rho h W^2 v,
tau = rho h W^2 - p - D (the energy less the rest mass, which keeps its digits where the flow
is slow), with W = 1 / sqrt(1 - |v|^2) the Lorentz factor and h = 1 + gamma/(gamma - 1) p / rho
the specific enthalpy. Primitives (rho, vel, p).

Primitive recovery: the pressure is the root of f(p) = (gamma - 1)/gamma ((E + p)/W^2 - D/W) - p
with v = S / (E + p), E = tau + D. f is negative above the root and at p = (gamma - 1) E, where
Newton's iteration starts and from where it falls monotonically onto the root (the derivative
|v|^2 c_s^2 - 1 of Marti & Mueller), never below the pressure at which |v| would reach 1; it
stops once a step no longer shrinks (rounding) or after 60 steps. A U that no fluid has
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


@model.to_primitive
def to_primitive(U, gamma, lorentz_max):
    E = U.tau + U.D
    S = U.mom.norm()
    p_least = ti.max(S - E, 0.0)  # below it |v| = S / (E + p) would reach 1
    p = ti.max((gamma - 1.0) * E, p_least)
    step = ti.abs(p) + 1.0
    iteration = 0
    while iteration < 60:  # (a while loop: never the kernel's parallel loop, wherever it is called)
        iteration += 1
        # Two divisions and a root a step (in f64, without fast math, each a sequence of
        # dependent instructions on a GPU): 1/W^2 = 1 - v^2 and rho = D sqrt(1 - v^2) need no
        # division, and the Newton step f / (v^2 c_s^2 - 1) is f rho h / (v^2 gamma p - rho h).
        inverse = 1.0 / (E + p)
        v2 = (S * inverse) * (S * inverse)
        one_minus_v2 = ti.max(1.0 - v2, 1e-30)
        rho = U.D * ti.sqrt(one_minus_v2)
        f = (gamma - 1.0) / gamma * ((E + p) * one_minus_v2 - rho) - p
        rho_h = rho + gamma / (gamma - 1.0) * p
        new_p = ti.max(p + f * rho_h / (rho_h - v2 * gamma * p), 0.5 * (p + p_least))
        new_step = ti.abs(new_p - p)
        if new_step >= step and new_step <= 1e-6 * p:  # rounding: the step no longer shrinks
            break
        p, step = new_p, new_step
        if step <= 1e-15 * p:
            break
    vel = U.mom / (E + p)
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
