"""The DSL hooks later models need: advected variables, sources, per-step global values."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise, simulate
from taichiflow.case import load_case
from taichiflow.run import Simulation

EULER = (CASES.parent / "models" / "euler.py").read_text()

def _edited(text: str, *edits) -> str:
    """text with each (old, new) replaced; an edit that no longer matches the model fails here."""
    for old, new in edits:
        assert text.count(old) == 1, f"models/euler.py changed: {old!r}"
        text = text.replace(old, new)
    return text


# Euler plus a colour phi advected non-conservatively: d(phi)/dt + u . grad(phi) = 0.
EULER_WITH_COLOUR = _edited(
    EULER,
    ('conserved={"rho": 1, "mom": 3, "E": 1}', 'conserved={"rho": 1, "mom": 3, "E": 1, "phi": 1}'),
    ('primitive={"rho": 1, "vel": 3, "p": 1}', 'primitive={"rho": 1, "vel": 3, "p": 1, "phi": 1}'),
    ('positive=("rho", "p"),', 'positive=("rho", "p"), advected=("phi",),'),
    ("p=(gamma - 1.0) * (U.E - 0.5 * U.rho * vel.dot(vel)))",
     "p=(gamma - 1.0) * (U.E - 0.5 * U.rho * vel.dot(vel)), phi=U.phi)"),
    ("+ 0.5 * W.rho * W.vel.dot(W.vel))", "+ 0.5 * W.rho * W.vel.dot(W.vel), phi=W.phi)"),
    ("E=(U.E + W.p) * un)", "E=(U.E + W.p) * un, phi=U.phi * un)"),
    ("* (s - s_star) * r)))", "* (s - s_star) * r)), phi=chi * U.phi)"))


def test_advected_variable_stays_constant_where_velocity_diverges(tmp_path):
    """phi = 1 everywhere must stay exactly 1 through Sod's rarefaction and shock, where
    div(u) != 0: the framework subtracts phi div(u) with the Riemann solver's own face
    velocities. A conservative div(u phi) would change phi by O(1) there."""
    path = tmp_path / "euler_colour.py"
    path.write_text(EULER_WITH_COLOUR)
    for riemann in ("hllc", "hll", "rusanov"):
        case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "grid.cells=[100]",
                                              "initial.background.phi=1.0", f"scheme.riemann='{riemann}'"])
        fields = simulate(case).fields()
        assert np.abs(fields["vel"][:, 0]).max() > 0.9
        assert np.abs(fields["phi"] - 1.0).max() <= 1e-14, riemann


def test_advected_interface_moves_with_the_flow(tmp_path):
    path = tmp_path / "euler_colour.py"
    path.write_text(EULER_WITH_COLOUR)
    case = load_case(CASES / "sod.toml", [
        f"model.name='{path}'", "grid.cells=[200]", "boundary.x='periodic'", "time.end=0.25",
        "initial.background={rho = 1.0, vel = [1.0, 0.0, 0.0], p = 1.0, phi = 0.0}",
        "initial.regions.0.state={phi = 1.0}"])
    fields = simulate(case).fields()
    x = (np.arange(200) + 0.5) / 200
    moved = np.where((x > 0.75) | (x < 0.25), 1.0, 0.0)  # [0.5, 1) moved by u t = 0.25, periodic
    # Two interfaces smeared over ~3 cells each of 200: mean error ~ 2 * 0.5 * 3 / 200 = 0.015.
    assert np.abs(fields["phi"] - moved).mean() < 0.02
    assert np.abs(fields["p"] - 1.0).max() < 1e-13 and np.abs(fields["vel"][:, 0] - 1.0).max() < 1e-13


SCALAR = '''
"""A scalar ODE per cell, dq/dt = S, for testing sources and global values."""
import taichi as ti
from taichiflow import Model

model = Model("ode", conserved={"q": 1}, primitive={"q": 1}, params={"k": 0.0},
              globals={"qmax": "max"})


@model.to_primitive
def to_primitive(U):
    return model.W(q=U.q)


@model.to_conserved
def to_conserved(W):
    return model.U(q=W.q)


@model.flux
def flux(W, U):
    return model.U(q=0.0 * U.q)


@model.wave_speeds
def wave_speeds(W):
    return ti.Vector([0.0, 0.0])  # no waves: the step is set by the target times


@model.global_value("qmax")
def qmax(W):
    return W.q


@model.source
def source(U, W, x, t, k, qmax):
    return model.U(q=ti.cos(t) - k * qmax)
'''

ODE_CASE = """
[model]
name = "{model}"
params = {{ k = {k} }}
[grid]
cells = [8]
upper = [1.0]
[scheme]
integrator = "{integrator}"
riemann = "rusanov"
cfl = {cfl}
[time]
end = 1.0
[boundary]
x = "periodic"
[initial]
background = {{ q = 1.0 }}
"""


def run_ode(tmp_path, integrator, steps, k=0.0):
    path = tmp_path / "ode.py"
    path.write_text(SCALAR)
    text = ODE_CASE.format(model=path, integrator=integrator, cfl=0.5, k=k)
    sim = Simulation(precise(case_from_text(tmp_path, text)))
    for n in range(1, steps + 1):
        sim.advance(n / steps)
    assert sim.step_count == steps
    return sim


def test_time_dependent_source_is_integrated_at_the_stage_times(tmp_path):
    """q' = cos t, q(1) = 1 + sin 1: the error falls at least at each integrator's order
    (for pure quadrature SSP-RK3 is Simpson's rule, order 4). Wrong stage times would
    drop every scheme to first order."""
    for integrator, order in (("euler", 1), ("ssprk2", 2), ("ssprk3", 3), ("lsrk3", 3)):
        errors = []
        for steps in (8, 16):
            q = run_ode(tmp_path, integrator, steps).fields()["q"]
            assert np.ptp(q) == 0.0
            errors.append(abs(q[0] - (1.0 + np.sin(1.0))))
        measured = np.log2(errors[0] / errors[1])
        assert measured > order - 0.25, (integrator, errors, measured)


def test_global_value_is_the_grid_maximum_each_step(tmp_path):
    path = tmp_path / "ode.py"
    path.write_text(SCALAR)
    text = ODE_CASE.format(model=path, integrator="euler", cfl=0.5, k=1.0)
    sim = Simulation(precise(case_from_text(tmp_path, text)))
    q0 = np.linspace(1.0, 3.0, 8)
    sim.set_primitive(q0[:, None])
    dt = 0.0625
    sim.advance(dt)
    # one Euler step of q' = cos(0) - qmax with qmax = 3 taken over the whole grid
    assert np.allclose(sim.fields()["q"], q0 + dt * (1.0 - 3.0), rtol=0, atol=1e-15)


def test_a_derived_field_may_read_a_global_value(tmp_path):
    """q / qmax as an output field and a reduced diagnostics column: the global is the grid
    maximum of the last check (it ended the run with a raw KeyError at the first snapshot)."""
    path = tmp_path / "ode.py"
    path.write_text(SCALAR + '''

@model.derive("q_over_max", reduce="min")
def q_over_max(W, qmax):
    return W.q / qmax
''')
    text = ODE_CASE.format(model=path, integrator="euler", cfl=0.5, k=0.0) + "[output]\nfields = ['q', 'q_over_max']\n"
    (tmp_path / "out").mkdir()
    sim = Simulation(precise(case_from_text(tmp_path, text)), out_dir=tmp_path / "out")
    q0 = np.linspace(1.0, 4.0, 8)
    sim.set_primitive(q0[:, None])
    sim.solver.check_state()  # the check computes qmax
    fields = sim.fields()
    np.testing.assert_allclose(fields["q_over_max"], q0 / 4.0, rtol=1e-15)
    row = dict(zip(sim.diagnostics_columns(), sim.diagnostics_row()))
    assert row["min_q_over_max"] == pytest.approx(0.25, rel=1e-15)
    sim.write_snapshot()
    assert (tmp_path / "out" / "snapshot_00000.vti").is_file()


VECTOR_SOURCE = '''
"""A vector ODE per cell, dm/dt = 2 ey + 3 ez: a source works in the global frame."""
import taichi as ti
from taichiflow import Model

model = Model("push", conserved={"m": 3}, primitive={"m": 3}, velocity="m")


@model.to_primitive
def to_primitive(U):
    return model.W(m=U.m)


@model.to_conserved
def to_conserved(W):
    return model.U(m=W.m)


@model.flux
def flux(W, U):
    return model.U(m=0.0 * U.m)


@model.wave_speeds
def wave_speeds(W):
    return ti.Vector([0.0, 0.0])


@model.source
def source(U, W, x, t):
    return model.U(m=2.0 * model.ey + 3.0 * model.ez)
'''


def test_a_source_works_in_the_global_frame_with_its_unit_vectors(tmp_path):
    """The flux is written in the face's normal frame (ex the normal); a source is not rotated:
    model.ey and model.ez push along the grid's y and z in every cell, whatever the sweep."""
    path = tmp_path / "push.py"
    path.write_text(VECTOR_SOURCE)
    text = (ODE_CASE.replace('params = {{ k = {k} }}\n', '').replace("cells = [8]", "cells = [4, 4, 4]")
            .replace("upper = [1.0]", "upper = [1.0, 1.0, 1.0]")
            .replace('x = "periodic"', 'x = "periodic"\ny = "periodic"\nz = "periodic"')
            .replace("q = 1.0", "m = [0.0, 0.0, 0.0]"))
    sim = Simulation(precise(case_from_text(tmp_path, text.format(model=path, integrator="ssprk2", cfl=0.5))))
    for n in range(1, 5):
        sim.advance(n / 4)
    m = sim.fields()["m"]
    assert np.abs(m - np.array([0.0, 2.0, 3.0])).max() < 1e-12


@pytest.mark.parametrize("case,setting,message", [
    ("sod.toml", "model.params.gamma=0.5", "gamma = 0.5 is outside the range model 'euler' declares for it: gamma must be > 1"),
    ("sr_blast_2d.toml", "model.params.gamma=2.5", "gamma must be > 1 and <= 2"),
    ("dam_break_wet.toml", "model.params.g=-9.81", "g must be > 0"),
])
def test_a_parameter_outside_its_declared_range_is_refused_by_name(tmp_path, capsys, case, setting, message):
    from taichiflow.cli import main
    assert main(["run", str(CASES / case), "--set", setting, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_range_that_does_not_read_as_a_condition_is_a_model_error():
    from taichiflow.errors import ModelError
    from taichiflow.model import Model
    with pytest.raises(ModelError, match=r"ranges\['gamma'\]: expected a condition such as '> 1'"):
        Model("bad", conserved={"rho": 1}, primitive={"rho": 1}, params={"gamma": 1.4}, ranges={"gamma": "gamma > 1"})
    with pytest.raises(ModelError, match="ranges: 'beta' is not a parameter of the model"):
        Model("bad", conserved={"rho": 1}, primitive={"rho": 1}, params={"gamma": 1.4}, ranges={"beta": "> 1"})
