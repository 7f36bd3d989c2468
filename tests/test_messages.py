"""Messages that name the real cause (issue 43): each bad input below once gave a misleading
message, a traceback or a silent default; each is now one line naming what the user gave."""
import re

import pytest

from helpers import CASES
from taichiflow.case import dump_toml, load_case
from taichiflow.cli import main


def error_of(capsys, *arguments) -> str:
    """The one-line error of a command that must fail (exit code 1, no traceback)."""
    assert main(list(arguments)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("taichiflow: error: ")
    return err


def test_a_case_file_with_a_byte_order_mark_reads_as_without_it(tmp_path):
    text = (CASES / "sod.toml").read_bytes()
    marked = tmp_path / "sod.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + text)
    plain, with_mark = load_case(CASES / "sod.toml"), load_case(marked)
    assert {k: v for k, v in with_mark.items() if k != "_source"} == \
        {k: v for k, v in plain.items() if k != "_source"}


def test_restart_from_a_file_that_is_not_a_checkpoint_says_so(tmp_path, capsys):
    err = error_of(capsys, "run", str(CASES / "sod.toml"), "--restart", str(CASES / "sod.toml"),
                   "--out", str(tmp_path / "out"))
    assert "not a checkpoint" in err and "pickle" not in err


def test_an_empty_output_folder_is_refused(tmp_path, capsys):
    assert "--out: an empty folder name" in error_of(capsys, "run", str(CASES / "sod.toml"), "--out", "")


@pytest.mark.parametrize("flag", ["--cells", "--steps", "--repeats"])
def test_bench_sizes_are_named_by_their_flag(capsys, flag):
    assert f"bench {flag} 0: must be a positive integer" in error_of(capsys, "bench", "--arch", "cpu", flag, "0")


@pytest.mark.parametrize("size", [("0", "0"), ("100000", "100000")])
def test_view_sizes_out_of_bounds_are_refused(tmp_path, capsys, size):
    err = error_of(capsys, "view", str(tmp_path), "--screenshot", str(tmp_path / "w.png"), "--size", *size)
    assert f"--size {size[0]} {size[1]}: width and height must be 16 to 8192 pixels" in err


def test_view_of_a_damaged_series_names_the_file(tmp_path, capsys):
    (tmp_path / "series.pvd").write_text("not XML")
    err = error_of(capsys, "view", str(tmp_path), "--screenshot", str(tmp_path / "w.png"))
    assert f"{tmp_path / 'series.pvd'}: not a valid PVD file" in err


def test_quadrature_points_are_bounded(tmp_path, capsys):
    err = error_of(capsys, "run", str(CASES / "sod.toml"), "--out", str(tmp_path / "out"), "--set",
                   "initial.quadrature_points=1000")
    assert "quadrature_points: out of range: allowed 1 <= quadrature_points <= 16, got 1000" in err


def test_ranks_asked_of_a_run_without_mpirun_are_a_warning_and_the_plan_stays_in_the_log(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(CASES / "sod.toml"), "--out", str(out), "--set", "grid.cells=[40]",
                 "--set", "parallel.ranks=[3]"]) == 0
    err = capsys.readouterr().err
    assert "warning: [parallel] ranks = [3] asks for 3 MPI ranks, but this run is one process" in err
    assert "kernel plan" not in err and "kernel plan" in (out / "run.log").read_text()


def test_models_lists_whole_first_paragraphs(capsys):
    assert main(["models"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert listed["shallow_water"].rstrip().endswith("in 1D and 2D.")  # (its sentence runs over two lines)
    assert all(line.rstrip().endswith((".", ")")) for line in listed.values())


def sod_run(folder, *sets):
    assert main(["run", str(CASES / "sod.toml"), "--out", str(folder), "--quiet", "--set", "grid.cells=[64]",
                 *[item for text in sets for item in ("--set", text)]]) == 0
    return folder


def test_a_cut_off_snapshot_is_named_by_view_and_spectrum(tmp_path, capsys):
    out = sod_run(tmp_path / "out", "boundary.x='periodic'")
    last = sorted(out.glob("snapshot_*.vti"))[-1]
    last.write_bytes(last.read_bytes()[:last.stat().st_size // 2])
    for command in (["view", str(out), "--screenshot", str(tmp_path / "w.png")], ["spectrum", str(out)]):
        assert f"{last}: damaged snapshot: the file ends at byte" in error_of(capsys, *command)


@pytest.mark.parametrize("keep, said", [(0, "the file is empty"), (300, "the file ends at byte 300, in its XML header, "
                                                                   "before its data")])
def test_a_snapshot_cut_off_in_its_header_is_named_as_damaged(tmp_path, capsys, keep, said):
    out = sod_run(tmp_path / "out", "boundary.x='periodic'")
    last = sorted(out.glob("snapshot_*.vti"))[-1]
    last.write_bytes(last.read_bytes()[:keep])
    for command in (["view", str(out), "--screenshot", str(tmp_path / "w.png")], ["spectrum", str(out)]):
        assert f"{last}: damaged snapshot: {said} (cut off while written?)" in error_of(capsys, *command)


def full_disk(*args, **kwargs):
    """What a full disk raises from write() and fsync(): ENOSPC, and no file name."""
    import errno
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_a_full_disk_names_the_file_it_could_not_write(tmp_path, monkeypatch, capsys, where):
    """Simulated where the system reports it (tests run as root): each writer names its file."""
    import os

    from taichiflow import io

    if where == "fsync":
        monkeypatch.setattr(os, "fsync", full_disk)
    else:  # (the atomic writers' files: snapshots, series.pvd)
        opened = os.fdopen

        class Full:
            def __init__(self, f):
                self.f = f

            def write(self, data):
                full_disk()

            def __getattr__(self, name):
                return getattr(self.f, name)

        monkeypatch.setattr(io.os, "fdopen", lambda *a, **k: Full(opened(*a, **k)))
    out = tmp_path / "out"
    err = error_of(capsys, "run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--set", "grid.cells=[32]")
    assert re.fullmatch(rf"taichiflow: error: cannot write {re.escape(str(out))}/(diagnostics\.csv|series\.pvd|"
                        r"snapshot_\d+\.vti): No space left on device\n", err), err
    monkeypatch.undo()
    assert not list(out.glob(".*.tmp")) and not list(out.glob("*.tmp"))


def test_each_writer_names_its_file_on_a_full_disk(tmp_path, monkeypatch):
    import os

    import numpy as np
    from taichiflow import io
    from taichiflow.run.log import RunLog

    monkeypatch.setattr(os, "fsync", full_disk)
    writers = {"a.vti": lambda p: io.write_vti(p, (2,), (0.0,), (1.0,), {"rho": np.ones(2)}),
               "series.pvd": lambda p: io.PvdSeries(p).add(0.0, "a.vti"),
               "d.csv": lambda p: io.DiagnosticsCSV(p, ["t"]).close()}
    for name, write in writers.items():
        with pytest.raises(OSError) as raised:
            write(tmp_path / name)
        assert raised.value.filename == str(tmp_path / name), name
    log = RunLog(tmp_path / "run.log").__enter__()
    monkeypatch.setattr(log, "_file", type("Full", (), {"write": full_disk})())
    with pytest.raises(OSError) as raised:
        log.record("x")
    assert raised.value.filename == str(tmp_path / "run.log")


def test_spectrum_warns_where_the_run_was_not_periodic(tmp_path, capsys):
    walled, periodic = sod_run(tmp_path / "walled"), sod_run(tmp_path / "periodic", "boundary.x='periodic'")
    assert main(["spectrum", str(walled)]) == 0
    assert "warning: the spectrum takes the grid as periodic, but this run's [boundary] has x = ['outflow', " \
           "'outflow']" in capsys.readouterr().err
    assert main(["spectrum", str(periodic)]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("sets, warned", [
    (["scheme.limiter='minmod'"], "[scheme] limiter = 'minmod' is not read by reconstruction = 'weno5' and "
                                  "riemann = 'hllc'"),
    (["scheme.riemann='rusanov'", "scheme.wave_speeds='einfeldt'"], "[scheme] wave_speeds = 'einfeldt' is not read"),
    (["model.name='srhd'", "scheme.method='shasta'", "scheme.riemann='hllc'"],
     "[scheme] riemann = 'hllc' is not read by method = 'shasta' (its own flux)"),
])
def test_a_scheme_key_the_scheme_does_not_read_is_a_warning(tmp_path, capsys, sets, warned):
    assert load_case(CASES / "sod.toml", sets).get("_warnings")
    sod_run(tmp_path / "out", *sets)
    assert f"taichiflow: warning: {warned}" in capsys.readouterr().err


def test_the_shipped_cases_and_their_resolved_copies_set_no_key_their_scheme_ignores(tmp_path):
    """A run's case.toml lists every default (a resume reads it): none of them is warned about."""
    warned = []
    for path in sorted(CASES.glob("*.toml")):
        case = load_case(path)
        resolved = tmp_path / path.name
        resolved.write_text(dump_toml(case))
        warned += [(path.name, w) for w in case.get("_warnings", []) + load_case(resolved).get("_warnings", [])]
    assert not warned


def test_a_spectrum_with_energy_in_one_shell_is_kept_in_the_plot_and_its_legend():
    """t = 0 of a one-mode start has its energy in one shell: it was dropped from the plot."""
    import numpy as np
    from taichiflow.viz.log_charts import log_chart
    k = np.arange(5.0)
    one_shell, spread = np.array([0.0, 1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.5, 0.2, 0.1, 0.05])
    chart = log_chart([("t = 0", k, one_shell), ("t = 1", k, spread)], "k", "E(k)")
    assert [plot.label for plot in chart.plots()] == ["t = 0", "t = 1"]


def test_taichis_own_noise_is_kept_out_of_sight(capsys):
    """Taichi's start line and its SyntaxWarning on static loops over more than 32 components
    (a model's matrices: every MHD and two-phase run printed it) are not shown."""
    import warnings

    import taichi as ti
    from taichiflow.run.backend import init_taichi

    init_taichi("cpu", "f64", False)
    assert "[Taichi]" not in capsys.readouterr().out

    @ti.kernel
    def unrolled() -> ti.f64:
        total = 0.0
        for k in ti.static(range(40)):
            total += k
        return total

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert unrolled() == 780.0
    assert not [w for w in seen if "unrolling" in str(w.message)]


def test_the_readmes_recipe_reads_every_time_of_a_series(tmp_path):
    """`pyvista.read` of series.pvd gives its first time only: the README shows the reader's loop."""
    import re
    from pathlib import Path

    import numpy as np

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    recipe = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "series.pvd" in block)
    out = sod_run(tmp_path / "out")
    seen = []
    code = recipe.replace("out/sod/series.pvd", str(out / "series.pvd")) + "\n    seen.append((t, grid))\n"
    exec(compile(code, "README.md", "exec"), {"seen": seen})
    times = [float(line.split('timestep="')[1].split('"')[0]) for line in (out / "series.pvd").read_text().splitlines()
             if 'timestep="' in line]
    assert [t for t, _ in seen] == times and len(times) >= 2
    assert all(grid.n_cells == 64 and "rho" in grid.cell_data for _, grid in seen)
    first, last = (np.asarray(seen[k][1].cell_data["rho"]) for k in (0, -1))
    assert np.abs(first - last).max() > 0.1  # (each time's own snapshot: the shock has moved)


@pytest.mark.parametrize("sets, named", [
    (["initial.background.rho=0.0"], "[initial] background: rho = 0.0; model 'euler' needs rho > 0"),
    (["initial.regions.0.state.p=-1.0"], "[initial] regions.0.state: p = -1.0; model 'euler' needs p > 0"),
])
def test_an_initial_state_given_out_of_its_models_range_is_named_as_given(tmp_path, capsys, sets, named):
    """rho = 0 was reported as "vel_x = nan" at a cell, the consequence of its conversion."""
    err = error_of(capsys, "run", str(CASES / "sod.toml"), "--out", str(tmp_path / "out"),
                   *[item for text in sets for item in ("--set", text)])
    assert named in err and "nan" not in err


@pytest.mark.parametrize("case,setting,message", [
    ("sr_blast_2d.toml", "initial.background.vel=[1.5,0,0]",
     "[initial] background: rho = 1, vel = [1.5, 0, 0], p = 0.001 is no state of model 'srhd' (it needs rho, p > 0; "
     "|vel| < 1: slower than light); the first inadmissible cell is (0, 0)"),
    ("sr_blast_2d.toml", "initial.regions.0.state.vel=[0.8,0.8,0]",
     "[initial] regions.0.state: rho = 10, vel = [0.8, 0.8, 0], p = 13.33 is no state of model 'srhd'"),
])
def test_an_inadmissible_initial_state_names_the_state_given_and_the_models_rule(tmp_path, capsys, case, setting,
                                                                                message):
    """Not the converted cell's consequence ("rho = nan" at cell (0, 0)): the values the case gave."""
    assert main(["run", str(CASES / case), "--set", setting, "--out", str(tmp_path / "out")]) == 2  # (a run that failed)
    err = capsys.readouterr().err
    assert message in err and "nan" not in err and "Traceback" not in err


@pytest.mark.parametrize("settings,covers", [
    (["initial.regions.0.radius=1e-6", "initial.regions.0.center=[0.3, 0.3]"], False),  # between the sample points
    (["initial.regions.0.center=[5.0, 5.0]"], False),                                  # outside the domain
    (["initial.regions.0.radius=1e-6", "initial.regions.0.smoothing=0.01"], True),     # smoothed: every cell a little
    ([], True),                                                                         # as shipped
])
def test_a_region_that_covers_no_cell_is_a_warning_naming_it(settings, covers):
    """sedov2d's sphere on its grid (the fill averages 4 x 4 Gauss points a cell): a sphere of
    radius 1e-6 away from every point, or one outside the domain, changes nothing, and says so."""
    warnings = load_case(CASES / "sedov2d.toml", settings).get("_warnings", [])
    named = [w for w in warnings if w.startswith("[initial] regions.0 (shape = 'sphere') covers no cell")]
    assert bool(named) != covers, warnings


def test_no_shipped_case_has_a_region_that_covers_no_cell():
    for path in sorted(CASES.glob("*.toml")):
        assert not [w for w in load_case(path).get("_warnings", []) if "covers no cell" in w], path.name
