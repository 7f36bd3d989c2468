"""`taichiflow run` end to end: outputs, resolved case, diagnostics, failures."""
import csv
import re

import numpy as np
import pytest

from helpers import CASES
from taichiflow.case import load_case
from taichiflow.cli import main
from taichiflow.io import PvdSeries, read_vti


def run(tmp_path, *sets, case="sod.toml", arch="cpu"):
    out = tmp_path / "out"
    args = ["run", str(CASES / case), "--out", str(out), "--quiet", "--arch", arch,
            "--precision", "f64"] + [a for s in sets for a in ("--set", s)]
    return main(args), out


def test_sod_run_writes_series_diagnostics_and_resolved_case(tmp_path, arch):
    code, out = run(tmp_path, "grid.cells=[100]", "output.interval=0.03", arch=arch)
    assert code == 0
    times = [t for t, _ in PvdSeries(out / "series.pvd", resume=True).entries]
    assert times[:-1] == pytest.approx([0.0, 0.03, 0.06, 0.09, 0.12, 0.15, 0.18], abs=1e-15)
    assert times[-1] == 0.2  # the end time is always written, exactly
    meta, fields = read_vti(out / "snapshot_00007.vti")
    assert meta["time"] == 0.2
    assert fields["rho"].shape == (100,) and fields["vel"].shape == (100, 3) and fields["p"].shape == (100,)

    with open(out / "diagnostics.csv") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[-1]["time"]) == 0.2
    assert [int(r["step"]) for r in rows] == list(range(len(rows)))
    # No wave reaches the outflow boundaries by t = 0.2: mass and energy are conserved up to
    # the 1e-13-level numerical tails that a 5-point stencil spreads to the boundary cells.
    mass = np.array([float(r["total_rho"]) for r in rows])
    energy = np.array([float(r["total_E"]) for r in rows])
    assert np.abs(mass - 0.5625).max() < 1e-12 and np.abs(energy - 1.375).max() < 1e-12
    # Device min/max reductions agree with the written fields.
    assert float(rows[-1]["min_rho"]) == fields["rho"].min()
    assert float(rows[-1]["max_p"]) == fields["p"].max()
    assert float(rows[-1]["max_vel_x"]) == fields["vel"][:, 0].max()

    resolved = load_case(out / "case.toml")
    assert resolved["grid"]["cells"] == [100]
    assert resolved["scheme"]["reconstruction"] == "weno5" and resolved["run"]["precision"] == "f64"
    assert "run.log" in {p.name for p in out.iterdir()}
    log = (out / "run.log").read_text()
    assert "steps to t = 0.2" in log
    # the set-up time, and the rate after the first (compiling) step from the same figures
    assert re.search(r"initial state filled on the device\) in [0-9.]+ s\n", log)
    initial, first, steps, wall, rate = re.search(
        r"initial row and snapshot ([0-9.]+) s; first step \(including compile\) ([0-9.]+) s; (\d+) steps .* "
        r"in ([0-9.]+) s \([0-9.e+]+ cell-updates/s; ([0-9.e+]+) after the first step\)", log).groups()
    seconds = float(wall) - float(initial) - float(first)  # (each printed to 0.01 s, the rate to 3 digits)
    updates = 100 * (int(steps) - 1)
    assert updates / (seconds + 0.015) * 0.995 <= float(rate) <= updates / (seconds - 0.015) * 1.005


def test_blow_up_stops_with_cell_and_variable_and_keeps_last_good_state(tmp_path, capsys):
    # Forward Euler with WENO5 at CFL 1 is unstable: the run must stop, not write NaNs.
    code, out = run(tmp_path, "scheme.integrator='euler'", "scheme.cfl=1.0", "scheme.riemann='rusanov'")
    assert code != 0
    message = capsys.readouterr().err
    assert "inadmissible state after step" in message and "at cell (" in message
    assert any(f"{name} = " in message for name in ("rho", "vel_x", "p"))
    entries = PvdSeries(out / "series.pvd", resume=True).entries
    last_time, last_file = entries[-1]
    assert 0.0 < last_time < 0.2
    _, fields = read_vti(out / last_file)
    assert np.all(np.isfinite(fields["rho"])) and fields["p"].min() > 0


def test_inadmissible_initial_state_names_cell_and_variable(tmp_path, capsys):
    # (a state given with p <= 0 is refused by name before the run: tests/test_messages.py; a
    # perturbation that takes p below zero in some cells is found in the filled state)
    code, _ = run(tmp_path, "initial.perturbations=[{kind='sine', variable='p', amplitude=5.0, "
                            "wavenumber=[6.283185307179586]}]")
    assert code != 0
    message = capsys.readouterr().err
    assert re.search(r"inadmissible initial state at cell \(20[0-9],\): p = -[0-9.e-]+ \(must be > 0\)", message)


def test_bad_case_key_is_reported_without_traceback(tmp_path, capsys):
    code, _ = run(tmp_path, "scheme.riemann='hlcc'")
    assert code != 0
    err = capsys.readouterr().err
    assert "riemann" in err and "did you mean 'hllc'" in err and "Traceback" not in err


def test_bench_wet_fraction_dries_the_far_side_and_skips_its_tiles(capsys, arch):
    """`bench --wet-fraction 0.25` on 128^2 shallow water (tiles of 16: 8 x 8): water in tile
    columns 0-1, after 6 steps spread into column 2 and across the periodic face into 7; their
    neighbours 3 and 6 active (across the periodic faces the tiles' neighbours wrap around, so
    no frame is kept active). Columns 4-5 are skipped: 48 of 64 tiles active."""
    import json
    assert main(["bench", "--model", "shallow_water", "--dim", "2", "--cells", "128", "--reconstruction", "plm",
                 "--riemann", "hll", "--integrator", "ssprk2", "--steps", "2", "--repeats", "1", "--arch", arch,
                 "--wet-fraction", "0.25", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["wet_fraction"] == 0.25 and row["active_tiles"] == 48 / 64


def test_bench_grid_sets_the_cells_of_each_axis(capsys, arch):
    import json
    assert main(["bench", "--grid", "24", "8", "--reconstruction", "plm", "--riemann", "hll", "--integrator",
                 "ssprk2", "--steps", "2", "--repeats", "3", "--arch", arch, "--json"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (row["grid"], row["block"], row["ranks"]) == ("24x8", "24x8", 1)
    assert row["cell_updates_per_s"] == pytest.approx(24 * 8 * 2 / row["median_s"], rel=1e-12)
    assert len(row["timings_s"]) == 3 and row["median_s"] == sorted(row["timings_s"])[1]  # (each repeat kept)


@pytest.mark.parametrize("arguments,message", [
    (["--model", "shallow_water", "--dim", "2", "--wet-fraction", "0"], "--wet-fraction 0.0: expected a share in (0, 1]"),
    (["--wet-fraction", "0.5"], "--wet-fraction needs a model that declares idle(); 'euler' does not"),
    (["--sweep", "--wet-fraction", "0.5"], "--wet-fraction and --grid apply to one workload"),
    (["--grid", "8", "8", "8", "8"], "--grid 8 8 8 8: expected 1 to 3 positive cell counts"),
])
def test_bench_wet_fraction_errors_are_one_line(capsys, arguments, message):
    assert main(["bench", "--cells", "8", "--steps", "1", "--repeats", "1", "--arch", "cpu", *arguments]) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bench_sweep_runs_every_target_workload(capsys, arch):
    """`taichiflow bench --sweep --json`: one line per workload of the speed targets (no timing
    is asserted: benchmarks report numbers, tests check what was measured)."""
    import json
    assert main(["bench", "--sweep", "--cells", "8", "--steps", "2", "--repeats", "1", "--arch", arch, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(r["model"], r["scheme"], r["precision"], r["target"]) for r in rows] == [
        ("euler", "weno5+hllc+lsrk3", "f32", 3.0e9), ("euler", "weno5+hllc+lsrk3", "f64", 1.2e9),
        ("two_phase", "weno5+hllc+lsrk3", "f32", 2.0e9), ("euler", "plm-mc+hll+ssprk2", "f32", 5.0e9),
        ("mhd", "weno5+hll+lsrk3", "f32", 1.5e9), ("mhd", "weno5z+hlld+lsrk3", "f32", 1.5e9),
        ("mhd", "plm-mc+hll+ssprk2", "f64", 9.0e8)] + [("shallow_water", "plm-mc+hll+ssprk2", "f32", None)] * 4 + [
        ("srhd", "muscl_hancock-minbee+musta+euler", "f32", None), ("srhd", "weno5+hll+lsrk3", "f32", None),
        ("srhd_ultra", "shasta+euler", "f32", None)]
    assert [(r["wet_fraction"], r["overrides"]) for r in rows[7:11]] == [
        (1.0, "run.skip_idle=true"), (1.0, "run.skip_idle=false"), (0.1, "run.skip_idle=true"),
        (0.1, "run.skip_idle=false")]
    for r in rows:
        assert r["grid"] == ("23x23" if r["model"] == "shallow_water" else "8x8x8")
        assert r["cell_updates_per_s"] > 0 and r["steps"] == 2
        assert r["resident_bytes_per_cell"] > (40 if r["precision"] == "f32" else 80)
        # the memory roof is the measured copy bandwidth over the modelled bytes per cell-step
        assert r["copy_bandwidth_GBps"] > 0
        assert r["memory_roof_cell_updates_per_s"] == pytest.approx(
            r["copy_bandwidth_GBps"] * 1e9 / r["modelled_bytes_per_cell_step"], rel=1e-12)
        assert r["of_memory_roof"] == pytest.approx(r["cell_updates_per_s"] / r["memory_roof_cell_updates_per_s"])
