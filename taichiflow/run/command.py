"""`taichiflow run`: from the command line to a finished, stopped, failed or refused run.

The checks that need no build come first (options, the case, the checkpoint, the output
folder), so that a refusal is quick and touches nothing. The run's log (run.log) records the
whole command line and whatever ends the run, wherever the run may write: its own folder, or
one holding no other run's results (run/folder.py).

A thin layer over the objects of the Python API: the case is a taichiflow.Case (api/case.py:
the same loader, checks and messages), the run reads its ResolvedCase, and a uniform case runs
on run/driver.py's Simulation, which taichiflow.Simulation steps too; a case with [amr] runs on
run/adaptive.py's AdaptiveRun, and either on every MPI rank. What only the command line does
stays here: its options, the output folder's claim, run.log (its lines: run/report.py),
restarts (--restart, --resume, --allow-change), signals and exit codes.
"""
from __future__ import annotations

import math
import shlex
import sys
import time
from pathlib import Path

from .. import checkpoint
from ..errors import RunInterrupted, SimulationError
from . import backend, report
from . import folder as run_folder
from ..parallel.comm import on_root, world
from ..resolved import ResolvedCase
from .log import NoLog, RunLog, append
from .same_case import check_allowed
from .stopping import WallLimit


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
    """`taichiflow run`: 0 done, 2 failed (bad state), 3 stopped with a checkpoint; errors raise.
    `max_wall_time` counts from args.launched (the command's start) where main() set it."""
    limit = WallLimit(max_wall_time, getattr(args, "launched", None))
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
            return simulate(args, case, out, loaded, allowed, limit, log)
        except BaseException as err:
            log.record(ending(err))
            raise


def simulate(args, case: ResolvedCase, out: Path, loaded, allowed, limit: WallLimit, log) -> int:
    """Build and run: a uniform case on run/driver.py's Simulation (what taichiflow.Simulation
    wraps), a case with [amr] on run/adaptive.py's AdaptiveRun; a failed or stopped run is an
    exit code, logged."""
    if case.amr is not None:
        return simulate_adaptive(args, case, out, loaded, allowed, limit, log)
    from .driver import Simulation

    began = time.perf_counter()
    sim = Simulation(case, out_dir=out, quiet=args.quiet)
    ready_s = time.perf_counter() - began
    if args.render:
        from ..viz import attach_renderer
        attach_renderer(sim, log=log.write)
    log.write(report.built_line(sim, ready_s))
    for line in [*sim.plan.describe().splitlines(), sim.solver.halo.describe(sim.arch)]:
        if line and backend.VERBOSE:  # (the kernels' internals: in run.log, on the terminal with --verbose)
            log.write(line)
        elif line:
            log.record(line)
    if limit.seconds:
        log.write(limit.note())
    code, stats = ended(log, lambda: sim.run(restart=loaded, max_wall_time=limit.seconds, wall_start=limit.launched,
                                             allow_change=allowed, log=log.write))
    if code:
        return code
    log.write(report.summary(stats))
    if world().rank == 0:
        print(f"wrote {out}/ (series.pvd, diagnostics.csv, case.toml, run.log); final state: {stats['final']}")
    return 0


def simulate_adaptive(args, case: ResolvedCase, out: Path, loaded, allowed, limit: WallLimit, log) -> int:
    """A case with [amr] (run/adaptive.py): what it cannot do yet is refused, never ignored."""
    from .adaptive import AdaptiveRun
    from .adaptive_restart import check_before_build

    if args.render:
        raise ValueError("--render: not supported with [amr] yet (docs/amr.md)")
    if loaded:
        check_before_build(loaded, case)
    began = time.perf_counter()
    run = AdaptiveRun(case, initial=loaded is None)
    log.write(report.adaptive_built_line(run, loaded is not None, time.perf_counter() - began))
    if limit.seconds:
        log.write(limit.note())
    code, stats = ended(log, lambda: run.run(out, quiet=args.quiet, log=log.write, restart=loaded,
                                             max_wall_time=limit.seconds, wall_start=limit.launched,
                                             allow_change=allowed))
    if code:
        return code
    log.write(report.adaptive_summary(run, stats))
    if world().rank == 0:
        print(f"wrote {out}/ (series.pvd, {stats['snapshots']} snapshots, diagnostics.csv, case.toml, run.log)")
    return 0


def ended(log, run) -> tuple[int, dict | None]:
    """(0, run()'s stats), or the exit code of a run that ended early, logged and said on
    stderr: (3, None) stopped with a checkpoint (a signal, --max-wall-time), (2, None) failed
    (a bad state). Other errors propagate (run_command logs them)."""
    try:
        return 0, run()
    except RunInterrupted as err:
        log.record(f"STOPPED: {err}")
        if world().rank == 0:
            print(f"taichiflow: {err}", file=sys.stderr)
        return 3, None
    except SimulationError as err:
        log.record(f"FAILED: {err}")
        if world().rank == 0:
            print(f"taichiflow: error: {err}", file=sys.stderr)
        return 2, None
