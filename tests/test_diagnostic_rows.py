"""Diagnostics rows recorded on the device (kernels/diagnostic_rows.py) during `taichiflow run`
are the rows the host reads back after each step itself, bit for bit: through retried steps,
output times, skipped tiles and rows every few steps; checkpoints still land after each
multiple of their interval although the host now looks only once per batch of steps."""
import csv

import numpy as np
import pytest

from helpers import CASES, precise
from taichiflow import checkpoint
from taichiflow.case import load_case
from taichiflow.cli import main
from taichiflow.kernels import reductions
from taichiflow.run.driver import Simulation
from taichiflow.run.stopping import output_times

# WENO5 drives the emerged shores negative: the PLM retry redoes about every other step early on
RETRYING = ["grid.cells=[200]", "scheme.reconstruction='weno5'", "scheme.retry={reconstruction='plm'}",
            "run.idle_tile=9", "run.skip_idle=true", "time.end=2.0"]


def rows_read_back_each_step(case, every):
    """The rows of a run whose host reads each due row back itself (Outputs.diagnostics_row)."""
    case["run"].update(arch="cpu", precision="f64")  # (as the command line below sets them)
    sim = Simulation(case)
    rows = [sim.diagnostics_row()]

    def after_batch(s):
        if s.step_count % every == 0:
            rows.append(s.diagnostics_row())

    for target in output_times(sim.end_time, case["output"]["interval"]):
        sim.advance(target, 0, after_batch, every)
        sim.check_final()  # (as the run does at each output time)
    if sim.step_count % every:
        rows.append(sim.diagnostics_row())
    return sim.diagnostics_columns(), rows


@pytest.mark.parametrize("case_name, overrides, every", [("dam_break_dry.toml", RETRYING, 1),
                                                         ("dam_break_dry.toml", RETRYING, 3),
                                                         ("orszag_tang.toml", ["grid.cells=[32,32]", "time.end=0.05"], 2)])
def test_rows_recorded_on_the_device_are_the_rows_read_back_each_step(tmp_path, case_name, overrides, every):
    overrides = [*overrides, f"output.diagnostics_every={every}"]
    columns, expected = rows_read_back_each_step(load_case(CASES / case_name, overrides), every)
    args = ["run", str(CASES / case_name), "--out", str(tmp_path), "--quiet", "--arch", "cpu", "--precision", "f64"]
    assert main(args + [a for o in overrides for a in ("--set", o)]) == 0
    with open(tmp_path / "diagnostics.csv") as f:
        written = list(csv.reader(f))
    assert written[0] == columns
    assert [[float(x) for x in row] for row in written[1:]] == [[float(x) for x in row] for row in expected]
    if case_name == "dam_break_dry.toml":  # (what the comparison went through)
        assert sum(row[columns.index("retries")] for row in expected) >= 10
        assert min(row[columns.index("active_tiles")] for row in expected) < 0.7


def test_a_checkpoint_follows_every_multiple_of_its_interval_crossed_inside_a_batch(tmp_path, monkeypatch):
    """Sod at 400 cells takes about 440 steps to t = 0.2 in batches of up to 16 (no output times
    in between): every multiple of 0.03 is crossed inside a batch, and each gets its checkpoint
    at the batch's end, before the next multiple (all kept here: a run keeps the last two)."""
    monkeypatch.setattr(checkpoint, "KEEP", 100)
    args = ["run", str(CASES / "sod.toml"), "--out", str(tmp_path), "--quiet", "--arch", "cpu", "--precision", "f64",
            "--set", "output.interval=0", "--set", "output.checkpoint_interval=0.03"]
    assert main(args) == 0
    times = [checkpoint.read(path)[1]["time"] for path in sorted(tmp_path.glob("checkpoint_*.npz"))]
    assert len(times) == 6
    for k, t in enumerate(times, start=1):
        assert 0.03 * k <= t < 0.03 * (k + 1)


def _in_order(values, axis=0):
    """The sum along `axis` added one term after the other from 0.0 (numpy's sum is pairwise)."""
    total = np.zeros(np.delete(values.shape, axis))
    for k in range(values.shape[axis]):
        total = total + np.take(values, k, axis=axis)
    return total


def fixed_order_totals(u):
    """The f64 totals of U (cells + (n,)) in the order kernels/reductions.py sums them: each
    x-chunk's cells in order, then levels of FAN_IN, entry j of a level of m the sum of entries
    j, j + m, ... of the level before."""
    chunk, fan_in = reductions.REDUCTION_CHUNK, reductions.FAN_IN
    along_x = -(-u.shape[0] // chunk)
    padded = np.zeros((along_x * chunk,) + u.shape[1:])
    padded[:u.shape[0]] = u
    level = _in_order(padded.reshape((along_x, chunk) + u.shape[1:]), axis=1).reshape(-1, u.shape[-1])
    for size in reductions.level_sizes(len(level))[1:]:
        spread = np.zeros((fan_in * size, u.shape[-1]))
        spread[:len(level)] = level
        level = _in_order(spread.reshape(fan_in, size, -1))
    return level[0]


@pytest.mark.parametrize("case_name, overrides", [
    ("sedov3d.toml", ["grid.cells=[48,48,48]"]),                                # 2,304 chunks: 2-3 per slot
    ("mhd_linear_wave.toml", ["grid.cells=[130,12,10]", "scheme.reconstruction='plm'"])])  # sums of reduced fields
def test_the_totals_are_summed_in_a_fixed_order_and_repeat_bit_for_bit(case_name, overrides):
    """Issue 43: two identical runs wrote f64 totals that differed in their last digits (atomic
    adds in the order the threads came: 11 of 36 rows of two Sedov runs equal). The totals are
    the fixed-order sum, and reducing the same state again gives the same bits, sums of the
    model's reduced fields included."""
    sim = Simulation(precise(load_case(CASES / case_name, overrides)))
    sim.advance(sim.end_time, max_steps=3)
    diagnostics = sim.solver.diagnostics
    reduced = []
    for _ in range(8):
        diagnostics.launch_reduction()
        reduced.append((diagnostics.totals.to_numpy().tobytes(), diagnostics.reduced_sums.to_numpy().tobytes()))
    assert len(set(reduced)) == 1
    expected = fixed_order_totals(sim.solver.conserved_array().astype(np.float64))
    assert np.array_equal(diagnostics.totals.to_numpy(), expected)
