"""Tests for taichiflow.io: exact round trips through our reader AND through VTK."""

import ast
import csv
import os
from pathlib import Path

import numpy as np
import pytest
import pyvista

from taichiflow.io import DiagnosticsCSV, PvdSeries, read_vti, write_vti

IO_SOURCE = Path(__file__).resolve().parents[1] / "taichiflow" / "io.py"


def _vtk_flat(arr, ndim):
    """Expected pyvista cell_data layout: x fastest, components innermost."""
    if arr.ndim == ndim:
        return arr.reshape(-1, order="F")
    return np.stack([arr[..., c].reshape(-1, order="F") for c in range(arr.shape[-1])],
                    axis=1)


CASES = [
    ((7,), (-1.5,), (0.25,)),
    ((5, 4), (0.0, 2.0), (0.1, 0.3)),
    ((4, 3, 6), (1.0, -2.0, 0.5), (0.5, 0.125, 2.0)),
    ((3, 4, 1), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),  # genuine 3D with nz == 1
    ((1, 1, 1), (0.0, 0.0, 0.0), (1e-3, 1e-3, 1e-3)),
]


@pytest.mark.parametrize("cells,lower,spacing", CASES)
def test_vti_roundtrip(tmp_path, cells, lower, spacing):
    rng = np.random.default_rng(len(cells) * 100 + sum(cells))
    ndim = len(cells)
    arrays = {
        "rho32": rng.standard_normal(cells).astype(np.float32),
        "p64": rng.standard_normal(cells),
        "u32": rng.standard_normal(cells + (3,)).astype(np.float32),
        "u64": rng.standard_normal(cells + (3,)),
    }
    time = 0.1 + 1e-17 * 3 + 1 / 3
    path = tmp_path / "snap.vti"
    write_vti(path, cells, lower, spacing, arrays, time=time)
    assert [p.name for p in tmp_path.iterdir()] == ["snap.vti"]  # no temp leftovers

    c3 = tuple(cells) + (1,) * (3 - ndim)
    o3 = tuple(lower) + (0.0,) * (3 - ndim)

    # our reader
    meta, back = read_vti(path)
    assert meta["cells"] == c3
    assert meta["origin"] == o3
    assert meta["spacing"][:ndim] == tuple(spacing)
    assert all(s > 0 for s in meta["spacing"])
    assert meta["time"] == time
    assert meta["ndim"] == ndim
    assert set(back) == set(arrays)
    for name, a in arrays.items():
        assert back[name].shape == a.shape
        assert back[name].dtype == a.dtype
        assert np.array_equal(back[name], a)

    # VTK via pyvista
    mesh = pyvista.read(str(path))
    assert isinstance(mesh, pyvista.ImageData)
    assert tuple(mesh.dimensions) == tuple(n + 1 for n in c3)
    assert mesh.n_cells == int(np.prod(cells))
    assert np.allclose(mesh.origin, o3, rtol=0, atol=0)
    assert tuple(mesh.spacing)[:ndim] == tuple(spacing)
    assert "TIME" in mesh.field_data
    assert mesh.field_data["TIME"].shape == (1,)
    assert mesh.field_data["TIME"][0] == time
    for name, a in arrays.items():
        got = np.asarray(mesh.cell_data[name])
        assert got.dtype == a.dtype
        expected = _vtk_flat(a, ndim)
        assert got.shape == expected.shape
        assert np.array_equal(got, expected), name


def test_vti_vtk_sees_correct_cell_positions(tmp_path):
    """A field equal to the cell-centre x/y/z coordinate must match VTK's cell centres."""
    cells, lower, spacing = (5, 3, 4), (1.0, -1.0, 2.0), (0.5, 0.25, 2.0)
    centres = [lower[d] + (np.arange(cells[d]) + 0.5) * spacing[d] for d in range(3)]
    X, Y, Z = np.meshgrid(*centres, indexing="ij")
    write_vti(tmp_path / "c.vti", cells, lower, spacing,
              {"x": X, "y": Y, "z": Z, "xyz": np.stack([X, Y, Z], axis=-1)})
    mesh = pyvista.read(str(tmp_path / "c.vti"))
    cc = mesh.cell_centers().points
    assert np.allclose(mesh.cell_data["x"], cc[:, 0])
    assert np.allclose(mesh.cell_data["y"], cc[:, 1])
    assert np.allclose(mesh.cell_data["z"], cc[:, 2])
    assert np.allclose(mesh.cell_data["xyz"], cc)


def test_vti_without_time_and_int_dtypes(tmp_path):
    cells = (4, 3)
    arrays = {
        "i16": np.arange(12, dtype=np.int16).reshape(cells),
        "i64": (np.arange(12, dtype=np.int64) * 2**40).reshape(cells),
        "u32": np.arange(12, dtype=np.uint32).reshape(cells) + 2**31,
        "flag": np.arange(12).reshape(cells) % 2 == 0,
    }
    path = tmp_path / "ints.vti"
    write_vti(path, cells, (0.0, 0.0), (1.0, 1.0), arrays)
    meta, back = read_vti(path)
    assert meta["time"] is None
    assert back["i16"].dtype == np.int32
    assert back["i64"].dtype == np.int64
    assert back["u32"].dtype == np.int64
    assert back["flag"].dtype == np.uint8
    for name, a in arrays.items():
        assert np.array_equal(back[name], a.astype(back[name].dtype))
    mesh = pyvista.read(str(path))
    assert "TIME" not in mesh.field_data
    for name, a in arrays.items():
        assert np.array_equal(mesh.cell_data[name], back[name].reshape(-1, order="F"))


def test_vti_bad_input_leaves_existing_file(tmp_path):
    path = tmp_path / "x.vti"
    write_vti(path, (3,), (0.0,), (1.0,), {"a": np.zeros(3)})
    before = path.read_bytes()
    with pytest.raises(ValueError):
        write_vti(path, (3,), (0.0,), (1.0,), {"a": np.zeros(4)})
    with pytest.raises(ValueError):
        write_vti(path, (3, 2), (0.0,), (1.0,), {})
    with pytest.raises(TypeError):
        write_vti(path, (3,), (0.0,), (1.0,), {"c": np.zeros(3, dtype=complex)})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.vti"]


def test_vti_overwrite_is_atomic_replace(tmp_path):
    path = tmp_path / "x.vti"
    write_vti(path, (3,), (0.0,), (1.0,), {"a": np.zeros(3)}, time=0.0)
    ino = os.stat(path).st_ino
    write_vti(path, (3,), (0.0,), (1.0,), {"a": np.ones(3)}, time=1.0)
    assert os.stat(path).st_ino != ino  # replaced, not rewritten in place
    meta, back = read_vti(path)
    assert meta["time"] == 1.0 and np.array_equal(back["a"], np.ones(3))


def test_io_module_imports_only_numpy_and_stdlib():
    tree = ast.parse(IO_SOURCE.read_text())
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            mods.add(node.module.split(".")[0])
    assert "vtk" not in mods and "pyvista" not in mods
    assert mods - {"__future__", "numpy"} <= set(__import__("sys").stdlib_module_names)


# --------------------------------------------------------------------------
# PVD
# --------------------------------------------------------------------------

def _write_snap(folder, name, t):
    write_vti(folder / name, (4, 2), (0.0, 0.0), (1.0, 1.0),
              {"t": np.full((4, 2), t)}, time=t)


def test_pvd_readable_by_paraview_reader(tmp_path):
    out = tmp_path / "vtk"
    out.mkdir()
    times = [0.0, 0.1, 0.30000000000000004]
    pvd = PvdSeries(tmp_path / "series.pvd")
    for n, t in enumerate(times):
        _write_snap(out, f"snap_{n:04d}.vti", t)
        pvd.add(t, f"vtk/snap_{n:04d}.vti")
    assert pvd.entries == [(t, f"vtk/snap_{n:04d}.vti") for n, t in enumerate(times)]

    reader = pyvista.PVDReader(str(tmp_path / "series.pvd"))
    assert list(reader.time_values) == times
    for t in times:
        reader.set_active_time_value(t)
        mesh = reader.read()[0]
        assert np.all(mesh.cell_data["t"] == t)
        assert mesh.field_data["TIME"][0] == t


def test_pvd_resume_replace_and_truncate(tmp_path):
    path = tmp_path / "series.pvd"
    pvd = PvdSeries(path)
    assert path.exists() and pvd.entries == []
    pvd.add(0.0, "a0.vti")
    pvd.add(1.0, "a1.vti")
    pvd.add(2.0, "a2.vti")
    pvd.add(3.0, "a3.vti")

    # restarted run from a checkpoint at t = 1
    pvd2 = PvdSeries(path, resume=True)
    assert pvd2.entries == pvd.entries
    pvd2.truncate_after(1.0)
    assert pvd2.entries == [(0.0, "a0.vti"), (1.0, "a1.vti")]
    pvd2.add(1.0, "b1.vti")  # same time: replaced, not duplicated
    pvd2.add(2.0, "b2.vti")
    assert pvd2.entries == [(0.0, "a0.vti"), (1.0, "b1.vti"), (2.0, "b2.vti")]
    assert PvdSeries(path, resume=True).entries == pvd2.entries

    # absolute file names are stored relative to the pvd folder
    pvd2.add(2.5, tmp_path / "sub" / "c.vti")
    assert pvd2.entries[-1] == (2.5, "sub/c.vti")

    # without resume the series starts empty (and the file is rewritten)
    assert PvdSeries(path).entries == []
    assert PvdSeries(path, resume=True).entries == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["series.pvd"]


def test_pvd_resume_missing_file_and_bad_file(tmp_path):
    assert PvdSeries(tmp_path / "new.pvd", resume=True).entries == []
    bad = tmp_path / "bad.pvd"
    bad.write_text("not xml")
    with pytest.raises(ValueError):
        PvdSeries(bad, resume=True)


# --------------------------------------------------------------------------
# CSV diagnostics
# --------------------------------------------------------------------------

def test_diagnostics_csv_roundtrip_exact(tmp_path):
    path = tmp_path / "diag.csv"
    cols = ["step", "time", "mass", "note"]
    rng = np.random.default_rng(1)
    rows = []
    with DiagnosticsCSV(path, cols) as d:
        for step in range(20):
            row = {"step": step, "time": float(rng.random() * 1e-7),
                   "mass": float(rng.standard_normal() * 1e12), "note": f"s{step}"}
            rows.append(row)
            d.write(row)
        special = [20, np.float32(0.1), np.float64(1 / 3), "x,y"]
        d.write(special)
        d.flush()
    with open(path, newline="") as f:
        got = list(csv.reader(f))
    assert got[0] == cols
    assert len(got) == 1 + 21
    for row, text in zip(rows, got[1:]):
        assert text[0] == str(row["step"])
        assert float(text[1]) == row["time"]
        assert float(text[2]) == row["mass"]
        assert text[3] == row["note"]
    last = got[-1]
    assert last[0] == "20"
    assert float(last[1]) == float(np.float32(0.1))
    assert float(last[2]) == 1 / 3
    assert last[3] == "x,y"
    assert d.closed
    with pytest.raises(ValueError):
        d.write(special)


def test_diagnostics_csv_row_validation(tmp_path):
    with DiagnosticsCSV(tmp_path / "d.csv", ["a", "b"]) as d:
        with pytest.raises(ValueError):
            d.write({"a": 1})
        with pytest.raises(ValueError):
            d.write({"a": 1, "b": 2, "c": 3})
        with pytest.raises(ValueError):
            d.write([1, 2, 3])
        d.write({"b": 2.5, "a": 1})
    assert (tmp_path / "d.csv").read_text() == "a,b\n1,2.5\n"


def test_diagnostics_csv_resume(tmp_path):
    path = tmp_path / "diag.csv"
    cols = ["step", "time"]
    with DiagnosticsCSV(path, cols) as d:
        d.write([0, 0.0])
        d.write([1, 0.1])
    with DiagnosticsCSV(path, cols, resume=True) as d:
        d.write([2, 0.2])
    with open(path, newline="") as f:
        got = list(csv.reader(f))
    assert got == [cols, ["0", "0"], ["1", "0.10000000000000001"],
                   ["2", "0.20000000000000001"]]

    # partial last row left by a crash is dropped on resume
    with open(path, "a") as f:
        f.write("3,0.3")
    with DiagnosticsCSV(path, cols, resume=True) as d:
        d.write([3, 0.5])
    with open(path, newline="") as f:
        got = list(csv.reader(f))
    assert got[-2:] == [["2", "0.20000000000000001"], ["3", "0.5"]]

    # header mismatch names the difference and leaves the file untouched
    before = path.read_bytes()
    with pytest.raises(ValueError, match="missing columns \\['mass'\\]"):
        DiagnosticsCSV(path, ["step", "time", "mass"], resume=True)
    with pytest.raises(ValueError, match="unexpected columns \\['time'\\]"):
        DiagnosticsCSV(path, ["step"], resume=True)
    with pytest.raises(ValueError, match="order"):
        DiagnosticsCSV(path, ["time", "step"], resume=True)
    assert path.read_bytes() == before

    # without resume the file starts over
    with DiagnosticsCSV(path, cols) as d:
        pass
    assert path.read_text() == "step,time\n"
    # resume on a missing file just creates it
    with DiagnosticsCSV(tmp_path / "new.csv", cols, resume=True) as d:
        d.write([0, 1.5])
    assert (tmp_path / "new.csv").read_text() == "step,time\n0,1.5\n"
