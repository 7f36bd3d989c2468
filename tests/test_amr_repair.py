"""The model's repair() on adaptive grids ([amr]), as on the uniform one: blocks all at one level
repair the cells the uniform solver repairs, step by step, and reach its state; a second check
of a repaired state changes nothing; the cavity array with tension_alpha and vacuum_density
runs past the step where the adaptive check, which did not repair, stopped it. And the
density limiter acts as on the uniform grid."""
import csv
import re

import numpy as np
import pytest

from helpers import CASES, ROOT, case_from_text, precise
from taichiflow.cli import main
from taichiflow.errors import SimulationError
from taichiflow.run import Simulation
from taichiflow.run.adaptive import AdaptiveRun

# Two water slabs pulled apart at 0.1 mm/us from an air layer 0.04 mm wide (the gap of
# tests/test_positivity.py, 2D: 200 x 8 cells, y periodic), with tension_alpha and
# vacuum_density: its mixture cells go into tension from the first step, and repair() gives
# them more gas (224 to 288 cells a step).
GAP = """
[model]
name = "two_phase"
params = { gamma_liquid = 6.59, pc_liquid = 0.4069, gamma_gas = 1.4, pc_gas = 0.0, tension_alpha = 1.0e-3, vacuum_density = 1.0e-6 }
[materials]
water = { gamma = 6.59, pc = 0.4069 }
air = { gamma = 1.4, pc = 0.0 }
[grid]
cells = [200, 8]
upper = [1.0, 0.04]
[amr]
block_cells = 8
max_level = 0
[scheme]
reconstruction = "weno5z"
riemann = "hllc"
wave_speeds = "einfeldt"
weno_epsilon = 1.0e-40
cfl = 0.4
[time]
end = 100.0
[boundary]
x = "outflow"
y = "periodic"
[initial]
background = { material = "water", rho = 1.0, vel = [-0.1, 0.0, 0.0], p = 1.0e-4 }
[[initial.regions]]
shape = "half_space"
point = [0.5, 0.0]
normal = [1.0, 0.0]
state = { material = "water", rho = 1.0, vel = [0.1, 0.0, 0.0], p = 1.0e-4 }
[[initial.regions]]
shape = "box"
lower = [0.48, -1.0]
upper = [0.52, 1.0]
smoothing = 0.005
state = { material = "air", rho = 0.001, vel = [0.0, 0.0, 0.0], p = 1.0e-4 }
"""


def test_the_density_limiter_carries_the_emptying_gap_through_as_on_the_uniform_grid(tmp_path):
    """Each face of the adaptive sweeps takes the upper state of the cell below it and the lower
    one of the cell above, each cell's two face states limited together (kernels/amr/fluxes.py):
    blocks all at the root level then give the uniform solver's limited run (261 steps to t =
    0.3, the gap's middle emptied to 2.5e-5) to 1e-9 (measured 2.6e-11 on the CPU). Without the
    limiter the gap's middle cell reaches rho < 0 at step 195 on both grids. (The adaptive
    sweeps never called the limiter before: it was refused.)"""
    uniform = Simulation(precise(case_from_text(tmp_path, re.sub(r"\[amr\][^[]*", "", GAP),
                                                ["scheme.density_limiter=true"], name="uniform.toml")))
    uniform.advance(0.3, max_steps=400)
    t, steps, w = uniform.t, uniform.step_count, uniform.solver.primitive_array()  # (before Taichi restarts)
    assert t == pytest.approx(0.3) and w[..., 0].min() > 0.0
    with pytest.raises(SimulationError, match=r"step 195 .*rho = -.*or \[scheme\] density_limiter = true"):
        AdaptiveRun(precise(case_from_text(tmp_path, GAP))).advance(0.3, max_steps=400)
    run = AdaptiveRun(precise(case_from_text(tmp_path, GAP, ["scheme.density_limiter=true"])))
    run.advance(t, max_steps=steps)
    assert run.step_count == steps and run.t == pytest.approx(t, rel=1e-12)
    assert np.max(np.abs(run.uniform(0) - w)) < 1e-9


def test_one_level_repairs_the_cells_the_uniform_solver_repairs(tmp_path, arch):
    """Blocks all at the root level: the same cells repaired at each of 10 steps (counted alike:
    224, 240, ...) and the uniform solver's W to round-off (measured: bit for bit on the CPU,
    3.8e-14 at most on an H200). Without the repairs the adaptive run stopped at its first step."""
    steps = 10
    uniform = Simulation(precise(case_from_text(tmp_path, re.sub(r"\[amr\][^[]*", "", GAP), name="uniform.toml"), arch))
    counted = []
    uniform.advance(100.0, max_steps=steps, on_step=lambda sim: counted.append(sim.solver.take_repair_count()))
    t, w = uniform.t, uniform.solver.primitive_array()  # (before Taichi restarts)
    run = AdaptiveRun(precise(case_from_text(tmp_path, GAP), arch))
    adaptive = []
    run.advance(t, max_steps=steps, after_step=lambda dt: adaptive.append(run.solver.take_repair_count()))
    assert run.step_count == steps and run.t == pytest.approx(t, rel=1e-14)
    assert adaptive == counted and min(counted) >= 200
    assert np.max(np.abs(run.uniform(0) - w)) < 1e-12


def test_a_second_check_of_a_repaired_state_changes_nothing(tmp_path, arch):
    """As on the uniform grid (tests/test_recovery.py): in f32 with fast math, 30% of the gap's
    cells pushed below the pressure floor, checked twice: the first check repairs each of them,
    the second nothing, and finds the first one's U, W and rate bit for bit. (The check reads W
    of a repaired row back from U, as the uniform one, for compilers that round repair()'s
    registers apart; W from the registers passes here too, on this CPU and on an H200.)"""
    case = precise(case_from_text(tmp_path, GAP, ["grid.cells=[64, 32]", "grid.upper=[1.0, 0.5]"]), arch, "f32")
    case["run"]["fast_math"] = True
    run = AdaptiveRun(case)
    solver = run.solver
    u = solver.conserved_blocks().astype(np.float64)
    rng = np.random.default_rng(1)
    pushed = rng.random(u.shape[:-1]) < 0.3
    gamma, pi = u[..., 5], u[..., 6]
    u[..., 1] = np.where(pushed, u[..., 0] * rng.normal(0.0, 0.05, pushed.shape), u[..., 1])
    p = -pi / (gamma + 1.0) - 1e-3 * rng.random(pushed.shape) - 1e-6  # p + pc below the floor
    kinetic = 0.5 * (u[..., 1:4] ** 2).sum(-1) / u[..., 0]
    u[..., 4] = np.where(pushed, gamma * p + pi + kinetic, u[..., 4])
    solver.take_repair_count()
    solver.load(solver.forest.leaves, u.astype(np.float32))  # (checked: the first check)
    first = (solver.take_repair_count(), solver.conserved_blocks(), primitives(solver), solver.check_fields.rate[None])
    rate, bad = solver.check_state()
    second = (solver.take_repair_count(), solver.conserved_blocks(), primitives(solver))
    assert bad is None and first[0] == np.count_nonzero(pushed) > 500 and second[0] == 0
    assert rate == first[3]
    np.testing.assert_array_equal(second[1], first[1])
    np.testing.assert_array_equal(second[2], first[2])


def test_two_ranks_repair_the_copies_of_their_neighbours_leaves_as_one_rank(tmp_path):
    """The gap refined (max_level 1, a regrid every 2 steps) on 2 MPI ranks, whose boundary in
    the blocks' Morton order runs through it: the copies of the other rank's leaves are repaired
    as their owner repairs them (kernels/amr/transfer.py), so the snapshots are one rank's byte
    for byte and the diagnostics rows the same (unrepaired copies: the totals differ from step 1)."""
    from test_amr_mpi import same_run
    from test_mpi import launch
    text = '[case]\nname = "gap_amr"\n' + GAP.replace("max_level = 0", "max_level = 1\nregrid_every = 2") \
        + "[output]\ninterval = 0.01\ndiagnostics_every = 1\n"
    (tmp_path / "gap.toml").write_text(text)
    arguments = ["run", str(tmp_path / "gap.toml"), "--quiet", "--arch", "cpu", "--precision", "f64", "--set",
                 "time.end=0.02", "--out"]
    assert main(arguments + [str(tmp_path / "one")]) == 0
    done = launch(2, ["-m", "taichiflow.cli", *arguments, str(tmp_path / "two")], timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "on 2 MPI ranks" in (tmp_path / "two" / "run.log").read_text()
    same_run(tmp_path / "one", tmp_path / "two")
    with open(tmp_path / "two" / "diagnostics.csv") as f:  # (the rows count the repairs of every rank's leaves)
        repairs = [int(row["repairs"]) for row in csv.DictReader(f)]
    assert sum(repairs) > 0 and repairs[0] == 0


def primitives(solver) -> np.ndarray:
    blocks = solver.primitive_blocks()
    return np.stack([blocks[b] for b in solver.forest.leaves])


# The quarter cavity array (cases/cavity_array_quarter.toml: tension_alpha, vacuum_density)
# with the bubble line one level finer in blocks of 8^3, as cases/cavity_array_amr.toml refines
# it, without density_limiter and retry (which this test's run does without).
CAVITY_AMR = """
[amr]
block_cells = 8
max_level = 1
criteria_max_level = 1
regrid_every = 8
fields = ["p"]
[[amr.regions]]
shape = "box"
lower = [0.3, 0.5, 0.5]
upper = [3.15, 0.67, 0.67]
level = 1
"""


def test_the_cavity_array_runs_past_the_stop_of_the_unrepaired_check(tmp_path):
    """8 points per radius at the root (128 x 16 x 16), 16 on the bubble line, f32 with fast
    math on the CPU: the adaptive check that did not repair stopped the run after step 116 (t =
    0.3141: step 117 left an inadmissible mixture cell); repaired (2 cells at step 117, 7 by step
    121), the run goes on to t = 0.33 with no bad cell."""
    text = (CASES / "cavity_array_quarter.toml").read_text()
    text = re.sub(r"\nretry = \{[^}]*\}\n", "\n", text.replace("\ndensity_limiter = true\n", "\n")) + CAVITY_AMR
    case = case_from_text(tmp_path, text, ["grid.cells=[128, 16, 16]", "run.arch='cpu'", "run.precision='f32'",
                                           "time.end=0.33"])
    assert not case["scheme"].get("density_limiter") and not case["scheme"].get("retry")
    run = AdaptiveRun(case)
    repairs = []
    run.advance(0.33, after_step=lambda dt: repairs.append(run.solver.take_repair_count()))
    assert run.t == pytest.approx(0.33, rel=1e-12) and run.step_count > 117
    repaired_steps = [k + 1 for k, count in enumerate(repairs) if count]
    assert repaired_steps and repaired_steps[0] > 100 and sum(repairs) > 0
