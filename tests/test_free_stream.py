"""A uniform state stays uniform for every reconstruction x Riemann solver x integrator."""
import itertools

import numpy as np
import pytest

from helpers import case_from_text, precise
from taichiflow.run import Simulation

RECONSTRUCTIONS = [("first_order", "mc"), ("plm", "minmod"), ("plm", "mc"), ("weno5", "mc")]
RIEMANN = ["rusanov", "hll", "hllc"]
INTEGRATORS = ["lsrk3", "ssprk2", "ssprk3", "euler"]

UNIFORM = """
[model]
name = "euler"
[grid]
cells = [7, 6, 5]
upper = [1.0, 1.2, 0.9]
[scheme]
reconstruction = "{recon}"
limiter = "{limiter}"
riemann = "{riemann}"
integrator = "{integrator}"
cfl = 0.3  # (forward Euler in 3D: at most 1/3, case_rules.check_stable_cfl)
[time]
end = 1.0
[boundary]
x = "periodic"
y = ["inflow", "outflow"]
z = "outflow"
[boundary.inflow]
y_lower = {{ rho = 1.3, vel = [0.3, -0.45, 0.7], p = 2.1 }}
[initial]
background = {{ rho = 1.3, vel = [0.3, -0.45, 0.7], p = 2.1 }}
"""


@pytest.mark.parametrize("recon,limiter,riemann", [(r, l, s) for (r, l), s in itertools.product(RECONSTRUCTIONS, RIEMANN)])
def test_uniform_state_stays_uniform(tmp_path, recon, limiter, riemann, arch):
    for integrator in INTEGRATORS:
        text = UNIFORM.format(recon=recon, limiter=limiter, riemann=riemann, integrator=integrator)
        sim = Simulation(precise(case_from_text(tmp_path, text), arch))
        sim.advance(10.0, max_steps=5)
        fields = sim.fields()
        for name, expected in (("rho", 1.3), ("vel", [0.3, -0.45, 0.7]), ("p", 2.1)):
            error = np.abs(fields[name] - np.array(expected)).max()
            assert error <= 1e-13, (integrator, name, error)


@pytest.mark.parametrize("recon,variables", [("weno5", "conserved"), ("weno5z", "characteristic"),
                                             ("first_order", "conserved")])
def test_uniform_state_stays_uniform_with_finite_differences(tmp_path, recon, variables, arch):
    for integrator in ("lsrk4", "lsrk3", "ssprk3"):
        text = UNIFORM.format(recon=recon, limiter="mc", riemann="rusanov", integrator=integrator).replace(
            "[scheme]", f'[scheme]\nmethod = "finite_difference"\nvariables = "{variables}"')
        sim = Simulation(precise(case_from_text(tmp_path, text), arch))
        sim.advance(10.0, max_steps=5)
        fields = sim.fields()
        for name, expected in (("rho", 1.3), ("vel", [0.3, -0.45, 0.7]), ("p", 2.1)):
            error = np.abs(fields[name] - np.array(expected)).max()
            assert error <= 1e-13, (integrator, name, error)
