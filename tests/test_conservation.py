"""Conservation to round-off with periodic boundaries, in 2D and 3D."""
import numpy as np
import pytest

from helpers import case_from_text, precise
from taichiflow.run import Simulation

PERIODIC = """
[model]
name = "euler"
[grid]
cells = {cells}
upper = {upper}
[scheme]
reconstruction = "{recon}"
riemann = "{riemann}"
{extra}
[time]
end = 1.0
[boundary]
{boundary}
[initial]
background = {{ rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }}
"""


def periodic_case(tmp_path, cells, recon="weno5", riemann="hllc", arch="cpu", extra=""):
    dim = len(cells)
    text = PERIODIC.format(cells=list(cells), upper=[1.0] * dim, recon=recon, riemann=riemann, extra=extra,
                           boundary="\n".join(f'{"xyz"[d]} = "periodic"' for d in range(dim)))
    return precise(case_from_text(tmp_path, text), arch)


def random_state(cells, seed=1):
    """Random but admissible primitive state: jumps everywhere, nonzero mean momentum."""
    rng = np.random.default_rng(seed)
    w = np.empty(tuple(cells) + (5,))
    w[..., 0] = rng.uniform(0.5, 2.0, cells)
    w[..., 1:4] = rng.uniform(-0.5, 1.0, tuple(cells) + (3,))
    w[..., 4] = rng.uniform(0.5, 2.0, cells)
    return w


FINITE_DIFFERENCES = 'method = "finite_difference"\nintegrator = "lsrk4"\n'


@pytest.mark.parametrize("cells,recon,riemann,extra", [
    ((24, 20), "weno5", "hllc", ""), ((10, 8, 12), "plm", "hll", ""), ((12, 10, 8), "weno5", "rusanov", ""),
    ((24, 20), "weno5z", "rusanov", FINITE_DIFFERENCES + 'variables = "characteristic"'),
    ((12, 10, 8), "weno5", "rusanov", FINITE_DIFFERENCES),
    ((10, 8, 12), "muscl_hancock", "hllc", 'integrator = "euler"\ncfl = 0.3\n')])
def test_totals_constant_to_round_off(tmp_path, cells, recon, riemann, extra, arch):
    sim = Simulation(periodic_case(tmp_path, cells, recon, riemann, arch, extra))
    sim.set_primitive(random_state(cells))
    sim.solver.refresh_primitives()
    before = sim.solver.reductions()[0]
    sim.advance(10.0, max_steps=30)
    after = sim.solver.reductions()[0]
    assert sim.step_count == 30
    scale = np.abs(before).max()
    change = np.abs(after - before) / scale
    assert change.max() <= 1e-12, change
    # The state did evolve: the test would not pass by doing nothing.
    assert np.abs(sim.fields()["rho"] - random_state(cells)[..., 0]).max() > 1e-2


def test_diagnostics_reductions_match_the_fields_and_start_over_each_call(arch):
    """Totals, min/max and the model's reduced derived fields (two-phase: sum of alpha and of
    the kinetic energy, max of the Mach number) against numpy on the same state, twice."""
    from helpers import CASES
    from taichiflow.case import load_case
    sim = Simulation(precise(load_case(CASES / "rayleigh_collapse.toml", ["grid.cells=[10, 9, 8]",
                                                                        "output.fields=['alpha', 'mach']"]), arch))
    sim.advance(1.0, max_steps=3)  # some motion: velocities and Mach numbers are not zero
    solver = sim.solver
    volume = float(np.prod(solver.dx))
    for _ in range(2):  # the second call must not see the first one's slots
        solver.refresh_primitives()
        totals, w_min, w_max, derived = solver.reductions()
        u, w, fields = solver.conserved_array(), solver.primitive_array(), sim.fields()
        np.testing.assert_allclose(totals, u.reshape(-1, u.shape[-1]).sum(axis=0) * volume, rtol=1e-12)
        np.testing.assert_array_equal(w_min, w.reshape(-1, w.shape[-1]).min(axis=0))
        np.testing.assert_array_equal(w_max, w.reshape(-1, w.shape[-1]).max(axis=0))
        assert derived["sum_alpha"] == pytest.approx(fields["alpha"].sum() * volume, rel=1e-12)
        assert derived["max_mach"] == fields["mach"].max() > 0.0
    assert set(derived) == {"sum_alpha", "max_mach", "sum_kinetic_energy"}
