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
_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # sim -> its Taichi runtime (a weak ref)
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
        _programs[sim] = weakref.ref(_runtime())


def _runtime():
    """Taichi's runtime object, a new one at every ti.init (taichiflow's or anyone's)."""
    from taichi.lang import impl
    return impl.get_runtime()


def forget(sim) -> None:
    _live.discard(sim)


def _keep_live_states() -> None:
    """Taichi is about to start again: every live Simulation keeps a numpy copy of its state."""
    why = f"Simulation {_building} started Taichi again" if _building else "Taichi was started again"
    current = _runtime()
    for sim in list(_live):
        _live.discard(sim)
        program = _programs.pop(sim, None)
        # a ti.init outside taichiflow freed its fields already: launching a kernel there aborts
        sim._keep(why, alive=program is not None and program() is current)


backend.before_restart(_keep_live_states)
