"""Positivity fallback: inadmissible reconstructed face states fall back to first order."""
import pytest

from helpers import case_from_text, precise
from taichiflow.run import Simulation, SimulationError
from test_symmetry import BLAST


def colliding_blasts(tmp_path, fallback: bool, arch: str):
    """Periodic images of a blast collide at the boundary at step ~33 (32^2 cells)."""
    text = BLAST.format(cells=[32, 32], lower=[-0.5, -0.5], upper=[0.5, 0.5], recon="weno5",
                        boundary='x = "periodic"\ny = "periodic"').replace('riemann = "hllc"', 'riemann = "hll"')
    case = precise(case_from_text(tmp_path, text), arch)
    case["scheme"]["positivity_fallback"] = fallback
    return Simulation(case)


def test_weno5_fails_without_fallback_and_runs_with_it(tmp_path, arch):
    unprotected = colliding_blasts(tmp_path, False, arch)
    with pytest.raises(SimulationError, match="inadmissible state after step"):
        unprotected.advance(1.0, max_steps=60)

    protected = colliding_blasts(tmp_path, True, arch)
    counts = []
    protected.advance(1.0, max_steps=60, on_step=lambda sim: counts.append(sim.solver.take_fallback_count()))
    assert protected.step_count == 60
    assert sum(counts) > 0                    # the fallback did act ...
    assert sum(c > 0 for c in counts) < 30    # ... only at the few steps of the collision
    fields = protected.fields()
    assert fields["rho"].min() > 0 and fields["p"].min() > 0
