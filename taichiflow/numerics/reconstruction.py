"""Face-state reconstructions on a stencil of primitive (or other) vectors.

Each reconstruction has a ghost width g and a function `face_states(stencil)` taking the
2g cell vectors around the face between cells i-1 and i (cells i-g .. i+g-1) and returning
the left and right states at that face. Operations are component-wise on vectors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import taichi as ti


@dataclass(frozen=True)
class Reconstruction:
    name: str
    ghost: int
    face_states: Callable


@ti.func
def _sign(x):
    return ti.select(x > 0.0, 1.0, 0.0) - ti.select(x < 0.0, 1.0, 0.0)


@ti.func
def minmod(a, b):
    return 0.5 * (_sign(a) + _sign(b)) * ti.min(ti.abs(a), ti.abs(b))


@ti.func
def monotonized_central(a, b):
    return 0.5 * (_sign(a) + _sign(b)) * ti.min(2.0 * ti.abs(a), 2.0 * ti.abs(b), 0.5 * ti.abs(a + b))


LIMITERS = {"minmod": minmod, "mc": monotonized_central}


def first_order(stencil):
    return stencil[0], stencil[1]


def make_plm(limiter):
    @ti.func
    def plm(a, b, c, d):
        left = b + 0.5 * limiter(b - a, c - b)
        right = c - 0.5 * limiter(c - b, d - c)
        return left, right

    def face_states(stencil):
        return plm(*stencil)

    return face_states


@ti.func
def weno5_js(a, b, c, d, e):
    """Jiang & Shu (1996) value at the face between c and d, biased towards c."""
    eps = 1e-6
    beta0 = 13.0 / 12.0 * (a - 2.0 * b + c) ** 2 + 0.25 * (a - 4.0 * b + 3.0 * c) ** 2
    beta1 = 13.0 / 12.0 * (b - 2.0 * c + d) ** 2 + 0.25 * (b - d) ** 2
    beta2 = 13.0 / 12.0 * (c - 2.0 * d + e) ** 2 + 0.25 * (3.0 * c - 4.0 * d + e) ** 2
    alpha0 = 0.1 / (eps + beta0) ** 2
    alpha1 = 0.6 / (eps + beta1) ** 2
    alpha2 = 0.3 / (eps + beta2) ** 2
    q0 = (2.0 * a - 7.0 * b + 11.0 * c) / 6.0
    q1 = (-b + 5.0 * c + 2.0 * d) / 6.0
    q2 = (2.0 * c + 5.0 * d - e) / 6.0
    return (alpha0 * q0 + alpha1 * q1 + alpha2 * q2) / (alpha0 + alpha1 + alpha2)


def weno5_face_states(s):
    return weno5_js(s[0], s[1], s[2], s[3], s[4]), weno5_js(s[5], s[4], s[3], s[2], s[1])


def make_reconstruction(name: str, limiter: str = "mc") -> Reconstruction:
    if name == "first_order":
        return Reconstruction(name, 1, first_order)
    if name == "plm":
        return Reconstruction(f"plm-{limiter}", 2, make_plm(LIMITERS[limiter]))
    if name == "weno5":
        return Reconstruction(name, 3, weno5_face_states)
    raise ValueError(f"unknown reconstruction '{name}'")


RECONSTRUCTIONS = ("first_order", "plm", "weno5")
