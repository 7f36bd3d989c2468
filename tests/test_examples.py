"""The scripts of examples/ run as a user runs them (`python examples/x.py`), on the CPU, each
in a process of its own and a folder of its own; each checks its own result and exits
non-zero if it is wrong."""
import subprocess
import sys

import pytest

from helpers import ROOT

EXAMPLES = ROOT / "examples"


def run_example(name, tmp_path, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_every_example_is_tested():
    tested = {"sod_convergence.py", "pictures_2d.py", "own_model.py", "stop_on_condition.py", "read_outputs.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_sod_convergence(tmp_path):
    out = run_example("sod_convergence.py", tmp_path)
    orders = [float(line.split()[-1]) for line in out.splitlines()[2:]]
    assert all(0.7 < order < 1.3 for order in orders), out


def test_pictures_2d(tmp_path):
    pytest.importorskip("pyvista")
    out = run_example("pictures_2d.py", tmp_path, tmp_path / "pictures")
    pictures = sorted((tmp_path / "pictures").glob("rho_*.png"))
    assert len(pictures) >= 4 and all(p.stat().st_size > 1000 for p in pictures), out


def test_own_model(tmp_path):
    out = run_example("own_model.py", tmp_path)
    assert "before the shock" in out and "total of u kept" in out


def test_stop_on_condition(tmp_path):
    out = run_example("stop_on_condition.py", tmp_path)
    assert "returned taichiflow.STOP" in out and "the shock reached x = 0.8" in out


def test_read_outputs(tmp_path):
    pytest.importorskip("pyvista")
    out = run_example("read_outputs.py", tmp_path)
    assert "0.2000" in out and "mass drift" in out
    assert not list(tmp_path.iterdir())  # (the run went into a temporary folder, removed)
