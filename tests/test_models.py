"""Model files: a user-written model runs unchanged; mistakes are reported by file, function, cause."""
import textwrap

import numpy as np
import pytest

from helpers import CASES, case_from_text, precise, simulate
from taichiflow.case import load_case
from taichiflow.model import ModelError, load_model
from taichiflow.run import Simulation

ADVECTION = '''
"""Linear advection of a scalar q at speed a along the face normal."""
import taichi as ti
from taichiflow import Model

model = Model("advection", conserved={"q": 1}, primitive={"q": 1}, params={"a": 1.0})


@model.to_primitive
def to_primitive(U):
    return model.W(q=U.q)


@model.to_conserved
def to_conserved(W):
    return model.U(q=W.q)


@model.flux
def flux(W, U, a):
    return model.U(q=a * U.q)


@model.wave_speeds
def wave_speeds(W, a):
    return ti.Vector([a, a])
'''

ADVECTION_CASE = """
[model]
name = "{model}"
params = {{ a = 1.0 }}
[grid]
cells = [{cells}]
[grid.upper]
[scheme]
reconstruction = "{recon}"
riemann = "rusanov"
[time]
end = 1.0
[boundary]
x = "periodic"
[initial]
background = {{ q = 1.0 }}
"""


def advect_sine(tmp_path, cells, recon):
    path = tmp_path / "advection.py"
    path.write_text(ADVECTION)
    text = ADVECTION_CASE.format(model=path, cells=cells, recon=recon).replace("[grid.upper]", "upper = [1.0]")
    sim = Simulation(precise(case_from_text(tmp_path, text)))
    x = (np.arange(cells) + 0.5) / cells
    # Cell averages of 1 + sin(2 pi x), so the high-order scheme is not limited by sampling.
    exact = 1.0 + (np.cos(2 * np.pi * (x - 0.5 / cells)) - np.cos(2 * np.pi * (x + 0.5 / cells))) * cells / (2 * np.pi)
    sim.set_primitive(exact[:, None])
    sim.advance(1.0)  # one period
    return np.abs(sim.fields()["q"] - exact).mean()


def test_user_model_in_a_temporary_file_runs_and_converges(tmp_path):
    weno = {n: advect_sine(tmp_path, n, "weno5") for n in (32, 64)}
    first = advect_sine(tmp_path, 64, "first_order")
    assert weno[64] < 2e-4 and weno[32] / weno[64] > 8  # high order, unchanged package
    assert 0.05 < first < 0.3                            # first order smears by O(dx) per period


def write_model(tmp_path, text, name="broken.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


EULER = (CASES.parent / "models" / "euler.py").read_text()

BROKEN_MODELS = [
    ("missing flux", lambda s: s.replace("@model.flux\n", ""), "does not define flux"),
    ("unknown parameter", lambda s: s.replace("def sound_speed(W, gamma)", "def sound_speed(W, gama)"),
     "sound_speed(): argument 'gama' is neither a parameter nor a global value (did you mean 'gamma'?)"),
    ("vector of size 2", lambda s: s.replace('"mom": 3', '"mom": 2'), "'mom' has size 2"),
    ("velocity role misnamed", lambda s: s.replace('velocity="vel"', 'velocity="velo"'),
     "velocity='velo' is not a W variable (did you mean 'vel'?)"),
    ("syntax error", lambda s: s.replace("def flux(W, U):", "def flux(W, U)"), "failed to import: SyntaxError"),
    ("no model object", lambda s: s + "\ndel model\n",
     "defines no `model = Model(...)`"),
    ("wrong return layout", lambda s: s.replace("return model.W(rho=U.rho, vel=vel, p=", "return model.W(rho=U.rho, v=vel, p="),
     "to_primitive(): returned W with components ['p', 'rho', 'v'], expected ['rho', 'vel', 'p']"),
    ("broken round trip", lambda s: s.replace("(gamma - 1.0) * (U.E - 0.5", "(gamma - 1.0) * (U.E - 0.25"),
     "to_primitive() is not the inverse of to_conserved()"),
    ("non-finite sound speed", lambda s: s.replace("ti.sqrt(gamma * W.p / W.rho)\n\n\n@model.hllc_star",
                                                   "ti.sqrt(-gamma * W.p / W.rho)\n\n\n@model.hllc_star"),
     "non-finite result"),
    ("too few arguments", lambda s: s.replace("def flux(W, U):", "def flux(W):"), "flux(): takes ['W'], but must take ['W', 'U'] first"),
    ("does not compile", lambda s: s.replace("un = W.vel[0]\n    return model.U(rho=U.rho * un",
                                             "un = W.vel[0]\n    return model.U(rho=U.rho * undefined_name"),
     "flux(): does not compile"),
    ("not a Model function", lambda s: s.replace("@model.sound_speed", "@model.sound_sped"),
     "did you mean 'sound_speed'?"),
]


@pytest.mark.parametrize("label,mutate,expected", BROKEN_MODELS, ids=[b[0] for b in BROKEN_MODELS])
def test_broken_model_is_reported_by_file_function_and_cause(tmp_path, label, mutate, expected):
    broken = mutate(EULER)
    assert broken != EULER, label
    path = write_model(tmp_path, broken)
    case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "grid.cells=[16]"])
    with pytest.raises(ModelError) as info:
        simulate(case, max_steps=1)
    message = str(info.value)
    assert str(path) in message
    assert expected in message


@pytest.mark.parametrize("override,expected", [
    ("model.name='eulr'", "unknown model 'eulr' (did you mean 'euler'?)"),
    ("model.params.gama=1.4", "model 'euler' has no parameter 'gama' (did you mean 'gamma'?)"),
    ("output.fields=['rh']", "[output] fields: 'rh' is not a field of model 'euler' (did you mean 'rho'?)"),
    ("initial.background.pressure=1.0", "unknown variable 'pressure'"),
])
def test_case_names_checked_against_the_model(override, expected):
    case = load_case(CASES / "sod.toml", [override])
    with pytest.raises(ModelError if "variable" not in expected else ValueError) as info:
        simulate(case, max_steps=1)
    assert expected in str(info.value) and "sod.toml" in str(info.value)


def test_hllc_needs_the_models_star_state(tmp_path):
    path = write_model(tmp_path, EULER.replace("@model.hllc_star\n", ""))
    case = load_case(CASES / "sod.toml", [f"model.name='{path}'"])
    with pytest.raises(ModelError, match=r"riemann = 'hllc' \(wave_speeds = 'davis'\) needs the model 'euler' to declare @model.hllc_star"):
        simulate(case, max_steps=1)
    case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "scheme.riemann='hll'", "grid.cells=[50]"])
    assert simulate(case).t == 0.2  # the same model runs with a solver that needs no star state


def test_derived_field_mach_number(tmp_path):
    case = load_case(CASES / "sod.toml", ["output.fields=['rho', 'mach']", "grid.cells=[100]"])
    sim = simulate(case)
    fields = sim.fields()
    sim.case["output"]["fields"] = ["vel", "p", "rho"]
    w = sim.fields()
    mach = np.linalg.norm(w["vel"], axis=-1) / np.sqrt(1.4 * w["p"] / w["rho"])
    assert set(fields) == {"rho", "mach"}
    assert np.allclose(fields["mach"], mach, rtol=1e-13, atol=0) and fields["mach"].max() > 0.9


def test_characteristic_reconstruction_needs_eigenvectors(tmp_path):
    path = write_model(tmp_path, EULER.split("@model.eigenvectors")[0])
    case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "scheme.variables='characteristic'"])
    with pytest.raises(ModelError, match="variables = 'characteristic' needs the model 'euler' to declare "
                                         "@model.eigenvectors"):
        simulate(case, max_steps=1)


@pytest.mark.parametrize("variables", ["conserved", "characteristic"])
def test_reconstructed_variables_give_the_sod_solution(variables):
    from exact_riemann import exact_riemann
    case = load_case(CASES / "sod.toml", ["grid.cells=[200]", f"scheme.variables='{variables}'"])
    rho = simulate(case).fields()["rho"]
    x = (np.arange(200) + 0.5) / 200
    exact, _, _ = exact_riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), x, 0.2, x0=0.5, gamma=1.4)
    # measured: primitive 2.43e-3, conserved 2.64e-3, characteristic 2.57e-3 (+~20% below)
    assert np.abs(rho - exact).mean() < 3.1e-3


def test_singular_parameter_in_a_case_is_named_as_the_cause():
    """gamma = 1 makes the ideal-gas EOS singular (p / (gamma - 1)): the Euler model's declared
    range refuses it by name before anything is built, not the model's sample state (a model
    without a range: the loader's check names the parameter value, tests/test_check.py)."""
    case = load_case(CASES / "sod.toml", ["model.params.gamma=1", "grid.cells=[16]"])
    with pytest.raises(ModelError) as info:
        simulate(case, max_steps=1)
    message = str(info.value)
    assert "[model] params: gamma = 1 is outside the range model 'euler' declares for it: gamma must be > 1" in message
    assert "Model(sample=" not in message, message


FLUX = "return model.U(rho=U.rho * un, mom=U.mom * un + W.p * model.ex, E=(U.E + W.p) * un)"
WRONG_LAYOUTS = {
    "vector where a scalar is declared": ("rho=U.rho * un,", "rho=U.mom * un,", "returned rho as a 3-vector"),
    "scalar where a vector is declared": ("mom=U.mom * un + W.p * model.ex,", "mom=U.rho * un,",
                                          "returned mom as a scalar"),
    "2-vector where a 3-vector is declared": ("mom=U.mom * un + W.p * model.ex,", "mom=ti.Vector([U.rho, un]),",
                                              "returned mom as a 2-vector"),
}


def _run_case_cli(args, cwd):
    import os
    import subprocess
    import sys
    root = CASES.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "taichiflow.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("label", list(WRONG_LAYOUTS))
def test_wrong_flux_layout_is_a_model_error(tmp_path, label):
    """A flux returning a component of the wrong size is a one-line ModelError naming the model
    file, the function and the declared layout; before, Taichi failed on a tensor-type error,
    an assertion, or (a 2-vector) crashed the process reading past its end."""
    old, new, expected = WRONG_LAYOUTS[label]
    assert EULER.count(FLUX) == 1
    path = write_model(tmp_path, EULER.replace(FLUX, FLUX.replace(old, new)))
    code, out = _run_case_cli(["run", str(CASES / "sod.toml"), "--set", f"model.name='{path}'", "--set",
                               "grid.cells=[16]", "--arch", "cpu", "--out", str(tmp_path / "out"), "--quiet"],
                              tmp_path)
    assert code not in (0, -11) and "Traceback" not in out, out
    assert f"{path}: flux(): {expected}; U is rho (scalar), mom (3-vector), E (scalar)" in out, out


def test_wrong_star_state_layout_is_a_model_error_at_load_time(tmp_path):
    """hllc_star, repair and source return states too: they are compiled when the model loads,
    so a wrong layout there is the same one-line ModelError, not a Taichi traceback from the
    solver's first kernel."""
    old = "return model.U(rho=chi * U.rho,"
    assert EULER.count(old) == 1
    path = write_model(tmp_path, EULER.replace(old, "return model.U(rho=chi * U.mom,"))
    case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "grid.cells=[16]"])
    with pytest.raises(ModelError) as info:
        simulate(case, max_steps=1)
    assert str(info.value) == (f"{path}: hllc_star(): returned rho as a 3-vector; "
                               "U is rho (scalar), mom (3-vector), E (scalar)")
