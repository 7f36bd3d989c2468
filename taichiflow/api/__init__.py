"""taichiflow as a Python library (docs/api.md): a checked, immutable `Case`, a `Simulation`
stepped, read and steered from a script or a notebook, and callbacks that may stop it.

A layer over the run code `taichiflow run` uses (run/driver.py, run/outputs.py): the same
build, steps, checks and files. `Case` imports without the run code (the command line checks
its case with it before anything is built); the rest is imported on first use.
"""
import importlib

from ..errors import CaseError, ModelError, SimulationError
from .callbacks import STOP, Stop
from .case import Case

_LAZY = {"RunResult": "running", "Simulation": "simulation", "SimulationReleased": "lifetimes"}

__all__ = ["STOP", "Case", "CaseError", "ModelError", "RunResult", "Simulation", "SimulationError",
           "SimulationReleased", "Stop"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
