"""One Simulation at a time per process: each starts Taichi afresh, and an older one's fields
would read the newer one's memory; reading them is refused with a clear error."""
import numpy as np
import pytest

from helpers import CASES, precise
from taichiflow.case import load_case
from taichiflow.errors import SimulationError
from taichiflow.run import Simulation


def test_an_older_simulation_refuses_to_read_after_a_newer_one_started(arch):
    first = Simulation(precise(load_case(CASES / "sod.toml", ["grid.cells=[32]"]), arch))
    first.advance(0.05)
    rho = first.fields()["rho"]
    assert rho.max() == pytest.approx(1.0, abs=1e-3) and rho.min() == pytest.approx(0.125, abs=1e-3)
    second = Simulation(precise(load_case(CASES / "toro_123.toml", ["grid.cells=[32]"]), arch))
    with pytest.raises(SimulationError, match="newer Simulation"):
        first.fields()
    with pytest.raises(SimulationError, match="newer Simulation"):
        first.advance(0.1)
    assert np.abs(second.fields()["rho"] - 1.0).max() == 0.0  # (the newer one is whole)
