"""[scheme] retry on adaptive grids ([amr]): a step that leaves an inadmissible cell is redone
from the last good state with the retry scheme, as on the uniform grid. Blocks all at one level
retry the uniform solver's steps and reach its state; through levels and regrids the totals
are kept, the rows count the retries and run.log names each one's bad cell; a retried step
that is still bad stops the run; restarts and two MPI ranks give one run's numbers bit for bit."""
import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, case_from_text, precise, simulate
from taichiflow import checkpoint
from taichiflow.cli import main
from taichiflow.errors import CaseError, SimulationError
from taichiflow.run.adaptive import AdaptiveRun

# A column of water 5 mm deep on a dry periodic bed (Ritter's dam break both ways): WENO3 drives
# the wet/dry fronts' cells negative in 9 of the first 18 steps (steps 6 to 14, 128 cells), PLM
# with the MC limiter mends each of them; the other steps keep WENO3's.
COLUMN = """
[case]
name = "column_amr"
[model]
name = "shallow_water"
params = { g = 9.81 }
[grid]
cells = [128]
upper = [10.0]
[scheme]
reconstruction = "weno3"
riemann = "hll"
integrator = "ssprk2"
cfl = 0.45
retry = { reconstruction = "plm", limiter = "mc" }
[time]
end = 2.0
[boundary]
x = "periodic"
[initial]
values = "point"
background = { h = 0.0, vel = [0.0, 0.0, 0.0], bed = 0.0, manning = 0.0 }
[[initial.regions]]
shape = "box"
lower = [3.0]
upper = [7.0]
state = { h = 0.005 }
"""
AMR = """
[amr]
block_cells = 8
max_level = 2
regrid_every = 2
"""
OUTPUT = """
[output]
interval = 1.0
"""


def adaptive(tmp_path, overrides=()):
    return AdaptiveRun(precise(case_from_text(tmp_path, COLUMN + AMR, overrides)))


def rows(folder: Path, without=("regrid_s",)) -> list:
    with open(folder / "diagnostics.csv") as f:
        return [{k: v for k, v in row.items() if k not in without} for row in csv.DictReader(f)]


def test_one_level_retries_the_uniform_solvers_steps_and_reaches_its_state(tmp_path):
    uniform = simulate(case_from_text(tmp_path, COLUMN, name="uniform.toml"))
    steps, t, retries = uniform.step_count, uniform.t, uniform.retries  # (no rows: the retries of the run)
    u = uniform.solver.conserved_array().copy()  # (before Taichi restarts)
    run = adaptive(tmp_path, ["amr.max_level=0"])
    retried = []
    run.advance(2.0, after_step=lambda dt: retried.append(run.take_retry_count()))
    assert run.step_count == steps == 18 and run.t == t
    assert run.retries == sum(retried) == retries == 9
    assert retried == [0] * 5 + [1] * 9 + [0] * 4  # (the other steps are the main scheme's)
    np.testing.assert_allclose(run.solver.conserved_blocks().reshape(u.shape), u, rtol=0, atol=1e-18)


def test_retried_steps_through_levels_keep_the_totals_and_are_counted_and_logged(tmp_path):
    (tmp_path / "case.toml").write_text(COLUMN + AMR + OUTPUT)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "case.toml"), "--out", str(out), "--quiet", "--arch", "cpu",
                 "--precision", "f64"]) == 0
    table = rows(out)
    retries = [int(row["retries"]) for row in table]
    assert list(table[0])[3:6] == ["fallbacks", "retries", "repairs"]  # (the uniform rows' order)
    assert retries[0] == 0 and sum(retries) == 9 and set(retries) == {0, 1}
    assert len({row["leaf_blocks_2"] for row in table}) > 1  # (the forest changed between retries)
    totals = np.array([[float(row[name]) for name in ("total_h", "total_mom_x")] for row in table])
    assert totals[0, 0] == pytest.approx(0.02, rel=0.01)  # (the box's edges averaged into the finest cells)
    assert np.max(np.abs(totals - totals[0]) / totals[0, 0]) < 1e-13
    log = (out / "run.log").read_text()
    assert log.count("redone with the retry scheme: first bad cell in the block at level 2") == 9
    assert "h = -" in log


def test_a_retried_step_that_is_still_bad_stops_the_run(tmp_path):
    """The retry scheme WENO5, which fails where WENO3 does: the step is undone and the error
    says it was retried."""
    run = adaptive(tmp_path, ["scheme.retry={reconstruction='weno5'}"])
    with pytest.raises(SimulationError, match=r"step 6 \(t = [0-9.e-]+, dt = [0-9.e-]+\) redone with the retry scheme "
                                              r"left an inadmissible state in the block at level 2, \(\d+,\), "
                                              r"cell \(\d,\); the state before it is kept"):
        run.advance(2.0)
    assert run.step_count == 5 and run.retries == 1
    rate, bad = run.solver.check_state()
    assert bad is None and rate > 0


def test_retry_without_the_last_good_state_is_refused(tmp_path):
    with pytest.raises(CaseError, match=r"retry needs \[run\] keep_last_good = true"):
        adaptive(tmp_path, ["run.keep_last_good=false"])


def test_restart_between_retries_is_bit_exact(tmp_path):
    text = (COLUMN + AMR + OUTPUT + "checkpoint_interval = 0.3\n").replace("end = 2.0", "end = 0.7")
    full = AdaptiveRun(precise(case_from_text(tmp_path, text)))
    full.run(tmp_path / "full")
    expected = full.solver.forest.leaves, full.solver.conserved_blocks(), full.t
    first = sorted((tmp_path / "full").glob("checkpoint_*.npz"))[0]
    step = checkpoint.load(first).header["step"]
    assert 5 < step < 14  # (retried steps on both sides of it)
    shutil.copytree(tmp_path / "full", tmp_path / "again")
    again = AdaptiveRun(precise(case_from_text(tmp_path, text)), initial=False)
    again.run(tmp_path / "again", restart=tmp_path / "again" / first.name)
    assert again.solver.forest.leaves == expected[0] and again.t == expected[2]
    assert np.array_equal(again.solver.conserved_blocks(), expected[1])
    assert rows(tmp_path / "again") == rows(tmp_path / "full")


def test_two_ranks_retry_the_steps_of_one_rank(tmp_path):
    """Every rank redoes the step together (the bad cell is reduced over them): the snapshots
    are one rank's byte for byte, the rows the same."""
    from test_amr_mpi import same_run
    from test_mpi import launch
    (tmp_path / "case.toml").write_text(COLUMN + AMR + OUTPUT)
    arguments = ["run", str(tmp_path / "case.toml"), "--quiet", "--arch", "cpu", "--precision", "f64", "--out"]
    assert main(arguments + [str(tmp_path / "one")]) == 0
    done = launch(2, ["-m", "taichiflow.cli", *arguments, str(tmp_path / "two")], timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    log = (tmp_path / "two" / "run.log").read_text()
    assert "on 2 MPI ranks" in log and log.count("redone with the retry scheme") == 9
    same_run(tmp_path / "one", tmp_path / "two")
    assert sum(int(row["retries"]) for row in rows(tmp_path / "two")) == 9
