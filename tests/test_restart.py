"""Checkpoints and restarts: bit-for-bit continuation, atomic writes, signals, refusals."""
import csv
import os
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
