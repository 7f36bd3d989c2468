"""taichiflow as a Python library (docs/api.md): a checked, immutable `Case`, a `Simulation`
stepped, read and steered from a script or a notebook, and callbacks that may stop it.

A layer over the run code `taichiflow run` uses (run/driver.py, run/outputs.py): the same
build, steps, checks and files.
"""
from ..errors import CaseError, ModelError, SimulationError
from .callbacks import STOP, Stop
from .case import Case
from .lifetimes import SimulationReleased
from .running import RunResult
from .simulation import Simulation

__all__ = ["STOP", "Case", "CaseError", "ModelError", "RunResult", "Simulation", "SimulationError",
           "SimulationReleased", "Stop"]
