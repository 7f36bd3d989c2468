"""Several Simulations in one process, one after another.

Taichi holds the fields of one run per process: each Simulation starts it again (ti.init),
which frees the fields of the one before. Just before that start (run/backend.py's
before_restart hook, which every start of Taichi by taichiflow passes through), each live
Simulation of this API copies its state to numpy, so its results stay readable; what needs
the device (advance, run, set_state, writes) is then refused with SimulationReleased.
"""
from __future__ import annotations

import weakref

from ..errors import SimulationError
from ..run import backend

__all__ = ["SimulationReleased", "building", "forget", "register"]

_live: "weakref.WeakSet" = weakref.WeakSet()
_built = 0       # Simulations of this API built (or being built) in this process, numbered from 1
_building = 0    # the number of the one being built now, 0 when none


class SimulationReleased(SimulationError):
    """A Simulation whose Taichi fields were freed when a newer one started Taichi again; its
    last state stays readable as numpy, nothing that needs the device works."""


def building() -> int:
    """A Simulation is about to build (and start Taichi): its number in this process."""
    global _built, _building
    _built += 1
    _building = _built
    return _built


def register(sim) -> None:
    """Track a Simulation once built (None: its build failed): the next start of Taichi keeps
    its state."""
    global _building
    _building = 0
    if sim is not None:
        _live.add(sim)


def forget(sim) -> None:
    _live.discard(sim)


def _keep_live_states() -> None:
    """Taichi is about to start again: every live Simulation keeps a numpy copy of its state."""
    why = f"Simulation {_building} started Taichi again" if _building else "Taichi was started again"
    for sim in list(_live):
        _live.discard(sim)
        sim._keep(why)


backend.before_restart(_keep_live_states)
