"""Shallow-water equations over a bed, with wet and dry cells and Manning friction
(docs/physics.md 1.5), in 1D and 2D.

U = (h, h vel, bed, manning): the depth, the discharge, and two static fields the case sets
per cell (the bed elevation and Manning's coefficient; no step changes them). The velocity is
a 3-vector like every model's; its z component stays zero on 1D and 2D grids.

Well balanced by hydrostatic reconstruction (Audusse et al. 2004, SIAM J. Sci. Comput. 25,
2050), second order: the reconstruction works on (h, vel, h + bed) (the free surface is
constant in a lake at rest), the bed at a face side is the free surface minus the depth, and
each face solves its Riemann problem between the depths above the higher of its two beds,
h* = max(0, h + bed - max(bed_L, bed_R)) (never negative: dry cells and shores stay dry). The
pressure that h* leaves out comes back in each cell as its balance term from its two faces,
  -[g/2 (h^2 - h*^2)] from lower to upper side  -  g (h_lo + h_up)/2 (bed_up - bed_lo),
which cancels the flux difference of a lake at rest exactly whatever the reconstruction.

Near dry cells the velocity is desingularised (Kurganov & Petrova 2007):
vel = 2 h (h vel) / (h^2 + max(h^2, dry_depth^2)), zero in a dry cell; after each step the
discharge of a layer thinner than dry_depth is set to zero and friction is applied
semi-implicitly, h vel <- h vel / (1 + dt k |vel| / h^a), stable however thin the layer, with
the law's k and a: Manning g n^2 and 4/3 (n per cell, the static field), Chezy g / C^2 and 1,
Darcy-Weisbach f / 8 and 1 (C = `chezy` and f = `darcy_weisbach`, parameters, >= 0:
0 leaves the law out of the compiled step; the laws' slopes add where more than one is set).
"""
import taichi as ti

from taichiflow import Model

model = Model(
    "shallow_water",
    conserved={"h": 1, "mom": 3, "bed": 1, "manning": 1},
    primitive={"h": 1, "vel": 3, "bed": 1, "manning": 1},
    params={"g": 9.81, "dry_depth": 1e-6, "chezy": 0.0, "darcy_weisbach": 0.0},
    ranges={"g": "> 0", "dry_depth": "> 0", "chezy": ">= 0", "darcy_weisbach": ">= 0"},
    velocity="vel",
    static=("bed", "manning"),
    balance=3,
    dimensions=(1, 2),
    exact_wave_speeds=True,   # u_n -/+ sqrt(g h): the extreme speeds of (h, h vel); bed and manning do not move
    sample={"h": 1.0, "vel": [0.3, -0.2, 0.0], "bed": 0.1, "manning": 0.0},
    description="Shallow water over a bed: hydrostatic reconstruction, wet and dry, Manning, Chezy or "
                "Darcy-Weisbach friction",
)


@ti.func
def desingularised_velocity(h, mom, dry_depth):
    """mom / h where the layer is deep, going smoothly to zero as h -> 0 (no 0/0 in a dry cell)."""
    return mom * (2.0 * h / (h * h + ti.max(h * h, dry_depth * dry_depth)))


@model.to_primitive
def to_primitive(U, dry_depth):
    return model.W(h=U.h, vel=desingularised_velocity(U.h, U.mom, dry_depth), bed=U.bed, manning=U.manning)


@model.to_conserved
def to_conserved(W):
    return model.U(h=W.h, mom=W.h * W.vel, bed=W.bed, manning=W.manning)


@model.flux
def flux(W, U, g):
    un = W.vel[0]
    return model.U(h=U.mom[0], mom=U.mom * un + 0.5 * g * W.h * W.h * model.ex, bed=0.0, manning=0.0)


@model.wave_speeds
def wave_speeds(W, g):
    c = ti.sqrt(g * ti.max(W.h, 0.0))
    return ti.Vector([W.vel[0] - c, W.vel[0] + c])


@model.admissible
def admissible(W):
    """h >= 0."""
    return W.h >= 0.0


@model.to_reconstructed
def to_reconstructed(W):
    """The free surface h + bed takes the bed's place: constant in a lake at rest."""
    return model.W(h=W.h, vel=W.vel, bed=W.h + W.bed, manning=W.manning)


@model.from_reconstructed
def from_reconstructed(V):
    return model.W(h=V.h, vel=V.vel, bed=V.bed - V.h, manning=V.manning)


@model.face_states
def hydrostatic_states(WL, WR):
    """The depths above the higher bed of the face's two sides, one bed for both."""
    bed = ti.max(WL.bed, WR.bed)
    hL = ti.max(0.0, WL.h + WL.bed - bed)
    hR = ti.max(0.0, WR.h + WR.bed - bed)
    return (model.W(h=hL, vel=WL.vel, bed=bed, manning=WL.manning),
            model.W(h=hR, vel=WR.vel, bed=bed, manning=WR.manning))


@model.face_balance
def pressure_left_out(W, W_solved, g):
    """One side of a face: the hydrostatic pressure h* left out, the depth and the bed there."""
    return ti.Vector([0.5 * g * (W.h * W.h - W_solved.h * W_solved.h), W.h, W.bed])


@model.cell_balance
def bed_slope(lower, upper, g):
    """The normal momentum's pressure correction and bed slope term, times the cell width."""
    mom = -(upper[0] - lower[0]) - g * 0.5 * (lower[1] + upper[1]) * (upper[2] - lower[2])
    return model.U(h=0.0, mom=ti.Vector([mom, 0.0, 0.0]), bed=0.0, manning=0.0)


@model.after_step
def friction(U, dt, width, g, dry_depth, chezy: ti.template(), darcy_weisbach: ti.template()):
    """Friction implicit in the velocity (Manning's per cell; Chezy's and Darcy-Weisbach's only
    where their parameter is set, compiled in: without them the step is Manning's alone); no
    discharge in a layer thinner than dry_depth."""
    h = ti.max(U.h, dry_depth)
    speed = desingularised_velocity(U.h, U.mom, dry_depth).norm()
    slowing = 1.0 + dt * g * U.manning * U.manning * speed / (h * ti.pow(h, 1.0 / 3.0))
    if ti.static(chezy != 0.0):
        slowing += dt * g / (chezy * chezy) * speed / h
    if ti.static(darcy_weisbach != 0.0):
        slowing += dt * (darcy_weisbach / 8.0) * speed / h
    mom = ti.select(U.h > dry_depth, 1.0, 0.0) * U.mom / slowing
    return model.U(h=U.h, mom=mom, bed=U.bed, manning=U.manning)


@model.idle
def dry(U):
    """A dry cell (no water, no discharge) among dry cells has zero fluxes and balance terms:
    a step leaves it exactly as it is, so the GPU may skip dry land ([run] skip_idle)."""
    return (U.h == 0.0) & (U.mom.norm_sqr() == 0.0)


# --- derived fields ----------------------------------------------------------------------

@model.derive("surface")
def free_surface(W):
    """h + bed where wet; the bed where dry."""
    return W.h + W.bed


@model.derive("speed", reduce="max")
def speed(W):
    return W.vel.norm()


@model.derive("froude", reduce="max")
def froude(W, g, dry_depth):
    return W.vel.norm() / ti.sqrt(g * ti.max(W.h, dry_depth))


@model.derive("volume", reduce="sum")
def volume(W):
    """The water volume (a length in 1D, an area in 2D per unit width): conserved to rounding."""
    return W.h


@model.derive("wet", reduce="sum")
def wet(W, dry_depth):
    """1 in a cell deeper than dry_depth: its sum is the wet area (length in 1D)."""
    return ti.select(W.h > dry_depth, 1.0, 0.0)
