"""Riemann solvers stay finite and consistent where every signal speed is zero (issue 8, item
3): HLL's formula is 0/0 there. Burgers' equation from rest, and a flow along x whose y faces
see no waves, ran into NaN at the first step; the failure advice then recommended HLL."""
import numpy as np
import pytest

from helpers import case_from_text, simulate
from test_check import BURGERS as CHECKED_BURGERS
from taichiflow.run.failure import advice

BURGERS = CHECKED_BURGERS.replace("SAMPLE", "1.0")  # (the model `taichiflow check` is tested on)

ADVECTION = '''
"""phi carried by a constant velocity field a (a 3-vector, so it turns with the face normal)."""
import taichi as ti
from taichiflow import Model

model = Model("advection", conserved={"phi": 1, "a": 3}, primitive={"phi": 1, "a": 3})


@model.to_primitive
def to_primitive(U):
    return model.W(phi=U.phi, a=U.a)


@model.to_conserved
def to_conserved(W):
    return model.U(phi=W.phi, a=W.a)


@model.flux
def flux(W, U):
    return model.U(phi=W.phi * W.a[0], a=0.0 * W.a)


@model.wave_speeds
def wave_speeds(W):
    return ti.Vector([W.a[0], W.a[0]])
'''

BURGERS_CASE = """
[model]
name = "{model}"
[grid]
cells = [32]
upper = [1.0]
[scheme]
reconstruction = "weno5"
riemann = "{riemann}"
[time]
end = 0.1
max_steps = 3
[boundary]
x = "periodic"
[initial]
background = {{ u = 0.0 }}
"""

ADVECTION_CASE = """
[model]
name = "{model}"
[grid]
cells = [32, 8]
upper = [1.0, 0.25]
[scheme]
reconstruction = "weno5"
riemann = "{riemann}"
cfl = 0.4
[time]
end = 0.25
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = {{ phi = 1.0, a = [1.0, 0.0, 0.0] }}
[[initial.perturbations]]
kind = "sine"
variable = "phi"
amplitude = 0.5
wavenumber = [6.283185307179586, 0.0]
"""

SOLVERS = ["hll", "rusanov", "force", "musta"]


@pytest.mark.parametrize("riemann", SOLVERS)
def test_burgers_at_rest_stays_at_rest(tmp_path, arch, riemann):
    path = tmp_path / "burgers.py"
    path.write_text(BURGERS)
    sim = simulate(case_from_text(tmp_path, BURGERS_CASE.format(model=path, riemann=riemann)), arch)
    u = sim.fields()["u"]
    assert sim.step_count >= 1 and np.all(u == 0.0)


@pytest.mark.parametrize("riemann", ["hll", "rusanov"])
def test_a_flow_along_x_moves_unchanged_by_its_y_faces(tmp_path, arch, riemann):
    """The y faces see a = 0: no waves, no flux; phi = 1 + 0.5 sin(2 pi (x - t)) moves a
    quarter period along x (WENO5 on 32 cells: close to exact) and is the same in every row."""
    path = tmp_path / "advection.py"
    path.write_text(ADVECTION)
    sim = simulate(case_from_text(tmp_path, ADVECTION_CASE.format(model=path, riemann=riemann)), arch)
    phi = sim.fields()["phi"]
    x = (np.arange(32) + 0.5) / 32
    exact = 1.0 + 0.5 * np.sin(2 * np.pi * (x - 0.25))
    assert np.all(np.isfinite(phi))
    np.testing.assert_allclose(phi, np.repeat(phi[:, :1], 8, axis=1), rtol=0, atol=1e-13)
    assert np.abs(phi[:, 0] - exact).max() < 2e-3
    assert abs(phi.mean() - 1.0) < 1e-13  # conserved


def test_the_advice_never_recommends_the_scheme_that_failed():
    weno_hll = {"cfl": 0.4, "positivity_fallback": True, "reconstruction": "weno5", "riemann": "hll",
                "limiter": "mc"}
    text = advice(weno_hll, None)
    assert "reconstruction = 'plm' with limiter = 'minmod'" in text and "riemann = 'rusanov'" in text
    assert "riemann = 'hll'" not in text
    plm_hllc = {**weno_hll, "reconstruction": "plm", "riemann": "hllc"}
    assert "limiter = 'minmod'" in advice(plm_hllc, None) and "riemann = 'hll'" in advice(plm_hllc, None)
    robust = {**weno_hll, "reconstruction": "plm", "limiter": "minmod", "riemann": "rusanov"}
    assert "diffusive" not in advice(robust, None) and "cfl (now 0.4)" in advice(robust, None)
    assert "integrator = 'ssprk3'; 'lsrk3' may break" in advice({**robust, "integrator": "lsrk3"}, None)
    assert "integrator" not in advice({**robust, "integrator": "ssprk2"}, None)
