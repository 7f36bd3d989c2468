"""A parameter study: the L1 error of Sod's shock tube in density against the number of cells.

One Case, changed with `with_` for each grid; each Simulation runs to t = 0.2 and its density
is compared with the exact solution (an exact Riemann solver for the ideal gas, below).
Across a shock and a contact the error falls about as 1/N (first order), whatever the scheme.

    python examples/sod_convergence.py
"""
import math
from pathlib import Path

import numpy as np

import taichiflow as tf

CASES = Path(__file__).resolve().parent.parent / "cases"
GAMMA = 1.4


def exact_density(x, t, left=(1.0, 0.0, 1.0), right=(0.125, 0.0, 0.1), x0=0.5, g=GAMMA):
    """The density of the exact solution of a Riemann problem of the ideal gas (Toro, ch. 4)."""
    (rl, ul, pl), (rr, ur, pr) = left, right
    cl, cr = math.sqrt(g * pl / rl), math.sqrt(g * pr / rr)

    def f(p, r, pk, ck):  # the velocity jump across the wave of one side, and which wave
        if p > pk:  # shock
            a, b = 2 / ((g + 1) * r), (g - 1) / (g + 1) * pk
            return (p - pk) * math.sqrt(a / (p + b))
        return 2 * ck / (g - 1) * ((p / pk) ** ((g - 1) / (2 * g)) - 1)  # rarefaction

    lo, hi = 1e-10, 10 * max(pl, pr)
    for _ in range(200):  # bisection on the star pressure
        p = 0.5 * (lo + hi)
        lo, hi = (p, hi) if f(p, rl, pl, cl) + f(p, rr, pr, cr) + ur - ul < 0 else (lo, p)
    u = 0.5 * (ul + ur) + 0.5 * (f(p, rr, pr, cr) - f(p, rl, pl, cl))
    return np.array([_sample((xi - x0) / t, p, u, left, right, cl, cr, g) for xi in x])


def _sample(s, p, u, left, right, cl, cr, g):
    """The density at x/t = s: left of the contact the left wave, right of it the right one."""
    sign = 1.0 if s <= u else -1.0
    r, uk, pk = left if s <= u else right
    ck, s, uk, u = (cl if sign > 0 else cr), sign * s, sign * uk, sign * u  # (the right side mirrored)
    if p > pk:  # shock
        speed = uk - ck * math.sqrt((g + 1) / (2 * g) * p / pk + (g - 1) / (2 * g))
        star = r * (p / pk + (g - 1) / (g + 1)) / ((g - 1) / (g + 1) * p / pk + 1)
        return r if s < speed else star
    c_star = ck * (p / pk) ** ((g - 1) / (2 * g))
    if s < uk - ck:
        return r
    if s > u - c_star:
        return r * (p / pk) ** (1 / g)
    return r * (2 / (g + 1) + (g - 1) / ((g + 1) * ck) * (uk - s)) ** (2 / (g - 1))  # inside the fan


def main(sizes=(32, 64, 128, 256)):
    sod = tf.Case.from_file(CASES / "sod.toml", {"run.arch": "cpu", "output.interval": 0.0})
    print(f"{'cells':>6} {'L1 error':>10} {'order':>6}")
    errors = []
    for n in sizes:
        sim = tf.Simulation(sod.with_(grid={"cells": [n]}))
        sim.run()
        x = sim.coordinates()[0]
        errors.append(float(np.sum(np.abs(sim.primitive["rho"] - exact_density(x, sim.t))) * sim.dx[0]))
        order = math.log2(errors[-2] / errors[-1]) if len(errors) > 1 else float("nan")
        print(f"{n:>6} {errors[-1]:>10.3e} {order:>6.2f}")
    assert all(a > b for a, b in zip(errors, errors[1:])), "the error must fall as the grid is refined"
    return errors


if __name__ == "__main__":
    main()
