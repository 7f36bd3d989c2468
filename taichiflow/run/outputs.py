"""What a run writes, and the observers the time loop calls.

`Outputs` writes snapshots (.vti, listed in series.pvd) and diagnostics rows; others listen
to its snapshots (`on_snapshot`: `taichiflow run --render` draws each one). The time loop
(run/driver.py) calls each observer's `after_batch` after every batch of steps: diagnostics
rows, the progress bar, checkpoints and stop requests are observers, so the loop itself only
steps and writes snapshots at output times.
"""
from __future__ import annotations

import math
import time as wallclock
from pathlib import Path

from ..io import PvdSeries, write_vti
from .stopping import RunStopped, checkpoint_due


class Outputs:
    """Snapshots and diagnostics rows of one run, with their bookkeeping (kept in checkpoints)."""

    def __init__(self, sim):
        self.sim = sim
        self.snapshot_index = -1          # the last snapshot written
        self.last_snapshot_time = -math.inf
        self.pending_fallbacks = 0        # counted before a checkpoint, reported in the next row
        self.retries = 0                  # steps redone with the [scheme] retry fluxes, since the last row
        self.series = None
        self._listeners = []

    def on_snapshot(self, listener) -> None:
        """Call listener(t, path) after each snapshot is written."""
        self._listeners.append(listener)

    # --- snapshots -------------------------------------------------------------------------------
    def fields(self) -> dict:
        """Requested output fields as numpy arrays on the interior (refreshes W)."""
        sim = self.sim
        sim.solver.refresh_primitives()
        w = sim.solver.primitive_array()
        layout = sim.model.primitive
        names = sim.case["output"]["fields"] or layout.names
        out = {}
        for name in names:
            if name in layout.sizes:
                off = layout.offsets[name]
                out[name] = w[..., off] if layout.sizes[name] == 1 else w[..., off:off + 3]
            else:
                out[name] = sim.solver.derived_array(name)
        return out

    def write_snapshot(self) -> Path:
        sim = self.sim
        if self.series is None:
            self.series = PvdSeries(sim.out_dir / "series.pvd")
        self.snapshot_index += 1
        name = f"snapshot_{self.snapshot_index:05d}.vti"
        path = sim.out_dir / name
        write_vti(path, tuple(sim.cells), tuple(sim.lower), tuple(sim.solver.dx), self.fields(), time=sim.t)
        self.series.add(sim.t, name)
        self.last_snapshot_time = sim.t
        for listener in self._listeners:
            listener(sim.t, path)
        return path

    # --- diagnostics rows ----------------------------------------------------------------------
    def diagnostics_columns(self) -> list[str]:
        cols = ["time", "step", "dt", "fallbacks", "retries", "repairs"]
        cols += self.sim.solver.diagnostics.columns()
        if self.sim.shock_jump:
            cols.append("p_amplification")  # max pressure over the case's shock pressure jump
        return cols

    def diagnostics_row(self) -> list:
        sim, solver = self.sim, self.sim.solver
        fallbacks = solver.take_fallback_count() + self.pending_fallbacks
        self.pending_fallbacks = 0
        row = [sim.t, sim.step_count, sim.last_dt, fallbacks, self.retries, solver.take_repair_count()]
        self.retries = 0
        row += solver.diagnostic_values()
        if sim.shock_jump:
            row.append(row[self.diagnostics_columns().index(f"max_{sim.model.pressure}")] / sim.shock_jump)
        return row


class Observer:
    """A subscriber of the time loop (Simulation.run)."""

    def after_batch(self, sim) -> None:
        """After each batch of steps (its end falls on a multiple of diagnostics_every)."""


class DiagnosticsRows(Observer):
    def __init__(self, csv, every: int):
        self.csv, self.every = csv, every

    def after_batch(self, sim):
        if sim.step_count % self.every == 0:
            self.csv.write(sim.outputs.diagnostics_row())


class ProgressBar(Observer):
    def __init__(self, bar):
        self.bar = bar

    def after_batch(self, sim):
        self.bar.update(sim.t, sim.step_count)


class Checkpoints(Observer):
    """A checkpoint where [output] checkpoint_interval or checkpoint_wall says, of good states only."""

    def __init__(self, csv, interval: float, wall: float):
        self.csv, self.interval, self.wall = csv, interval, wall
        self.last = wallclock.perf_counter()

    def after_batch(self, sim):
        since = wallclock.perf_counter() - self.last
        if checkpoint_due(sim.t, sim.last_dt, self.interval, self.wall, since) and sim.solver.check_state()[1] is None:
            self.csv.flush()
            sim.write_checkpoint()
            self.last = wallclock.perf_counter()


class StopRequests(Observer):
    """Ends the loop (RunStopped) on a signal or at the wall-time limit."""

    def __init__(self, stop):
        self.stop = stop

    def after_batch(self, sim):
        reason = self.stop.reason()
        if reason:
            raise RunStopped(reason)
