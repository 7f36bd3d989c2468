"""Adaptive runs for tests/test_amr_mpi.py, under `mpirun -n K python tests/amr_mpi_runs.py
FOLDER`: every run of K ranks one after the other in one MPI launch (each launch starts Python
and Taichi and compiles the kernels on every rank: the costly part), each with `taichiflow run`
as a user types it; their exit codes go to FOLDER/codes-K.json for the test to check.

The cases (written by write_cases before any launch): a 2D blob carried across a periodic box
(WENO5 + HLLC + LSRK3, level jumps crossing the ranks' boundaries as it moves, checkpoints); a
2D blast whose forest grows (the leaves shared out anew after every regrid that leaves any
imbalance; with a small pool and grow = false it stops with a checkpoint); a 3D Sedov blast off
centre with walls and outflow (PLM + HLLC + SSPRK2, two levels).
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amr_cases import BLOB  # noqa: E402  (tests/: this script's folder)
from taichiflow.cli import main  # noqa: E402

COMMON = ["--quiet", "--arch", "cpu", "--precision", "f64"]

BLAST = (BLOB.replace("vel = [4.0, 2.0, 0.0]", "vel = [0.0, 0.0, 0.0]").replace("radius = 0.15", "radius = 0.1")
         .replace("state = { rho = 4.0, p = 2.0 }", "state = { rho = 1.0, p = 20.0 }")
         .replace("checkpoint_interval = 0.015\n", "").replace('name = "blob_amr"', 'name = "blast_amr"'))

SEDOV = ["--set", "grid.cells=[16,16,16]", "--set", "amr.block_cells=4", "--set", "scheme.reconstruction='plm'",
         "--set", "scheme.integrator='ssprk2'", "--set", "amr.regrid_every=2", "--set", "time.end=0.008",
         "--set", "output.interval=0.004", "--set", "boundary.y='wall'",
         "--set", "initial.regions.0.center=[0.1,0.05,0.0]"]

POOL = 44  # block slots a rank: the blast's first forest fits on 2 ranks, a later regrid does not

# name: (case file, settings); the ranks that run it (1: the test's own process)
RUNS = {
    "blob2d": ("blob.toml", []),
    "blast2d": ("blast.toml", ["--set", "amr.rebalance_above=1.0"]),
    "sedov3d": (str(ROOT / "cases" / "sedov3d_amr.toml"), SEDOV),
}
RANK_RUNS = {1: ["blob2d", "blast2d", "sedov3d"], 2: ["blob2d", "blast2d", "sedov3d"], 4: ["blob2d", "sedov3d"]}


def write_cases(folder: Path) -> None:
    (folder / "blob.toml").write_text(BLOB)
    (folder / "blast.toml").write_text(BLAST)


def case_path(folder: Path, case: str) -> str:
    return case if case.startswith("/") else str(folder / case)


def run_arguments(name: str, folder: Path, ranks: int) -> list:
    """`taichiflow run` of a run into folder/name-ranks."""
    case, settings = RUNS[name]
    return ["run", case_path(folder, case), "--out", str(folder / f"{name}-{ranks}"), "--overwrite", *COMMON,
            *settings]


def full_pool(folder: Path, ranks: int) -> list:
    """The blast with a pool too small for its later forests: stops with a checkpoint."""
    return ["run", str(folder / "blast.toml"), "--out", str(folder / f"full-{ranks}"), "--overwrite", *COMMON,
            "--set", f"amr.capacity={POOL}", "--set", "amr.grow=false"]


def resumed(folder: Path, ranks: int) -> list:
    """full_pool's run continued with a pool large enough."""
    return ["run", str(folder / f"full-{ranks}" / "case.toml"), "--resume", str(folder / f"full-{ranks}"), *COMMON,
            "--set", "amr.capacity=512"]


def restarted(folder: Path, source: int, ranks: int) -> list:
    """blob2d from the first checkpoint of its run on `source` ranks (with that run's resolved
    case.toml), into blob2d-SOURCEto<ranks>."""
    first = sorted((folder / f"blob2d-{source}").glob("checkpoint_*.npz"))[0]
    return ["run", str(folder / f"blob2d-{source}" / "case.toml"), "--restart", str(first), "--out",
            str(folder / f"blob2d-{source}to{ranks}"), *COMMON]


def runs_of(folder: Path, ranks: int) -> dict:
    """{label: arguments} of everything `ranks` ranks run, in order."""
    runs = {name: run_arguments(name, folder, ranks) for name in RANK_RUNS[ranks]}
    if ranks == 2:
        runs |= {"full": full_pool(folder, 2), "resumed": resumed(folder, 2), "restart-4to2": restarted(folder, 4, 2)}
    return runs


def main_of(argv) -> None:
    folder = Path(argv[1])
    from taichiflow.parallel.comm import world
    comm = world()
    codes = {label: main(arguments) for label, arguments in runs_of(folder, comm.size).items()}
    if comm.rank == 0:
        (folder / f"codes-{comm.size}.json").write_text(json.dumps(codes))


if __name__ == "__main__":
    main_of(sys.argv)
