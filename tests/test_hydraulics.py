"""Hydraulic boundaries and friction laws of shallow water (kernels/hydraulic_boundaries.py,
models/shallow_water.py): SWASHES' steady flows over a bump (and what a zero-gradient outlet
makes of the first), a discharge ramp against a stage, a lake at rest between two stages,
water let into a dry channel, a supercritical inlet, a channel along y entered through its
upper face, the backwater curves of Manning's, Chézy's and Darcy-Weisbach's laws and the
uniform decay of the latter two, and what is refused.

Bounds are the measured errors plus about 20% (docs/numerics.md has them); the discharge away
from the bump is the imposed one to rounding once the flow is steady.
"""
import numpy as np
import pytest

import hydraulics_exact as exact
from helpers import CASES, case_from_text, precise, simulate
from taichiflow.case import CaseError, load_case
from taichiflow.errors import ModelError
from taichiflow.run import Simulation

LENGTH = 25.0

# case: (cells, end time, imposed discharge, analytic depth, L1 bound of h (m²), bounds of
# |q / q_in - 1| off the bump and over it (the cells beside a jump left out))
BUMPS = {
    "bump_subcritical.toml": (100, 200.0, 4.42, exact.bump_subcritical, 1.45e-2, 1e-5, 3.3e-3),
    "bump_transcritical.toml": (100, 100.0, 1.53, exact.bump_transcritical, 2.7e-2, 1e-5, 6.3e-3),
    "bump_transcritical_shock.toml": (200, 300.0, 0.18, exact.bump_transcritical_shock, 1.75e-2, 1e-4, 8.2e-3),
}


def centres(cells, length=LENGTH):
    return (np.arange(cells) + 0.5) * length / cells


def run_bump(case_name, cells, end, extra=()):
    case = load_case(CASES / case_name, [f"grid.cells=[{cells}]", f"time.end={end}", *extra])
    sim = simulate(case)
    return sim.solver.primitive_array(), sim.solver.conserved_array()[:, 1]


@pytest.mark.parametrize("case_name", sorted(BUMPS))
def test_steady_flow_over_a_bump(case_name):
    """From still water to the steady flow: the imposed discharge everywhere (to rounding off
    the bump, where the bed is flat) and Bernoulli's depth, through the critical depth at the
    top and a stationary jump for the transcritical flows."""
    cells, end, q_in, depth, l1_bound, q_off_bound, q_bound = BUMPS[case_name]
    w, q = run_bump(case_name, cells, end)
    x = centres(cells)
    off_bump = (x < 7.5) | (x > 13.0)
    beside_jump = np.abs(x - exact.jump_position()) < 2.5 * LENGTH / cells if "shock" in case_name else False
    deviation = np.abs(q / q_in - 1.0)
    assert deviation[off_bump].max() < q_off_bound, deviation[off_bump].max()
    assert deviation[~beside_jump].max() < q_bound, deviation[~beside_jump].max()
    l1 = np.abs(w[:, 0] - depth(x)).sum() * LENGTH / cells
    assert l1 < l1_bound, l1


def test_a_zero_gradient_outlet_misses_the_subcritical_flow():
    """The same inlet with the outlet copying its cell: the flow keeps the discharge but not the
    depth the outlet fixes, and the depth is off by far more than the bound above."""
    w, q = run_bump("bump_subcritical.toml", 100, 100.0, ['boundary.x=["discharge", "outflow"]',
                                                         "boundary.depth={}"])
    l1 = np.abs(w[:, 0] - exact.bump_subcritical(centres(100))).sum() * LENGTH / 100
    assert l1 > 100 * BUMPS["bump_subcritical.toml"][4], l1


def test_a_discharge_ramp_against_a_stage_reaches_the_same_flow(tmp_path):
    """The subcritical bump on a bed raised 0.5 m, the outlet's stage 2.5 m (depth 2 m there),
    the discharge ramped from 0 to 4.42 m²/s over 20 s: half way up the ramp the inlet passes
    half the discharge, and the steady flow is the one of the constant discharge."""
    case = load_case(CASES / "bump_subcritical.toml", [
        "grid.cells=[100]", "time.end=200.0", 'boundary.x=["discharge", "stage"]', "boundary.depth={}",
        "boundary.stage={x_upper=2.5}", "boundary.discharge={x_lower=[[0.0, 0.0], [20.0, 4.42]]}",
        'initial.perturbations.0.expression="0.5 + max(0, 0.2 - 0.05*(x - 10)**2)"',
        'initial.perturbations.1.expression="2.5 - bed"'])
    sim = simulate(case, until=10.0)
    q_inlet = sim.solver.conserved_array()[0, 1]
    assert abs(q_inlet - 2.21) < 0.02, q_inlet  # (2.200 measured)
    sim.advance(200.0)
    w, q = sim.solver.primitive_array(), sim.solver.conserved_array()[:, 1]
    assert abs(q[0] / 4.42 - 1.0) < 1e-5 and abs(q[-1] / 4.42 - 1.0) < 1e-5, (q[0], q[-1])
    l1 = np.abs(w[:, 0] - exact.bump_subcritical(centres(100))).sum() * LENGTH / 100
    assert l1 < BUMPS["bump_subcritical.toml"][4], l1


def test_a_lake_at_rest_stays_at_rest_between_two_stages():
    """Still water at 0.5 m over the bump on a bed that also rises 4 mm per metre, with the
    stage held at 0.5 m on both faces: the ghosts are the boundary cells' own state, and
    nothing moves, to rounding."""
    case = load_case(CASES / "lake_at_rest.toml", [
        "grid.cells=[50]", "time.end=2.0", 'boundary.x="stage"', "boundary.stage={x_lower=0.5, x_upper=0.5}",
        'initial.perturbations.0.expression="max(0, 0.2 - 0.05*(x - 10)**2) + 0.004*x"'])
    sim = simulate(case, until=0.0)
    before = sim.solver.primitive_array()
    sim.advance(2.0)
    after = sim.solver.primitive_array()
    assert sim.step_count >= 20
    assert np.abs(after[:, 0] - before[:, 0]).max() < 1e-15 and np.abs(after[:, 1]).max() < 1e-14


# The scheme of the bump cases (cases/bump_*.toml), and 10 s
SCHEME = """[scheme]
reconstruction = "plm"
limiter = "minmod"
riemann = "hll"
integrator = "ssprk2"
cfl = 0.45
[time]
end = 10.0
"""

DRY_CHANNEL = """
[model]
name = "shallow_water"
params = { g = 9.81, chezy = 40.0 }
[grid]
cells = [200]
upper = [100.0]
""" + SCHEME + """[boundary]
x = ["discharge", "outflow"]
discharge = { x_lower = [[0.0, 0.0], [2.0, 0.5]] }
[initial]
values = "point"
background = { h = 0.0, vel = [0.0, 0.0, 0.0], bed = 0.0, manning = 0.0 }
"""


def test_a_discharge_floods_a_dry_channel_with_and_without_skipping_dry_tiles(tmp_path):
    """A discharge ramped to 0.5 m²/s in 2 s into a dry flat channel (Chézy 40): the time step
    sees the ramp's top from the first step (the ghost's rate), the inlet's tile is active
    although the bed beside it is dry, so the water comes in: the volume is what the discharge
    brought (0.5 (10 - 1) = 4.5 m²; 4.474 measured, the series read at each step's start), the
    front 24 m out, and skipping the dry tiles changes no byte."""
    runs = {}
    for skip in (True, False):
        case = case_from_text(tmp_path, DRY_CHANNEL, [f"run.skip_idle={str(skip).lower()}"], name=f"{skip}.toml")
        sim = simulate(case)
        runs[skip] = sim.solver.conserved_array()
    assert np.array_equal(runs[True], runs[False])
    volume = runs[True][:, 0].sum() * 100.0 / 200
    assert abs(volume / 4.5 - 1.0) < 0.01, volume
    wet = np.nonzero(runs[True][:, 0] > 1e-3)[0]
    assert wet[0] == 0 and 20.0 < wet[-1] * 0.5 < 28.0, wet[-1] * 0.5


def test_a_supercritical_inlet_over_the_bump():
    """Depth 0.3 m and discharge 1.2 m²/s imposed (Froude 2.3) with nothing imposed at the
    outlet: exactly the inlet's state upstream of the bump, and Bernoulli's supercritical
    branch over it, deepest on the bump's top."""
    w, q = run_bump("bump_subcritical.toml", 100, 30.0, [
        'boundary.x=["supercritical_inflow", "outflow"]', "boundary.discharge={x_lower=1.2}",
        "boundary.depth={x_lower=0.3}", "initial.background.vel=[4.0]", 'initial.perturbations.1.expression="0.3"'])
    head = 1.2 ** 2 / (2 * exact.G * 0.3 ** 2) + 0.3
    x = centres(100)
    h = exact.bernoulli_depth(1.2, head, exact.bump(x), subcritical=False)
    upstream = x < 7.5
    np.testing.assert_allclose(w[upstream, 0], 0.3, rtol=1e-12)  # (what the inlet imposes, all of it)
    np.testing.assert_allclose(q[upstream], 1.2, rtol=1e-12)
    assert np.abs(q / 1.2 - 1.0).max() < 3.5e-2, np.abs(q / 1.2 - 1.0).max()  # (cells over the bump's edges)
    l1 = np.abs(w[:, 0] - h).sum() * LENGTH / 100
    assert l1 < 3.3e-2, l1  # (hydrostatic reconstruction's first-order error at a bed step; 7.8e-3 at 200 cells)


BUMP_CHANNEL = """
[model]
name = "shallow_water"
[grid]
cells = {cells}
upper = {upper}
""" + SCHEME + """[boundary]
{across} = "periodic"
{along} = {kinds}
depth = {{ {outlet} = 2.0 }}
discharge = {{ {inlet} = 4.42 }}
[initial]
values = "point"
background = {{ h = 0.0, vel = {vel}, bed = 0.0, manning = 0.0 }}
[[initial.perturbations]]
kind = "formula"
variable = "bed"
expression = "max(0, 0.2 - 0.05*({distance} - 10)**2)"
[[initial.perturbations]]
kind = "formula"
variable = "h"
expression = "2.0 - bed"
"""


def test_a_channel_along_y_entered_through_its_upper_face(tmp_path):
    """The subcritical bump along x (inlet at the lower face) and mirrored along y (inlet at the
    upper face, the flow running to -y), each with a cross flow of 0.3 m/s along the periodic
    other axis: the same depths and discharges, mirrored, to rounding, and the cross flow,
    which the ghosts copy, stays 0.3 m/s."""
    along_x = BUMP_CHANNEL.format(cells=[50, 3], upper=[25.0, 0.75], across="y", along="x",
                                  kinds='["discharge", "depth"]', outlet="x_upper", inlet="x_lower",
                                  vel="[0.0, 0.3]", distance="x")
    along_y = BUMP_CHANNEL.format(cells=[3, 50], upper=[0.75, 25.0], across="x", along="y",
                                  kinds='["depth", "discharge"]', outlet="y_lower", inlet="y_upper",
                                  vel="[0.3, 0.0]", distance="(25 - y)")
    wx = simulate(case_from_text(tmp_path, along_x, name="x.toml")).solver.primitive_array()
    wy = simulate(case_from_text(tmp_path, along_y, name="y.toml")).solver.primitive_array()
    assert np.abs(wx[:, 0, 1]).max() > 1.0  # (the flow has come in)
    for column in range(3):
        np.testing.assert_allclose(wy[column, ::-1, 0], wx[:, column, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(-wy[column, ::-1, 2], wx[:, column, 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(wx[..., 2], 0.3, rtol=0, atol=1e-12)
    np.testing.assert_allclose(wy[..., 1], 0.3, rtol=0, atol=1e-12)


# law: its coefficient, for q = 1 m²/s down a slope of 0.005: normal depths 0.598, 0.606 and
# 0.612 m, subcritical (critical depth 0.467 m)
LAWS = {"manning": 0.03, "chezy": 30.0, "darcy_weisbach": 0.09}
SLOPE, DISCHARGE, CHANNEL = 0.005, 1.0, 50.0


def friction_slope(law, coefficient, h, q=DISCHARGE, g=exact.G):
    return {"manning": coefficient ** 2 * q * q / h ** (10 / 3), "chezy": q * q / (coefficient ** 2 * h ** 3),
            "darcy_weisbach": coefficient * q * q / (8 * g * h ** 3)}[law]


def backwater_profile(law, coefficient, h_out, x):
    """The steady depth from the outlet's h_out upstream: dh/dx = (S0 - S_f) / (1 - Fr²), RK4
    on 20000 steps."""
    def slope(h):
        return (SLOPE - friction_slope(law, coefficient, h)) / (1 - DISCHARGE ** 2 / (exact.G * h ** 3))
    xs = np.linspace(CHANNEL, 0.0, 20001)
    step, h = xs[1] - xs[0], [h_out]
    for _ in xs[1:]:
        k1 = slope(h[-1])
        k2 = slope(h[-1] + 0.5 * step * k1)
        k3 = slope(h[-1] + 0.5 * step * k2)
        k4 = slope(h[-1] + step * k3)
        h.append(h[-1] + step * (k1 + 2 * k2 + 2 * k3 + k4) / 6)
    return np.interp(x, xs[::-1], np.array(h)[::-1])


FRICTION_CHANNEL = """
[model]
name = "shallow_water"
params = {{ g = 9.81{params} }}
[grid]
cells = [100]
upper = [{length}]
[scheme]
reconstruction = "plm"
limiter = "minmod"
riemann = "hll"
integrator = "ssprk2"
cfl = 0.45
[time]
end = 200.0
[boundary]
x = ["discharge", "depth"]
discharge = {{ x_lower = {q} }}
depth = {{ x_upper = {h_out} }}
[initial]
values = "point"
background = {{ h = {h}, vel = [{u}, 0.0, 0.0], bed = 0.0, manning = {manning} }}
[[initial.perturbations]]
kind = "formula"
variable = "bed"
expression = "{slope} * ({length} - x)"
"""


@pytest.mark.parametrize("law", sorted(LAWS))
def test_friction_law_sets_the_backwater_curve(tmp_path, law):
    """A channel of slope 0.005 starts in uniform flow at the law's normal depth; the outlet
    holds 1.5 times that depth, and the flow settles to the backwater (M1) curve of that law,
    which rises from the normal depth far upstream. The three laws' curves differ from each
    other by 1.2% to 3.5% (L1), 7 to 20 times the bound: a wrong coefficient or exponent fails.
    The error has settled by t = 200 s (measured there 1.51e-3 Chezy, 1.53e-3 Darcy-Weisbach,
    1.54e-3 Manning; 1.45e-3 to 1.54e-3 at 300 s, the end this test once ran to; 1.8e-3 to
    2.3e-3 at 150 s)."""
    coefficient = LAWS[law]
    h_normal = exact.normal_depth(DISCHARGE, SLOPE, **{law: coefficient})
    text = FRICTION_CHANNEL.format(params="" if law == "manning" else f", {law} = {coefficient}",
                                   manning=coefficient if law == "manning" else 0.0, length=CHANNEL,
                                   q=DISCHARGE, h=h_normal, u=DISCHARGE / h_normal, h_out=1.5 * h_normal,
                                   slope=SLOPE)
    sim = simulate(case_from_text(tmp_path, text))
    h = sim.solver.primitive_array()[:, 0]
    reference = backwater_profile(law, coefficient, 1.5 * h_normal, centres(100, CHANNEL))
    error = np.abs(h - reference).sum() / reference.sum()
    assert error < 1.8e-3, error
    assert reference[0] < 1.25 * h_normal  # (the curve has come down most of the way upstream)


UNIFORM_FLOW = """
[model]
name = "shallow_water"
params = {{ g = 9.81, {law} = {coefficient} }}
[grid]
cells = [8]
upper = [1.0]
[scheme]
reconstruction = "plm"
riemann = "hll"
integrator = "ssprk2"
cfl = 0.45
[time]
end = 2.0
[boundary]
x = "periodic"
[initial]
values = "point"
background = {{ h = {h}, vel = [1.0, 0.0, 0.0], bed = 0.0, manning = 0.0 }}
"""


@pytest.mark.parametrize("law, coefficient, rate", [("chezy", 30.0, exact.G / 30.0 ** 2),
                                                    ("darcy_weisbach", 0.09, 0.09 / 8)])
@pytest.mark.parametrize("depth", [0.5, 1e-4])
def test_friction_law_slows_a_uniform_flow_as_the_ode_says(tmp_path, law, coefficient, rate, depth):
    """A uniform flow over a flat periodic bed decays as du/dt = -k u² / h (k = g / C² or
    f / 8): u(t) = u0 / (1 + k u0 t / h). The implicit step adds k dt / h to 1/u, as the exact
    solution does, so it is exact to rounding, on a 0.1 mm layer too (k u0 / h ~ 100 per
    second), falling every step and never changing sign."""
    sim = simulate(case_from_text(tmp_path, UNIFORM_FLOW.format(law=law, coefficient=coefficient, h=depth)),
                   until=0.0)
    speeds = []
    sim.advance(2.0, on_step=lambda _s: speeds.append(sim.solver.primitive_array()[0, 1]))
    expected = 1.0 / (1.0 + rate * 2.0 / depth)
    w = sim.solver.primitive_array()
    assert np.ptp(w[:, 1]) == 0.0 and np.all(np.diff(speeds) < 0.0) and min(speeds) > 0.0
    assert abs(w[0, 1] - expected) / expected < 1e-12, (w[0, 1], expected)


HYDRAULIC_CASE = """
[model]
name = "{model}"
[grid]
cells = [20]
upper = [1.0]
[time]
end = 1.0
[boundary]
x = ["discharge", "outflow"]
discharge = {{ x_lower = 1.0 }}
[initial]
background = {background}
"""


def test_what_is_refused_is_one_line(tmp_path):
    """A hydraulic kind on a model without depth and gravity, a face without its value, a value
    on a face of another kind, a negative discharge, times that go back, and adaptive meshes."""
    euler = HYDRAULIC_CASE.format(model="euler", background="{ rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }")
    with pytest.raises(ModelError) as err:
        Simulation(precise(case_from_text(tmp_path, euler)))
    message = str(err.value)
    assert "[boundary] x = 'discharge' needs a model with primitive variable 'h' and parameter 'g'" in message
    assert "model 'euler' has no primitive variable 'h' or parameter 'g'" in message and "\n" not in message
    water = HYDRAULIC_CASE.format(model="shallow_water",
                                  background="{ h = 1.0, vel = [0.0], bed = 0.0, manning = 0.0 }")
    refusals = {
        "boundary.discharge={}": "[boundary] x: face x_lower is 'discharge', which imposes the discharge, but "
                                 "[boundary] discharge has no x_lower value",
        "boundary.depth={x_upper=1.0}": "[boundary] depth.x_upper: a value is given but face x_upper is "
                                        "'outflow', not 'depth' or 'supercritical_inflow'",
        "boundary.discharge={x_lower=-1.0}": "[boundary] discharge.x_lower: out of range: allowed values >= 0",
        "boundary.discharge={x_lower=[[5.0, 1.0], [2.0, 0.5]]}": "[boundary] discharge.x_lower: the times must "
                                                                 "increase, got [5.0, 2.0]",
        'boundary.x=["supercritical_inflow", "outflow"]': "face x_lower is 'supercritical_inflow', which imposes "
                                                          "the depth, but [boundary] depth has no x_lower value",
    }
    for override, expected in refusals.items():
        with pytest.raises(CaseError) as err:
            case_from_text(tmp_path, water, [override])
        assert expected in str(err.value) and "\n" not in str(err.value), (override, str(err.value))
    from taichiflow.run.build_amr import amr_refusal
    case = case_from_text(tmp_path, water, ["grid.cells=[32]", "amr={block_cells=8}"])
    assert amr_refusal(case).startswith("[boundary] x = 'discharge' is not supported with [amr]")
