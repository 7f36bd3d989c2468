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

import numpy as np

from ..io import PvdSeries, array_spec, write_pvti, write_vti
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
        self.recording = False            # rows recorded on the device (Simulation.run)
        self.queued = []                  # rows read from the device, not yet written
        self.rows_through = None          # after a restart: the step of the last row kept in the file

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
        # (the dict form, read at each snapshot: a script may change the fields between snapshots)
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
        """The current state as a snapshot: one .vti, or on several ranks each rank's block as a
        piece and a .pvti over them (rank 0 lists it in series.pvd)."""
        sim = self.sim
        halo = sim.solver.halo
        if self.series is None and halo.rank == 0:
            self.series = PvdSeries(sim.out_dir / "series.pvd")
        self.snapshot_index += 1
        stem = f"snapshot_{self.snapshot_index:05d}"
        fields = self.fields()
        if halo.ranks == 1:
            name = f"{stem}.vti"
            write_vti(sim.out_dir / name, tuple(sim.cells), tuple(sim.lower), tuple(sim.solver.dx), fields, time=sim.t)
        else:
            name = self._write_pieces(stem, fields)
        path = sim.out_dir / name
        if halo.rank == 0:
            self.series.add(sim.t, name)
        self.last_snapshot_time = sim.t
        for listener in self._listeners:
            listener(sim.t, path)
        return path

    def _write_pieces(self, stem: str, fields: dict) -> str:
        """This rank's block as stem_rNNNN.vti; once every rank has written, rank 0 the .pvti."""
        sim, halo = self.sim, self.sim.solver.halo
        piece = lambda rank: f"{stem}_r{rank:04d}.vti"  # noqa: E731
        write_vti(sim.out_dir / piece(halo.rank), sim.share.cells, tuple(sim.lower), tuple(sim.solver.dx), fields,
                  time=sim.t, first=sim.share.first_cell)
        halo.comm.barrier()
        if halo.rank == 0:
            ndim = len(sim.cells)
            pieces = [(first, cells, piece(rank)) for rank, first, cells in sim.share.pieces()]
            write_pvti(sim.out_dir / f"{stem}.pvti", tuple(sim.cells), tuple(sim.lower), tuple(sim.solver.dx), pieces,
                       {name: array_spec(name, a, ndim) for name, a in fields.items()}, time=sim.t)
        return f"{stem}.pvti"

    # --- diagnostics rows ----------------------------------------------------------------------
    def diagnostics_columns(self) -> list[str]:
        cols = ["time", "step", "dt", "fallbacks", "retries", "repairs"]
        cols += self.sim.solver.diagnostics.columns()
        if self.sim.shock_jump:
            cols.append("p_amplification")  # max pressure over the case's shock pressure jump
        if self.sim.solver.plan.skip_idle:
            cols.append("active_tiles")  # the share of tiles the kernels computed ([run] skip_idle)
        return cols

    def diagnostics_row(self) -> list:
        """The current state's row, reduced and read back now."""
        sim, solver = self.sim, self.sim.solver
        fallbacks = solver.take_fallback_count()
        repairs = solver.take_repair_count()
        values = solver.diagnostic_values()
        active = solver.halo.combine(solver.idle.active_counts(), "sum") if solver.plan.skip_idle else None
        if self.recording:  # (the device must not record this step again: a retried step at an output time)
            solver.device_rows().forget_before(sim.step_count)
        return self._row(sim.t, sim.step_count, sim.last_dt, fallbacks, repairs, values, active)

    def collect_recorded(self) -> None:
        """Read the rows the device recorded into the queue (before a retry changes the counts)."""
        if self.recording:
            self.queued += self.recorded_rows()

    def take_queued(self) -> list:
        rows, self.queued = self.queued, []
        return rows

    def recorded_rows(self) -> list:
        """The rows the device recorded since the last call (kernels/diagnostic_rows.py), in
        order; every rank takes them together."""
        solver = self.sim.solver
        taken = solver.device_rows().take()
        if not len(taken["step"]):  # (the same on every rank: the steps are the grid's)
            return []
        counts = solver.halo.combine(np.stack([taken["fallbacks"], taken["repairs"], taken["active"]]), "sum")
        reduced = solver.diagnostics.finish(taken, solver.cell_volume, solver.halo)
        tiles = int(np.prod(solver.idle.tiles))
        total_tiles = solver.halo.combine(np.array([tiles], dtype=np.int64), "sum")[0]
        return [self._row(float(taken["t"][k]), int(taken["step"][k]), float(taken["dt"][k]), int(counts[0, k]),
                          int(counts[1, k]), solver.diagnostics.as_values(reduced[k]),
                          (counts[2, k], total_tiles) if solver.plan.skip_idle else None)
                for k in range(len(reduced))]

    def _row(self, t, step, dt, fallbacks, repairs, values, active) -> list:
        """A row in the order of diagnostics_columns; it takes the retries and the fallbacks
        counted before a checkpoint that no row has reported yet."""
        sim = self.sim
        row = [t, step, dt, fallbacks + self.pending_fallbacks, self.retries, repairs] + values
        self.pending_fallbacks, self.retries = 0, 0
        if sim.shock_jump:
            row.append(row[self.diagnostics_columns().index(f"max_{sim.model.pressure}")] / sim.shock_jump)
        if active is not None:
            row.append(float(active[0]) / float(active[1]))
        return row


def last_row_step(path: Path) -> int | None:
    """The step of the last complete row of a diagnostics file (None: no file, or no row): a
    restart from a checkpoint at a run's last step finds that step's row already written."""
    if not path.is_file():
        return None
    with open(path, "rb") as f:  # (the header and the file's end: a long run's file is large)
        header = f.readline().decode("utf-8", "replace").rstrip("\n")
        size = f.seek(0, 2)
        f.seek(max(len(header) + 1, size - 65536))
        lines = f.read().decode("utf-8", "replace").split("\n")[:-1]  # (a cut last line has no newline)
    if not lines or "step" not in header.split(","):
        return None
    fields = lines[-1].split(",")
    column = header.split(",").index("step")
    return int(fields[column]) if len(fields) > column and fields[column].isdigit() else None


class Observer:
    """A subscriber of the time loop (Simulation.run)."""

    def after_batch(self, sim) -> None:
        """After each batch of steps (its end falls on a multiple of diagnostics_every)."""


class DiagnosticsRows(Observer):
    """The rows the device recorded during the batch, then the current state's row if it is
    due and the device did not record it (a retried step)."""

    def __init__(self, csv, every: int):
        self.csv, self.every = csv, every

    def after_batch(self, sim):
        sim.outputs.collect_recorded()
        written = -1
        for row in sim.outputs.take_queued():
            self.csv.write(row)
            written = row[1]
        if sim.step_count % self.every == 0 and written != sim.step_count:
            self.csv.write(sim.outputs.diagnostics_row())


class ProgressBar(Observer):
    def __init__(self, bar):
        self.bar = bar

    def after_batch(self, sim):
        self.bar.update(sim.t, sim.step_count)


class Checkpoints(Observer):
    """A checkpoint where [output] checkpoint_interval or checkpoint_wall says, of good states only."""

    def __init__(self, csv, interval: float, wall: float, t: float):
        self.csv, self.interval, self.wall = csv, interval, wall
        self.last = wallclock.perf_counter()
        self.t = t  # at the end of the last batch: a multiple of the interval crossed in a batch counts

    def after_batch(self, sim):
        since = wallclock.perf_counter() - self.last
        due = checkpoint_due(sim.t, sim.t - self.t, self.interval, self.wall, since)
        self.t = sim.t
        due = sim.solver.halo.any(due)  # (all ranks)
        if due and sim.solver.check_state()[1] is None:
            self.csv.flush()
            sim.write_checkpoint()
            self.last = wallclock.perf_counter()


class StopRequests(Observer):
    """Ends the loop (RunStopped) on a signal or at the wall-time limit."""

    def __init__(self, stop):
        self.stop = stop

    def after_batch(self, sim):
        reason = self.stop.reason()
        if sim.solver.halo.any(bool(reason)):  # (a stop on one rank stops all of them)
            raise RunStopped(reason or "a stop request on another rank")
