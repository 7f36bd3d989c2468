"""Runs for tests/test_mpi.py, under `mpirun -n K python tests/mpi_runs.py FOLDER KIND...`: the
runs of the kinds one after the other in one MPI launch (a launch per run would start Python
and Taichi again each time, and compile again what the launch compiled before), each with
`taichiflow run` as a user types it.

Kinds: "cases" (the shipped cases the test compares with one rank, small), "restart
CHECKPOINT" (RESTARTED's run continued from CHECKPOINT), "fail" (a run that meets a bad cell
on the last rank: its exit code, 2, is the launch's; last), "gpu" (GPU_CASES on CUDA, f64 with
fast-math off, every rank on the machine's GPUs round robin: on one GPU the ranks share it). A
run of another kind that fails ends the launch with exit code 3.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taichiflow.cli import main  # noqa: E402

COMMON = ["--quiet", "--arch", "cpu", "--precision", "f64"]
# name: (case file, settings): every boundary kind, 1D/2D/3D, Euler, two-phase, MHD and shallow
# water (a raster bed, wet/dry fronts, idle tiles skipped per block), WENO5, PLM, MUSCL-Hancock and
# finite differences, dimensionally split steps; the splits automatic or asked for. Each case
# costs a launch's ranks a Taichi start and their kernels (the runs themselves are short), so
# each covers what no other does: 1D blocks with neighbours on both sides and an inflow face
# (shu_osher); periodic 2D blocks (kelvin_helmholtz_split, orszag_tang); unsplit finite volumes
# across 2x2 blocks (riemann2d_muscl_hancock, whose predicted states cross blocks too); WENO5's
# three ghost layers and walls in 3D (sedov3d_weno5); PLM in 3D with symmetry and absorbing faces
# (bubble). (Once here too, and covered by these: Sod's tube, a 1D WENO5 run; Sedov with PLM; the
# unsplit Kelvin-Helmholtz run.) kelvin_helmholtz_split is also test_mpi.py's restart (RESTARTED):
# it writes checkpoints on every number of ranks, and the one of 4 ranks continues on 2 and on one
# with the snapshots of the run never stopped, bit for bit (the restarts compile the kernels of
# the runs compared, which the launch and the test's process have compiled already).
CASES = {
    "shu_osher": ("shu_osher.toml", ["--set", "grid.cells=[64]", "--set", "time.end=0.3",
                                     "--set", "scheme.reconstruction='plm'"]),
    "kelvin_helmholtz_split": ("kelvin_helmholtz.toml", ["--set", "grid.cells=[24,16]", "--set", "time.end=0.15",
                                                         "--set", "scheme.dimensional_splitting=true",
                                                         "--set", "scheme.integrator='euler'",
                                                         "--set", "scheme.reconstruction='plm'",
                                                         "--set", "output.diagnostics_every=4",
                                                         "--set", "output.interval=0.05",
                                                         "--set", "output.checkpoint_interval=0.05"]),
    # MUSCL-Hancock's states half a step ahead cross the blocks' faces as W does (kernels/predictor.py)
    "riemann2d_muscl_hancock": ("riemann2d.toml", ["--set", "grid.cells=[20,16]", "--set", "time.end=0.05",
                                                   "--set", "scheme.reconstruction='muscl_hancock'",
                                                   "--set", "scheme.integrator='euler'", "--set", "scheme.retry={}"]),
    # (rows every 3 steps: the exchange begun at a step's end stays in flight into the next step,
    # completed by its sweep along z on 2 ranks split along z, along y on 4 split along y and z)
    "sedov3d_weno5": ("sedov3d.toml", ["--set", "grid.cells=[12,12,12]", "--set", "time.end=0.004",
                                       "--set", "boundary.y='wall'", "--set", "output.diagnostics_every=3"]),
    "bubble": ("bubble_collapse.toml", ["--set", "grid.cells=[16,12,12]", "--set", "time.end=0.02",
                                        "--set", "scheme.reconstruction='plm'"]),
    "orszag_tang": ("orszag_tang.toml", ["--set", "grid.cells=[16,16]", "--set", "time.end=0.02",
                                         "--set", "scheme.method='finite_difference'",
                                         "--set", "scheme.riemann='rusanov'", "--set", "scheme.variables='conserved'"]),
    "valley": ("valley_dam_break.toml", ["--set", "grid.cells=[48,24]", "--set", "time.end=120",
                                         "--set", "run.idle_tile=4"]),
}
# The cases of each number of ranks. What 4 ranks add to 2 is the split along two axes (and, in
# 1D, blocks with neighbours on both sides): the exchange moves W's components whatever the model
# (kernels/exchange.py), so the two-phase and MHD runs, whose variables and model globals cross
# the blocks on 2 ranks, leave the two-axis splits to sedov3d_weno5, kelvin_helmholtz_split and
# riemann2d_muscl_hancock (each of them a Taichi start and a compile per rank: 4 ranks on 2 cores).
RANK_CASES = {1: list(CASES), 2: list(CASES), 4: [name for name in CASES if name not in ("bubble", "orszag_tang")]}
# On the GPU machine (pytest --arch cuda): larger grids, so that a rank's share is real work
GPU_COMMON = ["--quiet", "--arch", "cuda", "--precision", "f64", "--set", "run.fast_math=false"]
GPU_CASES = {
    "sedov3d": ("sedov3d.toml", ["--set", "grid.cells=[64,64,64]", "--set", "time.end=0.01",
                                 "--set", "boundary.y='wall'"]),
    "bubble": ("bubble_collapse.toml", ["--set", "grid.cells=[64,48,48]", "--set", "time.end=0.02"]),
    "valley": ("valley_dam_break.toml", ["--set", "grid.cells=[256,128]", "--set", "time.end=120"]),
}
SPLITS = {2: {"sedov3d_weno5": "[1,1,2]", "kelvin_helmholtz_split": "[2,1]"},
          4: {"sedov3d_weno5": "[1,2,2]", "riemann2d_muscl_hancock": "[2,2]", "kelvin_helmholtz_split": "[2,2]"}}
RESTARTED = "kelvin_helmholtz_split"  # (checkpointed at t = 0.1 and 0.15: the last two kept)
FAILING = ("toro_123.toml", ["--set", "grid.cells=[400]", "--set", "scheme.variables='conserved_characteristic'",
                             "--set", "scheme.riemann='hllc'", "--set", "scheme.positivity_fallback=false",
                             "--set", "initial.regions.0.point=[0.6]"])


def case_run(name: str, folder: Path, ranks: int, gpu: bool = False) -> list:
    """The command-line arguments of a case's run into folder/name-ranks."""
    case, settings = (GPU_CASES if gpu else CASES)[name]
    split = None if gpu else SPLITS.get(ranks, {}).get(name)
    extra = ["--set", f"parallel.ranks={split}"] if split else []
    return ["run", str(ROOT / "cases" / case), "--out", str(folder / f"{name}-{ranks}"), "--overwrite",
            *(GPU_COMMON if gpu else COMMON), *settings, *extra]


def restart_run(checkpoint, ranks: int) -> list:
    """The command-line arguments of RESTARTED's run continued from `checkpoint` (into its
    folder) on `ranks` ranks, split as RESTARTED's run on that many ranks is."""
    arguments = case_run(RESTARTED, Path(checkpoint).parent, ranks)
    out = arguments.index("--out")
    return arguments[:out] + ["--restart", str(checkpoint)] + arguments[out + 3:]  # (--out DIR --overwrite)


def main_of(argv) -> None:
    folder, kinds = Path(argv[1]), list(argv[2:])
    from taichiflow.parallel.comm import world
    ranks = world().size
    while kinds:
        kind = kinds.pop(0)
        if kind in ("cases", "gpu"):
            runs = [case_run(name, folder, ranks, gpu=kind == "gpu")
                    for name in (RANK_CASES[ranks] if kind == "cases" else GPU_CASES)]
        elif kind == "restart":
            runs = [restart_run(kinds.pop(0), ranks)]
        elif kind == "fail":
            case, settings = FAILING
            sys.exit(main(["run", str(ROOT / "cases" / case), "--out", str(folder / "failing"), *COMMON, *settings]))
        else:
            raise SystemExit(f"unknown kind {kind!r}")
        for arguments in runs:
            code = main(arguments)
            if code:
                print(f"mpi_runs: {' '.join(arguments)}: exit code {code}", file=sys.stderr)
                sys.exit(3)


if __name__ == "__main__":
    main_of(sys.argv)
