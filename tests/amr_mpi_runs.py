"""Adaptive runs for tests/test_amr_mpi.py, under `mpirun -n K python tests/amr_mpi_runs.py
FOLDER`: every run of K ranks one after the other in one MPI launch (each launch starts Python
and Taichi and compiles the kernels on every rank: the costly part), each with `taichiflow run`
as a user types it; their exit codes go to FOLDER/codes-K.json for the test to check.

The cases (written by write_cases before any launch): a 2D blob carried across a periodic box
(WENO5 + HLLC + LSRK3, level jumps crossing the ranks' boundaries as it moves, checkpoints); a
2D blast whose forest grows (the leaves shared out anew after every regrid that leaves any
imbalance; with a small pool and grow = false it stops with a checkpoint); a 3D Sedov blast off
centre with walls and outflow (PLM + HLLC + SSPRK2, two levels); the blob faster, its leaves
shared out anew after every regrid, so that merges find siblings on other ranks.

Every copy of another rank's leaf is set to NaN before each refresh (poison_copies), so that a
cell a rank's kernels read but the refresh does not move (parallel/amr_slabs.py) shows in the
results, which the test compares with one rank's bit for bit. On 4 ranks the cells travel
through buffers whose kernels' and MPI's sides differ (separate_buffers), as on a GPU.
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
    "merges2d": ("blob.toml", ["--set", "amr.rebalance_above=1.0", "--set", "initial.background.vel=[8.0,3.0,0.0]",
                               "--set", "time.end=0.05", "--set", "output.interval=0.01"]),
}
RANK_RUNS = {1: ["blob2d", "blast2d", "sedov3d", "merges2d"], 2: ["blob2d", "blast2d", "sedov3d"],
             4: ["blob2d", "sedov3d", "merges2d"]}


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


def poison_copies() -> None:
    """Every refresh of the copies (parallel/amr_exchange.py) preceded by U and W = NaN in the
    copies' whole blocks: only the cells it moves are then numbers (the work on the own leaves
    between its start and its finish sees NaN in every copy)."""
    import numpy as np
    import taichi as ti
    from taichiflow.kernels.amr.pool import pool_index
    from taichiflow.parallel.amr_solver import RankPackSolver
    use = RankPackSolver._use

    def poisoned_use(solver, forest, partition, layout, *tables):
        use(solver, forest, partition, layout, *tables)
        pool, refresh = solver.pool, solver.refresh_halo
        copies = np.ascontiguousarray(layout.local_slots[layout.n_owned:], np.int32)
        if not hasattr(pool, "poison"):
            nan_u = [float("nan")] * pool.phys.U.n
            nan_w = [float("nan")] * pool.phys.W.n

            @ti.kernel
            def poison(slots: ti.types.ndarray(dtype=ti.i32, ndim=1)):
                for J in ti.grouped(ti.ndrange(slots.shape[0], *((pool.N,) * pool.dim))):
                    I = pool_index(slots[J[0]], [J[1 + d] for d in range(pool.dim)])
                    pool.U[I] = ti.Vector(nan_u, dt=pool.dtype)
                    pool.W[I] = ti.Vector(nan_w, dt=pool.dtype)
            pool.poison = poison

        start = refresh.start

        def poisoned_start():  # (a whole refresh, or its first half with work on the own leaves after it)
            if len(copies):
                pool.poison(copies)
            start()
        refresh.start = poisoned_start

    RankPackSolver._use = poisoned_use


def separate_buffers() -> None:
    """The copies' cells through host buffers whose kernels' side and MPI's side are two arrays,
    copied after the pack and before the unpack, as the pinned staging's device and page-locked
    sides are (parallel/staging.py): the code a GPU's stagings take, on the CPU."""
    import numpy as np
    from taichiflow.parallel import amr_solver, staging

    class Separate(staging.HostStaging):
        name = "separate"

        def slab(self, shape):
            return staging.Slab(np.full(shape, np.nan, self.numpy_dtype), np.full(shape, np.nan, self.numpy_dtype))

        def after_pack(self, slabs):
            for slab in slabs:
                slab.mpi[...] = slab.kernel

        def before_unpack(self, slabs):
            for slab in slabs:
                slab.kernel[...] = slab.mpi

    amr_solver.choose_staging = lambda asked, arch, cuda_aware, dtype, comm: Separate(dtype)


def count_siblings() -> list:
    """[n]: n counts the children of merges that came whole from other ranks from now on."""
    from taichiflow.parallel.amr_solver import RankPackSolver
    bring, counts = RankPackSolver._bring_siblings, [0]

    def counted(solver, routes):
        counts[0] += sum(len(leaves) for leaves in routes.siblings_in.values())
        bring(solver, routes)
    RankPackSolver._bring_siblings = counted
    return counts


def main_of(argv) -> None:
    folder = Path(argv[1])
    poison_copies()
    from taichiflow.parallel.comm import world
    comm = world()
    if comm.size == 4:
        separate_buffers()
    codes, siblings, counts = {}, {}, count_siblings()
    for label, arguments in runs_of(folder, comm.size).items():
        counts[0] = 0
        codes[label] = main(arguments)
        siblings[label] = comm.world.allreduce(counts[0])
    if comm.rank == 0:
        (folder / f"codes-{comm.size}.json").write_text(json.dumps(codes))
        (folder / f"siblings-{comm.size}.json").write_text(json.dumps(siblings))


if __name__ == "__main__":
    main_of(sys.argv)
