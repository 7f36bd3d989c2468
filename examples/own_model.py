"""A model written in the script itself: the inviscid Burgers equation u_t + (u^2/2)_x = 0.

A model is Taichi code, which Taichi compiles from its source file: the case names this
file as its model (`"name": __file__`), and taichiflow imports it as a module (as it
imports models/*.py), which defines `model` and, the `__main__` guard, runs nothing else.

A sine wave steepens into a shock at t = 1/(2 pi); before that the exact solution follows
the characteristics, u(x, t) = u0(x - u t); after it the total of u is still kept (periodic).

    python examples/own_model.py
"""
import math

import numpy as np

import taichiflow as tf  # (before taichi: taichiflow keeps Taichi's start-up banner quiet)
import taichi as ti
from taichiflow import Model

model = Model("burgers", conserved={"u": 1}, primitive={"u": 1}, description="inviscid Burgers equation")


@model.to_primitive
def to_primitive(U):
    return model.W(u=U.u)


@model.to_conserved
def to_conserved(W):
    return model.U(u=W.u)


@model.flux
def flux(W, U):
    return model.U(u=0.5 * W.u * W.u)


@model.wave_speeds
def wave_speeds(W):
    return ti.Vector([W.u, W.u])


def u0(x):
    return 0.5 + np.sin(2 * np.pi * x)


def exact(x, t):
    """u0(x - u t), the characteristic through x solved by fixed-point iteration (t < 1/(2 pi))."""
    u = u0(x)
    for _ in range(100):
        u = u0(x - u * t)
    return u


def main(cells: int = 200):
    case = tf.Case.from_dict({
        "model": {"name": __file__},
        "run": {"arch": "cpu"},
        "grid": {"cells": [cells], "upper": [1.0]},
        "scheme": {"reconstruction": "weno5", "riemann": "rusanov", "cfl": 0.4},
        "time": {"end": 0.3},
        "boundary": {"x": "periodic"},
        "initial": {"background": {"u": 0.0}},
    })
    sim = tf.Simulation(case)
    x = sim.coordinates()[0]
    sim.set_state(primitive={"u": u0(x)})  # (the initial state from an array)
    total = sim.conserved["u"].sum() * sim.dx[0]
    sim.advance(to_time=0.1)
    error = float(np.abs(sim.primitive["u"] - exact(x, 0.1)).max())
    print(f"t = 0.1, before the shock: max |u - exact| = {error:.2e}")
    sim.advance(to_time=sim.end_time)
    drift = abs(sim.conserved["u"].sum() * sim.dx[0] - total)
    print(f"t = {sim.t:g}, after the shock at t = {1 / (2 * math.pi):.3f}: max u = {sim.primitive['u'].max():.3f}, "
          f"total of u kept to {drift:.1e}")
    assert error < 1e-2 and drift < 1e-12
    return error, drift


if __name__ == "__main__":
    main()
