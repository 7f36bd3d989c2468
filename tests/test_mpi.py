"""Runs on several MPI ranks (mpirun -n 2 and -n 4, CPU ranks) against one rank: the same
snapshots bit for bit, the same diagnostics (their sums to rounding: they add the blocks in
another order), a restart on another number of ranks, a failure on one rank; and the split
of the grid itself (parallel/decomposition.py, no MPI needed).
"""
import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mpi_runs
from taichiflow.io import read_pvd, read_vti
from taichiflow.parallel.decomposition import Decomposition, DecompositionError, choose_dims


# --- the split (Taichi-free) -----------------------------------------------------------------

def test_blocks_tile_the_grid_and_differ_by_at_most_a_cell():
    d = Decomposition((10, 7, 5), (3, 2, 1))
    seen = np.zeros((10, 7, 5), dtype=int)
    for b in d.blocks():
        seen[tuple(slice(o, o + n) for o, n in zip(b.offset, b.cells))] += 1
        assert d.rank_of(b.coords) == b.rank
    assert np.all(seen == 1)
    assert sorted({b.cells[0] for b in d.blocks()}) == [3, 4] and {b.cells[1] for b in d.blocks()} == {3, 4}


def test_neighbours_wrap_on_periodic_axes_only():
    d = Decomposition((8, 8), (2, 2))
    assert d.neighbour(0, 0, 0, periodic=False) is None and d.neighbour(0, 0, 1, periodic=False) == 2
    assert d.neighbour(0, 0, 0, periodic=True) == 2 and d.neighbour(3, 1, 1, periodic=True) == 2
    assert Decomposition((8,), (1,)).neighbour(0, 0, 0, periodic=True) is None  # one block: its own ghost copy


def test_the_automatic_split_has_the_least_area_between_blocks():
    assert choose_dims(4, (64, 64, 64)) in {(1, 2, 2), (2, 1, 2), (2, 2, 1)}
    assert choose_dims(4, (256, 32)) == (4, 1)
    assert choose_dims(8, (32, 32, 32)) == (2, 2, 2)
    # among splits of equal area, one along an axis the first sweep does not read (CUDA f32:
    # the walk along x solves x and z); a smaller area still wins
    assert choose_dims(2, (64, 64, 64)) == (1, 1, 2)
    assert choose_dims(2, (64, 64, 64), read_first=(0, 2)) == (1, 2, 1)
    assert choose_dims(2, (64, 32, 64), read_first=(0, 2)) == (1, 1, 2)
    assert choose_dims(6, (120, 60, 60), asked=[3, 2, 1]) == (3, 2, 1)


def test_the_runs_compared_are_of_every_case_and_each_split_asked_for_is_run():
    """mpi_runs: one rank runs every case (the reference of each comparison), each split asked
    for names a case that runs on that many ranks (a name left out would fall back to the
    automatic split silently), and the case restarted runs on 4, 2 and 1 ranks."""
    assert mpi_runs.RANK_CASES[1] == list(mpi_runs.CASES)
    assert all(set(names) <= set(mpi_runs.CASES) for names in mpi_runs.RANK_CASES.values())
    for ranks, splits in mpi_runs.SPLITS.items():
        assert set(splits) <= set(mpi_runs.RANK_CASES[ranks]), ranks
    assert all(mpi_runs.RESTARTED in mpi_runs.RANK_CASES[ranks] for ranks in (1, 2, 4))  # (checkpointed on 4)


@pytest.mark.parametrize("ranks,cells,asked,message", [
    (3, (64, 64), [2, 2], "makes 4 blocks, but the run has 3 MPI ranks"),
    (2, (64, 64), [2], "has 1 values for a 2D grid"),
    (4, (8, 64), [4, 1], "leave 2 cells each, fewer than the scheme's 3 ghost layers"),
    (7, (5, 5), [], "cannot split the grid [5, 5]"),
])
def test_splits_that_cannot_work_are_refused_by_name(ranks, cells, asked, message):
    with pytest.raises(DecompositionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        choose_dims(ranks, cells, asked, ghost=3)


# --- runs under mpirun ------------------------------------------------------------------------

def mpirun(ranks: int, *arguments, expect=0):
    """`mpirun -n ranks python tests/mpi_runs.py arguments` (mpirun from the MPI of mpi4py's wheel,
    beside this Python), its exit code checked. Open MPI refuses to start as root (a container)
    unless told that it may."""
    done = launch(ranks, [mpi_runs.__file__, *map(str, arguments)], timeout=1200)
    assert done.returncode == expect, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def launch(ranks: int, python_arguments: list, timeout: int, cwd=None) -> subprocess.CompletedProcess:
    """`mpirun -n ranks python python_arguments` with the mpirun beside this Python."""
    launcher = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
    assert launcher, "no mpirun: pip install -e '.[test]' installs mpi4py and the mpich wheel"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return subprocess.run([launcher, "-n", str(ranks), sys.executable, *python_arguments], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs of the comparisons, the restart and the failure, once, into one folder:
    mpi_runs.RANK_CASES[1] in the test's own process, RANK_CASES[4] in a launch of 4 ranks, then
    in one launch of 2 ranks RANK_CASES[2], the restart of the first checkpoint of 4 ranks (into
    a copy of its folder) and the failing run: a launch starts Python and Taichi on every rank,
    and the case restarted is one of those compared (mpi_runs.RESTARTED), whose kernels the
    launch has compiled before. The folder, the last launch's CompletedProcess and the name of
    the checkpoint restarted."""
    from taichiflow.cli import main
    folder = tmp_path_factory.mktemp("mpi")
    for name in mpi_runs.RANK_CASES[1]:
        assert main(mpi_runs.case_run(name, folder, 1)) == 0
    mpirun(4, folder, "cases")
    checkpointed = folder / f"{mpi_runs.RESTARTED}-4"
    first = sorted(checkpointed.glob("checkpoint_*.npz"))[0]
    for ranks in (2, 1):
        shutil.copytree(checkpointed, folder / f"restarted-{ranks}")
    failing = mpirun(2, folder, "cases", "restart", folder / "restarted-2" / first.name, "fail", expect=2)
    return {"folder": folder, "failing": failing, "checkpoint": first.name}


def snapshots(run: Path) -> list:
    return [(t, read_vti(run / name)) for t, name in read_pvd(run / "series.pvd")]


def rows(run: Path) -> tuple:
    with open(run / "diagnostics.csv") as f:
        table = list(csv.reader(f))
    return table[0], np.array(table[1:], dtype=float)


@pytest.mark.parametrize("name,ranks", [(name, ranks) for name in sorted(mpi_runs.CASES) for ranks in (2, 4)
                                        if name in mpi_runs.RANK_CASES[ranks]])
def test_ranks_give_the_snapshots_of_one_rank_bit_for_bit(runs, ranks, name):
    one, many = runs["folder"] / f"{name}-1", runs["folder"] / f"{name}-{ranks}"
    reference, split = snapshots(one), snapshots(many)
    assert len(split) == len(reference) >= 2
    assert all(name.endswith(".pvti") for _, name in read_pvd(many / "series.pvd"))
    for (t1, (meta1, a1)), (t2, (meta2, a2)) in zip(reference, split):
        assert t1 == t2 and meta1["cells"] == meta2["cells"]
        for field in a1:
            np.testing.assert_array_equal(a1[field], a2[field], err_msg=f"{name} {field} t = {t1}")
    columns, r1 = rows(one)
    _, r2 = rows(many)
    assert r1.shape == r2.shape
    sums = [k for k, c in enumerate(columns) if c.startswith(("total_", "sum_", "rms_"))]
    # (the share of tiles computed depends on the split: each block's frame is always computed)
    exact = [k for k in range(len(columns)) if k not in sums and columns[k] != "active_tiles"]
    np.testing.assert_array_equal(r1[:, exact], r2[:, exact])   # time, dt, counts, minima, maxima
    scale = np.abs(r1[:, sums]).max() if sums else 1.0
    assert np.abs(r1[:, sums] - r2[:, sums]).max() <= 1e-13 * scale


def test_run_log_names_the_split_the_library_and_the_path_of_the_ghost_layers(runs):
    """run.log of an MPI run says how the grid was split, which MPI ran it, whether that MPI is
    CUDA-aware (MPIX_Query_cuda_support: the PyPI wheels are not) and how ghost layers travel."""
    line = [text for text in (runs["folder"] / "sedov3d_weno5-2" / "run.log").read_text().splitlines()
            if " MPI: " in text]
    assert len(line) == 1
    assert "MPI: 2 ranks, 1x1x2 blocks (rank 0's [12, 12, 6] cells); " in line[0]
    assert "not CUDA-aware; ghost layers exchanged through host buffers" in line[0]
    assert " MPI: " not in (runs["folder"] / "sedov3d_weno5-1" / "run.log").read_text()


def test_bench_under_mpirun_steps_blocks_of_one_grid_and_rank_0_reports(tmp_path):
    """`mpirun -n 2 taichiflow bench --grid 32 16 16`: one report (rank 0's), each rank a block
    of 16^3, the rate the whole grid's (cells x steps over the slowest rank's time)."""
    import json
    done = launch(2, ["-m", "taichiflow.cli", "bench", "--grid", "32", "16", "16", "--reconstruction", "plm",
                      "--riemann", "hll", "--integrator", "ssprk2", "--arch", "cpu", "--steps", "2", "--repeats", "2",
                      "--json"], timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 1
    row = rows[0]
    assert (row["ranks"], row["grid"], row["block"]) == (2, "32x16x16", "16x16x16")
    assert row["cell_updates_per_s"] == pytest.approx(32 * 16 * 16 * 2 / row["median_s"], rel=1e-12)
    assert row["cell_updates_per_s_per_rank"] == pytest.approx(row["cell_updates_per_s"] / 2, rel=1e-12)


def test_the_exchange_timeline_tool_times_each_exchange_on_each_rank(tmp_path):
    """tools/exchange-timeline.py on 2 CPU ranks (host clocks for the events): a line per rank,
    and the exchanges it timed are LSRK3's three a step, each begun and completed once (the
    advance starts from the state its warm-up ended on, checked then: run/driver.py)."""
    tool = Path(__file__).resolve().parent.parent / "tools" / "exchange-timeline.py"
    done = launch(2, [str(tool), "--model", "euler", "--grid", "16", "8", "8", "--steps", "4", "--repeats", "1"],
                  timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert [line.split()[1] for line in lines] == ["0", "1"]
    assert all("for 4 steps | 12 exchanges begun, 12 completed" in line for line in lines), lines


def test_a_restart_on_another_number_of_ranks_continues_bit_for_bit(runs):
    """Checkpointed on 4 ranks (one piece each, and the manifest), restarted from the first
    checkpoint on 2 ranks and on one: the snapshots of the run never stopped, bit for bit
    (mpi_runs.RESTARTED: dimensionally split steps, rows every 4 steps)."""
    folder, checkpoint = runs["folder"], runs["checkpoint"]
    whole = folder / f"{mpi_runs.RESTARTED}-4"
    assert len(list(whole.glob(Path(checkpoint).stem + "_r*.npy"))) == 4
    reference = snapshots(whole)
    assert [t for t, _ in reference] == pytest.approx([0.0, 0.05, 0.1, 0.15], abs=1e-15)
    from taichiflow.cli import main
    assert main(mpi_runs.restart_run(folder / "restarted-1" / checkpoint, 1)) == 0
    for ranks in (2, 1):
        again = folder / f"restarted-{ranks}"
        log = (again / "run.log").read_text()  # (the folder is a copy: the restart wrote the later snapshots again)
        assert f"restarting from {again / checkpoint}" in log and "this run writes them again" in log
        continued = snapshots(again)
        assert len(continued) == len(reference)
        for (t1, (_, a1)), (t2, (_, a2)) in zip(reference, continued):
            assert t1 == t2
            for field in a1:
                np.testing.assert_array_equal(a1[field], a2[field], err_msg=f"{ranks} ranks, {field}, t = {t1}")


def test_a_bad_cell_on_one_rank_stops_every_rank_with_its_message(runs):
    """The 123 problem (its jump at x = 0.6) with conserved-characteristic variables, HLLC and no
    positivity fallback leaves rho < 0 at cell 239 at step 12, in the second of two blocks: every
    rank stops with exit code 2, rank 0 prints the cell, its rank and the last good state, which
    is written (all pieces and the .pvti)."""
    done = runs["failing"]  # (the last run of its launch)
    assert "at cell (239,) on rank 1: rho = -" in done.stderr and "Wrote the last good state (step 11" in done.stderr
    assert done.stderr.count("inadmissible state") == 1
    failing = runs["folder"] / "failing"
    last = read_pvd(failing / "series.pvd")[-1][1]
    meta, arrays = read_vti(failing / last)
    assert meta["cells"][0] == 400 and np.all(arrays["p"] > 0)
    assert "FAILED: inadmissible state after step 12" in (failing / "run.log").read_text()


def test_an_mpi_launch_without_mpi4py_is_one_line_naming_the_fix(monkeypatch, capsys, tmp_path):
    """Started as one of 2 processes (the launcher's PMI_SIZE) where mpi4py cannot be imported:
    exit code 1 and the pip command, before anything is built or written."""
    import builtins
    from taichiflow.cli import main
    from taichiflow.parallel import comm
    real_import = builtins.__import__

    def without_mpi4py(name, *args, **kwargs):
        if name.startswith("mpi4py"):
            raise ImportError("No module named 'mpi4py'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setattr(builtins, "__import__", without_mpi4py)
    monkeypatch.setattr(comm, "_WORLD", None)
    assert main(["run", str(mpi_runs.ROOT / "cases" / "sod.toml"), "--out", str(tmp_path / "run"), "--quiet"]) == 1
    assert 'but mpi4py is not importable' in capsys.readouterr().err and not (tmp_path / "run").exists()
    monkeypatch.setattr(comm, "_WORLD", None)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(mpi_runs.GPU_CASES))
def test_two_ranks_on_the_gpus_give_one_ranks_snapshots(gpu_runs, name):
    """On the GPU machine: two ranks on its GPUs (a GPU each where it has two or more, through
    NCCL; sharing it where it has one, through page-locked host buffers), f64 with fast-math off,
    against one rank: the same snapshots bit for bit, and run.log names the path `auto` chose.
    The rates per rank are printed (pytest -s) from run.log."""
    one, two = Path(gpu_runs[1]) / f"{name}-1", Path(gpu_runs[2]) / f"{name}-2"
    reference, split = snapshots(one), snapshots(two)
    assert len(split) == len(reference) >= 2
    for (t1, (_, a1)), (t2, (_, a2)) in zip(reference, split):
        assert t1 == t2
        for field in a1:
            np.testing.assert_array_equal(a1[field], a2[field], err_msg=f"{name} {field} t = {t1}")
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    gpus = len(visible) or subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")
    path = "through NCCL" if gpus >= 2 else "through page-locked host buffers"
    assert path in (two / "run.log").read_text()
    rates = [float(re.findall(r"\(([0-9.e+]+) cell-updates/s[;)]", (folder / "run.log").read_text())[-1])
             for folder in (one, two)]
    print(f"\n{name}: one rank {rates[0]:.3g} cell-updates/s; two ranks ({path}) {rates[1]:.3g} "
          f"({rates[1] / 2:.3g} per rank)")


@pytest.fixture(scope="module")
def gpu_runs(tmp_path_factory):
    """mpi_runs.GPU_CASES on one rank and on two ranks, each in a launch of its own."""
    folders = {}
    for ranks in (1, 2):
        folders[ranks] = tmp_path_factory.mktemp(f"gpu{ranks}")
        mpirun(ranks, folders[ranks], "gpu")
    return folders
