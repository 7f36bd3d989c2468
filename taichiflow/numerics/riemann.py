"""Approximate Riemann solvers: numerical flux from left/right states in the normal frame.

Each factory takes a `Physics` and returns a Taichi function (wL, wR) -> flux. Signal
speeds are Davis estimates min/max of the left and right model speeds.
"""
from __future__ import annotations

import taichi as ti


def _davis_speeds(phys, wL, wR):
    minL, maxL = phys.signal_speeds(wL)
    minR, maxR = phys.signal_speeds(wR)
    return ti.min(minL, minR), ti.max(maxL, maxR)


def make_rusanov(phys):
    @ti.func
    def rusanov(wL, wR):
        uL, fL = phys.state_and_flux(wL)
        uR, fR = phys.state_and_flux(wR)
        minL, maxL = phys.signal_speeds(wL)
        minR, maxR = phys.signal_speeds(wR)
        s = ti.max(ti.abs(minL), ti.abs(maxL), ti.abs(minR), ti.abs(maxR))
        return 0.5 * (fL + fR) - 0.5 * s * (uR - uL)

    return rusanov


@ti.func
def _hll_flux(uL, fL, uR, fR, sL, sR):
    # Clipping the speeds at zero makes one formula cover the supersonic cases too.
    sLm = ti.min(sL, 0.0)
    sRp = ti.max(sR, 0.0)
    return (sRp * fL - sLm * fR + sLm * sRp * (uR - uL)) / (sRp - sLm)


def make_hll(phys):
    @ti.func
    def hll(wL, wR):
        uL, fL = phys.state_and_flux(wL)
        uR, fR = phys.state_and_flux(wR)
        sL, sR = _davis_speeds(phys, wL, wR)
        return _hll_flux(uL, fL, uR, fR, sL, sR)

    return hll


def make_hllc(phys):
    @ti.func
    def hllc(wL, wR):
        uL, fL = phys.state_and_flux(wL)
        uR, fR = phys.state_and_flux(wR)
        sL, sR = _davis_speeds(phys, wL, wR)
        rhoL, rhoR = phys.density(wL), phys.density(wR)
        unL, unR = phys.normal_velocity(wL), phys.normal_velocity(wR)
        # Contact speed of Batten et al. (1997).
        s_star = (phys.pressure(wR) - phys.pressure(wL) + rhoL * unL * (sL - unL) - rhoR * unR * (sR - unR)) / (
            rhoL * (sL - unL) - rhoR * (sR - unR))
        flux = fL
        if sR <= 0.0:
            flux = fR
        elif s_star <= 0.0:
            flux = fR + sR * (phys.star_state(wR, uR, sR, s_star) - uR)
        elif sL < 0.0:
            flux = fL + sL * (phys.star_state(wL, uL, sL, s_star) - uL)
        return flux

    return hllc


RIEMANN_SOLVERS = {"rusanov": make_rusanov, "hll": make_hll, "hllc": make_hllc}
