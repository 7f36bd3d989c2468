"""`taichiflow check`: every shipped model passes the suite; broken models fail the right check.

The broken variants are models/euler.py (and one models/two_phase.py) with one deliberate
mistake each. They run as `python -m taichiflow.cli check` subprocesses, two at a time:
compiling dominates and each variant compiles its own kernels, so the two CPU cores of CI
share the work.
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from taichiflow.cli import main
from taichiflow.model import load_model, shipped_models_dir

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(shipped_models_dir().glob("*.py"))
EVERY_MODEL = ["admissible samples", "round trip", "consistency rusanov", "consistency hll", "consistency force",
               "consistency musta", "rotation", "signal speeds", "exact speeds", "hyperbolicity",
               "free stream first_order+rusanov", "free stream weno5+hll", "conservation"]
ROW = re.compile(r"^(\S.*?)\s{2,}(PASS|FAIL|SKIP|WARN)\b", re.M)

# name: (model file, text replaced, replacement, the check that must fail)
BROKEN = {
    "energy flux sign": ("euler.py", "E=(U.E + W.p) * un", "E=(U.E - W.p) * un", "exact speeds"),
    "slow sound speed": ("euler.py", "def sound_speed(W, gamma):\n    return ti.sqrt(",
                         "def sound_speed(W, gamma):\n    return 0.5 * ti.sqrt(", "signal speeds"),
    "round trip": ("euler.py", "(U.E - 0.5 * U.rho * vel.dot(vel))", "(U.E - 0.25 * U.rho * vel.dot(vel))",
                   "round trip"),
    "pressure along y": ("euler.py", "W.p * model.ex", "W.p * ti.Vector([0.0, 1.0, 0.0])", "rotation"),
    "tangential velocity in flux": ("euler.py", "mom=U.mom * un +", "mom=U.mom * W.vel[1] +", "rotation"),
    "hllc star tangential swap": ("euler.py", "ti.Vector([s_star, W.vel[1], W.vel[2]])",
                                  "ti.Vector([s_star, W.vel[2], W.vel[1]])", "consistency hllc"),
    "hllc star energy sign": ("euler.py", "E=chi * (U.E + (s_star - un)", "E=chi * (U.E - (s_star - un)",
                              "hllc star states"),
    "two-phase sound speed without Pi": ("two_phase.py", "((W.Gamma + 1.0) * W.p + W.Pi) / (W.Gamma * W.rho)",
                                         "((W.Gamma + 1.0) * W.p) / (W.Gamma * W.rho)", "exact speeds"),
}


def table(text: str) -> dict:
    """check name -> PASS/FAIL/SKIP/WARN from the printed table."""
    return {name: status for name, status in ROW.findall(text)}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_model_passes(path, capsys):
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    rows = table(out)
    model = load_model(str(path))
    expected = list(EVERY_MODEL)
    if "hllc_star" in model.functions:
        expected += ["consistency hllc", "hllc star states"]
    if "roe_speeds" in model.functions:
        expected += ["consistency hll+einfeldt"]
    for name in expected:
        # Too few admissible samples is a warning about the inferred ranges, not a failure.
        assert rows.get(name) == "PASS" or (name == "admissible samples" and rows.get(name) == "WARN"), (name, out)
    assert "FAIL" not in rows.values(), out
    assert "all checks passed" in out


def _run_cli(path: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "taichiflow.cli", "check", str(path)], capture_output=True,
                          text=True, env=env, cwd=path.parent, timeout=600)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def broken_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("broken_models")
    paths = {}
    for k, (name, (source, old, new, _)) in enumerate(BROKEN.items()):
        text = (shipped_models_dir() / source).read_text()
        assert text.count(old) == 1, f"{name}: the text to break is not in models/{source} exactly once"
        paths[name] = folder / f"broken_{k}.py"
        paths[name].write_text(text.replace(old, new))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(paths, pool.map(_run_cli, paths.values())))
    return results


@pytest.mark.parametrize("variant", list(BROKEN))
def test_broken_model_fails_named_check(broken_runs, variant):
    code, out = broken_runs[variant]
    rows = table(out)
    assert code == 1, out
    assert rows.get(BROKEN[variant][3]) == "FAIL", out
    assert "Traceback" not in out, out
    assert "FAILED: " in out and BROKEN[variant][3] in out.split("FAILED: ")[-1], out


def test_load_error_is_a_failed_row(tmp_path, capsys):
    """A model that does not even load is reported as a failed 'load' row, not a crash."""
    text = (shipped_models_dir() / "euler.py").read_text().replace("@model.flux\n", "")
    path = tmp_path / "no_flux.py"
    path.write_text(text)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert table(out) == {"load": "FAIL"} and "does not define flux" in out
