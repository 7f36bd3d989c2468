"""Two-phase compressible flow: the 5-equation stiffened-gas model of CUBISM-MPCF.

Diffuse interface with pressure and velocity equilibrium (docs/physics.md section 1.2). Each
material is a stiffened gas p = (gamma - 1) rho e - gamma pc; the mixture carries
Gamma = 1/(gamma - 1) and Pi = gamma pc/(gamma - 1), advected with the flow (the framework
adds Gamma div(u), Pi div(u) from the Riemann solver's face velocities, so an interface in
uniform p and u stays uniform). Closure: Gamma p + Pi = E - rho |u|^2 / 2.
The model has no units of its own: the shipped cases use mm, microseconds, g/cm^3 and GPa,
which keep f32 well conditioned (water: rho = 1, p = 1e-4 at 1 bar, pc = 0.4069).
"""
import math

import taichi as ti

from taichiflow import Model

model = Model(
    "two_phase",
    conserved={"rho": 1, "mom": 3, "E": 1, "Gamma": 1, "Pi": 1},
    primitive={"rho": 1, "vel": 3, "p": 1, "Gamma": 1, "Pi": 1},
    # The two materials whose Gamma, Pi values bound the mixture (gas volume fraction alpha);
    # p_floor: the least p + pc a cell may reach (the shipped cases' units: GPa, i.e. 1 kPa);
    # tension_alpha: the gas fraction above which a cell holds no tension (repair(); 1: off);
    # vacuum_density: the least density of a cell; an emptier one becomes still matter of this
    # density at the pressure floor (repair(); 0: off).
    params={"gamma_liquid": 6.59, "pc_liquid": 0.4069, "gamma_gas": 1.4, "pc_gas": 0.0, "p_floor": 1.0e-6,
            "tension_alpha": 1.0, "vacuum_density": 0.0},
    ranges={"gamma_liquid": "> 1", "gamma_gas": "> 1", "pc_liquid": ">= 0", "pc_gas": ">= 0", "p_floor": ">= 0",
            "vacuum_density": ">= 0"},
    velocity="vel", density="rho", pressure="p",
    positive=("rho", "Gamma"),
    advected=("Gamma", "Pi"),
    sample={"rho": 1.0, "p": 1.0, "Gamma": 2.5, "Pi": 0.0},
    description="Two-phase 5-equation model, stiffened gases (CUBISM-MPCF)",
)


@model.to_primitive
def to_primitive(U):
    vel = U.mom * (1.0 / U.rho)  # one division, not three (in f64 each is a Newton sequence on a GPU)
    p = (U.E - 0.5 * U.rho * vel.dot(vel) - U.Pi) / U.Gamma
    return model.W(rho=U.rho, vel=vel, p=p, Gamma=U.Gamma, Pi=U.Pi)


@model.to_conserved
def to_conserved(W):
    return model.U(rho=W.rho, mom=W.rho * W.vel, E=W.Gamma * W.p + W.Pi + 0.5 * W.rho * W.vel.dot(W.vel),
                   Gamma=W.Gamma, Pi=W.Pi)


@model.flux
def flux(W, U):
    un = W.vel[0]
    return model.U(rho=U.rho * un, mom=U.mom * un + W.p * model.ex, E=(U.E + W.p) * un,
                   Gamma=U.Gamma * un, Pi=U.Pi * un)


@ti.func
def sound_speed_squared(W):
    """gamma (p + pc) / rho with gamma = 1 + 1/Gamma and pc = Pi / (Gamma + 1)."""
    return ((W.Gamma + 1.0) * W.p + W.Pi) / (W.Gamma * W.rho)


@model.sound_speed
def sound_speed(W):
    return ti.sqrt(sound_speed_squared(W))


@model.roe_speeds
def roe_speeds(WL, WR):
    """Einfeldt's estimate: square-root-density averages of u and c^2 plus his jump term."""
    wl, wr = ti.sqrt(WL.rho), ti.sqrt(WR.rho)
    u = (wl * WL.vel[0] + wr * WR.vel[0]) / (wl + wr)
    c2 = ((wl * sound_speed_squared(WL) + wr * sound_speed_squared(WR)) / (wl + wr)
          + 0.5 * wl * wr / (wl + wr) ** 2 * (WR.vel[0] - WL.vel[0]) ** 2)
    c = ti.sqrt(c2)
    return ti.Vector([u - c, u + c])


@model.hllc_star
def hllc_star(W, U, s, s_star):
    un = W.vel[0]
    r = 1.0 / ((s - un) * (s - s_star))  # both quotients below from one division
    chi = (s - un) ** 2 * r              # (s - un) / (s - s_star)
    return model.U(rho=chi * U.rho, mom=chi * U.rho * ti.Vector([s_star, W.vel[1], W.vel[2]]),
                   E=chi * (U.E + (s_star - un) * (U.rho * s_star + W.p * (s - s_star) * r)),
                   Gamma=chi * U.Gamma, Pi=chi * U.Pi)


@ti.func
def gas_fraction(W, gamma_liquid, gamma_gas):
    g_liquid, g_gas = 1.0 / (gamma_liquid - 1.0), 1.0 / (gamma_gas - 1.0)
    return (W.Gamma - g_liquid) / (g_gas - g_liquid)


@model.refinement
def refinement(W, gamma_liquid, gamma_gas):
    """The interface asks for the finest blocks ([amr]): 4 alpha (1 - alpha) is 1 at its middle
    and falls to 0 in either pure phase (0.2, FLASH's merge threshold, at 5% of either)."""
    alpha = ti.min(ti.max(gas_fraction(W, gamma_liquid, gamma_gas), 0.0), 1.0)
    return 4.0 * alpha * (1.0 - alpha)


@ti.func
def _in_bounds(W, gamma_liquid, gamma_gas, p_floor):
    """c^2 > 0 with a margin (p + pc above half the floor) and the volume fraction in [0, 1],
    within 5% for the overshoots of high-order schemes at interfaces and symmetry corners."""
    alpha = gas_fraction(W, gamma_liquid, gamma_gas)
    return ((W.Gamma + 1.0) * W.p + W.Pi > 0.5 * p_floor * (W.Gamma + 1.0)) & (alpha > -0.05) & (alpha < 1.05)


@model.admissible
def admissible(W, gamma_liquid, gamma_gas, p_floor, tension_alpha: ti.template(), vacuum_density: ti.template()):
    """In bounds; with tension_alpha < 1 also no tension (p < 0) in a cell holding gas (alpha
    above it); with vacuum_density > 0 also at least that density. See repair(). (Templates:
    each value compiles its own kernels; tension_alpha = 1 and vacuum_density = 0 add nothing.)"""
    if ti.static(vacuum_density > 0.0):
        return _no_tension(W, gamma_liquid, gamma_gas, p_floor, tension_alpha) & (W.rho >= vacuum_density)
    return _no_tension(W, gamma_liquid, gamma_gas, p_floor, tension_alpha)


@ti.func
def _no_tension(W, gamma_liquid, gamma_gas, p_floor, tension_alpha: ti.template()):
    """In bounds, and with tension_alpha < 1 not in tension where the cell holds gas."""
    if ti.static(tension_alpha < 1.0):
        return (_in_bounds(W, gamma_liquid, gamma_gas, p_floor)
                & ((W.p >= 0.0) | (gas_fraction(W, gamma_liquid, gamma_gas) <= tension_alpha)))
    return _in_bounds(W, gamma_liquid, gamma_gas, p_floor)


@model.repair
def repair(U, W, gamma_liquid, pc_liquid, gamma_gas, pc_gas, p_floor, tension_alpha: ti.template(),
           vacuum_density: ti.template()):
    """Floors for cells the scheme pushed out of the model (counted as `repairs`): Gamma and
    Pi clipped to the two materials' values (alpha in [0, 1]); with tension_alpha < 1, a cell
    holding gas (alpha above it) in tension takes more gas (_gas_taking_up_tension); then
    p + pc >= p_floor by raising E: a gas-rich mixture in a violent rebound would otherwise
    reach the tension -pc that its small liquid fraction allows, where c^2 -> 0. Mass and
    momentum are kept, except in a cell emptier than vacuum_density (_vacuum)."""
    gamma_l, gamma_g = 1.0 / (gamma_liquid - 1.0), 1.0 / (gamma_gas - 1.0)
    pi_l, pi_g = gamma_liquid * pc_liquid / (gamma_liquid - 1.0), gamma_gas * pc_gas / (gamma_gas - 1.0)
    Gamma = ti.min(ti.max(U.Gamma, ti.min(gamma_l, gamma_g)), ti.max(gamma_l, gamma_g))
    Pi = ti.min(ti.max(U.Pi, ti.min(pi_l, pi_g)), ti.max(pi_l, pi_g))
    if ti.static(tension_alpha < 1.0):
        Gamma, Pi = _gas_taking_up_tension(U, Gamma, Pi, gamma_l, gamma_g, pi_l, pi_g, p_floor, tension_alpha)
    kinetic = 0.5 * U.mom.dot(U.mom) / U.rho
    p = ti.max((U.E - kinetic - Pi) / Gamma, p_floor - Pi / (Gamma + 1.0))
    rho, mom = U.rho, U.mom
    if ti.static(vacuum_density > 0.0):
        rho, mom, kinetic, p = _vacuum(U, p, Pi, Gamma, kinetic, p_floor, vacuum_density)
    return model.U(rho=rho, mom=mom, E=Gamma * p + Pi + kinetic, Gamma=Gamma, Pi=Pi)


@ti.func
def _vacuum(U, p, Pi, Gamma, kinetic, p_floor, vacuum_density):
    """(rho, rho u, kinetic energy, p) of a cell: where 0 < rho < vacuum_density, still
    matter of that density at the pressure floor (an atmosphere, as astrophysical codes keep
    one): p + pc = p_floor, or p = 0 where pc is larger (a mixture holding gas takes no
    tension). Why: a gas pocket the flow has emptied keeps a positive density under the
    density limiter, but the pressure of its faces pushes momentum into it whatever its mass,
    and its velocity and sound speed (c^2 = gamma p_floor / rho) grow until the time step
    collapses (docs/bubble_collapse.md). A cell with rho <= 0 stays bad (the step is retried)."""
    rho, mom = U.rho, U.mom
    if (U.rho > 0.0) & (U.rho < vacuum_density):
        floor = ti.max(p_floor - Pi / (Gamma + 1.0), 0.0)
        rho, mom, kinetic, p = vacuum_density, ti.Vector([0.0, 0.0, 0.0]), 0.0, floor
    return rho, mom, kinetic, p


@ti.func
def _gas_taking_up_tension(U, Gamma, Pi, gamma_l, gamma_g, pi_l, pi_g, p_floor, tension_alpha):
    """(Gamma, Pi) of a cell holding gas (alpha > tension_alpha) whose pressure is below
    p_floor: the gas fraction that gives p = p_floor at the same rho, rho u and E (Gamma and Pi
    are linear in alpha), at most 1. Why: the Gamma-Pi mixture has no K div(u) term (Kapila et
    al. 2001) through which the gas of a mixture cell takes up an expansion, so an opening
    interface pulls its mixture cells into the liquid's tension, and they pull the gas out of
    the cells beside them until a density is negative (docs/bubble_collapse.md)."""
    internal = U.E - 0.5 * U.mom.dot(U.mom) / U.rho
    alpha = (Gamma - gamma_l) / (gamma_g - gamma_l)
    if alpha > tension_alpha and internal - Pi < p_floor * Gamma:
        grown = (p_floor * gamma_l + pi_l - internal) / ((pi_l - pi_g) - p_floor * (gamma_g - gamma_l))
        alpha = ti.min(ti.max(grown, alpha), 1.0)
        Gamma, Pi = gamma_l + alpha * (gamma_g - gamma_l), pi_l + alpha * (pi_g - pi_l)
    return Gamma, Pi


@model.derive("alpha", reduce="sum")       # gas volume fraction; its sum is the gas volume
def alpha(W, gamma_liquid, gamma_gas):
    return ti.min(ti.max(gas_fraction(W, gamma_liquid, gamma_gas), 0.0), 1.0)


@model.derive("mach", reduce="max")
def mach(W):
    return W.vel.norm() / ti.sqrt(sound_speed_squared(W))


@model.derive("kinetic_energy", reduce="sum")
def kinetic_energy(W):
    return 0.5 * W.rho * W.vel.dot(W.vel)


@model.material
def material(gamma, pc, params):
    return {"Gamma": 1.0 / (gamma - 1.0), "Pi": gamma * pc / (gamma - 1.0)}


@model.shock_state
def shock_state(pre, p_post, direction, params):
    """Rankine-Hugoniot for a stiffened gas: the state behind a shock of pressure p_post
    running along `direction` (unit vector) into the state `pre`."""
    gamma = 1.0 + 1.0 / pre["Gamma"]
    pc = pre["Pi"] / (pre["Gamma"] + 1.0)
    ratio = (p_post + pc) / (pre["p"] + pc)
    k = (gamma - 1.0) / (gamma + 1.0)
    rho = pre["rho"] * (ratio + k) / (k * ratio + 1.0)
    mass_flux = math.sqrt((p_post - pre["p"]) / (1.0 / pre["rho"] - 1.0 / rho))
    jump = (p_post - pre["p"]) / mass_flux
    vel = [v + jump * n for v, n in zip(pre["vel"], direction)]
    return {**pre, "rho": rho, "vel": vel, "p": p_post}
