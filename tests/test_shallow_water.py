"""Shallow water (models/shallow_water.py): dam breaks against their exact solutions, wet and
dry fronts, Manning friction, and what the model refuses. The lake at rest and Thacker's
oscillations are in test_shallow_water_balance.py.

Bounds are the measured L1 errors at 400 cells plus about 20% (docs/numerics.md has the
table); errors must also fall with resolution.
"""
import numpy as np
import pytest

from helpers import CASES, case_from_text, simulate
from shallow_water_exact import dam_break_cell_averages
from taichiflow.case import load_case
from taichiflow.errors import ModelError

G = 9.81


def run_dam_break(case_name, cells, extra=()):
    case = load_case(CASES / case_name, [f"grid.cells=[{cells}]", *extra])
    sim = simulate(case)
    return sim, sim.solver.primitive_array()


# case: (h_right, {cells: relative L1 bound of h})
DAM_BREAKS = {"dam_break_wet.toml": (0.001, {100: 4.5e-3, 200: 2.8e-3, 400: 1.25e-3}),
              "dam_break_dry.toml": (0.0, {100: 7.0e-3, 200: 3.3e-3, 400: 1.65e-3})}


@pytest.mark.parametrize("case_name", sorted(DAM_BREAKS))
def test_dam_break_against_exact_solution(case_name):
    """Stoker (wet bed) and Ritter (dry bed) at t = 6 s: L1 of h against the exact cell
    averages falls with resolution and stays under the measured bound at each grid."""
    h_right, bounds = DAM_BREAKS[case_name]
    errors = {}
    for cells, bound in bounds.items():
        sim, w = run_dam_break(case_name, cells)
        exact = dam_break_cell_averages(np.linspace(0.0, 10.0, cells + 1), 6.0, 0.005, h_right, 5.0)
        errors[cells] = np.abs(w[:, 0] - exact).sum() / np.abs(exact).sum()
        assert errors[cells] < bound, (cells, errors)
    assert errors[100] > errors[200] > errors[400], errors


def test_dry_front_conserves_mass_and_never_goes_negative():
    """Ritter's front floods a dry bed: the volume stays the same to rounding every step, no
    depth is ever negative, and the dry cells ahead of the front are written h = 0, vel = 0."""
    case = load_case(CASES / "dam_break_dry.toml")
    sim = simulate(case, until=0.0)
    volumes, lowest = [], []

    def record(_sim):
        u = sim.solver.conserved_array()
        volumes.append(u[:, 0].sum())
        lowest.append(u[:, 0].min())

    sim.advance(6.0, on_step=record)
    assert len(volumes) > 100
    assert np.ptp(volumes) <= 4 * np.finfo(float).eps * volumes[0] * 400 ** 0.5
    assert min(lowest) >= 0.0
    w = sim.solver.primitive_array()
    x = (np.arange(400) + 0.5) * 10.0 / 400
    front = 5.0 + 2.0 * np.sqrt(G * 0.005) * 6.0
    ahead = x > front + 0.25
    assert ahead.sum() > 40 and np.all(w[ahead, 0] == 0.0) and np.all(w[ahead, 1:4] == 0.0)


def test_static_fields_never_change():
    """The bed and Manning's coefficient come out of a run bit for bit as they went in, with
    every integrator (SSP-RK3's stage weights 3/4 and 1/4 would round them otherwise)."""
    for integrator in ("ssprk3", "lsrk3"):
        case = load_case(CASES / "dam_break_wet.toml", ["grid.cells=[64]", f"scheme.integrator='{integrator}'"])
        sim = simulate(case, until=0.0)
        w = sim.solver.primitive_array()
        w[:, 4] = 0.1 + 0.01 * np.sin(np.arange(64) / 3.0) / 3.0  # bed
        w[:, 5] = 0.013 + 1e-3 * np.cos(np.arange(64)) / 7.0  # manning
        sim.set_primitive(w)
        before = sim.solver.conserved_array()[:, 4:].copy()
        sim.advance(6.0)
        after = sim.solver.conserved_array()[:, 4:]
        assert sim.step_count > 10
        assert np.array_equal(before, after), integrator


FRICTION = """
[case]
name = "friction"
[model]
name = "shallow_water"
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
background = {{ h = {h}, vel = [{u}, 0.0, 0.0], bed = 0.0, manning = {n} }}
"""


@pytest.mark.parametrize("depth", [0.5, 1e-4])
def test_manning_friction_slows_a_uniform_flow_as_the_ode_says(tmp_path, depth):
    """A uniform flow over a flat bed decays as du/dt = -g n^2 |u| u / h^(4/3), exactly
    u(t) = u0 / (1 + g n^2 u0 t / h^(4/3)). The semi-implicit step is first order in dt and
    stays stable and of one sign however thin the layer (h = 0.1 mm: g n^2 u0 / h^(4/3)
    ~ 2e3 per second, 100x the explicit limit at these time steps)."""
    u0, n = 1.0, 0.03
    case = case_from_text(tmp_path, FRICTION.format(h=depth, u=u0, n=n))
    sim = simulate(case, until=0.0)
    speeds = []
    sim.advance(2.0, on_step=lambda _s: speeds.append(sim.solver.primitive_array()[0, 1]))
    rate = G * n * n / depth ** (4.0 / 3.0)
    exact = u0 / (1.0 + rate * u0 * 2.0)
    w = sim.solver.primitive_array()
    assert np.ptp(w[:, 1]) == 0.0  # uniform
    assert np.all(np.diff(speeds) < 0.0) and min(speeds) > 0.0
    assert abs(w[0, 1] - exact) / exact < (0.02 if depth > 0.1 else 0.25), (w[0, 1], exact)


def test_refuses_what_the_model_is_not_written_for(tmp_path):
    """A 3D grid, finite differences (no conservation form) and reconstructed variables other
    than the model's own are refused before anything compiles, naming the key."""
    text = FRICTION.format(h=1.0, u=0.0, n=0.0)
    cases = {
        "3D": (["grid.cells=[8,8,8]", "grid.upper=[1,1,1]", "boundary.y='periodic'", "boundary.z='periodic'"],
               "written for 1D or 2D grids, not 3D"),
        "fd": (["scheme.method='finite_difference'", "scheme.riemann='rusanov'"], "face balance terms"),
        "conserved": (["scheme.variables='conserved'"], "variables = 'primitive'"),
    }
    for name, (overrides, message) in cases.items():
        with pytest.raises(ModelError, match=message):
            simulate(case_from_text(tmp_path, text, overrides), until=0.0)


def test_circular_dam_break_stays_symmetric():
    """The 2D circular dam break at 64^2: the depth is its own transpose and mirror images to
    1e-12 m (the axes are treated alike), the bore has run out past the dam's radius, and the
    volume is the initial one to rounding."""
    case = load_case(CASES / "circular_dam_break.toml", ["grid.cells=[64,64]"])
    sim = simulate(case, until=0.0)
    volume = sim.solver.conserved_array()[..., 0].sum()
    sim.advance(case["time"]["end"])
    w = sim.solver.primitive_array()
    h = w[..., 0]
    assert np.abs(h - h.T).max() <= 1e-12 and np.abs(h - h[::-1, :]).max() <= 1e-12
    assert np.abs(w[..., 1] - w[..., 2].T).max() <= 1e-12
    x = (np.arange(64) + 0.5) * 40.0 / 64 - 20.0
    r = np.hypot(x[:, None], x[None, :])
    assert r[h > 1.05].max() > 5.5 + 1.0 and h.max() <= 2.0  # (no overshoot; the centre still at rest)
    assert abs(sim.solver.conserved_array()[..., 0].sum() - volume) <= 1e-13 * volume
