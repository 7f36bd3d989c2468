"""Checkpoints and restarts of adaptive runs: bit for bit across regrids, a full pool stopping
the run with a checkpoint that a larger pool continues (grow = false, or a device whose memory
cannot hold the pool's growth), and `--max-wall-time` then `--resume` from the command line."""
import csv
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from amr_cases import BLOB
from helpers import case_from_text, precise
from taichiflow import checkpoint
from taichiflow.cli import main
from taichiflow.errors import CheckpointError, RunInterrupted, SimulationError
from taichiflow.io import read_pvd
from taichiflow.run import device_memory
from taichiflow.run.adaptive import AdaptiveRun


# A blast in gas of uniform density: the forest grows as the shock spreads (Löhner's indicator
# of the density sees nothing at first), so a small pool holds the start but not later regrids.
BLAST = (BLOB.replace("vel = [4.0, 2.0, 0.0]", "vel = [0.0, 0.0, 0.0]").replace("radius = 0.15", "radius = 0.1")
         .replace("state = { rho = 4.0, p = 2.0 }", "state = { rho = 1.0, p = 20.0 }"))


def run_case(tmp_path, overrides=(), initial=True, text=BLOB, arch="cpu"):
    return AdaptiveRun(precise(case_from_text(tmp_path, text, overrides), arch), initial=initial)


def table(path, without=("regrid_s",)):
    with open(path) as f:
        return [{k: v for k, v in row.items() if k not in without} for row in csv.DictReader(f)]


def state(run):
    """The leaves and their U (taken before another run starts Taichi anew)."""
    return run.solver.forest.leaves, run.solver.conserved_blocks(), run.t


def same_state(a, b):
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2] == b[2]


def test_restart_is_bit_exact_across_regrids(tmp_path, arch):
    full = run_case(tmp_path, arch=arch)
    full.run(tmp_path / "full")
    expected = state(full)
    first = sorted((tmp_path / "full").glob("checkpoint_*.npz"))[0]
    header = checkpoint.load(first).header
    assert 0 < header["step"] < full.step_count and not header["regrid_due"]
    assert [tuple(leaf) for leaf in header["leaves"]] != [(b.level, *b.coords) for b in expected[0]]
    shutil.copytree(tmp_path / "full", tmp_path / "again")
    again = run_case(tmp_path, initial=False, arch=arch)
    stats = again.run(tmp_path / "again", restart=tmp_path / "again" / first.name)
    assert stats["steps_run"] == full.step_count - header["step"]
    assert same_state(expected, state(again))
    assert table(tmp_path / "again" / "diagnostics.csv") == table(tmp_path / "full" / "diagnostics.csv")
    assert read_pvd(tmp_path / "again" / "series.pvd") == read_pvd(tmp_path / "full" / "series.pvd")


@pytest.fixture(scope="module")
def ample(tmp_path_factory, arch):
    """The blast with a pool that never runs full: its final state and diagnostics rows."""
    folder = tmp_path_factory.mktemp("ample")
    run = run_case(folder, ["amr.capacity=512"], text=BLAST, arch=arch)
    run.run(folder / "out")
    assert not run.grown
    return state(run), table(folder / "out" / "diagnostics.csv"), folder / "out"


def test_full_pool_stops_with_a_checkpoint_a_larger_pool_continues(tmp_path, arch, ample):
    """A pool that holds the initial forest but not a later regrid's: with grow = false the run
    stops with a message naming the key and a checkpoint of the state before that regrid;
    continued with a larger pool it ends where a run with that pool from the start ends, bit
    for bit. With grow = true (the default) the pool is rebuilt twice as large in the run,
    which ends there too."""
    expected, rows, _ = ample
    small = run_case(tmp_path, ["amr.capacity=60", "amr.grow=false"], text=BLAST, arch=arch)
    with pytest.raises(SimulationError, match=r"the regrid after step (\d+) .*the forest needs \d+ block slots and "
                                              r"the pool has 60: raise \[amr\] capacity\. The state before it is in "
                                              r".*checkpoint_\d+\.npz: continue with .*--set amr\.capacity=\d+"):
        small.run(tmp_path / "small")
    assert small.step_count > 0
    loaded = checkpoint.load_newest(tmp_path / "small")
    assert loaded.header["regrid_due"] and loaded.header["step"] == small.step_count
    resumed = run_case(tmp_path, ["amr.capacity=512"], initial=False, text=BLAST, arch=arch)
    resumed.run(tmp_path / "small", restart=loaded)
    assert same_state(expected, state(resumed))
    assert table(tmp_path / "small" / "diagnostics.csv") == rows
    grown = run_case(tmp_path, ["amr.capacity=60"], text=BLAST, arch=arch)  # (grow = true: the default)
    grown.run(tmp_path / "grown")
    assert [(before, after) for _, before, after in grown.grown] == [(60, 120), (120, 240)][:len(grown.grown)]
    assert grown.grown and same_state(expected, state(grown))
    assert table(tmp_path / "grown" / "diagnostics.csv") == rows


def test_growth_past_the_memory_grows_what_fits_then_stops_with_a_checkpoint(tmp_path, arch, ample, monkeypatch,
                                                                               capsys):
    """A device (device_memory.available, replaced) whose memory holds 102 block slots beside
    its margin: the blast's first growth (84 slots needed, 105 asked) grows the pool of 32 to
    what fits; a later regrid that needs more than fits stops the run with exit code 2, a
    message naming [amr] capacity and the numbers, and a checkpoint of the state before that
    regrid, which `--resume --set amr.capacity=N` continues to the unconstrained run's
    snapshots and rows, byte for byte."""
    case = tmp_path / "blast.toml"
    case.write_text(BLAST)
    out = tmp_path / "out"
    run_case(tmp_path, ["amr.capacity=32"], text=BLAST, arch=arch)  # (its pool's bytes a slot: the fields')
    per_slot = device_memory.taichi_field_bytes() // 32
    device = device_memory.Memory(0, 4 * device_memory.GIB, "a test device")
    holds = device.margin + 102 * per_slot  # (what the pool uses of it is not free)
    monkeypatch.setattr(device_memory, "available",
                        lambda arch: device._replace(free=holds - device_memory.taichi_field_bytes()))
    options = ["--quiet", "--arch", arch, "--precision", "f64", "--set", "run.fast_math=false"]
    assert main(["run", str(case), "--out", str(out), *options, "--set", "amr.capacity=32"]) == 2
    message = capsys.readouterr().err
    log = (out / "run.log").read_text()
    grown = int(re.search(r"the forest needed 84 block slots and the pool had 32: rebuilt with (\d+)", log)[1])
    assert 84 <= grown < 105 and f"step 4: a pool of 105 block slots would not fit, a test device holds at most " \
                                 f"{grown} slots" in log
    stop = re.search(rf"the regrid after step (\d+) .*: the forest needs (\d+) block slots and the pool has {grown}, "
                     rf"but a test device holds at most (\d+) slots: .* at [\d,]+ bytes a slot: raise \[amr\] capacity "
                     rf"to \2 or more where .*B more is free .* The state before it is in .*checkpoint_\d+\.npz: "
                     rf"continue with .*--resume .* --set amr\.capacity=(\d+)`", message)
    assert stop, message
    assert int(stop[3]) < int(stop[2]) <= int(stop[4]) and f"FAILED: {stop[0]}" in log
    loaded = checkpoint.load_newest(out)
    assert loaded.header["regrid_due"] and loaded.header["step"] == int(stop[1])
    monkeypatch.undo()
    assert main(["run", str(out / "case.toml"), "--resume", str(out), *options,
                 "--set", f"amr.capacity={stop[4]}"]) == 0
    assert table(out / "diagnostics.csv") == ample[1]
    snapshots = sorted(path.name for path in ample[2].glob("snapshot_*.vtu"))
    assert sorted(path.name for path in out.glob("snapshot_*.vtu")) == snapshots
    assert all((out / name).read_bytes() == (ample[2] / name).read_bytes() for name in snapshots)


def test_uniform_checkpoint_is_refused(tmp_path, capsys):
    uniform = tmp_path / "uniform.toml"
    uniform.write_text(BLOB.replace("[amr]\nblock_cells = 8\nmax_level = 2\nregrid_every = 2\n", ""))
    assert main(["run", str(uniform), "--out", str(tmp_path / "u"), "--quiet", "--set", "time.end=0.015"]) == 0
    with pytest.raises(CheckpointError, match="a checkpoint of a uniform run: a case with \\[amr\\] continues only"):
        run_case(tmp_path, initial=False).run(tmp_path / "u", restart=checkpoint.load_newest(tmp_path / "u"))
    adaptive = tmp_path / "blob_amr.toml"
    adaptive.write_text(BLOB)
    newest = checkpoint.load_newest(tmp_path / "u").path
    assert main(["run", str(adaptive), "--restart", str(newest), "--quiet"]) != 0  # (refused before Taichi starts)
    assert "a checkpoint of a uniform run" in capsys.readouterr().err


def test_max_wall_time_then_resume_from_the_command_line(tmp_path, capsys):
    case = tmp_path / "blob_amr.toml"
    case.write_text(BLOB)
    out = tmp_path / "out"
    assert main(["run", str(case), "--out", str(out), "--quiet", "--max-wall-time", "0.000001"]) == 3
    assert "--resume" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["run", str(case), "--resume", str(out), "--quiet", "--set", "model.params.gamma=1.5"]) != 0
    assert "the checkpoint belongs to another case: model.params.gamma: 1.4 in the checkpoint, 1.5 now" \
        in capsys.readouterr().err
    # (resumed from the case file as written: its "auto" keys are the checkpoint's once built)
    assert main(["run", str(case), "--resume", str(out), "--quiet"]) == 0
    assert [t for t, _ in read_pvd(out / "series.pvd")] == pytest.approx([0.0, 0.01, 0.02, 0.03])
    steps = [int(row["step"]) for row in table(out / "diagnostics.csv")]
    assert steps == sorted(set(steps)) and steps[0] == 0
    assert "restarting from" in (out / "run.log").read_text()
    with pytest.raises(RunInterrupted):  # (the API: the same stop, the same exception)
        run_case(tmp_path).run(tmp_path / "api", max_wall_time=1e-6)


def test_max_wall_time_counts_the_build_of_an_adaptive_run(tmp_path, capsys):
    """As on a uniform grid (tests/test_restart.py): the limit counts from the command's launch."""
    case = tmp_path / "blob_amr.toml"
    case.write_text(BLOB)
    out = tmp_path / "out"
    assert main(["run", str(case), "--out", str(out), "--quiet", "--max-wall-time", "600"],
                launched=time.perf_counter() - 600.0) == 3
    assert "stopped by --max-wall-time (600 s) after step 1 " in capsys.readouterr().err
    _, header = checkpoint.read(checkpoint.newest_valid(out))
    assert header["step"] == 1
    assert "s spent before the first step, 0.0 s left" in (out / "run.log").read_text()


def test_restart_at_the_step_cap_and_with_another_output_interval(tmp_path):
    """A run stopped by time.max_steps between output times ends with a snapshot of its last
    state, which a restart from its last checkpoint writes again; a restart with another
    [output] interval (allowed on request) writes the new times after the last snapshot."""
    capped = ["time.max_steps=7", "output.checkpoint_interval=0.0001"]  # (a checkpoint every step)
    first = run_case(tmp_path, capped)
    first.run(tmp_path / "capped")
    series = read_pvd(tmp_path / "capped" / "series.pvd")
    assert first.step_count == 7 and series[-1][0] == first.t and len(series) == 2
    last = checkpoint.load_newest(tmp_path / "capped")
    assert last.header["step"] == 7
    run_case(tmp_path, capped, initial=False).run(tmp_path / "capped", restart=last)
    assert read_pvd(tmp_path / "capped" / "series.pvd") == series
    full = run_case(tmp_path)
    full.run(tmp_path / "full")
    first = sorted((tmp_path / "full").glob("checkpoint_*.npz"))[0]  # (t > 0.01: two snapshots before it)
    again = run_case(tmp_path, ["output.interval=0.02"], initial=False)
    again.run(tmp_path / "full", restart=first, allow_change=("output.interval",))
    assert [t for t, _ in read_pvd(tmp_path / "full" / "series.pvd")] == pytest.approx([0.0, 0.01, 0.02, 0.03])
    # with fewer output times after the checkpoint, the old run's later snapshot (t = 0.03 as
    # snapshot 3) is removed: the folder holds what series.pvd lists
    sparse = run_case(tmp_path, ["output.interval=0.03"], initial=False)
    sparse.run(tmp_path / "full", restart=first, allow_change=("output.interval",))
    listed = read_pvd(tmp_path / "full" / "series.pvd")
    assert [t for t, _ in listed] == pytest.approx([0.0, 0.01, 0.03])
    assert sorted(p.name for p in (tmp_path / "full").glob("snapshot_*")) == sorted(Path(f).name for _, f in listed)
