"""Command line: `taichiflow run`, `taichiflow bench`, `taichiflow models`, `taichiflow view`,
`taichiflow check`, `taichiflow spectrum`."""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from .case import CaseError


def main(argv=None, launched: float | None = None) -> int:
    """launched: when the command started (a perf_counter reading; default now): `run
    --max-wall-time` counts from it, as a job's limit counts the build too."""
    launched = time.perf_counter() if launched is None else launched
    parser = argparse.ArgumentParser(prog="taichiflow", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="also show Taichi's own messages")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a case file")
    run.add_argument("case", help="case file (TOML)")
    run.add_argument("--out", help="output folder (default: out/<case name>/, or the folder of --restart's "
                     "checkpoint); one run per folder")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a case key, e.g. --set grid.cells=[800] (repeatable)")
    run.add_argument("--arch", choices=["auto", "cpu", "cuda"], help="backend (default: case, else auto)")
    run.add_argument("--precision", choices=["auto", "f32", "f64"], help="floating point precision")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--restart", metavar="CHECKPOINT", help="continue from this checkpoint file")
    run.add_argument("--resume", metavar="OUT_DIR", help="continue from the newest valid checkpoint in OUT_DIR "
                     "(which is also the output folder)")
    run.add_argument("--allow-change", action="append", default=[], metavar="KEY",
                     help="with --restart/--resume: continue although this [scheme] key (or run.arch, output.interval, "
                          "...) differs from the checkpoint's case (repeatable; docs/cases.md, Restarts)")
    run.add_argument("--overwrite", action="store_true",
                     help="clear the output folder of an earlier run's results (taichiflow's files only) first")
    run.add_argument("--max-wall-time", metavar="HH:MM:SS", help="stop with a checkpoint after this wall time, "
                     "counted from the command's launch (the build spends it too)")
    run.add_argument("--render", action="store_true",
                     help="also write a picture of every snapshot (snapshot_NNNNN.png; needs pyvista)")

    _add_bench_parser(sub)

    sub.add_parser("models", help="list the shipped models")

    check = sub.add_parser("check", help="check a model file: a consistency suite on random admissible states")
    check.add_argument("model", help="model file (e.g. models/euler.py) or shipped model name")
    check.add_argument("--samples", type=int, default=64, help="random admissible states to test (64)")
    check.add_argument("--seed", type=int, default=0, help="random seed of the samples (0)")
    check.add_argument("--params", nargs="+", default=[], metavar="KEY=VALUE",
                       help="model parameters other than the defaults, e.g. --params gamma=1.67")

    view = sub.add_parser("view", help="look at a run's results with PyVista: a window, or pictures off-screen")
    view.add_argument("out_dir", help="output folder of a run (with series.pvd)")
    view.add_argument("--screenshot", metavar="PNG", help="write a picture of one snapshot instead of a window")
    view.add_argument("--movie", metavar="FILE", help="write a movie over all snapshots: .gif, or .mp4 "
                      "(needs imageio-ffmpeg; else a .gif is written instead)")
    view.add_argument("--time", type=float, help="show the snapshot nearest this time (default: the last)")
    view.add_argument("--field", help="field to show (default: the model's: rho, alpha for two-phase, h over "
                      "terrain)")
    view.add_argument("--style", choices=["iso", "slice", "volume", "schlieren", "streamlines", "image", "line",
                                          "terrain", "surface3d"],
                      help="3D: iso, slice, volume, schlieren, streamlines; 2D: image, iso, schlieren, and where "
                           "the snapshots have the arrays bed and h (shallow water) terrain (the water over the "
                           "hill-shaded bed, from above; their default) and surface3d (both warped by height, in "
                           "perspective); 1D: line")
    view.add_argument("--iso", type=float, help="iso-surface (3D) or iso-line (2D) value of the field "
                      "(default: 0.5 for alpha, else the middle of the field's range); with --style "
                      "streamlines, an iso-surface in place of the volume rendering")
    view.add_argument("--vectors", metavar="NAME", help="--style streamlines: the vector field whose lines "
                      "are drawn (default: B where the run has it, else vel)")
    view.add_argument("--seeds", type=int, metavar="N",
                      help="--style streamlines: seed points of the lines, spread evenly through the box "
                           "(the same ones every time; 200)")
    view.add_argument("--wet-depth", type=float, metavar="H",
                      help="--style terrain, surface3d: water is drawn where the depth h exceeds H (0.001)")
    view.add_argument("--exaggeration", type=float, metavar="X",
                      help="--style surface3d: vertical exaggeration of the heights, also steepening the "
                           "terrain style's hill shading (default: a round number that makes the relief a tenth "
                           "of the domain's larger side, at least 1: 3 for 200 m over 6 km)")
    view.add_argument("--blocks", action="store_true", help="an adaptive run's leaf blocks outlined, coloured by "
                      "level (3D: where they cross the plane z through the centre)")
    view.add_argument("--size", nargs=2, type=int, metavar=("W", "H"), help="picture size in pixels (1024 768)")
    view.add_argument("--fps", type=float, default=4.0, help="movie frames per second (4)")
    view.add_argument("--clim", nargs=2, type=float, metavar=("LOW", "HIGH"),
                      help="colour range of the field shown (1D: its y range) in every picture; default: "
                           "a screenshot its own snapshot's range, a movie and the window the field's range "
                           "over all snapshots")
    view.add_argument("--no-mirror", dest="mirror", action="store_false",
                      help="show the part computed; by default a run is mirrored across the symmetry faces "
                           "its case declares (boundary kind \"symmetry\") and shown whole")

    spectrum = sub.add_parser("spectrum", help="kinetic energy spectrum E(k) of a snapshot on a periodic grid: "
                              "CSV, and a log-log plot")
    spectrum.add_argument("source", help="a snapshot (.vti) or a run's output folder (its last snapshot)")
    picks = spectrum.add_mutually_exclusive_group()
    picks.add_argument("--time", type=float, help="the snapshot nearest this time (output folder)")
    picks.add_argument("--times", type=float, nargs="+", metavar="T",
                       help="the snapshots nearest these times (output folder): one CSV column and one line each")
    spectrum.add_argument("--field", default="vel", help="the velocity array (vel)")
    spectrum.add_argument("--weight", choices=["none", "sqrt_rho"], default="none",
                          help="sqrt_rho: the spectrum of sqrt(rho) v, whose energy is the kinetic energy (none)")
    spectrum.add_argument("--density", default="rho", help="the density array for --weight sqrt_rho (rho)")
    spectrum.add_argument("--csv", metavar="FILE", help="write the CSV (k, E) here (default: print it)")
    spectrum.add_argument("--plot", metavar="PNG", help="also write a log-log plot (needs pyvista)")

    args = parser.parse_args(argv)
    if args.verbose:
        _be_verbose()
    args.argv = list(sys.argv[1:] if argv is None else argv)  # run.log records the whole command line
    args.launched = launched
    command = {"run": _run, "bench": _bench, "models": _models, "view": _view, "check": _check,
               "spectrum": _spectrum}[args.command]
    if args.command == "run":
        return _on_every_rank(command, args)
    return _one_line_errors(command, args)


def _on_every_rank(command, args) -> int:
    """A run started by mpirun: an error every rank meets alike (a case, a model, a checkpoint)
    is printed by rank 0 and ends every rank with its code; any other error on one rank is
    printed with the rank and ends all of them (MPI_Abort): no rank waits for a lost one."""
    from .errors import SimulationError
    from .parallel.comm import world
    try:
        comm = world()
    except SimulationError as err:  # (an MPI launch without mpi4py: each rank says so)
        print(f"taichiflow: error: {err}", file=sys.stderr)
        return 1
    if comm.size == 1:
        return _one_line_errors(command, args)
    try:
        code = _one_line_errors(command, args, quiet=comm.rank > 0, collective_only=True)
    except BaseException as err:  # noqa: BLE001  (this rank alone: stop them all)
        print(f"taichiflow: error (rank {comm.rank}): {type(err).__name__}: {err}", file=sys.stderr)
        comm.abort(1)
        raise
    return code


def _one_line_errors(command, args, quiet: bool = False, collective_only: bool = False) -> int:
    """The command, its expected errors as one line and an exit code (quiet: the line not
    printed; collective_only: only the errors every rank meets alike, others propagate)."""
    from .errors import CheckpointError, ModelError
    say = (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr))
    try:
        return command(args)
    except (CaseError, ModelError, CheckpointError) as err:
        say(f"taichiflow: error: {err}")
        return 1
    except (ValueError, RuntimeError) as err:
        if collective_only:
            raise
        say(f"taichiflow: error: {err}")
        return 1
    except OSError as err:  # a folder that cannot be written (read-only, full disk, not a folder)
        if collective_only:
            raise
        say(f"taichiflow: error: {describe_os_error(err)}")
        return 1
    except KeyboardInterrupt:  # before a run's own Ctrl-C handling is in place (start-up, compiling)
        say("taichiflow: interrupted (Ctrl-C)")
        return 130


def describe_os_error(err: OSError) -> str:
    """One line: what could not be done, to which file, and why."""
    where = f" {err.filename}" if err.filename else ""
    return f"cannot write{where}: {err.strerror or err}"


def _be_verbose():
    """taichiflow --verbose: Taichi's banner (which taichiflow hides) and its messages."""
    from .run import backend
    import taichi

    backend.VERBOSE = True
    print(f"[Taichi] version {'.'.join(map(str, taichi.__version__))}", file=sys.stderr)


def _run(args) -> int:
    from .run.command import run_command
    return run_command(args, max_wall_time=_seconds(args.max_wall_time))


def _add_bench_parser(sub):
    """`taichiflow bench`'s options (its own function: main() lists every command's)."""
    bench = sub.add_parser("bench", help="measure cell-updates per second")
    bench.add_argument("--model", default="euler")
    bench.add_argument("--reconstruction", default="weno5")
    bench.add_argument("--limiter", default="mc")
    bench.add_argument("--riemann", default="hllc")
    bench.add_argument("--integrator", default="lsrk3")
    bench.add_argument("--cells", type=int, default=128, help="cells per axis")
    bench.add_argument("--dim", type=int, default=3, choices=[1, 2, 3])
    bench.add_argument("--grid", type=int, nargs="+", metavar="N",
                       help="cells per axis (1 to 3 numbers), in place of --cells and --dim: e.g. 512 256 256 "
                            "for two blocks of 256^3 under mpirun -n 2 (weak scaling)")
    bench.add_argument("--precision", default="f32", choices=["f32", "f64"])
    bench.add_argument("--arch", default="auto", choices=["auto", "cpu", "cuda"])
    bench.add_argument("--steps", type=int, default=20, help="timed steps per repetition")
    bench.add_argument("--repeats", type=int, default=5)
    bench.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a key of the benchmark case, e.g. --set scheme.positivity_fallback=false")
    bench.add_argument("--wet-fraction", type=float, metavar="F",
                       help="a model with an idle state (shallow water): make the cells beyond this fraction "
                            "of x idle (a dry bed), e.g. 0.1 for 10%% wet")
    bench.add_argument("--amr-blocks", type=int, metavar="N",
                       help="step the grid as a pack of N^dim blocks all at the root level, through the adaptive "
                            "solver ([amr] max_level = 0; docs/amr.md)")
    bench.add_argument("--json", action="store_true", help="print one JSON object (per line with --sweep)")
    bench.add_argument("--sweep", action="store_true",
                       help="every workload of the speed targets (Euler WENO5+HLLC+LSRK3 f32 and f64, two-phase "
                            "WENO5+HLLC+LSRK3 f32, Euler PLM+HLL+SSP-RK2 f32, MHD, and shallow water in 2D on "
                            "as many cells, all wet and 10%% wet, skipping dry tiles and not; special-relativistic "
                            "MUSCL-Hancock + MUSTA-FORCE, WENO5 + HLL and SHASTA split by axes) at --cells, "
                            "a row as each ends")


WALL_TIME = re.compile(r"\d+(\.\d*)?|\d+(:[0-5]\d){1,2}(\.\d*)?")  # seconds, or [HH:]MM:SS


def _seconds(text) -> float:
    """--max-wall-time as seconds (0: no limit, the option left out): HH:MM:SS or MM:SS with
    two digits below 60 for the minutes and seconds after the first field (00:99:00 and 1:2
    are typos, not 99 minutes and 62 seconds), or plain seconds; a limit of zero is refused
    (it would stop the run at once)."""
    if text is None:
        return 0.0
    if not WALL_TIME.fullmatch(text.strip()):
        raise ValueError(f"--max-wall-time: expected HH:MM:SS (or MM:SS, or seconds), with two digits below 60 for "
                         f"the minutes and seconds, got {text!r}")
    seconds = 0.0
    for part in text.strip().split(":"):
        seconds = seconds * 60 + float(part)
    if seconds <= 0:
        raise ValueError(f"--max-wall-time {text}: a limit of zero would stop the run at once; leave the option out "
                         "for no limit")
    return seconds


def _checked_bench_sizes(args) -> None:
    """`taichiflow bench`'s sizes, named by their flags (ValueError)."""
    for flag, value in (("--cells", args.cells), ("--steps", args.steps), ("--repeats", args.repeats),
                        ("--amr-blocks", args.amr_blocks)):
        if value is not None and value < 1:
            raise ValueError(f"bench {flag} {value}: must be a positive integer")
    if args.grid and not (1 <= len(args.grid) <= 3 and min(args.grid) >= 1):
        raise ValueError(f"--grid {' '.join(map(str, args.grid))}: expected 1 to 3 positive cell counts")


def _target_text(target) -> str:
    """A workload's target in the sweep's table: '-' where it has none (the shallow-water rows)."""
    return "-" if target is None else f"{target:.1e}"


def _workload_note(r) -> str:
    """What sets a workload apart beyond its model and scheme: the wet share, its overrides."""
    wet = f"{r['wet_fraction']:.0%} wet " if r.get("wet_fraction") is not None else ""
    return wet + r.get("overrides", "")


def _json_line(result):
    print(json.dumps(result), flush=True)


def _sweep_row(r):
    print(f"{r['model']:>13} {r['scheme']:>24} {r['precision']:>4} {r['cell_updates_per_s']:>15.3e} "
          f"{_target_text(r['target']):>8} {r['resident_bytes_per_cell']:>7.0f} "
          f"{r['modelled_bandwidth_GBps']:>12.0f} {r['memory_roof_cell_updates_per_s']:>11.2e} "
          f"{r['of_memory_roof']:>7.0%} {r['first_step_s']:>12.2f} {_workload_note(r)}", flush=True)


def _bench(args) -> int:
    """Under mpirun every rank measures its block and rank 0 alone prints."""
    from .bench import run_benchmark, run_sweep
    from .parallel.comm import world

    if args.wet_fraction is not None and not 0.0 < args.wet_fraction <= 1.0:
        raise ValueError(f"--wet-fraction {args.wet_fraction}: expected a share in (0, 1]")
    if args.sweep and (args.wet_fraction is not None or args.grid):
        raise ValueError("--wet-fraction and --grid apply to one workload; --sweep sets its own grids and wet shares")
    _checked_bench_sizes(args)
    root = world().rank == 0
    if args.sweep:
        if not args.json and root:
            print(f"{'model':>13} {'scheme':>24} {'prec':>4} {'cell-updates/s':>15} {'target':>8} "
                  f"{'B/cell':>7} {'GB/s (model)':>12} {'memory roof':>11} {'of roof':>7} {'first step s':>12}",
                  flush=True)
        show = (_json_line if args.json else _sweep_row) if root else None
        results = run_sweep(cells=args.cells, arch=args.arch, steps=args.steps, repeats=args.repeats,
                            overrides=args.set, on_result=show)
        if not args.json and root:
            print(f"{results[0]['device']}, {results[0]['grid']} cells in 3D (as many in 2D), medians of "
                  f"{args.repeats} x {args.steps} steps; memory roof: the copy bandwidth "
                  f"({results[0]['copy_bandwidth_GBps']:.0f} GB/s) over the modelled bytes per cell-step")
        return 0
    if args.amr_blocks is not None:
        result = _amr_bench(args)
    else:
        result = run_benchmark(model=args.model, reconstruction=args.reconstruction, limiter=args.limiter,
                               riemann=args.riemann, integrator=args.integrator, cells=args.cells, dim=args.dim,
                               precision=args.precision, arch=args.arch, steps=args.steps, repeats=args.repeats,
                               overrides=args.set, wet_fraction=args.wet_fraction, grid=args.grid)
    if not root:
        return 0
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value:.4g}" if isinstance(value, float) else f"{key:>24}: {value}")
    return 0


def _amr_bench(args) -> dict:
    from .bench_amr import run_amr_benchmark

    if args.sweep or args.grid or args.wet_fraction is not None:
        raise ValueError("--amr-blocks measures one workload on --cells^dim: not with --sweep, --grid or --wet-fraction")
    if args.amr_blocks < 4 or args.amr_blocks % 2 or args.cells % args.amr_blocks:
        raise ValueError(f"--amr-blocks {args.amr_blocks}: expected an even block size of at least 4 that divides "
                         f"--cells {args.cells}")
    return run_amr_benchmark(model=args.model, reconstruction=args.reconstruction, limiter=args.limiter,
                             riemann=args.riemann, integrator=args.integrator, cells=args.cells, dim=args.dim,
                             precision=args.precision, arch=args.arch, steps=args.steps, repeats=args.repeats,
                             overrides=args.set, block_cells=args.amr_blocks)


MAX_PICTURE_SIDE = 8192  # pixels: larger asks VTK for gigabytes (it aborts on a failed allocation)


def _view(args) -> int:
    if args.size is not None and not all(16 <= side <= MAX_PICTURE_SIDE for side in args.size):
        raise ValueError(f"--size {args.size[0]} {args.size[1]}: width and height must be 16 to "
                         f"{MAX_PICTURE_SIDE} pixels")
    for option, target in (("--screenshot", args.screenshot), ("--movie", args.movie)):
        if target and not Path(target).resolve().parent.is_dir():
            raise ValueError(f"{option} {target}: the folder {Path(target).resolve().parent} does not exist")
    from .viz import view_command
    return view_command(args)


def _models(args) -> int:
    from .model import shipped_models_dir
    for path in sorted(shipped_models_dir().glob("*.py")):
        print(f"{path.stem:>16}  {model_summary(path.read_text())}")
    return 0


def model_summary(source: str) -> str:
    """The first paragraph of a model file's docstring on one line (a sentence that runs over
    several lines whole, not cut at the first line's end)."""
    if '"""' not in source:
        return ""
    paragraph = source.split('"""')[1].strip().split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _spectrum(args) -> int:
    from .spectra import spectrum_command
    return spectrum_command(args)


def _check(args) -> int:
    from .checker import check_command
    return check_command(args)


if __name__ == "__main__":
    sys.exit(main())
