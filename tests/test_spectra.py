"""`taichiflow spectrum` (taichiflow/spectra.py): shell sums of |FFT(v)|^2 / 2 normalised so that
they add up to <|v|^2> / 2, a single Fourier mode landing whole in its shell, the sqrt(rho)
weighting, the turbulence perturbation's slope read back from a snapshot, the choice of
snapshots of a run folder, the CSV and the log-log plot."""
import math

import numpy as np
import pytest
from PIL import Image

from taichiflow.cli import main
from taichiflow.initial import cell_centers, initial_primitive
from taichiflow.io import PvdSeries, write_vti
from taichiflow.spectra import shell_spectrum

EULER = {"rho": 1, "vel": 3, "p": 1}


def one_mode(cells, amplitude=0.7, mean=(0.5, 0.0, 0.0)):
    """v = mean + amplitude cos(2 pi (3 x + 4 y) + 0.3) e_y (plus e_z sin), on the unit box:
    n = (3, 4, 0), |n| = 5."""
    x, y, _ = cell_centers(cells, [0.0] * len(cells), [1.0] * len(cells))
    phase = 2 * np.pi * (3 * x + 4 * y) + 0.3
    v = np.zeros(tuple(cells) + (3,))
    v[...] = mean
    v[..., 1] += amplitude * np.cos(phase)
    v[..., 2] += amplitude * np.sin(phase)
    return v


def read_csv(path):
    lines = path.read_text().splitlines()
    return lines[0].split(","), np.array([[float(x) for x in line.split(",")] for line in lines[1:]])


def snapshot(path, v, rho=None, time=0.0):
    cells = v.shape[:-1]
    arrays = {"vel": v, "rho": np.ones(cells) if rho is None else rho}
    write_vti(path, cells, [0.0] * len(cells), [1.0 / n for n in cells], arrays, time=time)
    return path


@pytest.mark.parametrize("cells", [[16, 12, 8], [16, 12]])
def test_a_single_mode_lands_whole_in_its_shell(cells):
    """E(5) = amplitude^2 / 2 (two components of amplitude^2 / 4 each), E(0) = |mean|^2 / 2,
    every other shell empty to rounding, the sum <|v|^2> / 2."""
    v = one_mode(cells)
    k, energy = shell_spectrum(v)
    assert energy[5] == pytest.approx(0.7 ** 2 / 2, rel=1e-13)
    assert energy[0] == pytest.approx(0.5 ** 2 / 2, rel=1e-13)
    others = np.delete(energy, [0, 5])
    assert np.abs(others).max() < 1e-28
    assert energy.sum() == pytest.approx(0.5 * np.mean(np.sum(v * v, axis=-1)), rel=1e-13)
    np.testing.assert_array_equal(k, np.arange(len(energy)))


def test_a_snapshot_through_the_command_and_the_sqrt_rho_weight(tmp_path):
    v = one_mode([16, 12, 8])
    path = snapshot(tmp_path / "snap.vti", v, rho=np.full((16, 12, 8), 4.0), time=0.25)
    assert main(["spectrum", str(path), "--csv", str(tmp_path / "e.csv")]) == 0
    header, rows = read_csv(tmp_path / "e.csv")
    assert header == ["k", "E"]
    assert rows[5, 1] == pytest.approx(0.245, rel=1e-13) and rows[5, 0] == 5
    assert main(["spectrum", str(path), "--weight", "sqrt_rho", "--csv", str(tmp_path / "w.csv")]) == 0
    _, weighted = read_csv(tmp_path / "w.csv")
    np.testing.assert_allclose(weighted[:, 1], 4.0 * rows[:, 1], rtol=1e-13, atol=1e-30)


def test_the_turbulence_perturbations_slope_read_back_from_a_snapshot(tmp_path, capsys):
    """The field the `turbulence` perturbation puts on 64^3 (band 2..24, slope 5/3) written as a
    snapshot: the command's spectrum, printed, follows k^-5/3 over the shells 3..23 (least
    squares; measured 1.59) and adds up to rms^2 / 2."""
    initial = {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [],
               "perturbations": [{"kind": "turbulence", "rms_velocity": 3.0, "n_min": 2, "n_max": 24,
                                  "slope": 5.0 / 3.0, "solenoidal_fraction": 0.5, "seed": 4, "_velocity": "vel"}]}
    w = initial_primitive(initial, EULER, [64] * 3, [0.0] * 3, [1.0] * 3)
    path = snapshot(tmp_path / "turbulence.vti", w[..., 1:4])
    assert main(["spectrum", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "k,E"
    energy = np.array([float(line.split(",")[1]) for line in lines[1:]])
    shells = np.arange(3, 24)
    slope = -np.polyfit(np.log(shells), np.log(energy[3:24]), 1)[0]
    assert abs(slope - 5.0 / 3.0) < 0.2, slope
    assert energy.sum() == pytest.approx(4.5, rel=1e-12)


@pytest.fixture
def run_folder(tmp_path):
    """A run's folder: three snapshots (t = 0, 0.5, 1) of one mode decaying, listed in series.pvd."""
    series = PvdSeries(tmp_path / "series.pvd")
    for i, t in enumerate((0.0, 0.5, 1.0)):
        name = f"snapshot_{i:05d}.vti"
        snapshot(tmp_path / name, one_mode([16, 16], amplitude=math.exp(-t), mean=(0.0, 0.0, 0.0)), time=t)
        series.add(t, name)
    return tmp_path


def test_snapshots_of_a_run_folder_by_time(run_folder, tmp_path):
    csv = tmp_path / "picked.csv"
    assert main(["spectrum", str(run_folder), "--csv", str(csv)]) == 0   # the last
    assert read_csv(csv)[1][5, 1] == pytest.approx(math.exp(-2.0) / 2, rel=1e-13)
    assert main(["spectrum", str(run_folder), "--time", "0.4", "--csv", str(csv)]) == 0
    assert read_csv(csv)[1][5, 1] == pytest.approx(math.exp(-1.0) / 2, rel=1e-13)
    assert main(["spectrum", str(run_folder), "--times", "0", "1", "--csv", str(csv)]) == 0
    header, rows = read_csv(csv)
    assert header == ["k", "E(t=0)", "E(t=1)"]
    np.testing.assert_allclose(rows[5, 1:], [0.5, math.exp(-2.0) / 2], rtol=1e-13)


def test_the_plot_has_a_line_per_snapshot(run_folder, tmp_path):
    """A log-log chart with one line per snapshot picked (the chart's first two colours), of
    snapshots whose energy spreads over the shells 1..6 (v_x = sum_n cos(2 pi n x) / n)."""
    x, _, _ = cell_centers([16, 16], [0.0, 0.0], [1.0, 1.0])
    v = np.zeros((16, 16, 3))
    v[..., 0] = sum(np.cos(2 * np.pi * n * x) / n for n in range(1, 7))
    for i, t in enumerate((0.0, 0.5, 1.0)):
        snapshot(run_folder / f"snapshot_{i:05d}.vti", v * (1.0 - 0.3 * t), time=t)
    png = tmp_path / "spectrum.png"
    assert main(["spectrum", str(run_folder), "--times", "0", "1", "--csv", str(tmp_path / "e.csv"),
                 "--plot", str(png)]) == 0
    image = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert image.shape == (700, 900, 3)
    blue = np.all(np.abs(image - [0x1f, 0x77, 0xb4]) < 40, axis=-1).sum()
    red = np.all(np.abs(image - [0xd6, 0x27, 0x28]) < 40, axis=-1).sum()
    assert blue > 500 and red > 500, (blue, red)


@pytest.mark.parametrize("args, message", [
    (["--field", "velocity"], "no vector array 'velocity' (its vector arrays: vel); choose one with --field"),
    (["--weight", "sqrt_rho", "--density", "density"], "--weight sqrt_rho needs the scalar array 'density'"),
    (["--time", "1.0"], "--time and --times pick snapshots of an output folder"),
])
def test_errors_are_one_line(tmp_path, capsys, args, message):
    path = snapshot(tmp_path / "s.vti", one_mode([8, 8]))
    assert main(["spectrum", str(path), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("taichiflow: error: ")


def test_a_folder_without_a_series_is_refused(tmp_path, capsys):
    assert main(["spectrum", str(tmp_path)]) == 1
    assert "neither a snapshot (.vti) nor a run's output folder (no series.pvd)" in capsys.readouterr().err
