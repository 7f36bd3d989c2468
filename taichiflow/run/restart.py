"""Checkpoints of a run and the restart from one: the state, the clock and the output
bookkeeping (snapshot count, series, diagnostics rows), so that a restarted run continues
bit for bit as if it had never stopped."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import case as case_mod
from .. import checkpoint
from ..errors import CheckpointError
from ..io import PvdSeries, naming
from ..resolved import TimeTable
from .same_case import check_same_case


def identity(sim) -> dict:
    """What a checkpoint must share with the run that loads it."""
    return {"model": sim.model.name, "model_hash": checkpoint.file_hash(sim.model.source_file),
            "cells": list(sim.cells), "lower": list(sim.lower), "upper": list(sim.upper),
            "precision": sim.precision}


def write_checkpoint(sim) -> Path:
    """The current state and bookkeeping, atomically, in the run's folder. The fallbacks
    counted since the last diagnostics row are recorded and carried to the next row."""
    outputs = sim.outputs
    header = {**identity(sim), "time": sim.t, "step": sim.step_count, "last_dt": sim.last_dt,
              "snapshot_index": outputs.snapshot_index, "last_snapshot_time": outputs.last_snapshot_time,
              "fallbacks": sim.solver.take_fallback_count(),
              "case": case_mod.dump_toml(sim.case)}  # (the dict form: the case as written, which a restart compares)
    outputs.pending_fallbacks = header["fallbacks"]
    halo = sim.solver.halo
    if halo.ranks == 1:
        return checkpoint.write(sim.out_dir, sim.solver.conserved_array(), header)
    # several ranks: each its piece, then rank 0 the manifest over them (written last: a
    # manifest on disk means every piece is)
    digest = checkpoint.write_piece(sim.out_dir, sim.step_count, halo.rank, sim.solver.conserved_array())
    digests = halo.comm.gather(digest)
    path = sim.out_dir / f"checkpoint_{sim.step_count:09d}.npz"
    if halo.rank == 0:
        header["pieces"] = [{"file": checkpoint.piece_name(sim.step_count, rank), "offset": list(first),
                             "cells": list(cells), "sha256": d} for (rank, first, cells), d in zip(sim.share.pieces(), digests)]
        path = checkpoint.write(sim.out_dir, np.zeros(0, dtype=sim.solver.conserved_array().dtype), header)
    halo.comm.barrier()
    return path


def as_loaded(restart) -> checkpoint.Loaded:
    """A checkpoint path, or one already loaded (the command line reads it before the build)."""
    return restart if isinstance(restart, checkpoint.Loaded) else checkpoint.load(restart)


def check_restart(sim, loaded: checkpoint.Loaded, allow_change=()) -> list[str]:
    """Refuse, before anything is written, a checkpoint this run cannot continue: another
    model, grid or precision, another case (run/same_case.py), or a time past this run's end.
    Returns the log lines of the keys changed since the checkpoint."""
    header, path = loaded.header, loaded.path
    try:
        checkpoint.check_compatible(header, identity(sim), path)
        changes = check_same_case(header, sim.case, allow_change, path)  # (as written: the dict form)
    except CheckpointError as refused:
        raise CheckpointError(f"{refused}{_own_case_hint(Path(path).parent, sim.resolved.source)}") from None
    check_time_left(header, sim.resolved.time, path)
    return changes


def _own_case_hint(folder: Path, source: str) -> str:
    """Where the refused checkpoint's folder keeps its run's resolved case (its --set applied)
    and this run read another file: how to continue that run as it was."""
    own = folder / "case.toml"
    if not own.is_file() or Path(source).resolve() == own.resolve():
        return ""
    return (f". The run in {folder} keeps its case, with the --set it was run with, in {own}: "
            f"`taichiflow run {own} --resume {folder}` continues it as it was")


def check_time_left(header: dict, time: TimeTable, path) -> None:
    """A checkpoint after the end time (or max_steps) would leave nothing to do but rewrite outputs.
    `time`: the case's [time] (a TimeTable, or its mapping)."""
    time = TimeTable.of(time)
    if header["time"] > time.end:
        raise CheckpointError(f"{path}: the checkpoint is at t = {header['time']:.9g} (step {header['step']}), after "
                              f"this run's end time (time.end = {time.end:.9g}): nothing to continue; give a "
                              f"later [time] end")
    if time.max_steps and header["step"] > time.max_steps:
        raise CheckpointError(f"{path}: the checkpoint is at step {header['step']}, after this run's time.max_steps "
                              f"= {time.max_steps}: nothing to continue; give a larger [time] max_steps")


def apply_restart(sim, loaded: checkpoint.Loaded) -> None:
    """Continue from a checked checkpoint: its state and clock, the snapshots and diagnostics
    rows written up to it (later ones, from the run after it, are dropped)."""
    header = loaded.header
    sim.solver.set_conserved(checkpoint.block_state(loaded, sim.solver.offset, sim.solver.cells))
    sim.t, sim.step_count, sim.last_dt = header["time"], header["step"], header["last_dt"]
    outputs = sim.outputs
    outputs.snapshot_index = header["snapshot_index"]
    outputs.last_snapshot_time = header["last_snapshot_time"]
    outputs.pending_fallbacks = header["fallbacks"]
    if sim.solver.halo.rank == 0:  # (the run's one series and diagnostics file)
        outputs.series = PvdSeries(sim.out_dir / "series.pvd", resume=True)
        outputs.series.truncate_after(outputs.last_snapshot_time)
        truncate_diagnostics(sim.out_dir / "diagnostics.csv", sim.step_count)


def load_checkpoint(sim, path, allow_change=()) -> list[str]:
    """Check and apply checkpoint `path` (a path or a checkpoint.Loaded)."""
    loaded = as_loaded(path)
    changes = check_restart(sim, loaded, allow_change)
    apply_restart(sim, loaded)
    return changes


def _whole_row_up_to(row: str, column: int, step: int) -> bool:
    """A row written whole (a kill can cut the last one anywhere, even inside its step field)
    whose step is at most `step`."""
    fields = row.rstrip("\n").split(",")
    return (row.endswith("\n") and len(fields) > column and fields[column].isdigit()
            and int(fields[column]) <= step)


def truncate_diagnostics(path: Path, step: int):
    """Drop rows after `step` (written by the run after its last checkpoint)."""
    if not path.exists():
        return
    lines = path.read_text().splitlines(keepends=True)
    if not lines:
        return
    header, rows = lines[0], lines[1:]
    column = header.strip().split(",").index("step")
    kept = [r for r in rows if _whole_row_up_to(r, column, step)]
    tmp = path.with_suffix(".csv.tmp")
    with naming(path):  # (a full disk's write error knows no file name)
        tmp.write_text(header + "".join(kept))
        os.replace(tmp, path)
