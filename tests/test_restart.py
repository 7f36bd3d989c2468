"""Checkpoints and restarts: bit-for-bit continuation, atomic writes, signals, refusals."""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import CASES, ROOT
from taichiflow import checkpoint
from taichiflow.cli import main
from taichiflow.io import PvdSeries, read_vti


def run_sod(out, *sets, precision="f64", extra=()):
    args = ["run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--arch", "cpu", "--precision", precision,
            "--set", "grid.cells=[100]", "--set", "output.interval=0.05"] + [a for s in sets for a in ("--set", s)]
    return main(args + list(extra))


def rows(out):
    with open(Path(out) / "diagnostics.csv") as f:
        return list(csv.reader(f))


def final_fields(out):
    time_, name = PvdSeries(Path(out) / "series.pvd", resume=True).entries[-1]
    return time_, read_vti(Path(out) / name)[1]


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_restart_continues_bit_for_bit(tmp_path, precision):
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert run_sod(straight, precision=precision) == 0
    assert run_sod(interrupted, "output.checkpoint_interval=0.08", precision=precision) == 0
    checkpoints = sorted(interrupted.glob("checkpoint_*.npz"))
    assert len(checkpoints) == 2  # t = 0.08 and 0.16; the older of the two is half way
    _, header = checkpoint.read(checkpoints[0])
    assert 0.08 <= header["time"] < 0.1
    # continue from the half-way checkpoint into the same folder, as after a crash
    assert run_sod(interrupted, precision=precision, extra=["--restart", str(checkpoints[0])]) == 0
    assert rows(interrupted) == rows(straight)  # same dt sequence, steps and totals; no duplicates
    t_a, a = final_fields(straight)
    t_b, b = final_fields(interrupted)
    assert t_a == t_b == 0.2
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    times = [t for t, _ in PvdSeries(interrupted / "series.pvd", resume=True).entries]
    assert times == [t for t, _ in PvdSeries(straight / "series.pvd", resume=True).entries]


def test_corrupt_and_mismatched_checkpoints_are_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_sod(out, "output.checkpoint_interval=0.1") == 0
    good = sorted(out.glob("checkpoint_*.npz"))[0]
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "checkpoint_000000001.npz"
    bad.write_bytes(bytes(data))
    with pytest.raises(checkpoint.CheckpointError, match="checksum mismatch|unreadable"):
        checkpoint.read(bad)
    assert run_sod(tmp_path / "other", extra=["--restart", str(bad)]) == 1
    message = capsys.readouterr().err
    assert "corrupt" in message or "unreadable" in message
    # the same checkpoint on another grid or precision
    assert run_sod(tmp_path / "grid", "grid.cells=[120]", extra=["--restart", str(good)]) == 1
    assert "grid cells [100] does not match this run's [120]" in capsys.readouterr().err
    assert run_sod(tmp_path / "f32", precision="f32", extra=["--restart", str(good)]) == 1
    assert "precision 'f64' does not match this run's 'f32'" in capsys.readouterr().err


def _start(out, *sets, pause=None):
    # keep the caller's PYTHONPATH: on machines where taichi itself is found through it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if pause:
        env["TAICHIFLOW_TEST_PAUSE_IN_CHECKPOINT"] = str(pause)
    args = [sys.executable, "-m", "taichiflow.cli", "run", str(CASES / "sod.toml"), "--out", str(out), "--quiet",
            "--arch", "cpu", "--precision", "f64", "--set", "output.interval=0.05"]
    return subprocess.Popen(args + [a for s in sets for a in ("--set", s)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(condition, timeout=120.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_sigkill_during_a_checkpoint_write_keeps_the_previous_one(tmp_path):
    out = tmp_path / "run"
    proc = _start(out, "grid.cells=[400]", "output.checkpoint_interval=0.02", pause=3)
    try:
        # the first checkpoint is complete, the second is half written when we kill
        assert _wait_for(lambda: len(list(out.glob("checkpoint_*.npz"))) == 1 and list(out.glob("*.npz.tmp")))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    survivor = checkpoint.newest_valid(out)
    state, header = checkpoint.read(survivor)
    assert header["step"] > 0 and state.shape == (400, 5)
    assert list(out.glob("*.npz.tmp"))  # the torn write is a temporary file, never a checkpoint


def test_sigterm_writes_a_checkpoint_from_which_the_run_completes_identically(tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert run_sod(straight, "grid.cells=[800]", "time.end=0.1") == 0
    proc = _start(stopped, "grid.cells=[800]", "time.end=0.1")
    try:
        assert _wait_for(lambda: (stopped / "diagnostics.csv").exists()
                         and len((stopped / "diagnostics.csv").read_text().splitlines()) > 20)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    assert "stopped by SIGTERM" in err and f"taichiflow run {stopped / 'case.toml'} --resume {stopped}" in err
    assert run_sod(stopped, "grid.cells=[800]", "time.end=0.1", extra=["--resume", str(stopped)]) == 0
    assert rows(stopped) == rows(straight)
    _, a = final_fields(straight)
    _, b = final_fields(stopped)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_max_wall_time_stops_with_a_checkpoint_and_the_command_that_continues(tmp_path, capsys):
    """The message's command (the folder's case.toml, which has the run's --set) continues the
    run; the case file without those --set is refused, and the refusal names that command."""
    out = tmp_path / "run"
    assert run_sod(out, "grid.cells=[800]", extra=["--max-wall-time", "00:00:00.5"]) == 3
    err = capsys.readouterr().err
    assert "stopped by --max-wall-time" in err
    assert checkpoint.newest_valid(out).exists()
    command = f"taichiflow run {out / 'case.toml'} --resume {out}"
    assert command in err
    assert main(["run", str(CASES / "sod.toml"), "--resume", str(out), "--quiet"]) != 0
    assert command in capsys.readouterr().err  # (the grid differs: 100 cells, not 800)
    assert main(["run", str(out / "case.toml"), "--resume", str(out), "--quiet"]) == 0
    assert float(rows(out)[-1][0]) == pytest.approx(0.2)


def test_max_wall_time_counts_from_the_launch_as_a_jobs_limit_does(tmp_path, capsys):
    """A batch job's limit counts the build too: a limit spent before the first step (the
    command launched an hour ago) stops the run after that step with its checkpoint, and
    run.log says where the time went. (Counted from the steps' start, the run would end.)"""
    out = tmp_path / "run"
    args = ["run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--arch", "cpu", "--precision", "f64",
            "--set", "grid.cells=[100]", "--max-wall-time", "01:00:00"]
    assert main(args, launched=time.perf_counter() - 3600.0) == 3
    assert "stopped by --max-wall-time (3600 s) after step 1 " in capsys.readouterr().err
    _, header = checkpoint.read(checkpoint.newest_valid(out))
    assert header["step"] == 1
    log = (out / "run.log").read_text()
    assert re.search(r"--max-wall-time 3600 s: 36\d\d\.\d s spent before the first step, 0\.0 s left", log)


def test_blow_up_keeps_the_last_checkpoint_loadable_and_says_what_to_change(tmp_path, capsys):
    out = tmp_path / "run"
    code = run_sod(out, "scheme.integrator='euler'", "scheme.cfl=1.0", "scheme.positivity_fallback=false",
                   "output.checkpoint_interval=0.002", "grid.cells=[400]")
    assert code == 2
    message = capsys.readouterr().err
    assert "inadmissible state after step" in message
    assert "a lower [scheme] cfl (now 1)" in message and "positivity_fallback = true" in message
    last = checkpoint.newest_valid(out)
    assert f"The last good checkpoint is {last}" in message
    state, header = checkpoint.read(last)
    assert np.all(np.isfinite(state)) and header["time"] > 0


def test_a_resume_after_a_kill_reads_as_one_uninterrupted_run(tmp_path):
    """Issue 43: rows written after the checkpoint being resumed are dropped. A checkpoint on
    the last step (rows every 7 steps, checkpoints every 0.1 of 0.2) is followed by the final
    row, which a run killed at its end may or may not have flushed; a kill after the first
    checkpoint leaves the rows of every later step flushed. Each resume gives the rows of the
    run never stopped, bit for bit: no step twice (the final row was written again) and no
    row with dt = 0 (the resumed run took no step)."""
    settings = ("output.diagnostics_every=7",)
    straight = tmp_path / "straight"
    assert run_sod(straight, *settings) == 0
    ended = tmp_path / "ended"
    assert run_sod(ended, *settings, "output.checkpoint_interval=0.1") == 0
    _, header = checkpoint.read(checkpoint.newest_valid(ended))
    assert header["time"] == 0.2 and header["step"] % 7  # (the final row comes after it)
    flushed, unflushed, early = (tmp_path / name for name in ("flushed", "unflushed", "early"))
    for folder in (flushed, unflushed, early):
        shutil.copytree(ended, folder)
    lines = (unflushed / "diagnostics.csv").read_text().splitlines(keepends=True)
    (unflushed / "diagnostics.csv").write_text("".join(lines[:-1]))
    max(early.glob("checkpoint_*.npz")).unlink()  # (killed before the second checkpoint)
    for folder in (flushed, unflushed, early):
        assert run_sod(folder, *settings, "output.checkpoint_interval=0.1", extra=["--resume", str(folder)]) == 0
        steps = [row[1] for row in rows(folder)[1:]]
        assert len(steps) == len(set(steps)), folder.name
        assert rows(folder) == rows(straight), folder.name


def _mpirun(*arguments, timeout=600):
    """`mpirun -n 2 python -m taichiflow.cli ...` (the MPI beside this Python: the test extra installs one)."""
    launcher = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
    assert launcher, "no mpirun: pip install -e '.[test]' installs mpi4py and the mpich wheel"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([launcher, "-n", "2", sys.executable, "-m", "taichiflow.cli", *arguments],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_a_two_rank_run_resumed_on_one_rank_leaves_no_snapshot_it_superseded(tmp_path):
    """Issue 43: the snapshots after the checkpoint were .pvti files over two pieces; the run
    continued on one rank writes them again as .vti files of the same numbers, and removes the
    others (run.log names them): the folder's snapshots are series.pvd's."""
    out = tmp_path / "run"
    done = _mpirun("run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--arch", "cpu", "--precision",
                   "f64", "--set", "grid.cells=[100]", "--set", "output.interval=0.05", "--set",
                   "output.checkpoint_interval=0.08")
    assert done.returncode == 0, done.stderr[-2000:]
    first = min(out.glob("checkpoint_*.npz"))
    _, header = checkpoint.read(first)
    later = sorted(p.name for p in out.glob("snapshot_*") if int(p.name[9:14]) > header["snapshot_index"])
    assert any(name.endswith(".pvti") for name in later) and any("_r0001" in name for name in later)
    assert run_sod(out, extra=["--restart", str(first)]) == 0
    listed = [name for _, name in PvdSeries(out / "series.pvd", resume=True).entries]
    pieces = [f"{name[:-5]}_r{rank:04d}.vti" for name in listed if name.endswith(".pvti") for rank in (0, 1)]
    assert sorted(p.name for p in out.glob("snapshot_*")) == sorted(listed + pieces)
    assert all(name.endswith(".vti") for name in listed[header["snapshot_index"] + 1:])
    log = (out / "run.log").read_text()
    assert f"removed {len(later)} files of the snapshots after the checkpoint ({later[0]} to {later[-1]})" in log


@pytest.mark.parametrize("cut", ["0.5", "0.5,", "0.5,3", "0.5,3,0.1"])
def test_a_row_cut_off_by_a_kill_is_dropped_when_the_run_resumes(tmp_path, cut):
    """kill -9 can cut diagnostics.csv's last row anywhere (inside its time, after a comma,
    inside its step): the resume keeps the whole rows up to the checkpoint's step and drops the
    cut one, which used to end the resume in an IndexError or ValueError traceback."""
    from taichiflow.run.restart import truncate_diagnostics
    path = tmp_path / "diagnostics.csv"
    whole = "time,step,dt,mass\n0,0,0,1\n0.1,1,0.1,1\n0.2,2,0.1,1\n0.3,3,0.1,1\n"
    path.write_text(whole + cut)
    truncate_diagnostics(path, 2)
    assert path.read_text() == "time,step,dt,mass\n0,0,0,1\n0.1,1,0.1,1\n0.2,2,0.1,1\n"
