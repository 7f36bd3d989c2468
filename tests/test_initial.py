"""Initial-condition perturbations: sine (optionally inside a region) and Shu's vortex."""
import numpy as np
import pytest

from taichiflow.initial import cell_centers, initial_primitive

EULER = {"rho": 1, "vel": 3, "p": 1}
BACKGROUND = {"rho": 1.0, "vel": [1.0, 1.0, 0.0], "p": 1.0}


def test_sine_inside_a_region_only():
    initial = {"background": BACKGROUND,
               "regions": [{"shape": "half_space", "point": [-4.0, 0, 0], "normal": [1.0, 0, 0],
                            "state": {"rho": 1.0}, "smoothing": 0.0}],
               "perturbations": [{"kind": "sine", "variable": "rho", "amplitude": 0.2,
                                  "wavenumber": [5.0, 0, 0], "phase": 0.0, "region": 0}]}
    W = initial_primitive(initial, EULER, [100], [-5.0], [5.0])
    x = -5.0 + (np.arange(100) + 0.5) * 0.1
    expected = np.where(x > -4.0, 1.0 + 0.2 * np.sin(5.0 * x), 1.0)
    assert np.allclose(W[:, 0], expected, rtol=0, atol=1e-13)


def test_sine_on_a_vector_component():
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [{"kind": "sine", "variable": "vel_y", "amplitude": 0.01,
                                  "wavenumber": [4 * np.pi, 0, 0], "phase": 0.5}]}
    W = initial_primitive(initial, EULER, [8, 4], [0.0, 0.0], [1.0, 1.0])
    x, _, _ = cell_centers([8, 4], [0.0, 0.0], [1.0, 1.0])
    assert np.allclose(W[..., 2], 1.0 + 0.01 * np.sin(4 * np.pi * x + 0.5), rtol=0, atol=1e-13)
    assert np.all(W[..., 1] == 1.0)


def test_isentropic_vortex_keeps_entropy_and_has_the_published_velocity():
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [{"kind": "isentropic_vortex", "center": [5.0, 5.0, 0.0], "strength": 5.0}]}
    W = initial_primitive(initial, EULER, [40, 40], [0.0, 0.0], [10.0, 10.0], params={"gamma": 1.4})
    x, y, _ = cell_centers([40, 40], [0.0, 0.0], [10.0, 10.0])
    r2 = (x - 5) ** 2 + (y - 5) ** 2
    rho, u, v, p = W[..., 0], W[..., 1], W[..., 2], W[..., 4]
    assert np.allclose(p / rho ** 1.4, 1.0, rtol=1e-12)
    assert np.allclose(u, 1.0 - 5 / (2 * np.pi) * np.exp(0.5 * (1 - r2)) * (y - 5), rtol=0, atol=1e-14)
    temperature = 1.0 - 0.4 * 25 / (8 * 1.4 * np.pi ** 2) * np.exp(1 - r2)
    assert np.allclose(p / rho, temperature, rtol=1e-12)
    assert rho.min() == pytest.approx(temperature.min() ** 2.5, rel=1e-12)


def test_perturbation_errors_name_the_cause():
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [{"kind": "sine", "variable": "vel_q", "amplitude": 1.0,
                                  "wavenumber": [1.0, 0, 0], "phase": 0.0}]}
    with pytest.raises(ValueError, match="unknown variable 'vel_q'"):
        initial_primitive(initial, EULER, [4], [0.0], [1.0])
    initial["perturbations"] = [{"kind": "isentropic_vortex", "center": [0, 0, 0], "strength": 1.0}]
    with pytest.raises(ValueError, match="parameter gamma"):
        initial_primitive(initial, EULER, [4, 4], [0.0, 0.0], [1.0, 1.0])
