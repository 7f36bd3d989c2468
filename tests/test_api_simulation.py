"""taichiflow.Simulation (docs/api.md): the command line's files bit for bit, stepping, the
state as numpy and back, callbacks that stop, several simulations one after another."""
import csv
import re
import shutil

import numpy as np
import pytest

from helpers import CASES, ROOT
from taichiflow import STOP, Case, CaseError, Simulation, SimulationError, SimulationReleased, Stop
from taichiflow.checkpoint import load as load_checkpoint
from taichiflow.cli import main
from taichiflow.errors import OutputError
from taichiflow.io import PvdSeries, read_vti


def small(arch, name="sod.toml", cells=(48,), **sections) -> Case:
    """A shipped case on a few cells, in f64 without fast math (exact comparisons)."""
    case = Case.from_file(CASES / name, {"grid.cells": list(cells), "run": {"arch": arch, "precision": "f64",
                                                                         "fast_math": False}})
    return case.with_(**sections) if sections else case


def csv_rows(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_a_run_with_a_folder_writes_the_command_lines_files_bit_for_bit(tmp_path, arch):
    """Callbacks cut the batches of steps where they are due: the steps are the same."""
    sim = Simulation(small(arch), out=tmp_path / "api")
    seen = []
    sim.every(7, lambda s: seen.append(s.step))
    sim.at_outputs(lambda s: seen.append(("output", s.t)))
    result = sim.run()
    assert result.stopped is None and result.t == 0.2 and result.steps_run == sim.step > 0
    assert [s for s in seen if not isinstance(s, tuple)] == list(range(7, sim.step + 1, 7))
    assert [s[1] for s in seen if isinstance(s, tuple)] == pytest.approx([0.0, 0.05, 0.1, 0.15, 0.2], abs=1e-15)

    code = main(["run", str(CASES / "sod.toml"), "--out", str(tmp_path / "cli"), "--quiet", "--arch", arch,
                 "--precision", "f64", "--set", "grid.cells=[48]", "--set", "run.fast_math=false"])
    assert code == 0
    files = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "api").iterdir())
    for name in files:
        if name != "run.log":
            assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert sim.diagnostics == csv_rows(tmp_path / "api" / "diagnostics.csv")
    assert result.final_snapshot == tmp_path / "api" / "snapshot_00004.vti"
    log = (tmp_path / "api" / "run.log").read_text()
    assert "taichiflow.Simulation(" in log and "steps to t = 0.2" in log
    # the command line's run started Taichi again: this Simulation kept its state
    assert sim.released and sim.primitive["rho"].shape == (48,)


def test_advance_steps_and_times_and_the_state_as_named_arrays(arch):
    sim = Simulation(small(arch))
    assert (sim.t, sim.step, sim.dt) == (0.0, 0, 0.0)
    sim.advance()
    assert sim.step == 1 and sim.t == sim.dt > 0
    sim.advance(steps=3)
    assert sim.step == 4
    sim.advance(to_time=0.05)
    assert sim.t == 0.05
    sim.advance(to_time=0.2, steps=2)
    assert sim.t < 0.2 and sim.step > 4
    steps = [row["step"] for row in sim.diagnostics]
    assert steps == list(range(sim.step + 1))  # (diagnostics_every = 1, and the first state)
    assert sim.diagnostics[-1]["time"] == sim.t and "total_rho" in sim.diagnostics_columns

    w, u = sim.primitive, sim.conserved
    assert list(w) == ["rho", "vel", "p"] and list(u) == ["rho", "mom", "E"]
    assert w["rho"].shape == (48,) and w["vel"].shape == (48, 3) and u["mom"].shape == (48, 3)
    np.testing.assert_allclose(u["mom"][:, 0], w["rho"] * w["vel"][:, 0], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="read-only"):
        w["rho"][0] = 2.0
    assert sim.field("rho") is not None and sim.field("E").shape == (48,)
    mach = sim.field("mach")
    np.testing.assert_allclose(mach, np.abs(w["vel"][:, 0]) / np.sqrt(1.4 * w["p"] / w["rho"]), rtol=1e-12)
    with pytest.raises(KeyError, match=r"no field 'mahc' \(did you mean 'mach'\?\).*derived: mach"):
        sim.field("mahc")
    assert sim.coordinates()[0][0] == pytest.approx(0.5 / 48)
    with pytest.raises(ValueError, match="positive integer"):
        sim.advance(steps=0)
    with pytest.raises(ValueError, match="no output folder"):
        sim.write_snapshot()
    with pytest.raises(ValueError, match="no output folder"):
        sim.write_checkpoint()


def test_set_state_from_arrays(arch):
    sim = Simulation(small(arch, cells=(32,)))
    x = sim.coordinates()[0]
    rho = 1.0 + 0.2 * np.sin(2 * np.pi * x)
    sim.set_state(primitive={"rho": rho, "vel": [0.5], "p": 1.0})
    w = sim.primitive
    np.testing.assert_array_equal(w["rho"], rho)  # (W read back from U = cons(W): to rounding)
    np.testing.assert_allclose(w["vel"], np.broadcast_to([0.5, 0.0, 0.0], (32, 3)), rtol=1e-14)
    np.testing.assert_allclose(w["p"], 1.0, rtol=1e-14)
    sim.set_state(primitive={"p": 2.0 * np.ones(32)})  # (the others kept)
    np.testing.assert_array_equal(sim.primitive["rho"], rho)
    np.testing.assert_allclose(sim.primitive["p"], 2.0, rtol=1e-14)
    mass = sim.conserved["rho"].sum()
    sim.advance(steps=2)
    assert sim.conserved["rho"].sum() == pytest.approx(mass, rel=1e-3)
    state = sim.conserved
    with pytest.raises(ValueError, match=r"inadmissible state given to set_state\(\) at cell \(3,\): rho = -1.0 .*"
                                         r"left as it was"):
        sim.set_state(primitive={"rho": np.where(np.arange(32) == 3, -1.0, 1.0)})
    np.testing.assert_array_equal(sim.conserved["E"], state["E"])
    with pytest.raises(KeyError, match=r"unknown primitive variable 'rh' \(did you mean 'rho'\?\)"):
        sim.set_state(primitive={"rh": 1.0})
    with pytest.raises(ValueError, match=r"'rho' has shape \(31,\); expected the grid's \(32,\)"):
        sim.set_state(primitive={"rho": np.ones(31)})
    with pytest.raises(TypeError, match="one of them"):
        sim.set_state()
    sim.set_state(conserved={"rho": 1.0, "mom": [0.0], "E": 2.5})
    np.testing.assert_allclose(sim.primitive["p"], 1.0, rtol=1e-14)


def test_a_callback_stops_the_run_and_run_goes_on_from_there(tmp_path, arch):
    out, resumed = tmp_path / "out", tmp_path / "resumed"
    sim = Simulation(small(arch, cells=(32,)), out=out)
    active = {"stop at 10", "advance inside"}
    sim.every(5, lambda s: STOP if "stop at 10" in active and s.step == 10 else None)
    result = sim.run()
    assert result.stopped.endswith("returned taichiflow.STOP") and sim.stop_reason == result.stopped
    assert sim.step == 10 and result.final_snapshot is not None
    assert read_vti(result.final_snapshot)[0]["time"] == sim.t
    assert csv_rows(out / "diagnostics.csv")[-1]["step"] == 10
    assert "STOPPED: " in (out / "run.log").read_text()
    assert load_checkpoint(sim.write_checkpoint()).header["step"] == 10
    shutil.copytree(out, resumed)  # (continued by the command line below)
    active.clear()

    def inside(s):
        if "advance inside" in active:
            s.advance()
    sim.every(3, inside)
    active.add("advance inside")
    with pytest.raises(RuntimeError, match=r"advance\(\) from a callback"):
        sim.advance(steps=3)
    active.clear()

    def past(s):
        if "past 0.1" in active and s.t > 0.1:
            raise Stop("t passed 0.1")
    sim.every(1, past)
    active.add("past 0.1")
    sim.run()
    assert sim.stop_reason == "t passed 0.1" and 0.1 < sim.t < 0.2
    active.clear()
    result = sim.run()
    assert result.stopped is None and sim.t == 0.2
    times = [t for t, _ in PvdSeries(out / "series.pvd", resume=True).entries]
    assert times == sorted(times) and times[-1] == 0.2 and len(times) == len(set(times))
    assert [int(row["step"]) for row in csv_rows(out / "diagnostics.csv")] == list(range(sim.step + 1))
    with pytest.raises(OutputError, match="holds the results of another run"):
        Simulation(small(arch, cells=(32,)), out=out)

    # the checkpoint written at the stop continues with the command line, to the same steps
    assert main(["run", str(resumed / "case.toml"), "--resume", str(resumed), "--quiet"]) == 0
    assert (resumed / "diagnostics.csv").read_bytes() == (out / "diagnostics.csv").read_bytes()
    last = PvdSeries(resumed / "series.pvd", resume=True).entries[-1][1]
    np.testing.assert_array_equal(read_vti(resumed / last)[1]["rho"], read_vti(result.final_snapshot)[1]["rho"])


def test_a_blow_up_stops_with_the_command_lines_error_and_keeps_the_last_good_state(tmp_path, arch):
    """Forward Euler with WENO5 at CFL 1 is unstable (as in test_cli.py)."""
    sim = Simulation(small(arch, cells=(400,), scheme={"integrator": "euler", "cfl": 1.0, "riemann": "rusanov"}),
                     out=tmp_path / "out")
    with pytest.raises(SimulationError, match=r"inadmissible state after step \d+ .* at cell \(\d+,\): .* Wrote the "
                                              r"last good state"):
        sim.run()
    assert "FAILED: inadmissible state" in (tmp_path / "out" / "run.log").read_text()
    assert sim.diagnostics == csv_rows(tmp_path / "out" / "diagnostics.csv") and sim.diagnostics[-1]["step"] == sim.step
    last = PvdSeries(tmp_path / "out" / "series.pvd", resume=True).entries[-1][1]
    np.testing.assert_array_equal(read_vti(tmp_path / "out" / last)[1]["p"], sim.primitive["p"])


def test_the_time_step_follows_a_state_set_between_steps(arch):
    """advance() starts from the CFL rate the last batch ended on, without checking the state
    again (run/driver.py: _checked_rate), unless the state was set since: a state 10 times
    hotter after a step must get its own, 10 times shorter, step."""
    sim = Simulation(small(arch, cells=(32,)))
    sim.advance()
    sim.advance()
    sim.set_state(primitive={"rho": 1.0, "vel": [0.0], "p": 100.0})
    sim.advance()
    expected = sim.case.resolved.scheme.cfl * (1.0 / 32) / np.sqrt(1.4 * 100.0)
    assert sim.dt == pytest.approx(expected, rel=1e-12)


def test_an_older_simulation_stays_readable_after_a_newer_one_starts(tmp_path, arch):
    first = Simulation(small(arch, cells=(32,)))
    first.advance(to_time=0.05)
    rho, mach, rows = first.primitive["rho"].copy(), first.field("mach").copy(), first.diagnostics
    second = Simulation(small(arch, "toro_123.toml", cells=(32,)))
    assert first.released and not second.released
    np.testing.assert_array_equal(first.primitive["rho"], rho)
    np.testing.assert_array_equal(first.field("mach"), mach)
    assert first.t == 0.05 and first.diagnostics == rows and first.conserved["E"].shape == (32,)
    assert first.to_pyvista().n_cells == 32
    assert read_vti(first.write_snapshot(tmp_path / "first.vti"))[1]["rho"].tolist() == rho.tolist()
    for call in (first.advance, first.run, lambda: first.set_state(primitive={"p": 1.0})):
        with pytest.raises(SimulationReleased, match=r"freed when Simulation \d+ started Taichi again .* stays "
                                                     r"readable"):
            call()
    second.advance(steps=2)
    assert second.step == 2 and np.all(second.primitive["rho"] > 0)
    second.close()
    with pytest.raises(SimulationReleased, match="closed"):
        second.primitive


def test_a_simulation_whose_taichi_was_started_by_someone_else_is_released_not_read(arch):
    """A ti.init outside taichiflow (another library, a test) frees a live Simulation's fields;
    the next Simulation's start must not launch a kernel on them (Taichi aborts the process):
    the older one is released with a message saying why, and the newer one runs."""
    import taichi as ti

    first = Simulation(small(arch, cells=(16,)))
    first.advance(steps=1)
    ti.init(arch=ti.cpu, log_level=ti.WARN)
    second = Simulation(small(arch, cells=(16,)))
    assert first.released and not second.released
    with pytest.raises(SimulationReleased, match="outside taichiflow"):
        first.primitive
    second.advance(steps=1)
    assert second.step == 1 and np.all(second.primitive["rho"] > 0)


def test_to_pyvista_is_laid_out_as_the_snapshots(tmp_path, arch):
    pv = pytest.importorskip("pyvista")
    sim = Simulation(small(arch, "riemann2d.toml", cells=(12, 8)))
    sim.advance(steps=2)
    grid = sim.to_pyvista()
    written = pv.read(sim.write_snapshot(tmp_path / "s.vti"))
    assert grid.dimensions == written.dimensions and grid.spacing == pytest.approx(written.spacing)
    for name in ("rho", "vel", "p"):
        np.testing.assert_array_equal(grid.cell_data[name], written.cell_data[name])
    assert grid.field_data["TIME"][0] == sim.t
    assert sim.to_pyvista(["mach"]).cell_data["mach"].shape == (96,)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"diagnostics_frame\(\) needs pandas"):
            sim.diagnostics_frame()
    else:
        frame = sim.diagnostics_frame()
        assert list(frame["step"]) == [0, 1, 2]
    try:
        import torch
    except ImportError:
        with pytest.raises(ImportError, match=r"torch_tensors\(\) needs PyTorch"):
            sim.torch_tensors()
    else:
        tensors = sim.torch_tensors()
        assert tensors["vel"].shape == (12, 8, 3) and tensors["rho"].device == torch.device("cpu")
        np.testing.assert_array_equal(tensors["p"].numpy(), sim.primitive["p"])


def test_what_the_api_refuses_before_building(arch):
    with pytest.raises(CaseError, match=r"\[amr\]: an adaptive case does not run through the Python API yet"):
        Simulation(Case.from_file(CASES / "sedov3d_amr.toml"))
    with pytest.raises(TypeError, match="expected a taichiflow.Case"):
        Simulation(42)


def test_the_readmes_from_python_section_runs(monkeypatch):
    readme = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "tf.Simulation(case)" in b)
    monkeypatch.chdir(ROOT)
    seen = {}
    exec(compile(block, "README.md", "exec"), seen)
    assert seen["sim"].t == 0.2 and seen["rho"].shape == (200,)
