"""A model function at fault is named (issue 43): one that returns NaN from a finite state ends
a run naming that function and the state, not advising a lower cfl (run/model_blame.py); one
whose loop never ends stops the loader after model_host.TIME_LIMIT_S, named (loadcheck.py).
The model's functions run as plain Python on the host there (taichiflow/model_host.py)."""
import re
import signal
import threading

import numpy as np
import pytest
import taichi as ti

from helpers import CASES, ROOT, precise
from taichiflow import loadcheck, model_host
from taichiflow.case import load_case
from taichiflow.cli import main
from taichiflow.errors import ModelError, SimulationError
from taichiflow.model import load_model
from taichiflow.run import Simulation
from taichiflow.run.failure import explain

EULER_SOUND_SPEED = "    return ti.sqrt(gamma * W.p / W.rho)\n"


def euler_with_sound_speed(tmp_path, body: str, name: str):
    """models/euler.py with its sound_speed's body replaced (a model file of its own)."""
    text = (ROOT / "models" / "euler.py").read_text()
    assert EULER_SOUND_SPEED in text
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace(EULER_SOUND_SPEED, body).replace('"euler",', f'"{name}",'))
    return path


NAN_ABOVE_1_5 = ("    c = ti.sqrt(gamma * W.p / W.rho)\n"
                 "    if W.rho > 1.5:\n"
                 "        c = ti.sqrt(-W.p)\n"
                 "    return c\n")
NEVER_RETURNS = ("    c = ti.sqrt(gamma * W.p / W.rho)\n"
                 "    while c > 0.0:\n"
                 "        c = c + 1.0\n"
                 "    return c\n")


def failed_run(model_path, *sets):
    """The Simulation of a Sod variant with `model_path` after its failed step (the last good
    state restored, as the driver leaves it) and the bad cell's linear index."""
    case = precise(load_case(CASES / "sod.toml", [f'model.name="{model_path}"', "grid.cells=[50]",
                                                  'scheme.riemann="hll"', *sets]))
    sim = Simulation(case)
    with pytest.raises(SimulationError) as failure:
        sim.advance(case["time"]["end"])
    cell = int(re.search(r"at cell \((\d+),\)", str(failure.value)).group(1))
    return sim, cell


def test_a_function_that_returns_nan_from_the_last_good_state_is_named_not_the_cfl(tmp_path):
    sim, cell = failed_run(euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler"), "initial.background.rho=2.0")
    said = explain(sim, cell)
    assert said.startswith(f"The model's sound_speed() ({tmp_path / 'nan_euler.py'}) returned nan for the finite, "
                           "admissible state rho = 2, vel = [0, 0, 0], p = 1, gamma = 1.4 (cell (0,)'s state at "
                           "step 0): the model, not the scheme, fails there (no cfl avoids it)"), said
    assert "Try a lower" not in said


def test_a_function_that_returns_nan_where_a_step_takes_the_state_is_named(tmp_path):
    """Two streams meet: the last good state stays below rho = 1.5 (a state above it would
    have failed the step before), the step's stages pass it."""
    sim, cell = failed_run(euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler"),
                           "initial.background.vel=[1.0,0,0]",
                           "initial.regions.0.state={rho=1.0, p=1.0, vel=[-1.0,0,0]}")
    said = explain(sim, cell)
    assert re.match(r"The model's sound_speed\(\) \(.*nan_euler.py\) returned nan for the finite, admissible state "
                    r"rho = 1\.5\d*, vel = \[[-\d.e]+, 0, 0\], p = [\d.]+, gamma = 1\.4 \(the state a forward-Euler "
                    r"step of dt = [\d.e-]+ along x with (Rusanov|centred) fluxes predicts for cell \(\d+,\) from "
                    r"the state at step \d+\)", said), said
    assert "Try a lower" not in said


def test_a_state_the_models_own_admissible_refuses_blames_the_scheme_not_the_model(tmp_path):
    """The two streams above, with a model whose admissible() (taking a parameter, as the
    two-phase model's does) refuses rho > gamma + 0.1 = 1.5, where its sound speed is NaN: NaN is
    then the model's right answer, and the message is the scheme's advice. The search called
    admissible() without its parameters, could not run it, took every state as admissible and
    blamed the model (a 128-points-per-radius cavity array run ended so: a state with
    (Gamma + 1) p + Pi < 0, which the two-phase admissible() refuses)."""
    path = euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler_admissible")
    path.write_text(path.read_text() + "\n\n@model.admissible\ndef admissible(W, gamma):\n"
                    "    return W.rho <= gamma + 0.1\n")
    sim, cell = failed_run(path, "initial.background.vel=[1.0,0,0]",
                           "initial.regions.0.state={rho=1.0, p=1.0, vel=[-1.0,0,0]}")
    said = explain(sim, cell)
    assert "The model's" not in said and "Try a lower [scheme] cfl" in said, said


@pytest.mark.parametrize("riemann", ["hllc", "hll"])
def test_a_nan_signal_speed_stops_the_run_at_its_step_naming_the_function(tmp_path, capsys, riemann):
    """HLLC's min/max of the wave speeds drops a NaN (and so did the step check's rate), so the
    run went on from a finite, wrong state: the check counts a cell whose signal speed is not
    finite as a bad one (kernels/reductions.py), and the message names the function with the
    state it got at that cell; from the initial state too."""
    model = euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler")
    for k, sets in enumerate([["initial.background.vel=[1.0,0,0]",
                               "initial.regions.0.state={rho=1.0, p=1.0, vel=[-1.0,0,0]}"],
                              ["initial.background.rho=2.0"]]):
        options = [f'model.name="{model}"', "grid.cells=[50]", f'scheme.riemann="{riemann}"', *sets]
        code = main(["run", str(CASES / "sod.toml"), "--quiet", "--arch", "cpu", "--out", str(tmp_path / f"o{k}"),
                     *[a for o in options for a in ("--set", o)]])
        err = capsys.readouterr().err
        assert code == 2 and "The model's sound_speed()" in err and "Try a lower" not in err, err
        if k == 0:  # (the first state above rho = 1.5 stops the step that made it)
            assert re.search(r"after step 3 \(.*\) at cell \(2[45],\): ", err), err
        else:
            assert ("inadmissible initial state at cell (0,): a signal speed is not finite (the model's "
                    "sound_speed() returned nan). The model's sound_speed()") in err, err
            assert "rho = 2, vel = [0, 0, 0], p = 1, gamma = 1.4 (cell (0,)'s initial state)" in err


def test_a_blow_up_of_a_sound_model_still_advises_the_scheme(tmp_path):
    sim, cell = failed_run(ROOT / "models" / "euler.py", "grid.cells=[400]", "scheme.cfl=1.0",
                           'scheme.integrator="euler"', "scheme.positivity_fallback=false", 'scheme.riemann="hllc"')
    assert explain(sim, cell).startswith("Try a lower [scheme] cfl (now 1)")


def test_the_run_names_the_model_function_on_the_command_line(tmp_path, capsys):
    model = euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler")
    assert main(["run", str(CASES / "sod.toml"), "--quiet", "--out", str(tmp_path / "out"), "--set",
                 f'model.name="{model}"', "--set", "grid.cells=[50]", "--set", "initial.background.rho=2.0",
                 "--set", 'scheme.riemann="hll"']) == 2
    err = capsys.readouterr().err
    assert "The model's sound_speed()" in err and "rho = 2, vel = [0, 0, 0], p = 1" in err and "Try a lower" not in err


def test_a_loop_that_never_ends_stops_the_loader_naming_the_function(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(model_host, "TIME_LIMIT_S", 0.5)
    monkeypatch.setattr(loadcheck.check_returns, "__defaults__", (0.5,))
    model = euler_with_sound_speed(tmp_path, NEVER_RETURNS, "loop_euler")
    code = main(["run", str(CASES / "sod.toml"), "--quiet", "--out", str(tmp_path / "out"), "--set",
                 f'model.name="{model}"', "--set", "grid.cells=[20]"])
    err = capsys.readouterr().err
    assert code == 1 and err.strip() == (
        f"taichiflow: error: {model}: sound_speed() did not return within 0.5 s on the sample state rho = 1, "
        "vel = [0.1, 0.2, 0.3], p = 1 (run as Python when the model loads): a loop that never ends?")


def test_the_loaders_time_limit_works_off_the_main_thread_and_keeps_an_outer_timer(tmp_path):
    model = load_model(str(euler_with_sound_speed(tmp_path, NEVER_RETURNS, "loop_euler")))
    caught = []

    def load():
        try:
            loadcheck.check_returns(model, dict(model.params), seconds=0.3)
        except model_host.DidNotReturn as err:
            caught.append(str(err))

    thread = threading.Thread(target=load)
    thread.start()
    thread.join(30)
    assert caught == ["sound_speed"]
    signal.setitimer(signal.ITIMER_REAL, 100.0)  # (someone else's timer: SIGALRM's default would end pytest)
    try:
        with pytest.raises(model_host.DidNotReturn):
            loadcheck.check_returns(model, dict(model.params), seconds=0.3)
        assert 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@pytest.mark.parametrize("name", ["euler", "mhd", "shallow_water", "srhd", "srhd_ultra", "two_phase"])
def test_the_shipped_models_run_on_the_host_as_in_their_kernels(name):
    """The host path is worth something only where Python scope runs the functions: each shipped
    model's does, and gives the kernels' values on the sample state."""
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    model = load_model(name)
    kernels = loadcheck._evaluate(model, dict(model.params), ti.f64)
    values = {**model.params, **{g: 0.0 for g in model.globals}}  # (the kernels: a global not yet reduced)
    W = model_host.view(model.primitive, model.sample_state())
    u = model_host.flat_state(model.conserved, model_host.call(model, "to_conserved", (W,), values))
    U = model_host.view(model.conserved, u)
    np.testing.assert_allclose(u, kernels["to_conserved"], rtol=1e-12)
    back = model_host.flat_state(model.primitive, model_host.call(model, "to_primitive", (U,), values))
    np.testing.assert_allclose(back, kernels["to_primitive"], rtol=1e-12, atol=1e-14)
    flux = model_host.flat_state(model.conserved, model_host.call(model, "flux", (W, U), values))
    np.testing.assert_allclose(flux, kernels["flux"][0], rtol=1e-12, atol=1e-14)
    for role in model.functions:
        arguments = model_host.arguments(model, role, W, U)
        if arguments is not None:
            assert np.all(np.isfinite(model_host.flat_values(model_host.call(model, role, arguments, values)))), role


def test_a_model_error_names_the_file_for_a_function_python_scope_cannot_run(tmp_path):
    """What Python scope cannot run is left to the kernels' check, which still names it."""
    model_path = euler_with_sound_speed(tmp_path, "    return ti.sqrt(gamma * W.p / W.rho) + W.nope\n", "bad_euler")
    model = load_model(str(model_path))
    loadcheck.check_returns(model, dict(model.params))  # (no hang: the host says nothing)
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    with pytest.raises(ModelError, match=r"bad_euler.py: sound_speed\(\): does not compile"):
        loadcheck.check_model(model, dict(model.params), ti.f64)


def test_a_state_a_function_returns_is_read_in_its_layouts_order():
    """model.U(E=..., rho=..., mom=...) names its components in another order than conserved."""
    from taichi.lang.struct import Struct
    layout = load_model("euler").conserved
    state = Struct({"E": 3.0, "rho": 1.0, "mom": ti.Vector([0.5, 0.0, 0.0])})
    assert model_host.flat_state(layout, state).tolist() == [1.0, 0.5, 0.0, 0.0, 3.0]


def test_a_passed_check_is_remembered_by_the_model_files_text(tmp_path):
    """loadcheck keeps the checks that passed in this process (a build of the same model and
    values is not checked again), keyed by the file's text, values and precision: the same file
    made wrong is checked anew and fails, and a value the model is singular with still fails."""
    path = euler_with_sound_speed(tmp_path, EULER_SOUND_SPEED, "kept_euler")
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    model = load_model(str(path))
    loadcheck.check_model(model, dict(model.params), ti.f64)
    assert loadcheck._passed_key(model, dict(model.params), ti.f64) in loadcheck._PASSED
    loadcheck.check_model(model, dict(model.params), ti.f64)  # (remembered)
    with pytest.raises(ModelError):  # gamma = 1: to_primitive divides by zero on the sample state
        loadcheck.check_model(model, {**model.params, "gamma": 1.0}, ti.f64)
    path.write_text(path.read_text().replace(EULER_SOUND_SPEED, "    return ti.sqrt(gamma * W.p / W.rho) + W.nope\n"))
    changed = load_model(str(path))
    with pytest.raises(ModelError, match=r"kept_euler.py: sound_speed\(\): does not compile"):
        loadcheck.check_model(changed, dict(changed.params), ti.f64)
