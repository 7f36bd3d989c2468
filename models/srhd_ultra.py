"""Special-relativistic hydrodynamics of an ultra-relativistic fluid, p = e/3 (docs/physics.md
1.4), c = 1: the equation of state of heavy-ion collision models (Rischke, Bernard & Maruhn
1995; Gerhard, Lindenstruth & Bleicher 2013, seed 002), with a conserved charge carried along.

Laboratory frame: R = n W (the charge), M = (e + p) W^2 v, E = (e + p) W^2 - p, with e and n
the energy and charge densities in the fluid's rest frame and W = 1 / sqrt(1 - |v|^2).
Primitives (n, vel, e). With p = e/3 the recovery is closed-form: e = -E + sqrt(4 E^2 - 3 |M|^2)
(physical where |M| < E), v = M / (E + e/3), n = R / W; the Lorentz factor is capped at
lorentz_max. The sound speed is 1/sqrt(3) everywhere. As in models/srhd.py the reconstruction
works on the four-velocity W v.
"""
import taichi as ti

from taichiflow import Model
from taichiflow.relativity import extreme_speeds, four_velocity, lorentz, velocity_of

model = Model(
    "srhd_ultra",
    conserved={"R": 1, "mom": 3, "E": 1},
    primitive={"n": 1, "vel": 3, "e": 1},
    params={"lorentz_max": 1.0e3},
    ranges={"lorentz_max": "> 1"},
    velocity="vel",
    positive=("e",),
    sample={"n": 1.0, "vel": [0.3, -0.2, 0.1], "e": 2.0},
    description="Special-relativistic hydrodynamics, ultra-relativistic p = e/3, with a conserved charge",
    exact_wave_speeds=True,
)

SOUND2 = 1.0 / 3.0  # c_s^2 of p = e/3


@model.to_conserved
def to_conserved(W):
    w = lorentz(W.vel)
    enthalpy = 4.0 / 3.0 * W.e  # e + p
    return model.U(R=W.n * w, mom=enthalpy * w * w * W.vel, E=enthalpy * w * w - W.e / 3.0)


@model.to_primitive
def to_primitive(U, lorentz_max):
    M2 = U.mom.dot(U.mom)
    e = -U.E + ti.sqrt(ti.max(4.0 * U.E * U.E - 3.0 * M2, 0.0))
    vel = U.mom / (U.E + e / 3.0)
    v_max2 = 1.0 - 1.0 / (lorentz_max * lorentz_max)
    v2 = vel.dot(vel)
    if v2 > v_max2:  # the Lorentz factor's ceiling (and no 0/0 where E = |M| = 0)
        vel *= ti.sqrt(v_max2 / v2)
    return model.W(n=U.R * ti.sqrt(1.0 - vel.dot(vel)), vel=vel, e=e)


@model.flux
def flux(W, U):
    vn = W.vel[0]
    return model.U(R=U.R * vn, mom=U.mom * vn + W.e / 3.0 * model.ex, E=U.mom[0])


@model.wave_speeds
def wave_speeds(W):
    """The extreme characteristic speeds along x with c_s^2 = 1/3."""
    return extreme_speeds(W.vel, SOUND2)


@model.admissible
def admissible(W):
    """|vel| < 1 (slower than light) and n >= 0."""
    return (W.vel.dot(W.vel) < 1.0) & (W.n >= 0.0)


@model.to_reconstructed
def to_four_velocity(W):
    return model.W(n=W.n, vel=four_velocity(W.vel), e=W.e)


@model.from_reconstructed
def from_four_velocity(V):
    return model.W(n=V.n, vel=velocity_of(V.vel), e=V.e)


@model.derive("p")
def pressure(W):
    return W.e / 3.0


@model.derive("lorentz_factor", reduce="max")
def lorentz_factor(W):
    return lorentz(W.vel)
