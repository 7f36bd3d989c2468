"""`Simulation`: a case built on the device, stepped, read and steered from Python.

A layer over run/driver.py's Simulation (the one `taichiflow run` uses): the build, the
steps, retries, failures, snapshots and checkpoints are the command line's own; this class
adds the named numpy state, callbacks between steps, the diagnostics in memory, and the
numpy copy an older Simulation keeps when a newer one starts Taichi again (api/lifetimes.py).
"""
from __future__ import annotations

import math
import os
import time as wallclock
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CaseError, SimulationError, suggest
from ..io import write_vti
from ..parallel.comm import world
from ..run.driver import Simulation as DriverSimulation
from ..run.failure import bad_cell_message
from ..run.outputs import DiagnosticsRows
from . import lifetimes, state
from .callbacks import Callbacks
from .case import Case, as_case
from .files import Rows, RunFiles
from .lifetimes import SimulationReleased
from .running import RunResult, run_to_end, step_to

if TYPE_CHECKING:  # (optional packages: imported where used)
    import pandas
    import pyvista
    import torch

__all__ = ["Simulation"]

Arrays = dict[str, np.ndarray]


class Simulation:
    """One run of a case: `advance()` and `run()` step it, `primitive`, `conserved` and
    `field()` read it, `set_state()` writes it. With `out`, `run()` writes what `taichiflow
    run CASE --out OUT` writes (snapshots, series.pvd, diagnostics.csv, case.toml, run.log,
    checkpoints); without it nothing is written unless asked."""

    def __init__(self, case: Case | str | os.PathLike | Mapping[str, Any], out: str | os.PathLike | None = None, *,
                 overwrite: bool = False, progress: bool = False):
        """`case`: a Case, a case file's path or a dict. `out`: the output folder, claimed now
        as the command line claims it (another run's results there are refused unless
        `overwrite`, which first deletes taichiflow's own files there). `progress`: the
        command line's progress bar during run()."""
        if world().size > 1:
            raise SimulationError("taichiflow.Simulation runs in one process; under mpirun use `taichiflow run`")
        self._case = as_case(case)
        if self._case.resolved.amr is not None:
            raise CaseError(f"{self._case.source}: [amr]: an adaptive case does not run through the Python API yet: "
                            f"run it with `taichiflow run` (docs/amr.md)")
        self._files = RunFiles(Path(out), overwrite, self._case.source) if out is not None else None
        lifetimes.building()
        began = wallclock.perf_counter()
        try:
            driver = DriverSimulation(self._case.resolved, out_dir=self._files.out if self._files else None, quiet=True)
        except BaseException as err:
            lifetimes.register(None)
            self._log(f"ERROR: {err}")
            raise
        self._driver = driver
        self._dx = tuple(driver.solver.dx)
        self._callbacks = Callbacks()
        self._rows = Rows(driver.diagnostics_columns(), self._files.out / "diagnostics.csv" if self._files else None)
        self._kept: state.Kept | None = None
        self._closed = self._busy = False
        self._progress = progress
        self._output_step: int | None = None      # the step of the last output time run() reached
        self._last_snapshot: Path | None = None
        self._stop_reason: str | None = None
        self._sets = 0                            # set_state calls: the cached arrays' state
        self._cache: dict[str, tuple] = {}
        self._derived_read: set[str] = set()
        for warning in self._case.warnings:
            warnings.warn(f"taichiflow: {warning}", stacklevel=2)
        if self._files:
            self._record_build(wallclock.perf_counter() - began)
        lifetimes.register(self)

    def _record_build(self, seconds: float) -> None:
        """run.log and case.toml, as `taichiflow run` writes them once the run is built."""
        d = self._driver
        self._files.record_case(d.case, self._case.warnings)
        self._log(f"model {d.model.name} ({d.model.source_file}), arch {d.arch}, precision {d.precision}, fast_math "
                  f"{d.fast_math}, cells {d.cells}; set up in {seconds:.2f} s")
        for line in d.plan.describe().splitlines():
            self._log(line)
        d.note = self._files.log  # (the driver's notes: retried steps)

    # --- the clock and what the run is -----------------------------------------------------
    @property
    def t(self) -> float:
        """Simulated time."""
        return self._driver.t

    @property
    def step(self) -> int:
        """Steps taken."""
        return self._driver.step_count

    @property
    def dt(self) -> float:
        """The last step's time step (0 before the first)."""
        return self._driver.last_dt

    @property
    def end_time(self) -> float:
        return self._driver.end_time

    @property
    def case(self) -> Case:
        return self._case

    @property
    def out(self) -> Path | None:
        return self._files.out if self._files else None

    @property
    def arch(self) -> str:
        return self._driver.arch

    @property
    def precision(self) -> str:
        return self._driver.precision

    @property
    def cells(self) -> tuple[int, ...]:
        return tuple(self._driver.cells)

    @property
    def lower(self) -> tuple[float, ...]:
        return tuple(self._driver.lower)

    @property
    def upper(self) -> tuple[float, ...]:
        return tuple(self._driver.upper)

    @property
    def dx(self) -> tuple[float, ...]:
        return self._dx

    def coordinates(self) -> tuple[np.ndarray, ...]:
        """The cell centres along each axis."""
        return tuple(lo + (np.arange(n) + 0.5) * h for lo, n, h in zip(self.lower, self.cells, self._dx))

    @property
    def stop_reason(self) -> str | None:
        """Why a callback stopped the last advance() or run(), or None."""
        return self._stop_reason

    @property
    def released(self) -> bool:
        """Whether the device state is gone (a newer Simulation started Taichi, or close())."""
        return self._closed or self._kept is not None

    # --- stepping --------------------------------------------------------------------------
    def advance(self, to_time: float | None = None, steps: int | None = None) -> None:
        """Step to the time `to_time` (the last step cut to land on it) or by `steps` steps,
        whichever comes first; neither: one step. Records the diagnostics rows (also into
        diagnostics.csv with an output folder) and calls the every-N callbacks as run() does;
        writes no snapshot."""
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ValueError(f"advance(steps={steps!r}): expected a positive integer")
        if to_time is not None and not math.isfinite(float(to_time)):
            raise ValueError(f"advance(to_time={to_time!r}): expected a finite time")
        driver = self._enter("advance()")
        try:
            target = math.inf if to_time is None else float(to_time)
            if steps is None and to_time is None:
                steps = 1
            limit = driver.step_count + steps if steps else 0  # (0: no step limit)
            if self._rows.last_step is None:  # (the state the steps start from)
                self._rows.write(driver.diagnostics_row())
            self._stop_reason = None
            observers = [DiagnosticsRows(self._rows, driver.resolved.output.diagnostics_every)]
            try:
                self._stop_reason = step_to(self, target, limit, observers)
            except SimulationError as err:
                for row in driver.outputs.take_queued():
                    self._rows.write(row)
                self._log(f"FAILED: {err}")
                raise
        finally:
            self._rows.flush(sync=False)
            self._busy = False

    def run(self) -> RunResult:
        """Step to the end time (or [time] max_steps) as `taichiflow run` does: outputs at the
        output times (snapshots with `out`; the at_outputs callbacks), checkpoints as the case
        asks (with `out`). Called again after a stop, it goes on from there."""
        self._enter("run()")
        try:
            self._stop_reason = None
            result = run_to_end(self, self._progress)
            self._stop_reason = result.stopped
            return result
        finally:
            self._busy = False

    def every(self, n_steps: int, fn: Callable[[Simulation], Any]) -> None:
        """Call fn(sim) after every step whose number is a multiple of n_steps (in advance()
        and run()); fn may return taichiflow.STOP or raise taichiflow.Stop to end the run."""
        self._callbacks.add_every(n_steps, fn)

    def at_outputs(self, fn: Callable[[Simulation], Any]) -> None:
        """Call fn(sim) at run()'s output times (the start, each [output] interval, the end),
        after the snapshot; fn may return taichiflow.STOP or raise taichiflow.Stop."""
        self._callbacks.add_at_outputs(fn)

    # --- the state ---------------------------------------------------------------------------
    @property
    def primitive(self) -> Arrays:
        """The primitive variables by name (read-only copies; 3-vectors with a trailing axis of 3)."""
        return state.named(self._array("primitive"), self._driver.model.primitive)

    @property
    def conserved(self) -> Arrays:
        """The conserved variables by name (read-only copies; 3-vectors with a trailing axis of 3)."""
        return state.named(self._array("conserved"), self._driver.model.conserved)

    @property
    def field_names(self) -> dict[str, list[str]]:
        """What field() reads: the model's primitive, derived and conserved variables."""
        model = self._driver.model
        return {"primitive": list(model.primitive.names), "derived": list(model.derived),
                "conserved": list(model.conserved.names)}

    def field(self, name: str) -> np.ndarray:
        """One field by name: a primitive variable, a derived field of the model (e.g. "mach"),
        or a conserved variable (a name in both is the primitive one)."""
        model = self._driver.model
        if name in model.primitive.sizes:
            return self.primitive[name]
        if name in model.derived:
            return self._derived(name)
        if name in model.conserved.sizes:
            return self.conserved[name]
        known = [n for names in self.field_names.values() for n in names]
        raise KeyError(f"no field '{name}'{suggest(name, known)}; model '{model.name}' has "
                       + "; ".join(f"{kind}: {', '.join(names) or '-'}" for kind, names in self.field_names.items()))

    def set_state(self, primitive: Mapping[str, Any] | None = None, conserved: Mapping[str, Any] | None = None) -> None:
        """Set the state from arrays, by name (one of the two). Variables left out keep their
        values; each is an array of the grid's shape (vectors cells + (k,), k = 1 to 3, the
        rest zero) or one value for every cell. Primitive values are converted cell by cell
        (the model's to_conserved). An inadmissible state is refused and the state kept."""
        driver = self._live("set_state()")
        if (primitive is None) == (conserved is None):
            raise TypeError("set_state: give primitive={...} or conserved={...} (one of them)")
        model, solver = driver.model, driver.solver
        dtype = np.float32 if driver.precision == "f32" else np.float64
        layout, given = (model.primitive, primitive) if primitive is not None else (model.conserved, conserved)
        which = "primitive" if primitive is not None else "conserved"
        whole = isinstance(given, Mapping) and all(n in given for n in layout.names)
        values = state.assemble(given, layout, self.cells, None if whole else self._array(which), which, dtype)
        before = solver.conserved_array()
        if primitive is not None:
            driver.set_primitive(values)
        else:
            solver.set_conserved(values)
        self._changed()
        _, bad = solver.check_state()
        if bad is not None:
            cell = tuple(int(i) for i in np.unravel_index(bad, self.cells))
            message = bad_cell_message(model, solver.primitive_at(cell), cell, "state given to set_state()")
            solver.set_conserved(before)
            solver.check_state()
            self._changed()
            raise ValueError(f"{message}; the state is left as it was")

    def to_pyvista(self, fields: Sequence[str] | None = None) -> pyvista.ImageData:
        """A pyvista.ImageData of the current state (cell data; a copy), laid out as the
        snapshots are: by default every primitive variable and the derived fields of [output]
        fields. In a notebook it shows with pyvista's own Jupyter support (`.plot()`)."""
        names = list(fields) if fields is not None else self._default_fields()
        return state.image_data(self.cells, self.lower, self._dx, {n: self.field(n) for n in names}, self.t)

    def torch_tensors(self, which: str = "primitive", device: str | None = None) -> dict[str, torch.Tensor]:
        """The primitive (or "conserved") variables as torch tensors on `device` (default: the
        run's, "cuda" or "cpu"). Copies: Taichi 1.7 fields cannot be shared with PyTorch
        (no DLPack export), so the state goes device -> numpy -> tensor, and writing a tensor
        changes nothing in the run (set_state does)."""
        if which not in ("primitive", "conserved"):
            raise ValueError(f"torch_tensors(which={which!r}): expected 'primitive' or 'conserved'")
        arrays = self.primitive if which == "primitive" else self.conserved
        return state.torch_tensors(arrays, device or ("cuda" if self.arch == "cuda" else "cpu"))

    # --- outputs ----------------------------------------------------------------------------
    def write_snapshot(self, path: str | os.PathLike | None = None) -> Path:
        """The current state as a snapshot: with `path`, one .vti file there (the snapshot's
        fields); without, the next snapshot of the output folder, listed in series.pvd."""
        if path is not None:
            names = self._driver.resolved.output.fields or self._driver.model.primitive.names
            write_vti(path, self.cells, self.lower, self._dx, {n: self.field(n) for n in names}, time=self.t)
            return Path(path)
        if self._files is None:
            raise ValueError("write_snapshot(): this Simulation has no output folder (Simulation(case, out=...)); "
                             "give a path to write one .vti file")
        self._last_snapshot = self._live("write_snapshot()").write_snapshot()
        return self._last_snapshot

    def write_checkpoint(self) -> Path:
        """A checkpoint of the current state in the output folder (checkpoint_<step>.npz, the
        last two kept); `taichiflow run OUT/case.toml --resume OUT` continues from it."""
        if self._files is None:
            raise ValueError("write_checkpoint(): this Simulation has no output folder (Simulation(case, out=...)): "
                             "a checkpoint belongs to a run's folder")
        driver = self._live("write_checkpoint()")
        self._rows.flush()
        return driver.write_checkpoint()

    @property
    def diagnostics(self) -> list[dict[str, Any]]:
        """The diagnostics rows recorded so far (one per [output] diagnostics_every steps, and
        the first and last states), each a dict column -> value, as diagnostics.csv has them."""
        return [dict(row) for row in self._rows.rows]

    @property
    def diagnostics_columns(self) -> list[str]:
        return list(self._rows.columns)

    def diagnostics_frame(self) -> pandas.DataFrame:
        """The diagnostics rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as err:
            raise ImportError(f"diagnostics_frame() needs pandas (pip install pandas): {err}; sim.diagnostics has "
                              f"the same rows as a list of dicts") from None
        return pd.DataFrame(self._rows.rows, columns=self._rows.columns)

    # --- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Let the state go without a copy: a newer Simulation then keeps nothing of this one
        (for large runs built one after another in a loop)."""
        lifetimes.forget(self)
        self._closed = True
        self._cache.clear()
        self._rows.close()

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        where = "released" if self.released else self.arch
        return (f"<taichiflow.Simulation {self._case.name!r} {list(self.cells)} t={self.t:.6g} step={self.step} "
                f"({where})>")

    # --- internals ---------------------------------------------------------------------------
    def _log(self, line: str) -> None:
        if self._files is not None:
            self._files.log(line)

    def _changed(self) -> None:
        self._sets += 1
        self._cache.clear()

    def _enter(self, what: str) -> DriverSimulation:
        """The driver for a call that steps; not from inside a callback of this Simulation."""
        driver = self._live(what)
        if self._busy:
            raise RuntimeError(f"{what} from a callback: callbacks run between the steps of advance() and run(); "
                               f"return taichiflow.STOP to end the run, then call {what}")
        self._busy = True
        return driver

    def _live(self, what: str) -> DriverSimulation:
        """The driver while its Taichi fields are this Simulation's, else SimulationReleased."""
        if self._closed:
            raise SimulationReleased(f"{what}: this Simulation was closed (close()): nothing of it is kept")
        if self._kept is not None:
            raise SimulationReleased(f"{what} needs this Simulation's Taichi fields, which were freed when "
                                     f"{self._kept.released_by} (Taichi holds one run's fields per process): its "
                                     f"state at t = {self._kept.t:.9g} (step {self._kept.step}) stays readable "
                                     f"(primitive, conserved, field(), diagnostics, to_pyvista()); to go on from it, "
                                     f"build a new Simulation and set_state(primitive=old.primitive)")
        try:
            self._driver.solver
        except SimulationError as err:  # (Taichi started again, not through taichiflow: nothing was kept)
            raise SimulationReleased(f"{what}: {err}") from None
        return self._driver

    def _array(self, which: str) -> np.ndarray:
        """The flat primitive or conserved array of the current state (cached until it changes)."""
        if self._kept is not None and not self._closed:
            kept = getattr(self._kept, which)
            if kept is None:
                raise SimulationReleased(f"sim.{which}: the state was freed ({self._kept.released_by})")
            return kept
        key = (self._driver.step_count, self._driver.t, self._sets)
        cached = self._cache.get(which)
        if cached is None or cached[0] != key:
            solver = self._live(f"sim.{which}").solver
            if which == "primitive":
                solver.refresh_primitives()
            cached = (key, solver.primitive_array() if which == "primitive" else solver.conserved_array())
            self._cache[which] = cached
        return cached[1]

    def _derived(self, name: str) -> np.ndarray:
        if self._kept is not None and not self._closed:
            if name not in self._kept.derived:
                raise SimulationReleased(f"field '{name}': not kept when this Simulation was released ("
                                         f"{self._kept.released_by}): kept are the primitive and conserved variables "
                                         f"and the derived fields read before or named in [output] fields: "
                                         f"{', '.join(self._kept.derived) or 'none'}")
            return self._kept.derived[name]
        key = (self._driver.step_count, self._driver.t, self._sets, name)
        cached = self._cache.get(f"derived:{name}")
        if cached is None or cached[0] != key:
            solver = self._live(f"field('{name}')").solver
            solver.refresh_primitives()
            value = solver.derived_array(name)
            value.flags.writeable = False
            cached = (key, value)
            self._cache[f"derived:{name}"] = cached
            self._derived_read.add(name)
        return cached[1]

    def _default_fields(self) -> list[str]:
        model = self._driver.model
        return list(model.primitive.names) + [n for n in self._driver.resolved.output.fields if n in model.derived]

    def _keep(self, why: str, alive: bool = True) -> None:
        """Taichi is about to start again (api/lifetimes.py): keep a numpy copy of the state.
        Reads the solver behind the driver's check, which already counts the new start. Not
        `alive`: Taichi was started outside taichiflow since, and the fields are gone."""
        if self._closed or self._kept is not None:
            return
        d = self._driver
        try:
            if not alive:
                raise SimulationError("Taichi was started again outside taichiflow (ti.init), which freed its fields")
            solver = d._solver
            solver.refresh_primitives()
            primitive, conserved = solver.primitive_array(), solver.conserved_array()
            names = self._derived_read | {n for n in d.resolved.output.fields if n in d.model.derived}
            derived = {n: solver.derived_array(n) for n in sorted(names)}
            for a in (primitive, conserved, *derived.values()):
                a.flags.writeable = False
            self._kept = state.Kept(d.t, d.step_count, d.last_dt, primitive, conserved, derived, why)
        except Exception as err:  # noqa: BLE001  (the new Simulation must still build)
            self._kept = state.Kept(d.t, d.step_count, d.last_dt, None, None, {},
                                    f"{why}; its state could not be copied ({type(err).__name__}: {err})")
        self._cache.clear()
        self._rows.close()
