"""Two-phase 5-equation model: gas-water shock tube, interface advection, conservation."""
import numpy as np
import pytest

from exact_riemann import exact_riemann
from helpers import CASES, case_from_text, precise, simulate
from taichiflow.case import load_case
from taichiflow.simulation import Simulation

WATER = dict(gamma=4.4, pc_left=0.6)


def tube_errors(cells, arch):
    sim = simulate(load_case(CASES / "gas_water_tube.toml", [f"grid.cells=[{cells}]"]), arch)
    fields = sim.fields()
    x = (np.arange(cells) + 0.5) / cells
    exact = exact_riemann((1.0, 0.0, 1.0), (0.05, 0.0, 1e-4), x, 0.24, x0=0.7, gamma=4.4, gamma_right=1.4,
                          pc_left=0.6, pc_right=0.0)
    computed = (fields["rho"], fields["vel"][:, 0], fields["p"])
    return np.array([np.abs(c - e).mean() / np.abs(e).max() for c, e in zip(computed, exact)])


def test_gas_water_shock_tube_against_the_exact_stiffened_gas_solution(arch):
    """Relative L1 errors of rho, u, p; measured at 400 cells: 3.44e-3, 7.87e-3, 1.35e-3
    (200 cells: 6.46e-3, 1.58e-2, 2.70e-3; 800: 2.00e-3, 4.05e-3, 6.8e-4); bounds +~20%."""
    coarse, fine = tube_errors(200, arch), tube_errors(400, arch)
    assert np.all(fine < coarse)
    assert np.all(fine < [4.2e-3, 9.5e-3, 1.65e-3]), fine


ADVECTION = """
[model]
name = "two_phase"
params = {{ gamma_liquid = 6.59, pc_liquid = 0.4069, gamma_gas = 1.4, pc_gas = 0.0 }}
[materials]
water = {{ gamma = 6.59, pc = 0.4069 }}
air = {{ gamma = 1.4, pc = 0.0 }}
[grid]
cells = {cells}
upper = {upper}
[scheme]
reconstruction = "weno5"
riemann = "{riemann}"
wave_speeds = "einfeldt"
[time]
end = 100.0
[boundary]
{boundary}
[initial]
background = {{ material = "water", rho = 1.0, vel = {vel}, p = 1.0e-4 }}
[[initial.regions]]
{region}
state = {{ material = "air", rho = 0.001 }}
"""


@pytest.mark.parametrize("dim,region", [
    (1, 'shape = "box"\nlower = [0.3]\nupper = [0.6]'),
    (2, 'shape = "sphere"\ncenter = [0.5, 0.5]\nradius = 0.25\nsmoothing = 0.03'),
])
def test_interface_in_uniform_flow_keeps_pressure_and_velocity_uniform(tmp_path, dim, region, arch):
    """Water | air (density ratio 1000) advected 200 steps. With WENO5 + HLL(Einfeldt) p and
    u stay uniform to round-off (measured 2e-11). Known open problem (issue #4 note): with
    HLLC and a compressive reconstruction (WENO5, PLM-MC) round-off at the interface grows
    (to 1e-2..1 after 300 steps at 64 cells); first-order, PLM-minmod and MUSCL-Hancock
    with minmod keep it at 1e-11 with HLLC too."""
    vel = [0.05, 0.03, 0.0][:max(dim, 1)] + [0.0] * (3 - max(dim, 1))
    text = ADVECTION.format(cells=[64] * dim if dim > 1 else [100], upper=[1.0] * dim, vel=vel, region=region,
                            riemann="hll",
                            boundary="\n".join(f'{"xyz"[d]} = "periodic"' for d in range(dim)))
    sim = Simulation(precise(case_from_text(tmp_path, text), arch))
    sim.advance(100.0, max_steps=200)
    sim.case["output"]["fields"] = ["vel", "p", "alpha"]
    fields = sim.fields()
    assert fields["alpha"].max() > 0.99 and fields["alpha"].min() < 0.01   # both phases present
    assert np.abs(fields["p"] / 1e-4 - 1.0).max() <= 1e-10
    for d in range(3):
        assert np.abs(fields["vel"][..., d] - vel[d]).max() <= 1e-10 * max(abs(vel[d]), 0.05)


def test_two_phase_conserves_mass_momentum_energy_with_periodic_boundaries(tmp_path, arch):
    text = ADVECTION.format(cells=[24, 20], upper=[1.0, 1.0], vel=[0.2, -0.1, 0.0], riemann="hll",
                            region='shape = "sphere"\ncenter = [0.5, 0.5]\nradius = 0.2',
                            boundary='x = "periodic"\ny = "periodic"').replace("rho = 0.001 }", "rho = 0.01, p = 5.0e-4 }")
    sim = Simulation(precise(case_from_text(tmp_path, text), arch))
    before = sim.solver.reductions()[0]
    sim.advance(100.0, max_steps=40)
    after = sim.solver.reductions()[0]
    conserved = [0, 1, 2, 3, 4]  # rho, mom_x, mom_y, mom_z, E (Gamma and Pi are advected, not conserved)
    scale = np.abs(before[conserved]).max()
    assert np.abs(after[conserved] - before[conserved]).max() <= 1e-12 * scale
    sim.case["output"]["fields"] = ["vel"]
    assert np.abs(sim.fields()["vel"][..., 0] - 0.2).max() > 1e-3  # the bubble's pressure drove a flow
