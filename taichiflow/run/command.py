"""`taichiflow run`: from the command line to a finished, stopped, failed or refused run.

The checks that need no build come first (options, the case, the checkpoint, the output
folder), so that a refusal is quick and touches nothing. The run's log (run.log) records the
whole command line and whatever ends the run, wherever the run may write: its own folder, or
one holding no other run's results (run/folder.py).

A thin layer over the objects of the Python API: the case is a taichiflow.Case (api/case.py:
the same loader, checks and messages), the run reads its ResolvedCase, and a uniform case runs
on run/driver.py's Simulation, which taichiflow.Simulation steps too. What only the command line
does stays here: MPI ranks, restarts, the output folder's claim, run.log, signals and exit codes.
"""
from __future__ import annotations

import math
import shlex
import sys
import time
from pathlib import Path

from .. import checkpoint, registry
from ..errors import RunInterrupted, SimulationError
from . import backend
from . import folder as run_folder
from ..parallel.comm import on_root, world
from ..resolved import ResolvedCase
from .log import NoLog, RunLog, append
from .same_case import check_allowed


def check_options(args) -> None:
    """Options that contradict each other are an error, never one silently ignored."""
    if args.restart and args.resume:
        raise ValueError("--restart and --resume cannot be used together: --restart continues from one checkpoint "
                         "file, --resume from the newest valid checkpoint of a run folder")
    if args.overwrite and args.resume:
        raise ValueError("--overwrite and --resume cannot be used together: --resume continues the run of its "
                         "folder, --overwrite would delete it")


def command_line(argv) -> str:
    """The command as typed (quoted where a shell needs it), so that the log can repeat it."""
    return "taichiflow " + shlex.join(argv)


def overrides(args) -> list[str]:
    """--set, with --arch and --precision as the run keys they stand for."""
    extra = [f'run.arch="{args.arch}"'] if args.arch else []
    extra += [f'run.precision="{args.precision}"'] if args.precision else []
    return list(args.set) + extra


def named_folder(args):
    """The output folder when the command line names it: --out, else the folder of --resume or
    of the --restart file (a restart continues its run there); None: out/<case name>."""
    if args.out is not None:
        if not args.out.strip():
            raise ValueError("--out: an empty folder name (leave the option out for out/<case name>/)")
        return Path(args.out)
    if args.resume:
        return Path(args.resume)
    return Path(args.restart).parent if args.restart else None


def continues_own_run(args, folder: Path) -> bool:
    """Whether `folder` is the folder of the run that --resume or --restart continues."""
    source = Path(args.resume) if args.resume else Path(args.restart).parent if args.restart else None
    return source is not None and source.resolve() == folder.resolve()


def find_checkpoint(args):
    """The checkpoint to continue from, read and verified once (checkpoint.Loaded), or None."""
    if args.resume:
        return checkpoint.load_newest(args.resume)
    return checkpoint.load(args.restart) if args.restart else None


def ending(err: BaseException) -> str:
    """The log line of what ended a run before it finished."""
    if isinstance(err, KeyboardInterrupt):
        return "INTERRUPTED (Ctrl-C)"
    known = isinstance(err, (ValueError, RuntimeError))  # taichiflow's errors; printed as one line
    return f"ERROR: {err}" if known else f"ERROR: {type(err).__name__}: {err}"


def run_command(args, max_wall_time: float = 0.0) -> int:
    """`taichiflow run`: 0 done, 2 failed (bad state), 3 stopped with a checkpoint; errors raise."""
    comm = world()
    folder = named_folder(args)
    try:
        from ..api.case import Case
        check_options(args)
        allowed = check_allowed(args.allow_change)
        case = Case.from_file(args.case, overrides(args)).resolved
        loaded = find_checkpoint(args)
        out = folder or Path("out") / case.case.name
        on_root(comm, lambda: run_folder.claim(out, loaded.path if loaded else None, args.overwrite))
    except BaseException as err:
        if comm.rank == 0 and folder is not None and run_folder.may_write(folder, continues_own_run(args, folder)):
            append(folder / run_folder.LOG, command_line(args.argv), ending(err))
        raise
    on_root(comm, lambda: out.mkdir(parents=True, exist_ok=True))
    if comm.rank > 0:  # (rank 0 logs and prints for the run; every rank computes)
        args.quiet = True
    with (RunLog(out / run_folder.LOG, echo=not args.quiet) if comm.rank == 0 else NoLog()) as log:
        log.write(command_line(args.argv))
        for path, why in loaded.skipped if loaded else ():
            log.warn(f"skipped {path}: {why}")
        for warning in case.warnings:
            log.warn(warning)
        asked = math.prod(case.parallel.ranks or [1])
        if comm.size == 1 and asked > 1:
            log.warn(f"[parallel] ranks = {list(case.parallel.ranks)} asks for {asked} MPI ranks, but this run is one "
                     f"process: it runs as one block (start it with mpirun -n {asked} taichiflow run ...)")
        try:
            return simulate(args, case, out, loaded, allowed, max_wall_time, log)
        except BaseException as err:
            log.record(ending(err))
            raise


def simulate(args, case: ResolvedCase, out: Path, loaded, allowed, max_wall_time: float, log) -> int:
    """Build and run; a failed or stopped run is an exit code, logged."""
    from .driver import Simulation

    if case.amr is not None:  # (the adaptive run reads the case's dict form)
        return simulate_adaptive(args, case.as_dict(), out, loaded, allowed, max_wall_time, log)

    began = time.perf_counter()
    sim = Simulation(case, out_dir=out, quiet=args.quiet)
    ready_s = time.perf_counter() - began
    if args.render:
        from ..viz import attach_renderer
        attach_renderer(sim, log=log.write)
    scheme = case.scheme
    faces = (scheme.method if registry.methods.get(scheme.method).own_flux  # (SHASTA: neither is used)
             else f"{scheme.reconstruction} + {scheme.riemann}")
    log.write(f"model {sim.model.name} ({sim.model.source_file}), arch {sim.arch}, precision "
              f"{sim.precision}, fast_math {sim.fast_math}, cells {sim.cells}, scheme {faces} + "
              f"{scheme.integrator}; set up (Taichi started, the initial state filled on the device) in {ready_s:.2f} s")
    for line in [*sim.plan.describe().splitlines(), sim.solver.halo.describe(sim.arch)]:
        if line and backend.VERBOSE:  # (the kernels' internals: in run.log, on the terminal with --verbose)
            log.write(line)
        elif line:
            log.record(line)
    try:
        stats = sim.run(restart=loaded, max_wall_time=max_wall_time, allow_change=allowed, log=log.write)
    except RunInterrupted as err:
        log.record(f"STOPPED: {err}")
        if world().rank == 0:
            print(f"taichiflow: {err}", file=sys.stderr)
        return 3
    except SimulationError as err:
        log.record(f"FAILED: {err}")
        if world().rank == 0:
            print(f"taichiflow: error: {err}", file=sys.stderr)
        return 2
    log.write(summary(stats))
    if world().rank == 0:
        print(f"wrote {out}/ (series.pvd, diagnostics.csv, case.toml, run.log); final state: {stats['final']}")
    return 0


def simulate_adaptive(args, case: dict, out: Path, loaded, allowed, max_wall_time: float, log) -> int:
    """A case with [amr] (run/adaptive.py): what it cannot do yet is refused, never ignored."""
    from .adaptive import AdaptiveRun
    from .adaptive_restart import check_before_build

    if args.render:
        raise ValueError("--render: not supported with [amr] yet (docs/amr.md)")
    root = world().rank == 0
    if loaded:
        check_before_build(loaded, case, allowed)
    began = time.perf_counter()
    run = AdaptiveRun(case, initial=loaded is None)
    amr = case["amr"]
    log.write(f"model {run.model.name} ({run.model.source_file}), arch {run.case['run']['arch']}, precision "
              f"{run.precision}, root cells {case['grid']['cells']} in blocks of {amr['block_cells']}, up to "
              f"{amr['max_level']} levels more" + ("" if loaded else f"; the initial state refined in "
              f"{time.perf_counter() - began:.2f} s to {list(run.solver.forest.leaf_count_per_level())} leaf "
              f"blocks per level") + (f"; on {world().size} MPI ranks, each its run of the blocks' Morton order "
                                      f"(docs/amr.md)" if world().size > 1 else ""))
    try:
        stats = run.run(out, quiet=args.quiet, log=log.write, restart=loaded, max_wall_time=max_wall_time,
                        allow_change=allowed)
    except RunInterrupted as err:
        log.record(f"STOPPED: {err}")
        if root:
            print(f"taichiflow: {err}", file=sys.stderr)
        return 3
    except SimulationError as err:
        log.record(f"FAILED: {err}")
        if root:
            print(f"taichiflow: error: {err}", file=sys.stderr)
        return 2
    log.write(f"{stats['steps_run']} steps to step {stats['steps']}, t = {stats['time']:.6g} in {stats['wall_s']:.2f} s "
              f"({stats['leaf_cell_updates_per_s']:.3g} leaf cell-updates/s, regrids {stats['regrid_s']:.2f} s in all)"
              + (f"; the leaves shared out anew after {run.solver.rebalances} regrids ([amr] rebalance_above)"
                 if world().size > 1 else ""))
    if root:
        print(f"wrote {out}/ (series.pvd, {stats['snapshots']} snapshots, diagnostics.csv, case.toml, run.log)")
    return 0


def summary(stats: dict) -> str:
    """The last line of a finished run; the rate counts only the steps of this process."""
    if not stats["steps_run"]:
        return (f"no steps left: the checkpoint is at this run's end (t = {stats['time']:.6g}, step "
                f"{stats['steps']}); the final outputs written again")
    first = stats["first_step"]
    steps = f"{stats['steps_run']} steps (from step {first} to {stats['steps']})" if first else f"{stats['steps']} steps"
    initial = f"initial row and snapshot {stats['initial_output_s']:.2f} s; " if stats["initial_output_s"] >= 0.005 else ""
    return (f"{initial}first step (including compile) {stats['first_step_s']:.2f} s; {steps} to t = {stats['time']:.6g} "
            f"in {stats['wall_s']:.2f} s ({stats['cell_updates_per_s']:.3g} cell-updates/s{after_first(stats)})")


def after_first(stats: dict) -> str:
    """The rate of the steps after the first (which compiles), their outputs included but not
    the initial ones: what a long run approaches, to set beside `taichiflow bench`."""
    steps, seconds = stats["steps_run"] - 1, stats["wall_s"] - stats["initial_output_s"] - stats["first_step_s"]
    if steps <= 0 or seconds <= 0:
        return ""
    return f"; {stats['cells'] * steps / seconds:.3g} after the first step"
