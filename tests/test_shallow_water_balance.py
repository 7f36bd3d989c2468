"""Shallow water over a bed: lakes at rest stay at rest (well balanced, wet and partly dry, 1D
and 2D, f64 and f32), and Thacker's oscillations in a bowl against their exact solutions, with
shores that advance and retreat over dry bed, mass kept to rounding and no negative depth.

Bounds are the measured L1 errors plus about 20% (docs/numerics.md has the table).
"""
import numpy as np
import pytest

from helpers import CASES, case_from_text, simulate
from shallow_water_exact import thacker_1d, thacker_2d
from taichiflow.case import load_case

LAKE_2D = """
[case]
name = "lake_2d"
[model]
name = "shallow_water"
[grid]
cells = [50, 30]
upper = [25.0, 15.0]
[scheme]
reconstruction = "plm"
limiter = "{limiter}"
riemann = "{riemann}"
integrator = "ssprk2"
cfl = 0.45
[time]
end = 5.0
[boundary]
x = "wall"
y = "periodic"
[initial]
values = "point"
background = {{ h = 0.0, vel = [0.0, 0.0, 0.0], bed = 0.0, manning = 0.0 }}
[[initial.perturbations]]
kind = "formula"
variable = "bed"
expression = "max(0, 0.2 - 0.05*((x - 10)**2 + (y - 7)**2)) + 0.02*sin(x)*cos(0.4*pi*y)"
[[initial.perturbations]]
kind = "formula"
variable = "h"
expression = "max(0, {level} - bed)"
"""



@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("case_name", ["lake_at_rest.toml", "lake_at_rest_emerged.toml"])
def test_lake_at_rest_stays_at_rest_1d(case_name, precision):
    """Immersed and emerged bump, 10 s (~200 steps): h and vel as they were to 1e-12 in f64;
    in f32 h to a few roundings of 0.5 m (measured: one) and vel below 1e-6 m/s (5e-7 of the
    wave speed; measured 2.6e-7 at 10 s, 7.9e-7 at 200 s: the f32 free surface h + bed is
    flat only to its own rounding); the island stays dry."""
    case = load_case(CASES / case_name)
    sim = simulate(case, precision=precision, until=0.0)
    before = sim.solver.primitive_array().copy()
    sim.advance(case["time"]["end"])
    after = sim.solver.primitive_array()
    depth_tolerance, speed_tolerance = (1e-12, 1e-12) if precision == "f64" else (4 * np.finfo(np.float32).eps * 0.5,
                                                                                    1e-6)
    assert sim.step_count > 100
    assert np.abs(after[:, 0] - before[:, 0]).max() <= depth_tolerance
    assert np.abs(after[:, 1:4]).max() <= speed_tolerance
    x = (np.arange(200) + 0.5) * 25.0 / 200
    level = 0.1 if "emerged" in case_name else 0.5
    dry = before[:, 0] == 0.0
    assert np.array_equal(dry, np.maximum(0, 0.2 - 0.05 * (x - 10) ** 2) >= level)
    assert dry.sum() == (22 if level < 0.2 else 0)
    assert np.all(after[dry, 0] == 0.0)


@pytest.mark.parametrize("riemann", ["hll", "rusanov"])
@pytest.mark.parametrize("level", [0.5, 0.1])
def test_lake_at_rest_stays_at_rest_2d(tmp_path, level, riemann):
    """A round bump with ripples, immersed (level 0.5) and an island (0.1), in 2D with both
    solvers and the minmod limiter: still to 1e-12 in f64."""
    case = case_from_text(tmp_path, LAKE_2D.format(level=level, riemann=riemann, limiter="minmod"))
    sim = simulate(case, until=0.0)
    before = sim.solver.primitive_array().copy()
    sim.advance(5.0)
    after = sim.solver.primitive_array()
    assert sim.step_count > 20
    assert np.abs(after[..., 0] - before[..., 0]).max() <= 1e-12
    assert np.abs(after[..., 1:4]).max() <= 1e-12
    assert (before[..., 0] == 0.0).any() == (level < 0.2)


# cells: L1 bound of h (m^2) after one period
THACKER_1D = {100: 6.9e-3, 200: 2.3e-3, 400: 8.0e-4}


def test_thacker_1d_one_period():
    """The planar surface rocking in a parabola: after one period h matches the exact solution
    (L1 falling with resolution), the volume is the same to rounding, no depth went negative."""
    errors = {}
    for cells, bound in THACKER_1D.items():
        case = load_case(CASES / "thacker_1d.toml", [f"grid.cells=[{cells}]"])
        sim = simulate(case, until=0.0)
        volume = sim.solver.conserved_array()[:, 0].sum()
        lowest = []
        sim.advance(case["time"]["end"], on_step=lambda s: lowest.append(s.solver.conserved_array()[:, 0].min()),
                    every=50)
        u = sim.solver.conserved_array()
        x = (np.arange(cells) + 0.5) * 4.0 / cells
        h, _, _ = thacker_1d(x, case["time"]["end"])
        errors[cells] = np.abs(u[:, 0] - h).sum() * 4.0 / cells
        assert errors[cells] < bound, errors
        assert abs(u[:, 0].sum() - volume) <= 1e-13 * volume
        assert min(lowest) >= 0.0 and u[:, 0].min() >= 0.0
    assert errors[100] > errors[200] > errors[400], errors


def test_thacker_1d_shores_move_and_dry_bed_stays_still():
    """At a quarter period the water has run up the right side: the wet interval (deeper than
    1 mm) is the exact one to two cells, the bed ahead of the advancing shore is dry and still,
    and what the receding shore leaves behind is a film."""
    case = load_case(CASES / "thacker_1d.toml", ["grid.cells=[200]"])
    quarter = case["time"]["end"] / 4
    sim = simulate(case, until=quarter)
    w = sim.solver.primitive_array()
    x = (np.arange(200) + 0.5) * 4.0 / 200
    h, u, _ = thacker_1d(x, sim.t)
    wet, exact_wet = x[w[:, 0] > 1e-3], x[h > 0]  # (the receding shore leaves a film thinner than that)
    assert abs(wet.min() - exact_wet.min()) < 0.05 and abs(wet.max() - exact_wet.max()) < 0.05
    beyond = (x > exact_wet.max() + 0.05) | (x < exact_wet.min() - 0.05)
    ahead = x > exact_wet.max() + 0.05  # the advancing shore: bed not yet reached, dry
    assert np.all(w[ahead, 0:4] == 0.0)
    # behind the receding shore a film may stay (measured: 1.2e-6 m at 3 m/s, the velocity of
    # the layer it was cut from): thinner than 1e-5 m, a discharge below 1e-5 m^2/s
    assert np.all(w[beyond, 0] < 1e-5) and np.all(np.abs(w[beyond, 0] * w[beyond, 1]) < 1e-5)
    middle = (x > 1.5) & (x < 2.5)
    np.testing.assert_allclose(w[middle, 1], u[middle], rtol=0.02)


# cells per axis: L1 bound of h (m^3) after one period
THACKER_2D = {32: 1.25e-2, 64: 4.9e-3}


def test_thacker_2d_one_period():
    """The paraboloid's breathing surface after one period: L1 of h against the exact solution
    falls with resolution; volume to rounding; never a negative depth."""
    errors = {}
    for cells, bound in THACKER_2D.items():
        case = load_case(CASES / "thacker_2d.toml", [f"grid.cells=[{cells},{cells}]"])
        sim = simulate(case, until=0.0)
        volume = sim.solver.conserved_array()[..., 0].sum()
        sim.advance(case["time"]["end"])
        u = sim.solver.conserved_array()
        x = (np.arange(cells) + 0.5) * 4.0 / cells
        X, Y = np.meshgrid(x, x, indexing="ij")
        h, _, _, _ = thacker_2d(X, Y, case["time"]["end"])
        errors[cells] = np.abs(u[..., 0] - h).sum() * (4.0 / cells) ** 2
        assert errors[cells] < bound, errors
        assert abs(u[..., 0].sum() - volume) <= 1e-13 * volume
        assert u[..., 0].min() >= 0.0
    assert errors[32] > errors[64], errors
