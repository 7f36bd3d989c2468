"""Checkpoints of an adaptive run and the restart from one. A checkpoint holds the forest's
leaves (level and coordinates, Morton order) and their conserved values, the clock and the
output bookkeeping; the pool's slots are not kept (no arithmetic depends on them), so a restart
may give the pool another capacity. A restart loads the forest the run had after its last
regrid, and the steps from there repeat bit for bit. A checkpoint written because the pool ran
out of slots records that the regrid is still due: the restart does it first."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import case as case_mod
from .. import checkpoint
from ..errors import CheckpointError
from ..mesh import Block
from ..parallel.comm import on_root, world
from ..resolved import ResolvedCase
from .restart import check_restart, check_time_left


def write_adaptive_checkpoint(run, outputs, regrid_due: bool = False) -> Path:
    """The run's state and bookkeeping, atomically, in its folder (the newest two kept)."""
    solver = run.solver
    header = {"model": run.model.name, "model_hash": checkpoint.file_hash(run.model.source_file),
              "cells": list(run.cells), "lower": list(run.lower), "upper": list(run.upper),
              "precision": run.precision, "time": run.t, "step": run.step_count, "last_dt": run.last_dt,
              "regrid_s": run.regrid_seconds, "regrid_due": regrid_due,
              "snapshot_index": outputs.count, "last_snapshot_time": outputs.last_time,
              "block_cells": solver.N, "leaves": np.column_stack([solver.forest.levels, solver.forest.coords]).tolist(),
              "case": case_mod.dump_toml(run.case)}  # (the dict form: what a restart compares, as written)
    state = solver.conserved_blocks()  # (on many ranks gathered, in Morton order: one rank's checkpoint)
    written = [Path(outputs.folder) / f"checkpoint_{run.step_count:09d}.npz"]
    on_root(world(), lambda: written.__setitem__(0, checkpoint.write(outputs.folder, state, header)))
    return written[0]


def check_before_build(loaded: checkpoint.Loaded, case: ResolvedCase) -> None:
    """What can be checked of a checkpoint before Taichi starts (a refusal is then quick): an
    adaptive run's, at a time still ahead. Whether it is this case's is checked once the case
    is built (restart_adaptive), as the uniform run does: the checkpoint holds the case as
    built, its "auto" keys and the model's defaulted parameters resolved."""
    header, path = loaded.header, loaded.path
    if "leaves" not in header:
        raise CheckpointError(f"{path}: a checkpoint of a uniform run: a case with [amr] continues only from "
                              f"the checkpoints of an adaptive run")
    check_time_left(header, case.time, path)


def restart_adaptive(run, loaded: checkpoint.Loaded, allow_change=()) -> list[str]:
    """Check a checkpoint against the run (check_before_build, then its model, grid and
    precision: run/restart.py) and load its forest, state and clock. Returns the log lines of
    the keys changed since the checkpoint."""
    header, path = loaded.header, loaded.path
    check_before_build(loaded, run.resolved)
    changes = check_restart(run, loaded, allow_change)  # (the case as built: run/same_case.py)
    solver = run.solver
    leaves = [Block(int(entry[0]), tuple(int(c) for c in entry[1:])) for entry in header["leaves"]]
    expected = (len(leaves),) + (solver.N,) * solver.dim + (solver.phys.U.n,)
    if loaded.state.shape != expected:
        raise CheckpointError(f"{path}: its state has the shape {loaded.state.shape}, not {expected} "
                              f"({len(leaves)} leaves of {solver.N}^{solver.dim} cells)")
    try:
        solver.load(leaves, np.asarray(loaded.state))
    except ValueError as err:  # (leaves that do not tile the domain: Forest's check)
        raise CheckpointError(f"{path}: its forest is not valid for this case: {err}") from None
    run.t, run.step_count, run.last_dt = header["time"], header["step"], header["last_dt"]
    run.regrid_seconds = header["regrid_s"]
    run.rate, _ = solver.check_state()
    return changes
