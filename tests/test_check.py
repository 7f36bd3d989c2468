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
    # (in this process, as `taichiflow check` runs it with its 64 samples: a process each cost
    # a Python and Taichi start, 20 s of a 2-core CPU against 10 s here)
    return {name: _check_path(path, "--samples", "64") for name, path in paths.items()}


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


# --- models with no velocity role, zero-valued samples, parameters, layouts ------------------

BURGERS = '''
"""Inviscid Burgers equation u_t + (u^2 / 2)_x = 0: a scalar model with no velocity role."""
import taichi as ti
from taichiflow import Model

model = Model("burgers", conserved={"u": 1}, primitive={"u": 1}, sample={"u": SAMPLE})


@model.to_primitive
def to_primitive(U):
    return model.W(u=U.u)


@model.to_conserved
def to_conserved(W):
    return model.U(u=W.u)


@model.flux
def flux(W, U):
    return model.U(u=0.5 * U.u * U.u)


@model.wave_speeds
def wave_speeds(W):
    return ti.Vector([W.u, W.u])
'''


def _check_rows(tmp_path, name, text, *args):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return _check_path(path, *args)


def _check_path(path, *args):
    from io import StringIO
    from taichiflow.checker import parse_params, run_checks

    options = dict(zip(args[::2], args[1::2]))
    out = StringIO()
    code = run_checks(path, samples=int(options.get("--samples", 16)),
                      params=parse_params([options["--params"]] if "--params" in options else []), out=out)
    return code, out.getvalue()


SCALAR_MODELS = {"burgers": BURGERS.replace("SAMPLE", "1.5")}


def _scalar_models():
    from test_models import ADVECTION
    return {**SCALAR_MODELS, "advection": ADVECTION}


@pytest.mark.parametrize("name", ["burgers", "advection"])
def test_models_without_velocity_pass_and_skip_exact_speeds(tmp_path, name):
    """No `velocity` role: the Jacobian rows still run (no KeyError: None), and the speeds of
    wave_speeds are estimates, so `exact speeds` is the documented SKIP."""
    code, out = _check_rows(tmp_path, name, _scalar_models()[name])
    rows = table(out)
    assert "KeyError" not in out, out
    assert rows["exact speeds"] == "SKIP", out
    for check in ("signal speeds", "hyperbolicity", "round trip", "rotation", "conservation"):
        assert rows[check] == "PASS", (check, out)
    assert code == 0 and "FAIL" not in rows.values(), out


def test_exact_speeds_stay_skipped_when_the_jacobian_fails(tmp_path):
    """A wave_speeds model whose Jacobian kernel cannot compile fails the Jacobian rows, but
    `exact speeds` does not apply to it: SKIP, not FAIL."""
    text = BURGERS.replace("SAMPLE", "1.5") + '''

@model.roe_speeds
def roe_speeds(WL, WR):
    return ti.Vector([WL.u, undefined_name])
'''
    code, out = _check_rows(tmp_path, "burgers_bad_roe", text)
    rows = table(out)
    assert code == 1 and rows["signal speeds"] == "FAIL" and rows["exact speeds"] == "SKIP", out


def test_zero_valued_sample_is_judged_against_the_typical_magnitude(tmp_path):
    """Burgers at rest (u = 0): flux, speeds and state are 0 there, so an error relative to the
    sample itself is 0/0; it is measured against the samples' typical magnitude instead."""
    code, out = _check_rows(tmp_path, "burgers_at_rest", BURGERS.replace("SAMPLE", "0.0"))
    rows = table(out)
    assert code == 0 and "consistency hll" in rows, out  # (HLL is finite with both speeds 0 too)
    for check, status in rows.items():
        assert status in ("PASS", "SKIP"), (check, out)


def test_singular_parameter_is_named_as_the_cause(tmp_path):
    """--params gamma=1 makes the ideal-gas EOS singular: one failed row naming the parameter
    value, not a table of failures blamed on the sample state (a copy of the Euler model without
    its declared range, which refuses gamma = 1 before any check: test_model_hooks.py)."""
    text = (shipped_models_dir() / "euler.py").read_text()
    assert '    ranges={"gamma": "> 1"},\n' in text
    path = tmp_path / "euler_free.py"
    path.write_text(text.replace('    ranges={"gamma": "> 1"},\n', ""))
    code, out = _check_path(path, "--params", "gamma=1", "--samples", "4")
    rows = table(out)
    assert code == 1 and rows == {"params": "FAIL"}, out
    assert "gamma = 1" in out and "Model(sample=" not in out, out


def test_wrong_flux_layout_is_a_model_error_naming_file_function_and_layout(tmp_path):
    """A flux whose rho is a 3-vector: the rows that call the flux say so by file, function and
    expected layout, instead of Taichi's tensor-type error."""
    text = (shipped_models_dir() / "euler.py").read_text()
    old = "return model.U(rho=U.rho * un,"
    assert text.count(old) == 1
    path = tmp_path / "euler_vector_rho.py"
    path.write_text(text.replace(old, "return model.U(rho=U.mom * un,"))
    code, out = _check_path(path, "--samples", "4")
    assert code == 1 and "tensor type" not in out, out
    assert f"{path}: flux(): returned rho as a 3-vector" in out, out
    assert "U is rho (scalar), mom (3-vector), E (scalar)" in out, out


def test_a_model_with_a_source_runs_free_stream_and_conservation_with_the_source_switched_off(tmp_path):
    """Issue 43: a model with a source skipped its run checks (a source changes a uniform state
    and the totals, rightly). They run with the source switched off: with it, this source
    (1 + x) would fail both. The table prints no Taichi line ("Starting on arch=x64" was)."""
    source = '''

@model.source
def source(U, W, x, t):
    return model.U(u=1.0 + x[0])
'''
    path = tmp_path / "burgers_forced.py"
    path.write_text(BURGERS.replace("SAMPLE", "1.5") + source)
    code, out = _run_cli(path)  # (stdout and stderr: what the user sees)
    rows = table(out)
    for check in ("free stream first_order+rusanov", "free stream weno5+hll", "conservation"):
        assert rows[check] == "PASS", (check, out)
    assert out.count("source switched off") == 3 and code == 0, out
    assert "[Taichi]" not in out, out
