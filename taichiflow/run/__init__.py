"""A run of a case: build (case + model -> plan, solver, initial state), the driver (the time
loop, retries, failures), outputs and observers, restarts, stopping, progress, the run log."""
from ..errors import RunInterrupted, SimulationError
from .driver import Simulation

__all__ = ["RunInterrupted", "Simulation", "SimulationError"]
