"""The time loop of the Python API, built from the run's own parts (run/driver.py's advance,
run/outputs.py's observers and snapshots): what `taichiflow run` does, with the callbacks
of api/callbacks.py between steps.

Without callbacks it makes the driver's calls in the driver's order, so a Simulation with an
output folder writes the command line's files, bit for bit (tests/test_api_simulation.py).
"""
from __future__ import annotations

import math
import time as wallclock
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import SimulationError
from ..run.outputs import Checkpoints, DiagnosticsRows, ProgressBar
from ..run.progress import Progress
from ..run.report import summary
from ..run.stopping import output_times
from .callbacks import reached

__all__ = ["RunResult", "run_to_end", "step_to"]


@dataclass(frozen=True)
class RunResult:
    """How a run() ended."""
    t: float                    # the time reached
    step: int                   # the step reached
    steps_run: int              # steps this call took
    wall_s: float               # seconds this call took
    cell_updates_per_s: float   # cells x steps_run / wall_s
    stopped: str | None         # why a callback stopped the run, or None: it reached the end
    final_snapshot: Path | None  # the last snapshot written (with an output folder)


def step_to(sim, target: float, limit: int, observers) -> str | None:
    """Step until the time `target` or the step `limit` (0: none); the batches of steps are
    cut where an every-N callback is due, and the callbacks called there. Returns why a
    callback stopped, or None."""
    driver = sim._driver
    every = driver.resolved.output.diagnostics_every

    def after_batch(_):
        for observer in observers:
            observer.after_batch(driver)

    driver.outputs.recording = True  # (rows recorded on the device, as in driver.run)
    while True:
        cut = sim._callbacks.next_step(driver.step_count)
        stop_at = min([s for s in (limit, cut) if s], default=0)
        driver.advance(target, stop_at, after_batch, every, recording=True)
        if cut and driver.step_count == cut:
            reason = sim._callbacks.fire_every(sim, cut)
            if reason:
                return reason
        if reached(driver.t, target) or (limit and driver.step_count >= limit):
            return None


def output_moment(sim, files: bool) -> str | None:
    """An output time: the snapshot (with an output folder; not twice of one state, which
    write_snapshot() may have written) and the at_outputs callbacks."""
    outputs = sim._driver.outputs
    if files and not (outputs.snapshot_index >= 0 and outputs.last_snapshot_time == sim._driver.t):
        sim._last_snapshot = sim._driver.write_snapshot()
    sim._output_step = sim._driver.step_count
    return sim._callbacks.fire_outputs(sim)


def run_to_end(sim, progress: bool) -> RunResult:
    """Simulation.run(): from the current state to the end time (or [time] max_steps), with
    the command line's outputs where the Simulation has a folder."""
    driver = sim._driver
    every = driver.resolved.output.diagnostics_every
    cells = int(np.prod(driver.cells))
    stats = {"cells": cells, "first_step": driver.step_count}
    bar = Progress(driver.end_time, cells, enabled=progress, first_step=driver.step_count, first_time=driver.t)
    sim._last_snapshot = None
    start = wallclock.perf_counter()
    with bar:
        try:
            stopped = _loop(sim, stats, start, every, bar)
        except SimulationError as err:
            for row in driver.outputs.take_queued():  # (the steps before the failure)
                sim._rows.write(row)
            sim._log(f"FAILED: {err}")
            raise
        except BaseException as err:
            sim._log(f"ERROR: {type(err).__name__}: {err}")
            raise
        finally:
            sim._rows.flush()
    stats.update(steps=driver.step_count, steps_run=driver.step_count - stats["first_step"], time=driver.t)
    stats["cell_updates_per_s"] = cells * stats["steps_run"] / max(stats["wall_s"], 1e-12)
    _log_end(sim, stats, stopped)
    return RunResult(driver.t, driver.step_count, stats["steps_run"], stats["wall_s"], stats["cell_updates_per_s"],
                     stopped, sim._last_snapshot)


def _loop(sim, stats: dict, start: float, every: int, bar) -> str | None:
    """driver.run's sequence: the first row and output, the output times left, then the last
    row and output; returns why a callback stopped, or None."""
    driver, files = sim._driver, sim._files is not None
    stopped = None
    if sim._output_step is None:  # (the first run() of this Simulation: the state it starts from)
        sim._rows.write(driver.diagnostics_row())
        stopped = output_moment(sim, files)
    stats["initial_output_s"] = wallclock.perf_counter() - start
    output = driver.resolved.output
    observers = [DiagnosticsRows(sim._rows, every), ProgressBar(bar), _FirstStep(stats, start)]
    if files:
        observers.append(Checkpoints(sim._rows, output.checkpoint_interval, output.checkpoint_wall, driver.t))
    max_steps = driver.resolved.time.max_steps
    targets = [t for t in output_times(driver.end_time, output.interval) if not reached(driver.t, t)]
    for target in [] if stopped else targets:
        stopped = step_to(sim, target, max_steps, observers)
        if stopped or (max_steps and driver.step_count >= max_steps):
            break
        if target < driver.end_time:
            driver.check_final()
            stopped = output_moment(sim, files)
            if stopped:
                break
    driver.check_final()
    stats["wall_s"] = wallclock.perf_counter() - start
    if driver.step_count % every and sim._rows.last_step != driver.step_count:
        sim._rows.write(driver.diagnostics_row())
    if sim._output_step != driver.step_count:
        output_moment(sim, files)  # (the last output: the run ends here, whatever its callbacks return)
    return stopped


class _FirstStep:
    """Times the first batch (its compile), for run.log's summary line."""

    def __init__(self, stats: dict, start: float):
        self.stats, self.start = stats, start

    def after_batch(self, sim) -> None:
        if "first_step_s" not in self.stats:
            self.stats["first_step_s"] = wallclock.perf_counter() - self.start - self.stats["initial_output_s"]


def _log_end(sim, stats: dict, stopped: str | None) -> None:
    if stopped:
        sim._log(f"STOPPED: {stopped} at step {stats['steps']} (t = {stats['time']:.9g})")
    if not stats["steps_run"]:
        sim._log(f"no steps taken: t = {stats['time']:.6g}, step {stats['steps']}")
    elif "first_step_s" in stats and math.isfinite(stats["wall_s"]):
        sim._log(summary(stats))
