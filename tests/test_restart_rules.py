"""What a restart must prove before it continues a run (issue 20, items 1 and 4): the same case,
a checkpoint it can use, an end time still ahead; and what it reports."""
import numpy as np
import pytest

from helpers import CASES
from taichiflow import checkpoint
from taichiflow.case import load_case
from taichiflow.cli import main
from taichiflow.run import Simulation
from test_restart import final_fields, rows, run_sod


def snapshot_of(folder):
    """Every file of a folder with its bytes: what 'nothing touched' compares."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "run.log"}


@pytest.fixture
def finished(tmp_path):
    """A finished Sod run with checkpoints at t = 0.1 and 0.2 (case A of the issue)."""
    out = tmp_path / "A"
    assert run_sod(out, "output.checkpoint_interval=0.1") == 0
    return out


def test_resume_refuses_the_checkpoint_of_another_case(finished, capsys):
    """Case B (another initial density) resumed in A's folder must not take A's state as its own."""
    before = snapshot_of(finished)
    code = run_sod(finished, "output.checkpoint_interval=0.1", "initial.regions.0.state.rho=0.2",
                   extra=["--resume", str(finished)])
    assert code == 1
    err = capsys.readouterr().err
    assert "initial.regions.0.state.rho" in err and "0.125" in err and "0.2" in err
    assert snapshot_of(finished) == before
    assert "initial.regions.0.state.rho" in (finished / "run.log").read_text()


def test_restart_file_refuses_another_case_naming_every_differing_key(finished, capsys):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    code = run_sod(finished, "output.checkpoint_interval=0.1", "model.params.gamma=1.3",
                   "boundary.x=\"wall\"", "scheme.cfl=0.3", extra=["--restart", str(first)])
    assert code == 1
    err = capsys.readouterr().err
    for key in ("model.params.gamma", "boundary.x", "scheme.cfl"):
        assert key in err, key
    assert "--allow-change scheme.cfl" in err  # a scheme key may change on request, physics never


def test_a_scheme_change_is_taken_only_on_request(finished, capsys):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    sets = ("output.checkpoint_interval=0.1", "scheme.cfl=0.3")
    assert run_sod(finished, *sets, extra=["--restart", str(first)]) == 1
    assert "scheme.cfl" in capsys.readouterr().err
    assert run_sod(finished, *sets, extra=["--restart", str(first), "--allow-change", "scheme.cfl"]) == 0
    assert "continuing with a changed scheme.cfl: 0.4 in the checkpoint, 0.3 now" in (finished / "run.log").read_text()


def test_allow_change_never_covers_the_physics(finished, capsys):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    code = run_sod(finished, "output.checkpoint_interval=0.1", "model.params.gamma=1.3",
                   extra=["--restart", str(first), "--allow-change", "model.params.gamma"])
    assert code == 1
    assert "--allow-change model.params.gamma" in capsys.readouterr().err


def test_keys_free_to_change_keep_the_restart_bit_for_bit(tmp_path):
    """Labels, how far to go, what to record and how fast to compute leave every step as it was."""
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert run_sod(straight, "time.end=0.15") == 0
    assert run_sod(stopped, "output.checkpoint_interval=0.08") == 0
    first = sorted(stopped.glob("checkpoint_*.npz"))[0]  # t = 0.08
    free = ["time.end=0.15", "output.diagnostics_every=3", "output.checkpoint_interval=0.0",
            "output.checkpoint_wall=100.0", "run.segment=[4]", "run.block_dim=64", "run.keep_last_good=false",
            "case.description=\"the same run\"", "case.name=\"other\""]
    assert run_sod(stopped, *free, extra=["--restart", str(first)]) == 0
    t_a, a = final_fields(straight)
    t_b, b = final_fields(stopped)
    assert t_a == t_b == 0.15
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_restart_and_resume_together_is_an_error(finished, capsys):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    before = snapshot_of(finished)
    code = run_sod(finished, "output.checkpoint_interval=0.1",
                   extra=["--restart", str(first), "--resume", str(finished)])
    assert code == 1
    assert "--restart and --resume" in capsys.readouterr().err
    assert snapshot_of(finished) == before


def test_an_end_time_before_the_checkpoint_is_an_error_that_touches_nothing(finished, capsys):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]  # t = 0.1
    before = snapshot_of(finished)
    code = run_sod(finished, "output.checkpoint_interval=0.1", "time.end=0.05", extra=["--restart", str(first)])
    assert code == 1
    err = capsys.readouterr().err
    assert "time.end" in err and "0.05" in err and first.name in err
    assert snapshot_of(finished) == before
    assert "nan" not in (finished / "run.log").read_text()


def test_resume_says_which_corrupt_checkpoint_it_skipped(finished, capsys):
    older, newest = sorted(finished.glob("checkpoint_*.npz"))
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    assert run_sod(finished, "output.checkpoint_interval=0.1", extra=["--resume", str(finished)]) == 0
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if newest.name in line)
    assert "skipped" in line and ("checksum mismatch" in line or "unreadable" in line)
    log = (finished / "run.log").read_text()
    assert f"skipped {newest}" in log and f"restarting from {older}" in log


def test_throughput_after_a_restart_counts_the_steps_of_this_process(finished):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    _, header = checkpoint.read(first)
    case = load_case(finished / "case.toml")
    sim = Simulation(case, out_dir=finished)
    stats = sim.run(restart=first)
    assert stats["steps"] > stats["steps_run"] == stats["steps"] - header["step"] > 0
    assert stats["cell_updates_per_s"] == pytest.approx(100 * stats["steps_run"] / stats["wall_s"])


def test_the_run_log_reports_the_steps_of_this_process(finished):
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    _, header = checkpoint.read(first)
    assert run_sod(finished, "output.checkpoint_interval=0.1", extra=["--restart", str(first)]) == 0
    total = int(rows(finished)[-1][1])
    log = (finished / "run.log").read_text().splitlines()
    assert f"{total - header['step']} steps (from step {header['step']} to {total})" in log[-1]


def test_a_restart_file_writes_into_its_own_folder_by_default(finished, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = sorted(finished.glob("checkpoint_*.npz"))[0]
    args = ["run", str(CASES / "sod.toml"), "--quiet", "--arch", "cpu", "--precision", "f64", "--set",
            "grid.cells=[100]", "--set", "output.interval=0.05", "--set", "output.checkpoint_interval=0.1",
            "--set", "case.name=\"elsewhere\"", "--restart", str(first)]
    assert main(args) == 0
    assert not (tmp_path / "out").exists()
    assert f"restarting from {first}" in (finished / "run.log").read_text()


def test_the_progress_rate_after_a_restart_counts_only_new_steps():
    import time
    from taichiflow.run.progress import Progress
    with Progress(1.0, 100, enabled=True, refresh_s=0.0, first_step=1000, first_time=0.5) as bar:
        time.sleep(0.01)
        bar.update(0.6, 1010)
        rate = bar._bar.tasks[0].fields["rate"]
    assert 0 < rate <= 100 * 10 / 0.01


def test_a_blow_up_advises_a_restart_the_rules_accept(tmp_path, capsys):
    """The failure advice names the checkpoint and the flag a restart with a changed scheme needs."""
    out = tmp_path / "run"
    blow_up = ("scheme.integrator='euler'", "scheme.cfl=1.0", "scheme.positivity_fallback=false",
               "output.checkpoint_interval=0.002", "grid.cells=[400]")
    assert run_sod(out, *blow_up) == 2
    assert "--allow-change" in capsys.readouterr().err
    last = checkpoint.newest_valid(out)
    calmer = blow_up[:1] + ("scheme.cfl=0.4", "scheme.positivity_fallback=true") + blow_up[3:]
    assert run_sod(out, *calmer, extra=["--restart", str(last), "--allow-change", "scheme.cfl",
                                        "--allow-change", "scheme.positivity_fallback"]) == 0


def test_docs_list_the_keys_a_restart_may_change():
    from helpers import ROOT
    from taichiflow.run.same_case import FREE, ON_REQUEST
    docs = (ROOT / "docs" / "cases.md").read_text()
    restarts = docs[docs.index("## Restarts"):]
    for key in FREE + ON_REQUEST[1:]:
        assert f"`{key}`" in restarts, key
