"""Checkpoints of a run and the restart from one: the state, the clock and the output
bookkeeping (snapshot count, series, diagnostics rows), so that a restarted run continues
bit for bit as if it had never stopped."""
from __future__ import annotations

import os
from pathlib import Path

from .. import case as case_mod
from .. import checkpoint
from ..io import PvdSeries


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
              "fallbacks": sim.solver.take_fallback_count(), "case": case_mod.dump_toml(sim.case)}
    outputs.pending_fallbacks = header["fallbacks"]
    return checkpoint.write(sim.out_dir, sim.solver.conserved_array(), header)


def load_checkpoint(sim, path) -> None:
    """Continue from checkpoint `path`: its state and clock, the snapshots and diagnostics rows
    written up to it (later ones, from the run after it, are dropped)."""
    state, header = checkpoint.read(path)
    checkpoint.check_compatible(header, identity(sim), path)
    sim.solver.set_conserved(state)
    sim.t, sim.step_count, sim.last_dt = header["time"], header["step"], header["last_dt"]
    outputs = sim.outputs
    outputs.snapshot_index = header["snapshot_index"]
    outputs.last_snapshot_time = header["last_snapshot_time"]
    outputs.pending_fallbacks = header["fallbacks"]
    outputs.series = PvdSeries(sim.out_dir / "series.pvd", resume=True)
    outputs.series.truncate_after(outputs.last_snapshot_time)
    truncate_diagnostics(sim.out_dir / "diagnostics.csv", sim.step_count)


def truncate_diagnostics(path: Path, step: int):
    """Drop rows after `step` (written by the run after its last checkpoint)."""
    if not path.exists():
        return
    lines = path.read_text().splitlines(keepends=True)
    if not lines:
        return
    header, rows = lines[0], lines[1:]
    column = header.strip().split(",").index("step")
    kept = [r for r in rows if r.strip() and int(r.split(",")[column]) <= step]
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_text(header + "".join(kept))
    os.replace(tmp, path)
