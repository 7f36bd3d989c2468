"""Compressible Euler equations for an ideal gas (docs/physics.md section 1.1)."""
import math

import taichi as ti

from taichiflow import Model

model = Model(
    "euler",
    conserved={"rho": 1, "mom": 3, "E": 1},
    primitive={"rho": 1, "vel": 3, "p": 1},
    params={"gamma": 1.4},
    ranges={"gamma": "> 1"},
    velocity="vel", density="rho", pressure="p",
    positive=("rho", "p"),
    description="Compressible Euler equations, ideal gas",
)


@model.to_primitive
def to_primitive(U, gamma):
    vel = U.mom * (1.0 / U.rho)  # one division, not three (in f64 each is a Newton sequence on a GPU)
    return model.W(rho=U.rho, vel=vel, p=(gamma - 1.0) * (U.E - 0.5 * U.rho * vel.dot(vel)))


@model.to_conserved
def to_conserved(W, gamma):
    return model.U(rho=W.rho, mom=W.rho * W.vel,
                   E=W.p * (1.0 / (gamma - 1.0)) + 0.5 * W.rho * W.vel.dot(W.vel))


@model.flux
def flux(W, U):
    un = W.vel[0]
    return model.U(rho=U.rho * un, mom=U.mom * un + W.p * model.ex, E=(U.E + W.p) * un)


@model.sound_speed
def sound_speed(W, gamma):
    return ti.sqrt(gamma * W.p / W.rho)


@model.hllc_star
def hllc_star(W, U, s, s_star):
    """Star state of Toro, Spruce & Speares (1994) on the side whose wave speed is s."""
    un = W.vel[0]
    r = 1.0 / ((s - un) * (s - s_star))  # both quotients below from one division
    chi = (s - un) ** 2 * r              # (s - un) / (s - s_star)
    return model.U(rho=chi * U.rho,
                   mom=chi * U.rho * ti.Vector([s_star, W.vel[1], W.vel[2]]),
                   E=chi * (U.E + (s_star - un) * (U.rho * s_star + W.p * (s - s_star) * r)))


@model.derive("mach")
def mach(W, gamma):
    return W.vel.norm() / ti.sqrt(gamma * W.p / W.rho)


@model.roe_speeds
def roe_speeds(WL, WR, gamma):
    """u_n -/+ c of Roe's average (sqrt(rho)-weighted u and H), for Einfeldt's HLL(C) speeds."""
    wl, wr = ti.sqrt(WL.rho), ti.sqrt(WR.rho)
    HL = gamma / (gamma - 1.0) * WL.p / WL.rho + 0.5 * WL.vel.dot(WL.vel)
    HR = gamma / (gamma - 1.0) * WR.p / WR.rho + 0.5 * WR.vel.dot(WR.vel)
    vel = (wl * WL.vel + wr * WR.vel) / (wl + wr)
    H = (wl * HL + wr * HR) / (wl + wr)
    c = ti.sqrt((gamma - 1.0) * (H - 0.5 * vel.dot(vel)))
    return ti.Vector([vel[0] - c, vel[0] + c])


@model.eigenvectors
def eigenvectors(W, gamma):
    """(L, R) of the primitive system along x, W = (rho, u, v, w, p), for characteristic
    reconstruction. Columns of R: u - c, entropy u, shear u (v), shear u (w), u + c;
    the acoustic rows of L are scaled to density units so L R = I."""
    c = ti.sqrt(gamma * W.p / W.rho)
    z = 0.5 * W.rho / c          # half the acoustic impedance over c^2
    c2 = c * c
    L = ti.Matrix([[0.0, -z, 0.0, 0.0, 0.5 / c2],
                   [1.0, 0.0, 0.0, 0.0, -1.0 / c2],
                   [0.0, 0.0, 1.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, 1.0, 0.0],
                   [0.0, z, 0.0, 0.0, 0.5 / c2]])
    R = ti.Matrix([[1.0, 1.0, 0.0, 0.0, 1.0],
                   [-c / W.rho, 0.0, 0.0, 0.0, c / W.rho],
                   [0.0, 0.0, 1.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, 1.0, 0.0],
                   [c2, 0.0, 0.0, 0.0, c2]])
    return L, R


@model.eigenvalues
def eigenvalues(W, gamma):
    """The speeds of the columns of eigenvectors' R: u - c, u, u, u, u + c."""
    c = ti.sqrt(gamma * W.p / W.rho)
    u = W.vel[0]
    return ti.Vector([u - c, u, u, u, u + c])


@model.jacobians
def jacobians(W, gamma):
    """(dU/dW, dW/dU) for the finite-difference method's characteristic variables."""
    u, v, w = W.vel[0], W.vel[1], W.vel[2]
    rho, k = W.rho, 0.5 * W.vel.dot(W.vel)
    g1 = gamma - 1.0
    r = 1.0 / rho
    dU_dW = ti.Matrix([[1.0, 0.0, 0.0, 0.0, 0.0],
                       [u, rho, 0.0, 0.0, 0.0],
                       [v, 0.0, rho, 0.0, 0.0],
                       [w, 0.0, 0.0, rho, 0.0],
                       [k, rho * u, rho * v, rho * w, 1.0 / g1]])
    dW_dU = ti.Matrix([[1.0, 0.0, 0.0, 0.0, 0.0],
                       [-u * r, r, 0.0, 0.0, 0.0],
                       [-v * r, 0.0, r, 0.0, 0.0],
                       [-w * r, 0.0, 0.0, r, 0.0],
                       [g1 * k, -g1 * u, -g1 * v, -g1 * w, g1]])
    return dU_dW, dW_dU


@model.linear_waves
def linear_waves(W, params):
    """Right eigenvectors of the primitive system along the wave normal x', with unit density
    amplitude: the right-going sound wave (speed u_n + c) and the entropy wave (speed u_n)."""
    c = math.sqrt(params["gamma"] * W["p"] / W["rho"])
    un = W["vel"][0]
    return {"sound": ({"rho": 1.0, "vel": [c / W["rho"], 0.0, 0.0], "p": c * c}, un + c),
            "entropy": ({"rho": 1.0}, un)}
