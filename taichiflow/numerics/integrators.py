"""Explicit Runge-Kutta integrators as coefficient tables driving one stage update.

Every stage evaluates L(U) into the register R and then updates U:

    R = a R + dt L(U)
    U = c0 U0 + c1 U + c2 R          (U0: the state at the start of the step)

which covers Williamson's low-storage schemes (c0 = 0, c1 = 1, c2 = b) and the Shu-Osher
forms of the SSP schemes (a = 0). `time` is the stage's time as a fraction of dt.
The tables are named in registry.py; `INTEGRATORS` looks them up there by name.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import registry


@dataclass(frozen=True)
class Stage:
    a: float
    c0: float
    c1: float
    c2: float
    time: float


# Williamson (1980) low-storage RK3: a = (0, -17/32, -32/27), b = (1/4, 8/9, 3/4).
LSRK3 = (Stage(0.0, 0.0, 1.0, 1 / 4, 0.0),
         Stage(-17 / 32, 0.0, 1.0, 8 / 9, 1 / 4),
         Stage(-32 / 27, 0.0, 1.0, 3 / 4, 2 / 3))
SSPRK2 = (Stage(0.0, 0.0, 1.0, 1.0, 0.0),
          Stage(0.0, 0.5, 0.5, 0.5, 1.0))
# Shu & Osher (1988).
SSPRK3 = (Stage(0.0, 0.0, 1.0, 1.0, 0.0),
          Stage(0.0, 0.75, 0.25, 0.25, 1.0),
          Stage(0.0, 1 / 3, 2 / 3, 2 / 3, 0.5))
EULER = (Stage(0.0, 0.0, 1.0, 1.0, 0.0),)
# Carpenter & Kennedy (1994, NASA TM-109112), RK4(3)5[2R+]C: five stages, fourth order,
# Williamson's two-register form, so it runs on the stage update of LSRK3 with no new register.
# Third order in time caps a fifth-order space discretisation where dt ~ h; this one does not
# (docs/numerics.md). Fractions as published; tests/test_integrators.py checks its order.
LSRK4 = (Stage(0.0, 0.0, 1.0, 1432997174477 / 9575080441755, 0.0),
         Stage(-567301805773 / 1357537059087, 0.0, 1.0, 5161836677717 / 13612068292357,
               1432997174477 / 9575080441755),
         Stage(-2404267990393 / 2016746695238, 0.0, 1.0, 1720146321549 / 2090206949498,
               2526269341429 / 6820363962896),
         Stage(-3550918686646 / 2091501179385, 0.0, 1.0, 3134564353537 / 4481467310338,
               2006345519317 / 3224310063776),
         Stage(-1275806237668 / 842570457699, 0.0, 1.0, 2277821191437 / 14882151754819,
               2802321613138 / 2924317926251))


class _StagesByName(Mapping):
    """name -> stages of every integrator in the registry (run-time registrations too)."""

    def __getitem__(self, name) -> tuple:
        return registry.integrators.get(name).load()

    def __iter__(self):
        return iter(registry.integrators.names())

    def __len__(self) -> int:
        return len(registry.integrators)


INTEGRATORS = _StagesByName()
