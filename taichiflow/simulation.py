"""A run: Taichi set-up, initial state, the time loop, outputs and failure handling."""
from __future__ import annotations

import math
import os
import signal
import time as wallclock
from pathlib import Path

import numpy as np
import taichi as ti

from . import case as case_mod
from . import checkpoint
from . import clock as device_clock
from .setup import resolve_states
from .compiler import Solver, fuse_choice, reconstructs_per_cell, sweep_segments, uses_shuffle
from .initial import initial_primitive, state_vector
from .compat import check_case_against_model
from .loadcheck import check_model
from .io import DiagnosticsCSV, PvdSeries, write_vti
from .model import ModelError, load_model
from .numerics.integrators import INTEGRATORS
from .numerics.reconstruction import stencil_reach
from .progress import Progress


# Steps run between two read backs of the device clock (a synchronisation each) when nothing
# needs the state in between; a bad step halts the clock, so the rest of a batch does nothing.
STEPS_PER_READ_BACK = 16


class SimulationError(RuntimeError):
    """The run stopped on a bad state; the message says where and what to change."""


def init_taichi(arch: str, precision: str, fast_math) -> tuple[str, str, bool]:
    """ti.init for the run; resolves "auto" settings and returns (arch, precision, fast_math)."""
    if arch == "auto":
        arch = "cuda" if _has_cuda() else "cpu"
    if precision == "auto":
        precision = "f32" if arch == "cuda" else "f64"
    if fast_math == "auto":
        fast_math = precision == "f32"
    dtype = ti.f32 if precision == "f32" else ti.f64
    ti.init(arch=ti.cuda if arch == "cuda" else ti.cpu, default_fp=dtype, fast_math=bool(fast_math),
            log_level=ti.WARN, offline_cache=True)
    if arch == "cuda" and ti.lang.impl.current_cfg().arch != ti.cuda:
        raise SimulationError("arch 'cuda' was requested but no CUDA device is available; use --arch cpu")
    return arch, precision, bool(fast_math)


def _has_cuda() -> bool:
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


class Simulation:
    """Builds everything a case needs; `run()` integrates to the end time."""

    def __init__(self, case: dict, out_dir=None, quiet: bool = True):
        self.case = case
        self.quiet = quiet
        where = case.get("_source", "<case>")
        run = case["run"]
        self.arch, self.precision, self.fast_math = init_taichi(run["arch"], run["precision"], run["fast_math"])
        run.update(arch=self.arch, precision=self.precision, fast_math=self.fast_math)
        self.dtype = ti.f32 if self.precision == "f32" else ti.f64

        search = [Path(where).resolve().parent.parent / "models"] if where != "<case>" else []
        try:
            self.model = load_model(case["model"]["name"], search)
        except ModelError as err:
            if str(err).startswith(("unknown model", "model file")):
                raise ModelError(f"{where}: [model] name: {err}") from None
            raise
        self.params = self.model.resolve_params(case["model"]["params"], f"{where}: [model] params")
        case["model"]["params"] = dict(self.params)
        check_model(self.model, self.params, self.dtype)
        check_case_against_model(case, self.model, where)
        layout = self.model.primitive.sizes

        grid = case["grid"]
        self.cells, self.lower, self.upper = grid["cells"], grid["lower"], grid["upper"]
        initial, inflow_states, self.shock_jump = resolve_states(case, self.model, self.params)
        inflow = {("xyz".index(face[0]), 0 if face.endswith("lower") else 1): state_vector(state, layout)
                  for face, state in inflow_states.items()}
        self.stages = INTEGRATORS[case["scheme"]["integrator"]]
        if case["scheme"]["retry"] and not run["keep_last_good"]:
            raise case_mod.CaseError(f"{where}: [scheme] retry needs [run] keep_last_good = true "
                            "(a retried step starts again from the kept state)")
        # SSP stages read U0 whatever keep_last_good says; then the last good state is kept anyway.
        keep = run["keep_last_good"] or any(stage.c0 != 0.0 for stage in self.stages)
        retry = case["scheme"]["retry"]
        schemes = [case["scheme"]] + ([{**case["scheme"], **retry}] if retry else [])
        try:
            segments = sweep_segments(run["segment"], len(self.cells), self.arch, self.precision)
            per_cell = [reconstructs_per_cell(run["reconstruct"], scheme.get("variables", "primitive"),
                                              self.arch, self.precision, stencil_reach(scheme["reconstruction"]))
                        for scheme in schemes]
            fuse = fuse_choice(run["fuse"], run["shuffle"])
            shuffle = uses_shuffle(run["shuffle"], self.arch, self.precision, run["block_dim"])
        except ValueError as err:
            raise case_mod.CaseError(f"{where}: {err}") from None
        self.solver = Solver(self.model, self.params, case["scheme"], self.cells, self.lower, self.upper,
                             self._boundary_kinds(), inflow, self.dtype, keep_last_good=keep,
                             segment=segments, block_dim=run["block_dim"], per_cell=per_cell,
                             shuffle=shuffle, fuse=fuse)
        self.set_primitive(self._initial_state(initial, where))
        self.t, self.step_count, self.last_dt = 0.0, 0, 0.0
        self.retries = 0          # steps redone with the [scheme] retry fluxes, since the last row
        self.out_dir = Path(out_dir) if out_dir else None

    # --- set-up helpers ---------------------------------------------------------------------
    def _boundary_kinds(self):
        bc = self.case["boundary"]
        return [tuple(bc["xyz"[d]]) for d in range(len(self.case["grid"]["cells"]))]

    def _initial_state(self, initial: dict, where: str):
        try:
            return initial_primitive(initial, self.model.primitive.sizes, self.cells, self.lower, self.upper,
                                     self.params)
        except ValueError as err:
            raise ModelError(f"{where}: {err}") from None

    def set_primitive(self, w: np.ndarray):
        """Set the state from primitive values of shape cells + (nW,)."""
        self.solver.set_primitive(np.asarray(w, dtype=_np_dtype(self.dtype)))

    # --- the time loop ----------------------------------------------------------------------
    @property
    def end_time(self) -> float:
        return self.case["time"]["end"]

    def advance(self, t_target: float, max_steps: int = 0, on_step=None, every: int = 1):
        """Integrate until t_target (or max_steps). Every new state is checked before it
        counts: a bad one is redone with the [scheme] retry fluxes if the case has them, and
        stops the run (with the last good state written) if it is still bad. The device keeps
        the time step (taichiflow/clock.py) and the host reads it back once per batch of up to
        STEPS_PER_READ_BACK steps; on_step(self) runs after each batch, whose ends fall on the
        multiples of `every` steps (1: after each step)."""
        solver, stages = self.solver, self.stages
        rate, bad = solver.check_state()
        if bad is not None:
            self._fail(bad)
        self._start_clock(t_target, max_steps, rate)
        first = True
        while True:
            left = max_steps - self.step_count if max_steps else STEPS_PER_READ_BACK
            to_call = every - self.step_count % every if on_step else STEPS_PER_READ_BACK
            # with a callback the first step goes alone: its time is the compile time (run's first_step_s)
            batch = 1 if on_step and first else max(1, min(STEPS_PER_READ_BACK, left, to_call))
            first, before = False, self.step_count
            solver.run_steps(batch, stages)
            reading = solver.clock.read()
            self.t, self.step_count, self.last_dt = reading.t, reading.steps, reading.last_dt
            if reading.halt == device_clock.BAD_STATE:
                self._retry_or_fail(reading, t_target, max_steps)
            elif reading.halt == device_clock.DT_COLLAPSED:
                self._fail_dt(reading.dt, reading.rate)
            if on_step and self.step_count > before:
                on_step(self)
            if reading.halt == device_clock.DONE:
                return

    def _retry_or_fail(self, reading, t_target: float, max_steps: int):
        """The last step left a bad cell: redo it with the [scheme] retry fluxes (from the
        state before it, U0) and hand the loop back to the device, or stop."""
        solver = self.solver
        if not solver.retry_scheme:
            self._fail(reading.bad)
        solver.restore_last_good()
        solver.check_state()            # W and model globals of the state before the step
        solver.step(reading.last_dt, reading.t_before, self.stages, retry=True)
        rate, bad = solver.check_state()
        self.retries += 1
        if bad is not None:
            self._fail(bad)
        self._start_clock(t_target, max_steps, rate)

    def _start_clock(self, t_target: float, max_steps: int, rate: float):
        """The device plans the steps from here (a dt below 1e-14 end times counts as collapsed)."""
        self.solver.clock.start(self.t, t_target, self.case["scheme"]["cfl"], 1e-14 * max(self.end_time, 1e-300),
                                self.step_count, max_steps, rate)

    def check_final(self):
        _, bad = self.solver.check_state()
        if bad is not None:
            self._fail(bad)

    def _fail(self, linear_index: int):
        solver = self.solver
        cell = solver.cell(linear_index)
        w = [float(v) for v in solver.primitive_array()[cell]]
        names = self.model.primitive.component_names()
        variable = next((f"{n} = {v!r}" for n, v in zip(names, w) if not np.isfinite(v)), None)
        if variable is None:
            variable = next((f"{n} = {w[self.model.primitive.index(n)]!r} (must be > 0)"
                             for n in self.model.positive if not w[self.model.primitive.index(n)] > 0),
                            f"the model's admissible() is false for {dict(zip(names, w))}")
        when = (f"state after step {self.step_count} (t = {self.t:.9g})" if self.step_count
                else "initial state")
        message = f"inadmissible {when} at cell {cell}: {variable}"
        if self.step_count and not solver.restore_last_good():
            message += (". The state before the step was not kept ([run] keep_last_good = false): the last "
                        "snapshot and checkpoint are the newest good output. " + self._advice())
        elif self.step_count:
            self.t -= self.last_dt
            self.step_count -= 1
            saved = self.write_snapshot() if self.out_dir else None
            message += (f". Wrote the last good state (step {self.step_count}, t = {self.t:.9g})"
                        + (f" to {saved}" if saved else "")
                        + ". " + self._advice())
        else:
            message += "; check [initial] in the case file"
        raise SimulationError(message)

    def _advice(self) -> str:
        """The likely fixes for a blow-up, given what the case already does."""
        scheme = self.case["scheme"]
        tips = [f"a lower [scheme] cfl (now {scheme['cfl']:g})"]
        if not scheme["positivity_fallback"]:
            tips.append("[scheme] positivity_fallback = true")
        if scheme["reconstruction"] not in ("first_order", "plm") or scheme["riemann"] == "hllc":
            tips.append("a more diffusive scheme (plm with minmod, hll)")
        advice = "Try " + ", or ".join(tips) + "."
        saved = sorted(self.out_dir.glob(checkpoint.PATTERN)) if self.out_dir else []
        if saved:
            advice += f" The last good checkpoint is {saved[-1]} (--restart it with the changed case)."
        return advice

    def _fail_dt(self, dt, rate):
        raise SimulationError(f"time step collapsed at step {self.step_count} (t = {self.t:.9g}): dt = {dt!r} "
                              f"from a maximum signal speed / dx of {rate!r}")

    # --- outputs ------------------------------------------------------------------------------
    def fields(self) -> dict:
        """Requested output fields as numpy arrays on the interior (refreshes W)."""
        self.solver.refresh_primitives()
        w = self.solver.primitive_array()
        layout = self.model.primitive
        names = self.case["output"]["fields"] or layout.names
        out = {}
        for name in names:
            if name in layout.sizes:
                off = layout.offsets[name]
                out[name] = w[..., off] if layout.sizes[name] == 1 else w[..., off:off + 3]
            else:
                out[name] = self.solver.derived_array(name)
        return out

    def write_snapshot(self) -> Path:
        self._snapshot_index = getattr(self, "_snapshot_index", -1) + 1
        name = f"snapshot_{self._snapshot_index:05d}.vti"
        path = self.out_dir / name
        write_vti(path, tuple(self.cells), tuple(self.lower), tuple(self.solver.dx), self.fields(), time=self.t)
        self.series.add(self.t, name)
        self._last_snapshot_time = self.t
        return path

    def diagnostics_columns(self) -> list[str]:
        cols = ["time", "step", "dt", "fallbacks", "retries", "repairs"]
        cols += [f"total_{c}" for c in self.model.conserved.component_names()]
        for c in self.model.primitive.component_names():
            cols += [f"min_{c}", f"max_{c}"]
        cols += [f"{how}_{name}" for name, how in self.model.reductions.items()]
        if self.shock_jump:
            cols.append("p_amplification")  # max pressure over the case's shock pressure jump
        return cols

    def diagnostics_row(self) -> list:
        totals, w_min, w_max, derived = self.solver.reductions()
        fallbacks = self.solver.take_fallback_count() + getattr(self, "_pending_fallbacks", 0)
        self._pending_fallbacks = 0
        row = [self.t, self.step_count, self.last_dt, fallbacks, self.retries, self.solver.take_repair_count()]
        self.retries = 0
        row += [float(x) for x in totals]
        for lo, hi in zip(w_min, w_max):
            row += [float(lo), float(hi)]
        row += list(derived.values())
        if self.shock_jump:
            row.append(float(w_max[self.model.primitive.index(self.model.pressure)]) / self.shock_jump)
        return row

    def run(self, restart=None, max_wall_time: float = 0.0) -> dict:
        """Integrate to the end time, writing snapshots, series.pvd, diagnostics.csv and
        checkpoints; continue from checkpoint file `restart` if given. SIGINT, SIGTERM and
        `max_wall_time` (seconds) stop after the current step with a checkpoint."""
        out = self.out_dir
        out.mkdir(parents=True, exist_ok=True)
        (out / "case.toml").write_text(case_mod.dump_toml(self.case))
        output = self.case["output"]
        every = output["diagnostics_every"]
        max_steps = self.case["time"]["max_steps"]
        cell_count = int(np.prod(self.cells))
        stats = {"cells": cell_count}
        if restart:
            self._load_checkpoint(restart)
        else:
            self.series = PvdSeries(out / "series.pvd")
            self._last_snapshot_time = -math.inf
        csv = DiagnosticsCSV(out / "diagnostics.csv", self.diagnostics_columns(), resume=bool(restart))
        start = wallclock.perf_counter()
        clock = {"checkpoint": start}
        stop = StopFlag(max_wall_time, start)
        with csv, Progress(self.end_time, cell_count, enabled=not self.quiet) as bar, stop:
            if not restart:
                csv.write(self.diagnostics_row())
                self.write_snapshot()

            def on_step(sim):
                if "first_step_s" not in stats:  # the first step of this process: compiles
                    stats["first_step_s"] = wallclock.perf_counter() - start
                if sim.step_count % every == 0:
                    csv.write(sim.diagnostics_row())
                bar.update(sim.t, sim.step_count)
                if sim._checkpoint_due(clock) and sim.solver.check_state()[1] is None:  # only good states
                    csv.flush()
                    sim.write_checkpoint()
                    clock["checkpoint"] = wallclock.perf_counter()
                reason = stop.reason()
                if reason:
                    raise RunStopped(reason)

            targets = [t for t in _output_times(self.end_time, output["interval"]) if t > self._last_snapshot_time]
            try:
                for target in targets:
                    self.advance(target, max_steps, on_step, every)
                    if max_steps and self.step_count >= max_steps:
                        break
                    if target < self.end_time:
                        self.check_final()
                        self.write_snapshot()
                self.check_final()
            except RunStopped as stopped:
                csv.flush()
                saved = self.write_checkpoint()
                self.write_snapshot()
                raise RunInterrupted(f"stopped by {stopped} after step {self.step_count} (t = {self.t:.9g}); "
                                      f"continue with --restart {saved}") from None
            except SimulationError:
                csv.flush()
                raise
            stats["wall_s"] = wallclock.perf_counter() - start
            if self.step_count % every:
                csv.write(self.diagnostics_row())
            final = self.write_snapshot()
        stats.update(steps=self.step_count, time=self.t, final=str(final))
        stats["cell_updates_per_s"] = cell_count * self.step_count / max(stats["wall_s"], 1e-12)
        return stats

    # --- checkpoints --------------------------------------------------------------------------
    def _identity(self) -> dict:
        return {"model": self.model.name, "model_hash": checkpoint.file_hash(self.model.source_file),
                "cells": list(self.cells), "lower": list(self.lower), "upper": list(self.upper),
                "precision": self.precision}

    def _checkpoint_due(self, clock) -> bool:
        output = self.case["output"]
        interval, wall = output["checkpoint_interval"], output["checkpoint_wall"]
        due = False
        if interval > 0:
            due = math.floor(self.t / interval * (1 + 1e-12)) > math.floor((self.t - self.last_dt) / interval * (1 + 1e-12))
        if wall > 0 and wallclock.perf_counter() - clock["checkpoint"] >= wall:
            due = True
        return due

    def write_checkpoint(self) -> Path:
        header = {**self._identity(), "time": self.t, "step": self.step_count, "last_dt": self.last_dt,
                  "snapshot_index": getattr(self, "_snapshot_index", -1),
                  "last_snapshot_time": self._last_snapshot_time,
                  "fallbacks": self.solver.take_fallback_count(), "case": case_mod.dump_toml(self.case)}
        self._pending_fallbacks = header["fallbacks"]
        return checkpoint.write(self.out_dir, self.solver.conserved_array(), header)

    def _load_checkpoint(self, path):
        state, header = checkpoint.read(path)
        checkpoint.check_compatible(header, self._identity(), path)
        self.solver.set_conserved(state)
        self.t, self.step_count, self.last_dt = header["time"], header["step"], header["last_dt"]
        self._snapshot_index = header["snapshot_index"]
        self._last_snapshot_time = header["last_snapshot_time"]
        self._pending_fallbacks = header["fallbacks"]
        self.series = PvdSeries(self.out_dir / "series.pvd", resume=True)
        self.series.truncate_after(self._last_snapshot_time)
        _truncate_diagnostics(self.out_dir / "diagnostics.csv", self.step_count)

class RunInterrupted(SimulationError):
    """The run stopped on request (signal, wall time) after writing a checkpoint."""


class RunStopped(Exception):
    """A signal or the wall-time limit asked the run to stop after the current step."""


class StopFlag:
    """Turns SIGINT/SIGTERM into a flag read between steps, and checks a wall-time limit."""

    def __init__(self, max_wall_time: float, start: float):
        self.max_wall_time, self.start, self._signal = max_wall_time, start, None

    def __enter__(self):
        self._previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame):
        self._signal = signal.Signals(signum).name

    def reason(self):
        if self._signal:
            return self._signal
        if self.max_wall_time and wallclock.perf_counter() - self.start >= self.max_wall_time:
            return f"--max-wall-time ({self.max_wall_time:g} s)"
        return None

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


def _truncate_diagnostics(path: Path, step: int):
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


def _output_times(end: float, interval: float) -> list[float]:
    if interval <= 0:
        return [end]
    n = int(math.floor(end / interval * (1 + 1e-12)))
    times = [k * interval for k in range(1, n + 1) if k * interval < end * (1 - 1e-12)]
    return times + [end]


def _np_dtype(dtype):
    return np.float32 if dtype == ti.f32 else np.float64
