"""A run: the time loop on the device clock, retries and failures, outputs at output times,
and the observers after each batch of steps (run/outputs.py)."""
from __future__ import annotations

import time as wallclock
from pathlib import Path

import numpy as np

from .. import case as case_mod
from ..errors import RunInterrupted, SimulationError
from ..io import DiagnosticsCSV, naming
from ..kernels import clock as device_clock
from ..kernels.diagnostic_rows import ROWS
from ..parallel.comm import on_root, world
from .backend import taichi_starts
from . import initial_blame
from .build import build
from .failure import bad_cell_message, explain
from .model_blame import blame_of_state
from .outputs import Checkpoints, DiagnosticsRows, Outputs, ProgressBar, StopRequests, last_row_step
from .progress import Progress
from .folder import claim, remove_snapshots_after
from .restart import apply_restart, as_loaded, check_restart, write_checkpoint
from .stopping import RunStopped, StopFlag, output_times

# Steps run between two read backs of the device clock (a synchronisation each) when nothing
# needs the state in between; a bad step halts the clock, so the rest of a batch does nothing.
STEPS_PER_READ_BACK = 16
assert STEPS_PER_READ_BACK <= ROWS  # (the device holds a batch's rows)


class NoRows:
    """The diagnostics file of a rank other than 0: the rows are reduced on every rank (their
    reductions are collective), written by rank 0 alone."""

    def write(self, row):
        pass

    def flush(self, sync=True):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Simulation:
    """Builds everything a case needs (run/build.py); `run()` integrates to the end time."""

    def __init__(self, case, out_dir=None, quiet: bool = True):
        """`case`: a ResolvedCase (taichiflow.Case.resolved), or case.load_case's dict; it is not
        changed. `resolved` is the case as built (run/build.py: its "auto" settings, model file and
        parameters settled), which the run reads; `case` its dict form, which case.toml and the
        checkpoints record (a script may change its [output] fields between snapshots)."""
        self.quiet = quiet
        built = build(case)
        self.resolved = built.case
        self.case = self.resolved.as_dict()
        self.arch, self.precision, self.fast_math = built.arch, built.precision, built.fast_math
        self.model, self.params, self.plan, self._solver = built.model, built.params, built.plan, built.solver
        self._taichi_start = taichi_starts()
        self.shock_jump = built.shock_jump
        self.share = built.share  # (the block layout: outputs, checkpoints, the bad-cell lookup)
        self.dtype = self.solver.dtype
        grid = self.resolved.grid  # (lists, as run.log and the checkpoints' identity write them)
        self.cells, self.lower, self.upper = list(grid.cells), list(grid.lower), list(grid.upper)
        self.stages = self.plan.stages
        self.t, self.step_count, self.last_dt = 0.0, 0, 0.0
        self._checked = (None, 0.0)  # (solver.state_version, CFL rate) of the state a batch ended on
        self.out_dir = Path(out_dir) if out_dir else None
        self.outputs = Outputs(self)
        self.note = lambda line: None  # run.log's lines, while run() runs

    @property
    def solver(self):
        """The kernels and fields, while they are this Simulation's: a newer Simulation starts
        Taichi afresh, and this one's fields would then read that one's memory."""
        if taichi_starts() != self._taichi_start:
            raise SimulationError("this Simulation's Taichi fields were released when a newer Simulation started "
                                  "Taichi again (one Simulation at a time per process): read its results before "
                                  "building the next")
        return self._solver

    def set_primitive(self, w: np.ndarray):
        """Set the state from primitive values of shape cells + (nW,)."""
        self.solver.set_primitive(np.asarray(w, dtype=np.float32 if self.precision == "f32" else np.float64))

    # --- the time loop ----------------------------------------------------------------------
    @property
    def end_time(self) -> float:
        return self.resolved.time.end

    @property
    def retries(self) -> int:
        return self.outputs.retries

    def advance(self, t_target: float, max_steps: int = 0, on_step=None, every: int = 1, recording: bool = False):
        """Integrate until t_target (or max_steps). Every new state is checked before it
        counts: a bad one is redone with the [scheme] retry fluxes if the case has them, and
        stops the run (with the last good state written) if it is still bad. The device keeps
        the time step (kernels/clock.py) and the host reads it back once per batch of up to
        STEPS_PER_READ_BACK steps; on_step(self) runs after each batch, whose ends fall on the
        multiples of `every` steps (1: after each step). `recording`: instead, the device
        records a diagnostics row every `every` steps (kernels/diagnostic_rows.py) and the
        batches run whole."""
        solver = self.solver
        rate = self._checked_rate()
        self._start_clock(t_target, max_steps, rate)
        first = True
        while True:
            left = max_steps - self.step_count if max_steps else STEPS_PER_READ_BACK
            to_call = every - self.step_count % every if on_step and not recording else STEPS_PER_READ_BACK
            # with a callback the first step goes alone: its time is the compile time (run's first_step_s)
            batch = 1 if on_step and first else max(1, min(STEPS_PER_READ_BACK, left, to_call))
            first, before = False, self.step_count
            solver.run_steps(batch, every if recording else 0, self.step_count)
            reading = solver.clock.read()
            if reading.steps != self.step_count:  # (no step taken: last_dt stays the last step's, not 0)
                self.last_dt = reading.last_dt
            self.t, self.step_count = reading.t, reading.steps
            if reading.halt == device_clock.BAD_STATE:
                self._retry_or_fail(reading, t_target, max_steps)
            elif reading.halt == device_clock.DT_COLLAPSED:
                self._fail_dt(reading.dt, reading.rate)
            if on_step and self.step_count > before:
                on_step(self)
            if reading.halt == device_clock.DONE:
                self._checked = (solver.state_version, reading.rate)  # (the state the batch ended on)
                return

    def _checked_rate(self) -> float:
        """The CFL rate of the current state: checked again (a kernel over the grid and a read
        back) unless the last batch ended on it and the host wrote no U since (a script calling
        advance() a step at a time pays neither)."""
        version, rate = self._checked
        if version == self.solver.state_version:
            return rate
        rate, bad = self.solver.check_state()
        if bad is not None:
            self._fail(bad)
        return rate

    def _retry_or_fail(self, reading, t_target: float, max_steps: int):
        """The last step left a bad cell: redo it with the [scheme] retry fluxes (from the
        state before it, U0) and hand the loop back to the device, or stop."""
        solver = self.solver
        self.outputs.collect_recorded()  # (the rows of the batch's steps before this one)
        if not self.plan.has_retry:
            self._fail(reading.bad)
        self._note_retry(reading)
        solver.restore_last_good()
        solver.check_state()            # W and model globals of the state before the step
        solver.step(reading.last_dt, reading.t_before, retry=True, index=reading.steps - 1)
        rate, bad = solver.check_state()
        self.outputs.retries += 1
        if bad is not None:
            self._fail(bad)
        self._start_clock(t_target, max_steps, rate)

    def _note_retry(self, reading):
        """run.log: which cell made the step fail and its state then, for studying where and
        why a case's steps fail (interface cells, collapse cores)."""
        where, w = self._bad_cell(reading.bad)
        state = ", ".join(f"{n} = {v:.6g}" for n, v in zip(self.model.primitive.component_names(), w))
        self.note(f"step {reading.steps} (t = {reading.t:.9g}, dt = {reading.last_dt:.4g}) redone with the "
                  f"retry scheme: first bad cell {where}: {state}")

    def _start_clock(self, t_target: float, max_steps: int, rate: float):
        """The device plans the steps from here (a dt below 1e-14 end times counts as collapsed)."""
        self.solver.clock.start(self.t, t_target, self.resolved.scheme.cfl, 1e-14 * max(self.end_time, 1e-300),
                                self.step_count, max_steps, rate)

    def check_final(self):
        _, bad = self.solver.check_state()
        if bad is not None:
            self._fail(bad)

    def _bad_cell(self, linear_index: int):
        """(where, W) of a cell given by its linear index in the whole grid: '(i, j, k)', with
        its rank on several ranks (collective: the owner tells the others its state)."""
        solver = self.solver
        rank, local = self.share.owner(linear_index, solver.halo.rank)
        cell = tuple(int(i) for i in np.unravel_index(linear_index, self.cells))
        w = solver.primitive_at(solver.cell(local)) if local is not None else None
        w = solver.halo.bcast(w, root=rank)
        return (f"{cell} on rank {rank}" if solver.halo.ranks > 1 else cell), w

    def _fail(self, linear_index: int):
        """Stop on a bad cell (its linear index in the whole grid): say where and what, step back
        to the last good state and write it. On several ranks every rank comes here together
        (the bad cell is reduced over them) and the cell's rank tells the others its state."""
        solver = self.solver
        where, w = self._bad_cell(linear_index)
        when = (f"state after step {self.step_count} (t = {self.t:.9g})" if self.step_count
                else "initial state")
        own = self._own_blame(linear_index, w)
        message = bad_cell_message(self.model, w, where, when, own and own[0])
        blame = own and own[1]
        if self.step_count and not solver.restore_last_good():
            message += (". The state before the step was not kept ([run] keep_last_good = false): the last "
                        "snapshot and checkpoint are the newest good output. " + explain(self, linear_index, blame, w))
        elif self.step_count:
            self.t -= self.last_dt
            self.step_count -= 1
            saved = self.write_snapshot() if self.out_dir else None
            message += (f". Wrote the last good state (step {self.step_count}, t = {self.t:.9g})"
                        + (f" to {saved}" if saved else "")
                        + ". " + explain(self, linear_index, blame, w))
        elif blame:
            message += ". " + blame
        else:
            message = self._initial_blame(where) or message + "; check [initial] in the case file"
        raise SimulationError(message)

    def _own_blame(self, linear_index: int, w) -> tuple[str, str] | None:
        """model_blame.blame_of_state of the bad cell's state w (the same on every rank: each
        holds w, rank 0's answer is taken): a finite, admissible state there is one whose signal
        speed the check found non-finite."""
        cell = tuple(int(i) for i in np.unravel_index(linear_index, self.cells))
        origin = f"cell {cell}'s " + (f"state after step {self.step_count}" if self.step_count else "initial state")
        return self.solver.halo.bcast(blame_of_state(self, w, cell, origin), root=0)

    def _initial_blame(self, where) -> str | None:
        """The message naming the given state that makes the initial state inadmissible (the
        case's values and the model's rule), or None (run/initial_blame.py)."""
        found = initial_blame.first_inadmissible(self.solver.phys, self.resolved.initial)
        if found is None:
            return None
        given, state, rule = found
        return (f"{given}: {initial_blame.describe(state)} is no state of model '{self.model.name}' (it needs "
                f"{rule}); the first inadmissible cell is {where}")

    def _fail_dt(self, dt, rate):
        self.outputs.collect_recorded()
        raise SimulationError(f"time step collapsed at step {self.step_count} (t = {self.t:.9g}): dt = {dt!r} "
                              f"from a maximum signal speed / dx of {rate!r}")

    # --- outputs (run/outputs.py) and checkpoints (run/restart.py) ----------------------------------
    def fields(self) -> dict:
        return self.outputs.fields()

    def write_snapshot(self) -> Path:
        return self.outputs.write_snapshot()

    def diagnostics_columns(self) -> list[str]:
        return self.outputs.diagnostics_columns()

    def diagnostics_row(self) -> list:
        return self.outputs.diagnostics_row()

    def write_checkpoint(self) -> Path:
        return write_checkpoint(self)

    def run(self, restart=None, max_wall_time: float = 0.0, observers=(), allow_change=(), overwrite: bool = False,
            log=None, wall_start: float | None = None) -> dict:
        """Integrate to the end time, writing snapshots, series.pvd, diagnostics.csv and
        checkpoints; continue from checkpoint `restart` (a path or a checkpoint.Loaded) if
        given. SIGINT, SIGTERM and `max_wall_time` (seconds) stop after the current step with a
        checkpoint (`max_wall_time` counted from `wall_start`, a perf_counter reading, if given,
        else from this call). `observers` are called after each batch of steps like the run's own
        (run/outputs.py). `allow_change`, `overwrite` and `log` (a callable for notes): see
        _prepare. Returns the run's figures; steps_run and cell_updates_per_s count only the
        steps of this call, not those before its checkpoint."""
        self.note = log or (lambda line: None)
        restarted = self._prepare(restart, allow_change, overwrite, self.note)
        out = self.out_dir
        output = self.resolved.output
        every = output.diagnostics_every
        cell_count = int(np.prod(self.cells))
        first_step = self.step_count
        stats = {"cells": cell_count, "first_step": first_step}
        root = self.solver.halo.rank == 0  # (on several ranks, rank 0 writes what the run has once)
        csv = (DiagnosticsCSV(out / "diagnostics.csv", self.diagnostics_columns(), resume=restarted) if root
               else NoRows())
        start = wallclock.perf_counter()
        stop = StopFlag(max_wall_time, start if wall_start is None else wall_start)
        bar = Progress(self.end_time, cell_count, enabled=root and not self.quiet, first_step=first_step,
                       first_time=self.t)
        with csv, bar, stop:
            if not restarted:
                csv.write(self.diagnostics_row())
                self.write_snapshot()
            stats["initial_output_s"] = wallclock.perf_counter() - start
            watchers = [DiagnosticsRows(csv, every), ProgressBar(bar),
                        Checkpoints(csv, output.checkpoint_interval, output.checkpoint_wall, self.t),
                        *observers, StopRequests(stop)]

            def after_batch(sim):
                if "first_step_s" not in stats:  # the first step of this process: compiles
                    stats["first_step_s"] = wallclock.perf_counter() - start - stats["initial_output_s"]
                for watcher in watchers:
                    watcher.after_batch(sim)

            try:
                self.outputs.recording = True
                self._integrate(after_batch, every)
            except RunStopped as stopped:
                csv.flush()
                saved = self.write_checkpoint()
                self.write_snapshot()
                raise RunInterrupted(f"stopped by {stopped} after step {self.step_count} (t = {self.t:.9g}), "
                                     f"checkpoint {saved}; continue with `taichiflow run "
                                     f"{self.out_dir / 'case.toml'} --resume {self.out_dir}` (the folder's "
                                     f"case.toml is this run's case, --set included)") from None
            except SimulationError:
                for row in self.outputs.take_queued():  # (the steps before the failure)
                    csv.write(row)
                csv.flush()
                raise
            stats["wall_s"] = wallclock.perf_counter() - start
            if self.step_count % every and self.step_count != self.outputs.rows_through:
                csv.write(self.diagnostics_row())
            final = self.write_snapshot()
        stats.update(steps=self.step_count, steps_run=self.step_count - first_step, time=self.t, final=str(final))
        stats["cell_updates_per_s"] = cell_count * stats["steps_run"] / max(stats["wall_s"], 1e-12)
        return stats

    def _prepare(self, restart, allow_change, overwrite: bool, log) -> bool:
        """Before anything is written: check the checkpoint (this case, run/same_case.py, with
        the `allow_change` keys changed on purpose; a time still ahead) and claim the output
        folder (run/folder.py: no other run's results, or `overwrite` clears them). Then record
        the resolved case and continue from the checkpoint. Returns whether it restarted."""
        loaded = as_loaded(restart) if restart else None
        changes = check_restart(self, loaded, allow_change) if loaded else []

        def claim_and_record():
            claim(self.out_dir, loaded.path if loaded else None, overwrite)
            for line in ([f"restarting from {loaded.path}"] if loaded else []) + changes:
                log(line)
            removed = remove_snapshots_after(self.out_dir, loaded.header["snapshot_index"]) if loaded else []
            if removed:  # (those of a run on another number of ranks would stay beside this run's)
                log(f"removed {len(removed)} files of the snapshots after the checkpoint ({removed[0].name} to "
                    f"{removed[-1].name}): this run writes them again")
            self.out_dir.mkdir(parents=True, exist_ok=True)
            with naming(self.out_dir / "case.toml"):
                (self.out_dir / "case.toml").write_text(case_mod.dump_toml(self.case))

        on_root(world(), claim_and_record)
        if loaded:
            apply_restart(self, loaded)
            self._note_rows_kept()
        return loaded is not None

    def _note_rows_kept(self):
        """After a restart: the step of the last row diagnostics.csv kept (rank 0's file, told
        to every rank), so that the row of the checkpoint's own step is not written twice: a run
        whose checkpoint fell on its last step wrote its final row after that checkpoint."""
        comm = world()
        last = last_row_step(self.out_dir / "diagnostics.csv") if comm.rank == 0 else None
        self.outputs.rows_through = comm.bcast(last, root=0)

    def _integrate(self, after_batch, every: int):
        """Step through the output times left, a snapshot at each but the end time."""
        max_steps = self.resolved.time.max_steps
        targets = [t for t in output_times(self.end_time, self.resolved.output.interval)
                   if t > self.outputs.last_snapshot_time]
        for target in targets:
            self.advance(target, max_steps, after_batch, every, recording=self.outputs.recording)
            if max_steps and self.step_count >= max_steps:
                break
            if target < self.end_time:
                self.check_final()
                self.write_snapshot()
        self.check_final()
