"""One run per output folder (issue 20, item 2), and the run's log (item 5): the whole command
line, and every error that ends a run."""
import shlex

import pytest

from helpers import CASES
from taichiflow.cli import main
from taichiflow.io import PvdSeries
from test_restart import run_sod
from test_restart_rules import snapshot_of


@pytest.fixture
def earlier(tmp_path):
    """A folder holding a finished run: 5 snapshots, 2 checkpoints."""
    out = tmp_path / "D"
    assert run_sod(out, "output.checkpoint_interval=0.1") == 0
    return out


def test_a_new_run_refuses_a_folder_holding_another_run(earlier, capsys):
    before = snapshot_of(earlier)
    log = (earlier / "run.log").read_text()
    assert run_sod(earlier, "initial.regions.0.state.rho=0.2") == 1
    err = capsys.readouterr().err
    assert str(earlier) in err and "--overwrite" in err and "--resume" in err and "Traceback" not in err
    assert snapshot_of(earlier) == before and (earlier / "run.log").read_text() == log


def test_a_run_failing_on_its_initial_state_leaves_the_earlier_run_alone(earlier, capsys):
    before = snapshot_of(earlier)
    assert run_sod(earlier, "initial.regions.0.state.p=-1.0") == 1
    assert "--overwrite" in capsys.readouterr().err
    assert snapshot_of(earlier) == before


def test_overwrite_clears_the_earlier_run_and_nothing_else(earlier):
    (earlier / "notes.txt").write_text("mine")
    (earlier / "figures").mkdir()
    (earlier / "figures" / "snapshot_00001.vti").write_text("not taichiflow's")
    (earlier / "snapshot_00003.png").write_bytes(b"a picture of the earlier run")
    assert run_sod(earlier, "output.interval=0.0", extra=["--overwrite"]) == 0
    names = {p.name for p in earlier.iterdir()}
    assert names == {"notes.txt", "figures", "case.toml", "series.pvd", "diagnostics.csv", "run.log",
                     "snapshot_00000.vti", "snapshot_00001.vti"}
    assert (earlier / "figures" / "snapshot_00001.vti").read_text() == "not taichiflow's"
    assert [t for t, _ in PvdSeries(earlier / "series.pvd", resume=True).entries] == [0.0, 0.2]
    assert "checkpoint_" not in (earlier / "run.log").read_text()


def test_a_resumed_run_is_the_same_run(earlier):
    assert run_sod(earlier, "output.checkpoint_interval=0.1", extra=["--resume", str(earlier)]) == 0


def test_overwrite_with_resume_is_an_error(earlier, capsys):
    before = snapshot_of(earlier)
    assert run_sod(earlier, extra=["--resume", str(earlier), "--overwrite"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert snapshot_of(earlier) == before


def test_restart_into_a_folder_of_another_run_is_refused(earlier, tmp_path, capsys):
    other = tmp_path / "E"
    assert run_sod(other) == 0
    first = sorted(earlier.glob("checkpoint_*.npz"))[0]
    before = snapshot_of(other)
    assert run_sod(other, "output.checkpoint_interval=0.1", extra=["--restart", str(first)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert snapshot_of(other) == before


def test_a_folder_with_only_a_log_is_free(tmp_path):
    out = tmp_path / "F"
    assert run_sod(out, "model.params.gama=1.3") == 1  # ends before writing any result
    assert {p.name for p in out.iterdir()} == {"run.log"}
    assert run_sod(out) == 0
    log = (out / "run.log").read_text()
    assert "gama" in log and "steps to t = 0.2" in log


def test_out_naming_a_file_is_a_one_line_error(tmp_path, capsys):
    file = tmp_path / "results"
    file.write_text("not a folder")
    assert run_sod(file) == 1
    err = capsys.readouterr().err
    assert err.startswith("taichiflow: error:") and "not a folder" in err and "Traceback" not in err
    assert file.read_text() == "not a folder"


def test_the_run_log_records_the_whole_command_line(earlier):
    first = sorted(earlier.glob("checkpoint_*.npz"))[0]
    assert run_sod(earlier, "output.checkpoint_interval=0.1", extra=["--restart", str(first)]) == 0
    command = [line for line in (earlier / "run.log").read_text().splitlines() if " taichiflow run " in line][-1]
    for part in ([str(CASES / "sod.toml")], ["--out", str(earlier)], ["--restart", str(first)], ["--quiet"],
                 ["--arch", "cpu"], ["--precision", "f64"], ["--set", "grid.cells=[100]"],
                 ["--set", "output.checkpoint_interval=0.1"]):
        assert shlex.join(part) in command, part


def test_the_run_log_keeps_the_errors_that_end_a_run(earlier, tmp_path):
    # a model error while building, a refused checkpoint, a case error found before the build
    fresh = tmp_path / "G"
    assert run_sod(fresh, "model.params.gama=1.3") == 1
    assert "ERROR:" in (fresh / "run.log").read_text() and "no parameter 'gama'" in (fresh / "run.log").read_text()
    assert run_sod(earlier, "grid.cells=[120]", extra=["--resume", str(earlier)]) == 1
    assert "grid cells [100] does not match this run's [120]" in (earlier / "run.log").read_text()
    assert run_sod(earlier, "scheme.riemann=hlcc", extra=["--resume", str(earlier)]) == 1
    assert "did you mean 'hllc'" in (earlier / "run.log").read_text()


def test_the_run_log_keeps_a_failed_run(tmp_path):
    out = tmp_path / "H"
    # (a perturbation that takes p below zero in some cells: a state given with p <= 0 is refused
    # before the run, tests/test_messages.py)
    args = ["run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--arch", "cpu", "--precision", "f64",
            "--set", "initial.perturbations=[{kind='sine', variable='p', amplitude=5.0, "
                     "wavenumber=[6.283185307179586]}]"]
    assert main(args) == 2
    assert "FAILED: inadmissible initial state" in (out / "run.log").read_text()


def _two_rank_layout(folder):
    """The files of a 2-rank run with 3 snapshots and a checkpoint (contents are placeholders)."""
    folder.mkdir()
    names = ["series.pvd", "diagnostics.csv", "case.toml", "run.log", "checkpoint_000000040.npz",
             "checkpoint_000000040_r0000.npy", "checkpoint_000000040_r0001.npy", "notes_snapshot_00002.pvti"]
    for k in range(3):
        names += [f"snapshot_{k:05d}.pvti", f"snapshot_{k:05d}_r0000.vti", f"snapshot_{k:05d}_r0001.vti",
                  f"snapshot_{k:05d}.png"]
    for name in names:
        (folder / name).write_text(name)
    return names


def test_a_restart_removes_the_snapshots_after_its_checkpoint_whatever_their_ranks(tmp_path):
    """Issue 43: a 2-rank run resumed on one rank left the .pvti and pieces beside the new .vti."""
    from taichiflow.run.folder import remove_snapshots_after
    folder = tmp_path / "D"
    names = _two_rank_layout(folder)
    removed = remove_snapshots_after(folder, 0)
    assert sorted(p.name for p in removed) == sorted(n for n in names if n.startswith(("snapshot_00001",
                                                                                       "snapshot_00002")))
    assert sorted(p.name for p in folder.iterdir()) == sorted(n for n in names if not n.startswith(
        ("snapshot_00001", "snapshot_00002")))


def test_overwrite_clears_a_several_rank_runs_pvti_and_pieces(tmp_path, capsys):
    """The .pvti snapshots, their pieces and the checkpoints' pieces are taichiflow's files too."""
    folder = tmp_path / "D"
    _two_rank_layout(folder)
    assert run_sod(folder, "output.interval=0.0") == 1
    err = capsys.readouterr().err
    assert all(part in err for part in ("3 pictures, 3 snapshots, 6 snapshot pieces", "2 checkpoint pieces"))
    assert run_sod(folder, "output.interval=0.0", extra=["--overwrite"]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["case.toml", "diagnostics.csv", "notes_snapshot_00002.pvti",
                                                       "run.log", "series.pvd", "snapshot_00000.vti",
                                                       "snapshot_00001.vti"]
