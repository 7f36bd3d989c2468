"""Adaptive runs on several MPI ranks (mpirun -n 2 and -n 4, CPU) against one rank: the same
snapshots byte for byte and the same diagnostics rows (the totals too: each leaf's f64 totals
are gathered and added with math.fsum, in no particular order), conservation to round-off, a
checkpoint written on 4 ranks continued on 2 and one written on 2 continued on 1, and a full
pool stopping 2 ranks with a checkpoint that a larger pool continues. Two launches in all
(tests/amr_mpi_runs.py runs every case of a number of ranks in one, the copies of other ranks'
leaves NaN but for the cells a stage moves), the one-rank runs in this process."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import amr_mpi_runs
from taichiflow import checkpoint
from taichiflow.cli import main
from taichiflow.io import read_pvd


def launch(ranks: int, folder: Path) -> None:
    """`mpirun -n ranks python tests/amr_mpi_runs.py folder` (the mpirun beside this Python;
    Open MPI refuses to start as root, a container's user, unless told that it may)."""
    launcher = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
    assert launcher, "no mpirun: pip install -e '.[test]' installs mpi4py and the mpich wheel"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    done = subprocess.run([launcher, "-n", str(ranks), sys.executable, amr_mpi_runs.__file__, str(folder)],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@lru_cache(maxsize=None)
def launched(folder: str, ranks: int) -> dict:
    """The runs of `ranks` ranks done (4 before 2: the 2-rank launch continues a 4-rank
    checkpoint); their exit codes by label."""
    folder = Path(folder)
    if ranks == 1:
        return {label: main(arguments) for label, arguments in amr_mpi_runs.runs_of(folder, 1).items()}
    if ranks == 2:
        launched(str(folder), 4)
    launch(ranks, folder)
    return json.loads((folder / f"codes-{ranks}.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("amr_mpi")
    amr_mpi_runs.write_cases(folder)
    return str(folder)


def snapshot_bytes(run: Path) -> dict:
    return {name: (run / name).read_bytes() for _, name in read_pvd(run / "series.pvd")}


def rows(run: Path, without=("regrid_s",)) -> list:
    with open(run / "diagnostics.csv") as f:
        return [{k: v for k, v in row.items() if k not in without} for row in csv.DictReader(f)]


def same_run(one: Path, many: Path) -> None:
    reference, split = snapshot_bytes(one), snapshot_bytes(many)
    assert len(reference) >= 2 and list(split) == list(reference)
    for name in reference:
        assert split[name] == reference[name], f"{many.name}: {name} differs from one rank's"
    assert read_pvd(many / "series.pvd") == read_pvd(one / "series.pvd")
    assert rows(many) == rows(one)


@pytest.mark.parametrize("name,ranks", [(name, ranks) for ranks in (2, 4) for name in amr_mpi_runs.RANK_RUNS[ranks]])
def test_ranks_give_the_snapshots_and_rows_of_one_rank_bit_for_bit(runs, name, ranks):
    assert launched(runs, 1)[name] == 0 and launched(runs, ranks)[name] == 0
    same_run(Path(runs) / f"{name}-1", Path(runs) / f"{name}-{ranks}")


def test_the_regrids_move_level_jumps_across_the_ranks(runs):
    """(What the comparison above is worth: the forests change, several levels at once.)"""
    table = rows(Path(runs) / "blob2d-4")
    forests = {tuple(row[f"leaf_blocks_{level}"] for level in range(3)) for row in table}
    assert len(forests) >= 2 and all(int(count) > 0 for forest in forests for count in forest)
    log = (Path(runs) / "blob2d-4" / "run.log").read_text()
    assert "on 4 MPI ranks" in log
    launched(runs, 2)  # (the blast's leaves were shared out anew: rebalance_above = 1)
    shared = re.search(r"shared out anew after (\d+) regrids", (Path(runs) / "blast2d-2" / "run.log").read_text())
    assert shared and int(shared.group(1)) > 0


def test_merges_take_their_siblings_whole_from_other_ranks(runs):
    """(What the merges' comparison is worth: a copy holds only what a stage reads, so a merge
    whose children lie on two ranks has them sent whole first.)"""
    launched(runs, 4)
    assert json.loads((Path(runs) / "siblings-4.json").read_text())["merges2d"] > 0


def test_totals_are_conserved_to_round_off_on_four_ranks(runs):
    launched(runs, 4)
    table = rows(Path(runs) / "blob2d-4")
    for column in ("total_rho", "total_mom_x", "total_E"):
        values = np.array([float(row[column]) for row in table])
        assert np.abs(values - values[0]).max() <= 1e-14 * abs(values[0]), column


def test_a_checkpoint_of_four_ranks_continues_on_two_and_one_of_two_on_one(runs):
    folder = Path(runs)
    assert launched(runs, 2)["restart-4to2"] == 0
    assert main(amr_mpi_runs.restarted(folder, 2, 1)) == 0
    full = snapshot_bytes(folder / "blob2d-1")
    for continued in ("blob2d-4to2", "blob2d-2to1"):
        later = snapshot_bytes(folder / continued)
        assert later and set(later) < set(full)
        assert all(later[name] == full[name] for name in later), continued
        assert rows(folder / continued) == rows(folder / "blob2d-1")[-len(rows(folder / continued)):]


def test_a_full_pool_stops_two_ranks_with_a_checkpoint_and_a_larger_pool_continues(runs):
    folder = Path(runs)
    codes = launched(runs, 2)
    assert codes["full"] == 2 and codes["resumed"] == 0
    log = (folder / "full-2" / "run.log").read_text()
    assert "a rank needs" in log and "and the pool has 44: raise [amr] capacity" in log
    assert "--set amr.capacity=" in log
    stopped = sorted((folder / "full-2").glob("checkpoint_*.npz"))
    assert any(checkpoint.load(path).header["regrid_due"] for path in stopped)
    same_run(folder / "blast2d-1", folder / "full-2")
