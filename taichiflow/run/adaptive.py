"""An adaptive run ([amr]): the time loop over a PackSolver, with a regrid every
`regrid_every` steps, its outputs, checkpoints and restarts, and its state on a uniform grid of
one level for whoever needs one."""
from __future__ import annotations

import time as wallclock
from pathlib import Path

import numpy as np

from ..errors import RunInterrupted, SimulationError
from ..kernels.amr.solver import PoolExhausted
from ..parallel.agree import agreed, agreed_reason
from .adaptive_failure import initial_failure, retry_note, step_failure
from .adaptive_outputs import AdaptiveOutputs
from .adaptive_restart import restart_adaptive, write_adaptive_checkpoint
from .build_amr import build_pack, criteria_of, grown_capacity
from .restart import as_loaded
from .stopping import RunStopped, StopFlag, checkpoint_due, output_times


class AdaptiveRun:
    """Builds a case with [amr] (its initial state refined); `advance` integrates it."""

    def __init__(self, case, initial: bool = True):
        """`case`: a ResolvedCase (taichiflow.Case.resolved), or case.load_case's dict; it is not
        changed. initial=False: the state is left unset and unrefined (a restart loads its own).
        `resolved` is the case as built (run/build.py's prepare: its "auto" settings, model file
        and parameters settled), which the run reads; `case` its dict form, kept because it is
        the run's document: case.toml and the checkpoints record it, a restart compares it."""
        self._pending, self._said = [], set()
        self.note = self._pending.append  # where the run's notes go (run() sets its log and says these there)
        built = build_pack(case, initial, note=self._say)
        self.resolved = built.case
        self.case = self.resolved.as_dict()
        self.solver, self.model, self.plan = built.solver, built.model, built.plan
        self.precision = built.precision
        self.shock_jump = built.shock_jump  # (the case's shock pressure jump, or None: p_amplification)
        self.t, self.step_count, self.last_dt = 0.0, 0, 0.0
        self.cells_stepped = 0     # leaf cells times the steps they took (the rate's numerator)
        self.state_good = True     # False once a failure left a state that is not the last good one
        self.grown = []            # (step, slots before, slots after) of each time the pool grew
        grid = self.resolved.grid
        self.cells, self.lower, self.upper = grid.cells, grid.lower, grid.upper
        self.regrid_seconds = 0.0
        self.retries, self._retries_taken = 0, 0  # steps redone with the [scheme] retry fluxes, and those rowed
        self.rate, bad = self.solver.check_state()
        if bad is not None and initial:
            raise SimulationError(initial_failure(self, bad))

    def advance(self, until: float, max_steps: int = 0, after_step=None) -> None:
        """Steps of the global time step (the CFL limit of the finest cells) up to `until`;
        after_step(dt) after each (and after its regrid, if one was due). A step that leaves an
        inadmissible cell is redone with the [scheme] retry fluxes where the case has them (from
        the last good state, with the same dt: `retries` counts them); one that is still bad is
        undone (where the last good state is kept: `state_good` says) and raises SimulationError
        naming the block and cell; so does a regrid whose new blocks are inadmissible (not undone)."""
        amr, cfl = self.resolved.amr, self.resolved.scheme.cfl
        taken = 0
        while self.t < until * (1 - 1e-14) and not (max_steps and taken >= max_steps):
            dt = min(cfl / self.rate, until - self.t)
            self.cells_stepped += self.leaf_cells()
            rate, bad = self.solver.step(dt, self.t)
            retried = bad is not None and self.plan.has_retry
            if retried:
                rate, bad = self._retried(bad, dt)
            if bad is not None:  # (steps back to the last good state where kept: state_good)
                raise SimulationError(step_failure(self, bad, dt, retried))
            self.t += dt
            self.step_count += 1
            taken += 1
            self.rate, self.last_dt = rate, dt
            if self.step_count % amr.regrid_every == 0:
                self.regrid()
            if after_step:
                after_step(dt)

    def _retried(self, bad, dt: float):
        """The step of dt from t that left the bad cell `bad` redone with the [scheme] retry
        fluxes from the state before it (kept: the plan refuses retry without keep_last_good);
        its check_state's. On many ranks every rank comes here together (the bad cell is
        reduced over them), so the step is redone on all."""
        self.note(retry_note(self, bad, dt))
        self.solver.restore_last_good()  # (and checked: W and the model's globals of that state)
        self.retries += 1
        return self.solver.step(dt, self.t, retry=True)

    def take_retry_count(self) -> int:
        """Steps redone with the retry scheme since the last call (a diagnostics row's)."""
        taken, self._retries_taken = self.retries - self._retries_taken, self.retries
        return taken

    def regrid(self) -> None:
        """Split and merge blocks by the [amr] criteria (a full pool grows, or with [amr] grow =
        false, or past the device's memory, raises PoolExhausted, the state as it was); the time
        it takes is counted in regrid_seconds."""
        started = wallclock.perf_counter()
        try:
            if self._adapted():
                self.rate, bad = self.solver.checked
                if bad is not None:
                    self.state_good = False
                    block, cell = bad
                    raise SimulationError(f"the regrid after step {self.step_count} (t = {self.t:.6g}) left an "
                                          f"inadmissible state in the new block at level {block.level}, "
                                          f"{block.coords}, cell {cell} (its prolongation from the parent)")
        finally:
            self.regrid_seconds += wallclock.perf_counter() - started

    def _adapted(self) -> bool:
        """solver.adapt, with the pool grown and the regrid tried again where it ran full."""
        criteria = criteria_of(self.resolved.amr)
        try:
            return self.solver.adapt(criteria)
        except PoolExhausted as full:
            if not self.resolved.amr.grow:
                raise
            self._grow(full.needed)
            return self.solver.adapt(criteria)  # (the same flags from the same state)

    def _grow(self, needed: int) -> None:
        """Rebuild the pool with twice the slots (at least 5/4 of `needed`; fewer where the
        device's memory holds fewer, and PoolBeyondMemory, the state untouched, where it cannot
        hold `needed`: build_amr.grown_capacity) and the same leaves and state, as a restart
        with a larger [amr] capacity would: Taichi starts anew and the kernels compile again;
        the steps after it are those of a larger pool from the start, bit for bit."""
        old = self.solver
        capacity, staged = old.pool.capacity, old.leaf_cells() * old.phys.U.n * (4 if self.precision == "f32" else 8)
        larger = grown_capacity(capacity, needed, staged, self._say, f"step {self.step_count}")
        leaves, conserved = old.forest.leaves, old.conserved_blocks()
        self.solver = build_pack(self.resolved, initial=False, capacity=larger, note=self._say).solver
        self.solver.load(leaves, conserved)
        self.grown.append((self.step_count, capacity, larger))
        self.note(f"step {self.step_count}: the forest needed {needed} block slots and the pool had {capacity}: "
                  f"rebuilt with {larger} ([amr] capacity sets the first size, grow = false stops instead)")

    def _say(self, line: str) -> None:
        """A note for run.log, each said once (a device of unknown memory at every growth)."""
        if line not in self._said:
            self._said.add(line)
            self.note(line)

    def uniform(self, level: int | None = None) -> np.ndarray:
        """The primitive state on the uniform grid of `level` (default: the finest allowed): a
        coarser leaf's value repeated over the cells it covers, a finer leaf's averaged."""
        solver = self.solver
        forest, N, dim = solver.forest, solver.N, solver.dim
        level = forest.max_level if level is None else level
        blocks = solver.primitive_blocks()
        n = next(iter(blocks.values())).shape[-1]
        shape = tuple(r * N * 2 ** level for r in forest.roots)
        out = np.zeros(shape + (n,))
        for block, values in blocks.items():
            scale = 2 ** (level - block.level) if level >= block.level else None
            if scale is not None:
                for d in range(dim):
                    values = np.repeat(values, scale, axis=d)
                where = tuple(slice(c * N * scale, (c + 1) * N * scale) for c in block.coords)
            else:
                shrink = 2 ** (block.level - level)
                values = values.reshape(sum(((N // shrink, shrink) for _ in range(dim)), ()) + (n,))
                values = values.mean(axis=tuple(range(1, 2 * dim, 2)))
                where = tuple(slice(c * N // shrink, (c + 1) * N // shrink) for c in block.coords)
            out[where] = values
        return out

    def leaf_cells(self) -> int:
        return self.solver.leaf_cells()

    def run(self, folder: Path, quiet: bool = True, log=lambda line: None, restart=None, max_wall_time: float = 0.0,
            allow_change=(), wall_start: float | None = None) -> dict:
        """To the end time, writing snapshots at the output times, a diagnostics row every
        [output] diagnostics_every steps and checkpoints where [output] says into `folder`;
        from checkpoint `restart` (a path or a checkpoint.Loaded) if given. A signal or
        `max_wall_time` (seconds from `wall_start`, a perf_counter reading, else from this
        call) stops it after a step with a checkpoint (RunInterrupted); a full pool
        stops it with a checkpoint of the state before the regrid; a failed step writes the last
        good state's snapshot. Both errors propagate."""
        self.note = log
        for line in self._pending:  # (what the build said before the log was open)
            log(line)
        self._pending.clear()
        loaded = as_loaded(restart) if restart else None
        if loaded:
            for line in [f"restarting from {loaded.path}", *restart_adaptive(self, loaded, allow_change)]:
                log(line)
        outputs = AdaptiveOutputs(self, folder, loaded.header if loaded else None)
        started = wallclock.perf_counter()
        stop = StopFlag(max_wall_time, started if wall_start is None else wall_start)
        stats = {"cells_stepped": self.cells_stepped, "first_step": self.step_count, "initial_output_s": 0.0,
                 "first_step_s": 0.0, "first_step_cells": 0}
        try:
            with stop:
                self._loop(outputs, loaded, stop, stats, quiet)
        except RunStopped as stopped:
            outputs.csv.flush()
            saved = write_adaptive_checkpoint(self, outputs)
            outputs.snapshot()
            raise RunInterrupted(f"stopped by {stopped} after step {self.step_count} (t = {self.t:.9g}), "
                                 f"checkpoint {saved}; continue with `taichiflow run {outputs.folder / 'case.toml'} "
                                 f"--resume {outputs.folder}`") from None
        except PoolExhausted as full:  # (grow = false, or beyond the device's memory: build_amr.PoolBeyondMemory)
            outputs.csv.flush()
            saved = write_adaptive_checkpoint(self, outputs, regrid_due=True)
            larger = getattr(full, "resume_capacity", 2 * full.needed)
            raise SimulationError(f"the regrid after step {self.step_count} (t = {self.t:.6g}): {full}. The state "
                                  f"before it is in {saved}: continue with `taichiflow run {outputs.folder / 'case.toml'} "
                                  f"--resume {outputs.folder} --set amr.capacity={larger}`") from None
        except SimulationError:
            if self.state_good:
                log(f"the last good state: {outputs.snapshot().name}")
            else:
                log("the state before the failure was not kept: the last snapshot and checkpoint are the newest "
                    "good output")
            raise
        finally:
            outputs.close()
        wall = wallclock.perf_counter() - started
        updates = self.cells_stepped - stats["cells_stepped"]
        later_s = wall - stats["initial_output_s"] - stats["first_step_s"]  # (the steps after the first, compiled)
        later = updates - stats["first_step_cells"]
        return {"steps": self.step_count, "steps_run": self.step_count - stats["first_step"], "time": self.t,
                "wall_s": wall, "leaf_cell_updates_per_s": updates / wall, "regrid_s": self.regrid_seconds,
                "snapshots": outputs.count, "initial_output_s": stats["initial_output_s"],
                "first_step_s": stats["first_step_s"], "after_first_per_s": later / later_s if later and later_s > 0 else 0.0}

    def _loop(self, outputs, loaded, stop, stats: dict, quiet: bool) -> None:
        """The output times left, with the rows, progress lines and checkpoints after each step."""
        output, end = self.resolved.output, self.resolved.time.end
        every, cap = output.diagnostics_every, self.resolved.time.max_steps
        last_checkpoint = [wallclock.perf_counter(), self.t]
        began = last_checkpoint[0]

        def after_step(dt):
            if self.step_count == stats["first_step"] + 1:  # (the first step compiles the step's kernels)
                stats["first_step_s"] = wallclock.perf_counter() - began - stats["initial_output_s"]
                stats["first_step_cells"] = self.cells_stepped - stats["cells_stepped"]
            if self.step_count % every == 0:
                outputs.row(dt)
            if not quiet and self.step_count % 50 == 0:
                print(f"step {self.step_count}, t = {self.t:.6g}, {self.leaf_cells()} leaf cells "
                      f"{list(self.solver.forest.leaf_count_per_level())} blocks per level", flush=True)
            since = wallclock.perf_counter() - last_checkpoint[0]
            if agreed(checkpoint_due(self.t, self.t - last_checkpoint[1], output.checkpoint_interval,
                                     output.checkpoint_wall, since)):  # (on many ranks: by every rank)
                outputs.csv.flush()
                write_adaptive_checkpoint(self, outputs)
                last_checkpoint[0] = wallclock.perf_counter()
            last_checkpoint[1] = self.t
            reason = agreed_reason(stop.reason())
            if reason:
                raise RunStopped(reason)

        if loaded is None:
            outputs.row(0.0)
            outputs.snapshot()
        elif loaded.header["regrid_due"]:  # (the regrid a full pool stopped, then the rest of its step's work)
            self.regrid()
            last_checkpoint[1] = self.t - self.last_dt
            after_step(self.last_dt)
        stats["initial_output_s"] = wallclock.perf_counter() - began
        for t_out in [t for t in output_times(end, output.interval) if t > outputs.last_time]:
            if cap and self.step_count >= cap:
                break
            self.advance(t_out, cap - self.step_count if cap else 0, after_step)
            outputs.snapshot()
        if outputs.last_time != self.t or outputs.count == 0:  # (stopped by max_steps between output times)
            outputs.snapshot()
        if self.step_count % every:
            outputs.row(self.last_dt)
