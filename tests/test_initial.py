"""Initial-condition perturbations: sine (optionally inside a region) and Shu's vortex."""
import math

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


# --- formulas and rasters ------------------------------------------------------------------

def formula(expression, variable="rho", **keys):
    return {"kind": "formula", "variable": variable, "expression": expression, "operation": "set", **keys}


def raster(file, variable="p", **keys):
    return {"kind": "raster", "variable": variable, "file": str(file), "operation": "set", **keys}


def test_formula_on_cell_centres_is_numpys_value():
    """The bump of the docs on a 2D grid, and every function at once: numpy's own values."""
    expression = "max(0, 0.2 - 0.05*(x - 10)**2) + atan2(y, 3) * tanh(x/5) - sqrt(abs(x - y)) + log(2 + sin(x)) " \
                 "* exp(-y/10) + cos(pi*y) / (2 + tan(0.1*x)) + min(x, y, 4) + -x"
    initial = {"background": BACKGROUND, "regions": [], "perturbations": [formula(expression)]}
    W = initial_primitive(initial, EULER, [40, 20], [0.0, 0.0], [20.0, 10.0])
    x, y, _ = cell_centers([40, 20], [0.0, 0.0], [20.0, 10.0])
    expected = (np.maximum(0, 0.2 - 0.05 * (x - 10) ** 2) + np.arctan2(y, 3) * np.tanh(x / 5)
                - np.sqrt(np.abs(x - y)) + np.log(2 + np.sin(x)) * np.exp(-y / 10)
                + np.cos(np.pi * y) / (2 + np.tan(0.1 * x)) + np.minimum(np.minimum(x, y), 4) - x)
    np.testing.assert_allclose(W[..., 0], expected, rtol=1e-14, atol=1e-14)
    x0, y0 = 10.25, 2.75   # cell [20, 5], on the bump
    assert W[20, 5, 0] == pytest.approx(0.2 - 0.05 * 0.25 ** 2 + math.atan2(y0, 3) * math.tanh(x0 / 5)
                                        - math.sqrt(x0 - y0) + math.log(2 + math.sin(x0)) * math.exp(-y0 / 10)
                                        + math.cos(math.pi * y0) / (2 + math.tan(0.1 * x0)) + y0 - x0, rel=1e-14)
    assert np.all(W[..., 4] == 1.0)


def test_formula_set_replaces_and_add_adds_in_order():
    """set, then add on the same variable: the background is gone, the second adds to the first."""
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [formula("2 + x"), formula("10 * x", operation="add"),
                                 formula("3", variable="vel_y", operation="add")]}
    W = initial_primitive(initial, EULER, [4], [0.0], [1.0])
    x = np.array([0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(W[:, 0], 2 + 11 * x, rtol=1e-15)
    np.testing.assert_array_equal(W[:, 2], 4.0)             # vel_y: 1 + 3
    np.testing.assert_array_equal(W[:, 1], 1.0)             # vel_x untouched


def test_formula_reads_variables_as_set_so_far():
    """A depth over a bed, as a lake at rest is set: p (the "bed") by one formula, rho (the
    "depth") = max(0, 0.5 - p) by a second that reads it; vel_x reads rho after that."""
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [formula("max(0, 0.7 - 0.05*(x - 10)**2)", variable="p"),
                                 formula("max(0, 0.5 - p)"), formula("2 * rho + vel_y", variable="vel_x")]}
    W = initial_primitive(initial, EULER, [50], [0.0], [25.0])
    x = (np.arange(50) + 0.5) / 2
    bed = np.maximum(0, 0.7 - 0.05 * (x - 10) ** 2)
    np.testing.assert_array_equal(W[:, 4], bed)
    np.testing.assert_array_equal(W[:, 0], np.maximum(0, 0.5 - bed))
    assert (W[:, 0] == 0).sum() > 2 and (W[:, 0] == 0.5).sum() > 20
    np.testing.assert_array_equal(W[:, 1], 2 * W[:, 0] + 1.0)
    with pytest.raises(ValueError, match="unknown name 'pp' .did you mean 'p'.*primitive variables rho, vel_x, vel_y, vel_z, p"):
        initial_primitive({**initial, "perturbations": [formula("pp + 1")]}, EULER, [4], [0.0], [1.0])


def test_formula_inside_a_region_only():
    """A sharp half-space x > 0.5: set replaces the value there and only there, add adds there;
    a smoothed region blends with its weight, as a region's state does."""
    half = {"shape": "half_space", "point": [0.5, 0, 0], "normal": [1.0, 0, 0], "state": {}, "smoothing": 0.0}
    initial = {"background": BACKGROUND, "regions": [half],
               "perturbations": [formula("5 * x", region=0), formula("x", variable="p", operation="add", region=0)]}
    W = initial_primitive(initial, EULER, [10], [0.0], [1.0])
    x = (np.arange(10) + 0.5) / 10
    np.testing.assert_allclose(W[:, 0], np.where(x > 0.5, 5 * x, 1.0), rtol=1e-15)
    np.testing.assert_allclose(W[:, 4], np.where(x > 0.5, 1.0 + x, 1.0), rtol=1e-15)
    initial["regions"] = [{**half, "smoothing": 0.1}]
    W = initial_primitive(initial, EULER, [10], [0.0], [1.0])
    s = 0.5 * (1 - np.tanh(-(x - 0.5) / 0.1))
    np.testing.assert_allclose(W[:, 0], (1 - s) * 1.0 + s * 5 * x, rtol=1e-14)
    np.testing.assert_allclose(W[:, 4], 1.0 + x * s, rtol=1e-14)


def write_raster(tmp_path, values, name="r.npy", extent=None):
    path = tmp_path / name
    if name.endswith(".npz"):
        np.savez(path, values=values, **({} if extent is None else {"extent": extent}))
    else:
        np.save(path, values)
    return path


def bilinear(x, y):
    return 3.0 - 0.5 * x + 2.0 * y + 0.25 * x * y


def test_raster_of_a_bilinear_function_reproduces_it(tmp_path):
    """Nodes of f = 3 - x/2 + 2y + xy/4 on [-1, 3] x [0, 2] (9 x 5 nodes), sampled at cell
    centres of a grid that does not line up with them: f itself, to rounding."""
    nx, ny = 9, 5
    nodes = np.meshgrid(np.linspace(-1, 3, nx), np.linspace(0, 2, ny), indexing="ij")
    path = write_raster(tmp_path, bilinear(*nodes))
    initial = {"background": BACKGROUND, "regions": [],
               "perturbations": [raster(path, extent=[-1.0, 3.0, 0.0, 2.0])]}
    W = initial_primitive(initial, EULER, [13, 7], [-1.0, 0.0], [3.0, 2.0])
    x, y, _ = cell_centers([13, 7], [-1.0, 0.0], [3.0, 2.0])
    np.testing.assert_allclose(W[..., 4], bilinear(x, y), rtol=0, atol=1e-14)
    assert W[6, 3, 4] == pytest.approx(bilinear(1.0, 1.0), abs=1e-14)   # the middle cell: 3.75


def test_raster_is_clamped_to_its_extent(tmp_path):
    """A raster covering [0, 1] x [0, 1] on the grid [-1, 2] x [-1, 2]: outside it, the value at the
    nearest point of its edge (the corner's beyond a corner), never extrapolated."""
    nodes = np.meshgrid(np.linspace(0, 1, 3), np.linspace(0, 1, 3), indexing="ij")
    path = write_raster(tmp_path, bilinear(*nodes), name="r.npz", extent=[0.0, 1.0, 0.0, 1.0])
    initial = {"background": BACKGROUND, "regions": [], "perturbations": [raster(path, operation="add")]}
    W = initial_primitive(initial, EULER, [6, 6], [-1.0, -1.0], [2.0, 2.0])
    x, y, _ = cell_centers([6, 6], [-1.0, -1.0], [2.0, 2.0])
    np.testing.assert_allclose(W[..., 4], 1.0 + bilinear(np.clip(x, 0, 1), np.clip(y, 0, 1)), rtol=0, atol=1e-14)
    assert W[0, 0, 4] == 1.0 + bilinear(0.0, 0.0) == 4.0           # beyond the lower corner
    assert W[5, 0, 4] == pytest.approx(1.0 + bilinear(1.0, 0.0))   # x beyond, y beyond: corner (1, 0)
    assert W[5, 3, 4] == pytest.approx(1.0 + bilinear(1.0, 0.75))  # x beyond the edge only


def test_raster_in_1d_is_linear_and_in_3d_the_same_at_every_z(tmp_path):
    path = write_raster(tmp_path, np.array([0.0, 1.0, 4.0, 9.0]), name="line.npy")
    initial = {"background": BACKGROUND, "regions": [], "perturbations": [raster(path, extent=[0.0, 3.0])]}
    W = initial_primitive(initial, EULER, [6], [0.0], [3.0])
    np.testing.assert_allclose(W[:, 4], [0.25, 0.75, 1.75, 3.25, 5.25, 7.75], rtol=1e-15)  # nodes at 0, 1, 2, 3
    plane = write_raster(tmp_path, bilinear(*np.meshgrid([0.0, 1.0], [0.0, 1.0], indexing="ij")))
    initial["perturbations"] = [raster(plane, extent=[0.0, 1.0, 0.0, 1.0])]
    W = initial_primitive(initial, EULER, [4, 4, 3], [0.0] * 3, [1.0] * 3)
    x, y, _ = cell_centers([4, 4, 3], [0.0] * 3, [1.0] * 3)
    np.testing.assert_allclose(W[..., 4], bilinear(x, y), rtol=0, atol=1e-14)


def test_raster_and_variable_errors(tmp_path):
    initial = {"background": BACKGROUND, "regions": [], "perturbations": [raster(tmp_path / "none.npy")]}
    with pytest.raises(ValueError, match=r"#1: file: no file '.*none.npy'"):
        initial_primitive(initial, EULER, [4, 4], [0.0, 0.0], [1.0, 1.0])
    initial["perturbations"] = [formula("x", variable="z")]
    with pytest.raises(ValueError, match=r"#1: unknown variable 'z'; choose from"):
        initial_primitive(initial, EULER, [4], [0.0], [1.0])
    initial["perturbations"] = [formula("x", region=0)]
    with pytest.raises(ValueError, match=r"region 0 does not exist \(there are 0\)"):
        initial_primitive(initial, EULER, [4], [0.0], [1.0])


def test_the_valley_raster_is_shipped_small_and_reproducible(tmp_path):
    """cases/data/valley.npz: what tools/make-valley.py writes (run again here: the same values),
    under 300 kB, a valley floor below its hillsides and falling down the valley."""
    import subprocess
    import sys
    from pathlib import Path

    from taichiflow.rasters import read_raster
    root = Path(__file__).resolve().parent.parent
    shipped = root / "cases" / "data" / "valley.npz"
    assert shipped.stat().st_size < 300_000
    valley = read_raster(shipped, dim=2)
    assert valley.extent == (0.0, 6000.0, 0.0, 3000.0) and valley.values.shape == (241, 121)
    floor = valley.values.min(axis=1)
    assert floor[0] > floor[-1] + 30 and np.all(valley.values.max(axis=1) > floor + 100)
    subprocess.run([sys.executable, str(root / "tools" / "make-valley.py"), "--out", str(tmp_path / "v.npz")],
                   check=True, capture_output=True)
    np.testing.assert_array_equal(read_raster(tmp_path / "v.npz", dim=2).values, valley.values)
