"""What a user sees on the console (issue 8, item 10): taichiflow's own lines only, unless
--verbose; no precision warning from the device clock in f32 runs."""
import os
import subprocess
import sys

from helpers import CASES, ROOT


def taichiflow(*args, cwd):
    """(exit code, stdout + stderr, stdout) of a taichiflow command in a process of its own."""
    done = subprocess.run([sys.executable, "-m", "taichiflow.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=None)
    return done.returncode, done.stdout + done.stderr, done.stdout


def test_help_and_a_run_print_no_taichi_lines(tmp_path):
    code, text, _ = taichiflow("--help", cwd=ROOT)
    assert code == 0 and "usage: taichiflow" in text and "[Taichi]" not in text
    code, text, stdout = taichiflow("run", str(CASES / "sod.toml"), "--precision", "f32", "--quiet", "--set",
                                    "grid.cells=[64]", "--out", str(tmp_path / "sod"), cwd=tmp_path)
    assert code == 0, text
    assert "[Taichi]" not in text and "Assign may lose precision" not in text and "Warning" not in text, text
    assert text.strip().splitlines() == stdout.strip().splitlines() and stdout.startswith("wrote "), text


def test_verbose_shows_taichi(tmp_path):
    code, text, _ = taichiflow("--verbose", "run", str(CASES / "sod.toml"), "--quiet", "--set", "grid.cells=[32]",
                            "--out", str(tmp_path / "sod"), cwd=tmp_path)
    assert code == 0, text
    assert "[Taichi] version" in text and "Starting on arch=" in text


def test_a_locked_kernel_cache_is_taichis_business_not_the_users(tmp_path):
    """Issue 43: several processes compiling at once (MPI ranks) made Taichi print "Lock
    .../ticache.lock failed" on stderr (its kernel cache is then not updated: harmless). A
    cache whose lock another process holds: the run prints taichiflow's lines only; with
    --verbose, Taichi's message shows."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "ticache.lock").write_text("")  # (held by "another process")
    run = [sys.executable, "-m", "taichiflow.cli", "run", str(CASES / "sod.toml"), "--quiet", "--arch", "cpu",
           "--set", "grid.cells=[32]", "--out"]
    env = {**os.environ, "TI_OFFLINE_CACHE_FILE_PATH": str(cache)}
    quiet = subprocess.run(run + [str(tmp_path / "quiet")], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout.startswith("wrote "), quiet.stdout + quiet.stderr
    verbose = subprocess.run(run[:3] + ["--verbose"] + run[3:] + [str(tmp_path / "verbose")], capture_output=True,
                             text=True, cwd=tmp_path, env=env)
    assert verbose.returncode == 0 and "ticache.lock failed" in verbose.stderr, verbose.stderr
