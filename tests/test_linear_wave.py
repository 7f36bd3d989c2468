"""The `linear_wave` perturbation (taichiflow/waves.py, the models' linear_waves hook): the wave
frame, the Euler eigenvectors, periodicity in Athena++'s 2:1:1 box, an acoustic wave that
travels a period along the diagonal, and the errors."""
import math

import numpy as np
import pytest

from helpers import ROOT, case_from_text, simulate
from taichiflow.case import CaseError, load_case
from taichiflow.cli import main
from taichiflow.errors import ModelError
from taichiflow.initial import initial_primitive
from taichiflow.model import Model, load_model
from taichiflow.run.states import resolve_states
from taichiflow.waves import from_wave_frame, linear_wave_eigenvector, to_wave_frame, wave_frame

EULER = {"rho": 1, "vel": 3, "p": 1}
GAMMA = 1.4


# --- the wave frame -------------------------------------------------------------------------

@pytest.mark.parametrize("k", [[1.0, 0, 0], [0, 0, 2.0], [0, 0, -1.0], [0, -3.0, 0], [1.0, 1.0, 0],
                               [1 / 3, 2 / 3, 2 / 3], [-0.3, 0.5, -0.8]])
def test_the_wave_frame_is_right_handed_with_x_along_k(k):
    frame = wave_frame(k)
    np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(frame) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(frame[0], np.asarray(k) / np.linalg.norm(k), atol=1e-15)


def test_the_frame_is_athenas():
    """khat = (cos a2 cos a3, cos a2 sin a3, sin a2), y' = (-sin a3, cos a3, 0),
    z' = (-sin a2 cos a3, -sin a2 sin a3, cos a2): for the 2:1:1 box's wave vector
    (1/3, 2/3, 2/3), sin a2 = 2/3 and tan a3 = 2 (Athena++'s linear_wave.cpp)."""
    a2, a3 = math.asin(2 / 3), math.atan(2.0)
    expected = [[math.cos(a2) * math.cos(a3), math.cos(a2) * math.sin(a3), math.sin(a2)],
                [-math.sin(a3), math.cos(a3), 0.0],
                [-math.sin(a2) * math.cos(a3), -math.sin(a2) * math.sin(a3), math.cos(a2)]]
    np.testing.assert_allclose(wave_frame([2 * math.pi / 3, 4 * math.pi / 3, 4 * math.pi / 3]), expected,
                               atol=1e-15)
    np.testing.assert_allclose(expected[0], [1 / 3, 2 / 3, 2 / 3], atol=1e-15)


def test_states_go_to_the_wave_frame_and_back():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k = rng.normal(size=3)
        state = {"rho": 1.5, "vel": list(rng.normal(size=3)), "p": 2.0}
        there = to_wave_frame(state, EULER, wave_frame(k))
        assert there["vel"][0] == pytest.approx(np.dot(state["vel"], k) / np.linalg.norm(k), abs=1e-14)
        assert np.linalg.norm(there["vel"]) == pytest.approx(np.linalg.norm(state["vel"]), rel=1e-14)
        back = from_wave_frame(there, EULER, wave_frame(k))
        np.testing.assert_allclose(back["vel"], state["vel"], atol=1e-14)
        assert back["rho"] == state["rho"] and back["p"] == state["p"]


# --- the Euler eigenvectors -------------------------------------------------------------------

def euler():
    return load_model("euler", [ROOT / "models"])


def primitive_jacobian_along(khat, rho, vel, p):
    """A(W) with dW/dt + A dW/ds = 0 for W = (rho, u, v, w, p) varying along s = khat . x."""
    un = np.dot(vel, khat)
    A = un * np.eye(5)
    A[0, 1:4] = rho * khat
    A[1:4, 4] = khat / rho
    A[4, 1:4] = GAMMA * p * khat
    return A


@pytest.mark.parametrize("k", [[1.0, 0, 0], [2.0, -1.0, 0.5], [0, 0, 3.0]])
def test_euler_waves_are_exact_eigenvectors_in_the_lab_frame(k):
    """A R = speed R for the lab-frame eigenvector the framework makes of the hook's, with
    speed u_n + c (sound) and u_n (entropy), at a moving state."""
    background = {"rho": 1.3, "vel": [0.4, -0.7, 0.2], "p": 0.9}
    khat = np.asarray(k) / np.linalg.norm(k)
    A = primitive_jacobian_along(khat, 1.3, background["vel"], 0.9)
    un, c = np.dot(background["vel"], khat), math.sqrt(GAMMA * 0.9 / 1.3)
    for wave, speed in (("sound", un + c), ("entropy", un)):
        p = {"wave": wave, "wavenumber": k}
        R, found = linear_wave_eigenvector(p, background, euler(), {"gamma": GAMMA}, "here")
        assert found == pytest.approx(speed, rel=1e-14)
        np.testing.assert_allclose(A @ R, speed * np.asarray(R), atol=1e-14)
        assert R[0] == 1.0                                # unit density amplitude
    R, _ = linear_wave_eigenvector({"wave": "sound", "wavenumber": k}, background, euler(), {"gamma": GAMMA}, "")
    np.testing.assert_allclose(R[1:4], c / 1.3 * khat, atol=1e-15)   # velocity along k
    assert R[4] == pytest.approx(c * c, rel=1e-14)


# --- the 2:1:1 box ---------------------------------------------------------------------------------

ATHENA_BOX = """
[model]
name = "euler"
[grid]
cells = [12, 6, 6]
upper = [3.0, 1.5, 1.5]
[time]
end = 1.0
[boundary]
x = "periodic"
y = "periodic"
z = "periodic"
[initial]
background = {rho = 1.0, vel = [0.1, 0.2, 0.3], p = 0.6}
[[initial.perturbations]]
kind = "linear_wave"
wave = "sound"
amplitude = 1e-3
wavenumber = [2.0943951023931953, 4.1887902047863905, 4.1887902047863905]   # 2 pi (1/3, 2/3, 2/3)
"""


def test_the_athena_wave_vector_is_periodic_in_the_2_1_1_box(tmp_path):
    """The state at x + L_d e_d equals the state at x along every axis (the grid shifted by one
    box length); shifted by half a box along x it is not."""
    case = case_from_text(tmp_path, ATHENA_BOX)
    initial, _, _ = resolve_states(case, euler(), {"gamma": GAMMA})
    lower, upper = np.zeros(3), np.array([3.0, 1.5, 1.5])
    here = initial_primitive(initial, EULER, [12, 6, 6], lower, upper)
    for axis in range(3):
        shift = np.eye(3)[axis] * upper[axis]
        there = initial_primitive(initial, EULER, [12, 6, 6], lower + shift, upper + shift)
        assert np.abs(there - here).max() < 1e-13
    half = np.array([1.5, 0.0, 0.0])
    elsewhere = initial_primitive(initial, EULER, [12, 6, 6], lower + half, upper + half)
    assert np.abs(elsewhere - here)[..., 0].max() > 1e-3


# --- an acoustic wave along the diagonal -------------------------------------------------------

def diagonal_wave(tmp_path, cells: int, fraction: float):
    """(rho at 0, rho after `fraction` of a period, amplitude) of a sound wave along (1, 1) in a
    periodic unit square, from a flow at an angle to it (u_n = 0.4 / sqrt 2, c = 1)."""
    text = f"""
[model]
name = "euler"
[grid]
cells = [{cells}, {cells}]
upper = [1.0, 1.0]
[time]
end = 1.0
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = {{rho = 1.0, vel = [0.3, 0.1, 0.0], p = 0.7142857142857143}}
[[initial.perturbations]]
kind = "linear_wave"
wave = "sound"
amplitude = 1e-6
wavenumber = [6.283185307179586, 6.283185307179586]
[output]
interval = 0.0
"""
    case = case_from_text(tmp_path, text, name=f"wave{cells}.toml")
    resolved, _, _ = resolve_states(case, euler(), {"gamma": GAMMA})
    speed = resolved["perturbations"][0]["_speed"]
    assert speed == pytest.approx(1.0 + 0.4 / math.sqrt(2), rel=1e-12)
    period = (2 * math.pi / math.hypot(2 * math.pi, 2 * math.pi)) / speed
    start = simulate(case_from_text(tmp_path, text, name=f"wave{cells}.toml"), until=0.0, max_steps=1)
    start.solver.refresh_primitives()
    rho0 = start.solver.primitive_array()[..., 0].copy()  # (before the next run restarts Taichi)
    end = simulate(case_from_text(tmp_path, text, name=f"wave{cells}.toml"), until=fraction * period)
    end.solver.refresh_primitives()
    return rho0, end.solver.primitive_array()[..., 0].copy(), 1e-6


def test_a_sound_wave_along_the_diagonal_comes_back_after_a_period(tmp_path):
    """WENO5 + HLLC + LSRK3 (the defaults): after one period the density equals the initial one
    to a mean error, relative to the amplitude, that falls with resolution (measured 2.3e-3 on
    16^2, 2.4e-4 on 32^2, 2.8e-5 on 64^2: third order, the integrator's); after half a period
    the perturbation is negated (1.2e-4 on 32^2): the wave travels along k at u_n + c without
    splitting (a wrong eigenvector would send part of it the other way or leave part behind)."""
    errors = []
    for cells in (16, 32):
        rho0, rho1, amplitude = diagonal_wave(tmp_path, cells, 1.0)
        errors.append(np.abs(rho1 - rho0).mean() / amplitude)
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 5, errors
    rho0, half, amplitude = diagonal_wave(tmp_path, 32, 0.5)
    assert np.abs((half - 1.0) + (rho0 - 1.0)).mean() / amplitude < 1e-3
    assert np.abs(rho0 - 1.0).mean() / amplitude > 0.6  # 2/pi of the amplitude, less the cell averaging


# --- errors -------------------------------------------------------------------------------------

def test_an_unknown_wave_is_a_one_line_error_listing_the_models_waves(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(ATHENA_BOX.replace('wave = "sound"', 'wave = "sond"'))
    case = load_case(path)
    with pytest.raises(CaseError) as info:
        resolve_states(case, euler(), {"gamma": GAMMA})
    message = str(info.value)
    assert message == (f"{path}: [initial] perturbations.0.wave: unknown wave 'sond' (did you mean 'sound'?); "
                       f"model 'euler' has sound, entropy")
    assert main(["run", str(path), "--arch", "cpu", "--quiet", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"taichiflow: error: {message}"


def test_a_model_without_the_hook_and_a_hook_with_a_bad_answer(tmp_path):
    bare = Model("bare", conserved={"rho": 1}, primitive={"rho": 1})
    p = {"wave": "sound", "wavenumber": [1.0, 0, 0]}
    with pytest.raises(CaseError, match="model 'bare' has no linear waves"):
        linear_wave_eigenvector(p, {"rho": 1.0}, bare, {}, "here")
    bare.linear_waves(lambda state, params: {"sound": ({"rho": 1.0, "u": 2.0}, 1.0)})
    with pytest.raises(ModelError, match="wave 'sound': unknown primitive 'u'"):
        linear_wave_eigenvector(p, {"rho": 1.0}, bare, {}, "here")
    bare.linear_waves(lambda state, params: {"sound": {"rho": 1.0}})
    with pytest.raises(ModelError, match=r"expected \(dict of primitive perturbations, phase speed\)"):
        linear_wave_eigenvector(p, {"rho": 1.0}, bare, {}, "here")


@pytest.mark.parametrize("wavenumber, dim", [("[0.0, 0.0]", 2), ("[1.0, 0.0, 2.0]", 2), ("[0.0]", 1)])
def test_a_wave_vector_off_the_grids_axes_is_refused(tmp_path, wavenumber, dim):
    cells = "[8]" if dim == 1 else "[8, 8]"
    upper = "[1.0]" if dim == 1 else "[1.0, 1.0]"
    path = tmp_path / "k.toml"
    path.write_text(f'[model]\nname = "euler"\n[grid]\ncells = {cells}\nupper = {upper}\n[time]\nend = 1.0\n'
                    f'[initial]\nbackground = {{rho = 1.0, vel = [0.0], p = 1.0}}\n[[initial.perturbations]]\n'
                    f'kind = "linear_wave"\nwave = "sound"\namplitude = 1.0\nwavenumber = {wavenumber}\n')
    with pytest.raises(CaseError, match=r"\[initial\] perturbations.0.wavenumber: must be nonzero along the grid's"):
        load_case(path)
