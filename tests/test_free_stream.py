"""A uniform state stays uniform for every reconstruction x Riemann solver x integrator.

An integrator's sweeps are compiled with the union of its stages' flags (kernels/plan.py:
StageFlags); its coefficients are run-time arguments. SSP-RK3 compiles SSP-RK2's kernels and
LSRK4 LSRK3's (the plans compared below; measured: not one kernel of theirs new to Taichi's
cache after the other's run, fused and unfused, finite volumes and differences). So the
product of finite volumes runs the integrators whose kernels differ, and SSP-RK3's table on a
fused and an unfused sweep besides; finite differences run LSRK4 and SSP-RK3 (the kernels of
LSRK3 and SSP-RK2). Each run costs a Taichi start and its kernels: 44 runs where the whole
product made 57.
"""
import dataclasses
import itertools

import numpy as np
import pytest

from helpers import case_from_text, precise
from taichiflow.kernels.plan import resolve
from taichiflow.run import Simulation

RECONSTRUCTIONS = [("first_order", "mc"), ("plm", "minmod"), ("plm", "mc"), ("weno5", "mc")]
RIEMANN = ["rusanov", "hll", "hllc"]
INTEGRATORS = ["lsrk3", "ssprk2", "euler"]
# integrator: the integrator in the product whose kernels it compiles
SAME_KERNELS = {"ssprk3": "ssprk2", "lsrk4": "lsrk3"}
# (reconstruction, limiter, riemann): integrators run besides INTEGRATORS (PLM's stage is fused
# into one sweep on this 3D grid, WENO5's is not)
ALSO = {("plm", "minmod", "hll"): ["ssprk3"], ("weno5", "mc", "hllc"): ["ssprk3"]}
FINITE_DIFFERENCES = [("weno5", "conserved"), ("weno5z", "characteristic"), ("first_order", "conserved")]

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


def finite_differences(text: str, variables: str) -> str:
    return text.replace("[scheme]", f'[scheme]\nmethod = "finite_difference"\nvariables = "{variables}"')


def assert_stays_uniform(tmp_path, text, arch, integrator):
    sim = Simulation(precise(case_from_text(tmp_path, text), arch))
    sim.advance(10.0, max_steps=5)
    fields = sim.fields()
    for name, expected in (("rho", 1.3), ("vel", [0.3, -0.45, 0.7]), ("p", 2.1)):
        error = np.abs(fields[name] - np.array(expected)).max()
        assert error <= 1e-13, (integrator, name, error)


@pytest.mark.parametrize("recon,limiter,riemann", [(r, l, s) for (r, l), s in itertools.product(RECONSTRUCTIONS, RIEMANN)])
def test_uniform_state_stays_uniform(tmp_path, recon, limiter, riemann, arch):
    for integrator in INTEGRATORS + ALSO.get((recon, limiter, riemann), []):
        text = UNIFORM.format(recon=recon, limiter=limiter, riemann=riemann, integrator=integrator)
        assert_stays_uniform(tmp_path, text, arch, integrator)


@pytest.mark.parametrize("recon,variables", FINITE_DIFFERENCES)
def test_uniform_state_stays_uniform_with_finite_differences(tmp_path, recon, variables, arch):
    for integrator in ("lsrk4", "ssprk3"):
        text = UNIFORM.format(recon=recon, limiter="mc", riemann="rusanov", integrator=integrator)
        assert_stays_uniform(tmp_path, finite_differences(text, variables), arch, integrator)


def test_the_integrators_left_out_of_the_product_compile_the_kernels_of_one_in_it(tmp_path):
    """The flags each sweep of SSP-RK3 compiles in are SSP-RK2's and LSRK4's are LSRK3's, and the
    rest of their plans (kernels/plan.py: which sweeps, fused or not, ...) is the same but for the
    stages' table, which the sweeps take as run-time arguments; the product's integrators each
    compile other flags."""
    boundaries = [("periodic", "periodic"), ("inflow", "outflow"), ("outflow", "outflow")]

    def plan(recon, limiter, integrator, variables=None):
        text = UNIFORM.format(recon=recon, limiter=limiter, riemann="rusanov", integrator=integrator)
        case = case_from_text(tmp_path, finite_differences(text, variables) if variables else text)
        return resolve(case["scheme"], case["run"], "cpu", "f64", case["grid"]["cells"], boundaries)

    schemes = [(r, l, None) for r, l in RECONSTRUCTIONS] + [(r, "mc", v) for r, v in FINITE_DIFFERENCES]
    assert sorted(plan(r, l, "ssprk3").fused for r, l, _ in ALSO) == [False, True]  # (ALSO's two sweeps)
    for recon, limiter, variables in schemes:
        plans = {name: plan(recon, limiter, name, variables) for name in INTEGRATORS + list(SAME_KERNELS)}
        flags = {name: [p.compiled_flags(k) for k in range(len(p.walked))] for name, p in plans.items()}
        for name, twin in SAME_KERNELS.items():
            assert plans[name].stages != plans[twin].stages and flags[name] == flags[twin]
            schemes_as_twin = tuple(dataclasses.replace(s, integrator=twin) for s in plans[name].schemes)
            assert dataclasses.replace(plans[name], stages=plans[twin].stages, integrator=twin,
                                       schemes=schemes_as_twin) == plans[twin]
        for a, b in itertools.combinations(INTEGRATORS, 2):
            assert flags[a] != flags[b], (recon, variables, a, b)
