"""[scheme] dimensional_splitting: each axis a whole forward-Euler step of its own, x y z then
z y x (kernels/plan.py: split; kernels/solver.py: _launch_split_step)."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise, simulate
from taichiflow.case import load_case
from taichiflow.errors import ModelError
from taichiflow.run import Simulation
from test_model_hooks import ODE_CASE, SCALAR
from test_sweep import plan_of

SCHEME = ["scheme.reconstruction='plm'", "scheme.limiter='minmod'", "scheme.riemann='hll'", "scheme.integrator='euler'",
          "scheme.cfl=0.4"]


def sod_along(axis: int, cells: int = 64, across: int = 4) -> np.ndarray:
    """rho of Sod's problem along `axis` of a 2D grid (periodic across), split, at t = 0.2."""
    grid = [cells, across] if axis == 0 else [across, cells]
    normal = [1.0, 0.0] if axis == 0 else [0.0, 1.0]
    boundary = ["boundary.x='outflow'", "boundary.y='periodic'"] if axis == 0 else ["boundary.x='periodic'",
                                                                                   "boundary.y='outflow'"]
    case = load_case(CASES / "sod.toml", [f"grid.cells={grid}", "grid.lower=[0.0, 0.0]", "grid.upper=[1.0, 1.0]",
                                          f"initial.regions.0.point={[0.5 * n for n in normal]}",
                                          f"initial.regions.0.normal={normal}", "scheme.dimensional_splitting=true",
                                          *boundary, *SCHEME])
    return simulate(case).fields()["rho"]


def test_a_split_step_of_a_one_dimensional_flow_is_the_one_dimensional_step(arch):
    """Along either axis of a 2D grid, the flow is the 1D run's (the sweep across sees uniform
    columns, whose flux differences are exactly zero), uniform across, to round-off."""
    one = simulate(load_case(CASES / "sod.toml", ["grid.cells=[64]", *SCHEME]), arch).fields()["rho"]
    for axis in (0, 1):
        rho = sod_along(axis)
        cut = rho[:, 0] if axis == 0 else rho[0, :]
        assert np.abs(rho - (cut[:, None] if axis == 0 else cut[None, :])).max() == 0.0
        assert np.abs(cut - one).max() < 1e-13, axis
        assert cut.max() - cut.min() > 0.85 and 0.2 < cut[40] < 0.5  # (the waves are there: 1 | 0.125, plateaus between)


def test_a_split_step_conserves_and_alternates_the_order_of_the_axes(arch):
    """A 2D Riemann problem across the diagonal, periodic: totals constant to round-off; the
    result differs from the unsplit Euler step (the axes see each other's updates) and from
    always sweeping x first (Strang's alternation: x y, then y x). (One Simulation at a time:
    each starts Taichi afresh.)"""
    base = ["grid.cells=[24, 24]", "grid.lower=[0.0, 0.0]", "grid.upper=[1.0, 1.0]", "boundary.x='periodic'",
            "boundary.y='periodic'", "initial.regions.0.point=[0.5, 0.5]", "initial.regions.0.normal=[0.6, 0.8]", *SCHEME]
    split = Simulation(precise(load_case(CASES / "sod.toml", base + ["scheme.dimensional_splitting=true"]), arch))
    before = split.solver.reductions()[0]
    split.advance(1.0, max_steps=6)
    after = split.solver.reductions()[0]
    assert np.abs(after - before).max() <= 1e-13 * np.abs(before).max()
    rho_split, dts = split.fields()["rho"], []
    x_first = Simulation(precise(load_case(CASES / "sod.toml", base + ["scheme.dimensional_splitting=true"]), arch))
    for k in range(6):  # every step x then y (index 0), with the dt the device clock picks
        rate, _ = x_first.solver.check_state()
        x_first.solver.step(0.4 / rate, x_first.t, index=0)
        x_first.t += 0.4 / rate
    x_first.solver.refresh_primitives()
    rho_x_first = x_first.solver.primitive_array()[..., 0]
    rho_unsplit = simulate(load_case(CASES / "sod.toml", base), arch, max_steps=6).fields()["rho"]
    assert np.abs(rho_split - rho_unsplit).max() > 1e-4
    assert np.abs(rho_split - rho_x_first).max() > 1e-6


def test_the_split_plan_walks_every_axis_and_updates_u_in_each():
    plan = plan_of(load_case(CASES / "sedov3d.toml", ["scheme.dimensional_splitting=true", *SCHEME]))
    assert plan.split and not plan.fused and plan.walked == (0, 1, 2)
    bits = [[launch.stage_bits for launch in sub_step] for sub_step in plan.launches()]
    save_u0, ends_step = 1 << 2, 1 << 4
    assert [row[0] & save_u0 != 0 for row in bits] == [True, False, False]  # U0 kept before the first axis
    assert [row[0] & ends_step != 0 for row in bits] == [False, False, True]  # after_step after the last
    assert "dimensionally split" in plan.describe()


def test_a_multi_stage_integrator_or_a_source_term_is_refused(tmp_path):
    with pytest.raises(ValueError, match="one-stage integrator"):
        plan_of(load_case(CASES / "sedov3d.toml", ["scheme.dimensional_splitting=true"]))
    path = tmp_path / "ode.py"  # (a model with a source: the sweeps would add it once per axis)
    path.write_text(SCALAR)
    text = ODE_CASE.format(model=path, integrator="euler", cfl=0.5, k=0.0).replace(
        "cells = [8]\nupper = [1.0]", "cells = [8, 8]\nupper = [1.0, 1.0]").replace(
        'x = "periodic"', 'x = "periodic"\ny = "periodic"')
    text = text.replace('cfl = 0.5', 'cfl = 0.5\ndimensional_splitting = true')
    with pytest.raises(ModelError, match="source term"):
        Simulation(case_from_text(tmp_path, text))
