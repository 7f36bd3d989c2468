"""What a user sees on the console (issue 8, item 10): taichiflow's own lines only, unless
--verbose; no precision warning from the device clock in f32 runs."""
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
