"""A folder that cannot be written ends a run with one line naming the file and the cause,
and leaves no partial file (issue 8, item 5). Full disks are simulated: the tests run as root,
for whom a read-only folder is writable."""
import errno

import numpy as np
import pytest

from helpers import CASES
from taichiflow import checkpoint, cli
from taichiflow.errors import OutputError


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", str(args[0]) if args else None)


def test_a_full_disk_during_a_checkpoint_leaves_no_partial_file_and_keeps_the_older_ones(tmp_path, monkeypatch):
    state = np.zeros((4, 3))
    checkpoint.write(tmp_path, state, {"step": 1, "time": 0.1})
    real_replace = checkpoint.os.replace
    monkeypatch.setattr(checkpoint.os, "replace", no_space)
    with pytest.raises(OutputError, match=r"cannot write checkpoint .*checkpoint_000000002.npz: No space left on "
                                          r"device; the checkpoints kept: checkpoint_000000001.npz"):
        checkpoint.write(tmp_path, state, {"step": 2, "time": 0.2})
    monkeypatch.setattr(checkpoint.os, "replace", real_replace)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_000000001.npz"]


def test_a_full_disk_during_a_snapshot_is_one_line_and_in_the_log(tmp_path, monkeypatch, capsys):
    from taichiflow.run import outputs

    monkeypatch.setattr(outputs, "write_vti", no_space)
    code = cli.main(["run", str(CASES / "sod.toml"), "--quiet", "--set", "grid.cells=[32]", "--out",
                     str(tmp_path / "sod")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "taichiflow: error: cannot write" in err and "No space left on device" in err
    assert "No space left on device" in (tmp_path / "sod" / "run.log").read_text()


def test_view_into_a_missing_folder_is_one_line(tmp_path, capsys):
    code = cli.main(["view", str(tmp_path), "--screenshot", str(tmp_path / "missing" / "x.png")])
    err = capsys.readouterr().err
    assert code == 1 and "--screenshot" in err and "does not exist" in err and "Traceback" not in err


def test_ctrl_c_during_start_up_is_one_line(tmp_path, monkeypatch, capsys):
    from taichiflow.run import driver

    def interrupted(case):
        raise KeyboardInterrupt

    monkeypatch.setattr(driver, "build", interrupted)
    code = cli.main(["run", str(CASES / "sod.toml"), "--quiet", "--out", str(tmp_path / "sod")])
    err = capsys.readouterr().err
    assert code == 130 and err.strip() == "taichiflow: interrupted (Ctrl-C)"
    assert "INTERRUPTED" in (tmp_path / "sod" / "run.log").read_text()


def test_a_read_only_place_for_the_output_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """Simulated (root may write anywhere): the folder cannot be made, then run.log cannot be
    written in an existing one."""
    from pathlib import Path

    def read_only(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    code = cli.main(["run", str(CASES / "sod.toml"), "--quiet", "--out", str(tmp_path / "new")])
    err = capsys.readouterr().err
    assert code == 1 and err.strip() == f"taichiflow: error: cannot write {tmp_path / 'new'}: Permission denied"
    monkeypatch.undo()
    real_open = open

    def read_only_log(file, *args, **kwargs):
        if str(file).endswith("run.log"):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", read_only_log)
    code = cli.main(["run", str(CASES / "sod.toml"), "--quiet", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "cannot write" in err and "run.log: Permission denied" in err and err.count("\n") == 1
