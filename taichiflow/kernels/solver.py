"""The solver: the fields of one kernel plan and the launches of its kernels.

One right-hand-side evaluation is

    primitives   W = prim(U) on the block's cells (+ CFL rate, admissibility, globals at stage 1);
                 a cell beside a boundary also writes the ghost cells of W that copy it
                 (kernels/boundaries.py); then the halo exchange fills faces between blocks
    per sweep    the walk along an axis computes the face fluxes and the stage update
                 (kernels/sweeps.py; the last axis maybe through warp shuffles,
                 kernels/shuffles.py); the stage's last sweep updates U

and after the last stage the check of the new state hands its rate to the device clock
(kernels/clock.py), which plans the next dt. The plan (kernels/plan.py) decided every shape;
this module only allocates and launches.
"""
from typing import NamedTuple

import numpy as np
import taichi as ti

from .. import taichi_patches  # noqa: F401  (before any field is made)
from ..numerics.reconstruction import make_reconstruction
from ..numerics.riemann import RIEMANN_SOLVERS
from ..numerics.positivity import make_density_limiter, make_flux_positivity_limiter
from ..numerics.splitting import make_split_flux
from ..registry import FINITE_DIFFERENCE, methods
from ..resolved import SchemeTable
from ..numerics.variables import make_variables
from .boundaries import make_boundaries
from .clock import DeviceClock
from .diagnostic_rows import DeviceRows
from .faces import FaceScheme, Stencil, SweepContext
from .halo import SingleBlock
from .idle import IdleTiles
from .predictor import make_predictor
from .reductions import Diagnostics, FallbackCounter, StepCheck
from .shuffles import make_shuffle_sweep, make_shuffle_walk
from .state_arrays import StateArrays
from .sweeps import make_walk_sweep
from .transfer import StateTransfer


class Grid(NamedTuple):
    """The block of cells a solver holds: the whole grid's extent, and for a block of a
    decomposed grid (MPI) its first cell and the whole grid's cells. The cell width is the whole
    grid's, to the bit, on every block."""
    cells: tuple
    lower: tuple
    upper: tuple
    offset: tuple = ()   # the block's first cell in the whole grid; () for the whole grid
    whole: tuple = ()    # the whole grid's cells; () for the whole grid

    @property
    def dx(self) -> tuple:
        cells = self.whole or self.cells
        return tuple((float(b) - float(a)) / n for a, b, n in zip(self.lower, self.upper, cells))


class Boundaries(NamedTuple):
    """Per axis the kinds of its lower and upper face; the constant state of each inflow face
    ({(axis, side): primitive vector}); the values the open hydraulic faces impose
    ({(axis, side): {name: number or [[t, value], ...]}}: kernels/hydraulic_boundaries.py)."""
    kinds: tuple
    inflow: dict
    imposed: dict = {}


def face_scheme(phys, dim: int, scheme: SchemeTable, split: bool = False) -> FaceScheme:
    """The face numerics of a [scheme] table (a SchemeTable, or its mapping), for a grid of `dim`
    axes; split: a step taken axis by axis (a time predictor then predicts along its axis alone).
    The numerics' factories take the table as a mapping (SchemeTable.mapping): a registered or a
    model's own reconstruction or Riemann solver is a function of (scheme, phys) and reads the
    keys it needs; the decisions here read the typed table."""
    scheme = SchemeTable.of(scheme)
    method = methods.get(scheme.method)
    if scheme.positivity_limiter and (method.own_flux or method.name == FINITE_DIFFERENCE):
        raise ValueError(f"[scheme] positivity_limiter limits the fluxes of a Riemann solver between cell means: "
                         f"method = '{method.name}' has none")
    table = scheme.mapping()
    if method.own_flux:  # (SHASTA: no reconstruction, no Riemann solver)
        return FaceScheme(Stencil(method.name, method.reach), None, None, method.load()(phys, table))
    recon = make_reconstruction({**table, "unsplit_axes": 1 if split else dim}, phys)
    # FORCE-type fluxes scale dt/dx by the dimension (docs/physics.md 2.3.5): the grid's property.
    riemann = RIEMANN_SOLVERS[scheme.riemann](phys, {**table, "dimension": dim})
    variables = scheme.variables
    if scheme.method == FINITE_DIFFERENCE:
        split = make_split_flux(phys, recon, characteristic=variables == "characteristic")
        return FaceScheme(recon, riemann, None, split)
    limiter = None
    if scheme.density_limiter:  # (per-cell face states: the plan made sure)
        limiter = make_density_limiter(phys.W.index(phys.model.density))
    bounded = None
    if scheme.positivity_limiter:  # (the cell means' update: numerics/positivity.py)
        bounded = make_flux_positivity_limiter(phys, 1 if split else dim)
    return FaceScheme(recon, riemann, make_variables(variables, phys), limit_density=limiter, limit_flux=bounded)


class Solver:
    """Fields and compiled kernels of one (bound model, plan, grid, boundaries)."""

    def __init__(self, phys, plan, grid: Grid, boundaries: Boundaries, halo=None):
        self.phys, self.plan = phys, plan
        self.cells = plan.cells
        self.dim = plan.dim
        self.lower = tuple(float(x) for x in grid.lower)
        self.dx = grid.dx
        self.offset = tuple(int(i) for i in grid.offset)
        self.dtype = phys.dtype
        self.halo = halo or SingleBlock()
        n_globals = max(len(phys.model.globals), 1)
        self.global_keys = ti.Vector.field(n_globals, ti.i64, shape=())  # the globals' max reduction
        self.schemes = [face_scheme(phys, self.dim, scheme, plan.split) for scheme in plan.schemes]
        assert max(s.recon.ghost for s in self.schemes) == plan.ghost, "the registry's stencil reach is off"
        self.ghost = plan.ghost
        n_conserved, n_primitive = phys.U.n, phys.W.n

        # Structure of arrays: each component is its own array, so neighbouring threads read
        # neighbouring addresses (AoS measured 1.9x slower on an H200, docs/performance.md).
        # Aligned on lines and sectors (state_arrays), in a tree of their own. U0 (the state at
        # the start of the step) serves SSP stages, retries and the last good state written
        # when a run fails; without them it is not allocated (nU values per cell).
        state = StateArrays(self.dtype)
        self.U = state.vector(n_conserved, self.cells)
        self.U0 = state.vector(n_conserved, self.cells) if plan.keep_last_good else None
        self.R = state.vector(n_conserved, self.cells)
        self.W = state.vector(n_primitive, self.cells, ghosts=plan.ghost)
        # the states half a step ahead of a predictor over every axis (kernels/predictor.py)
        predicted = any(s.recon.predicted for s in self.schemes)
        self.predicted = state.vector(n_primitive, self.cells, ghosts=plan.ghost) if predicted else None
        state.place()
        self._state_arrays = state
        self.inflow = ti.Vector.field(n_primitive, self.dtype, shape=(max(self.dim, 1), 2))
        self.R.fill(0.0)
        for (axis, side), values in boundaries.inflow.items():
            self.inflow[axis, side] = ti.Vector(list(values))
        # (the order of the fields below places them in Taichi's trees: kernels/reductions.py)
        self.step_check = StepCheck(n_globals)
        self.clock = DeviceClock(self.dtype)  # t and dt of the sweeps (run_steps)
        self.fallback_counter = FallbackCounter(plan)
        self.idle = IdleTiles(phys, self.cells, plan.idle_tile, plan.skip_idle, self.clock, boundaries.kinds)
        self.diagnostics = Diagnostics(phys)
        self._device_rows = None
        # bumped where the host writes U (set_primitive, set_conserved, restore_last_good): a
        # state the device clock checked at the end of a batch needs no second check until then
        self.state_version = 0
        self._build(boundaries)
        for fill in self._fill_inflow:  # constant ghost faces: filled once
            fill()

    def _build(self, boundaries: Boundaries):
        phys, plan, cells, dim = self.phys, self.plan, self.cells, self.dim
        copy_to_ghosts, fill_inflow = make_boundaries(phys, cells, plan.ghost, self.W, self.inflow, boundaries.kinds,
                                                      self.clock, boundaries.imposed)
        self._fill_inflow = [fill_inflow] if fill_inflow else []
        self.step_check.build(phys, cells, self.dx, self.U, self.W, copy_to_ghosts, self.clock, self.global_keys,
                              phys.globals_field, self.idle)
        n_conserved = phys.U.n
        ctx = SweepContext(phys=phys, plan=plan, dtype=self.dtype, cells=cells, dx=self.dx, lower=self.lower,
                           offset=self.offset,
                           inv_dx=[1.0 / h for h in self.dx], U=self.U, U0=self.U0, R=self.R, W=self.W,
                           fallbacks=self.fallback_counter.fallbacks, clock=self.clock,
                           to_normal_W=[phys.W.rotation(d, True) for d in range(dim)],
                           to_global_F=[phys.U.rotation(d, False) + list(range(n_conserved, phys.n_flux))
                                        for d in range(dim)],
                           idle=self.idle, predicted=self.predicted)
        self._predictors = self._build_predictors(ctx, boundaries)
        self._sweeps = [self._stage_sweeps(ctx, scheme, per_cell)
                        for scheme, per_cell in zip(self.schemes, plan.per_cell)]
        self._launches = plan.launches()
        self._sweep_axes = [plan.solved_axes(k) for k in range(len(plan.walked))]
        # (the model's reduced fields of gradients read W with its ghost layers)
        self._reductions_read_ghosts = bool(phys.model.gradient_fields & set(phys.model.reductions))
        U, U0, active = self.U, self.U0, self.idle.cell_active

        @ti.kernel
        def restore_state():
            for I in ti.grouped(ti.ndrange(*cells)):
                if active(I):  # (skipped tiles did not change, and their U0 was not written)
                    U[I] = U0[I]

        self._restore_state = restore_state if U0 is not None else None
        self.diagnostics.build(cells, self.U, self.W, self.dx)
        self.transfer = StateTransfer(phys, cells, self.dtype, self.U, self.W, self.dx)

    def _build_predictors(self, ctx, boundaries: Boundaries) -> list:
        """Per scheme its predictor kernel (kernels/predictor.py), or None."""
        if self.predicted is None:
            return [None] * len(self.schemes)
        copy_to_ghosts, fill_inflow = make_boundaries(self.phys, self.cells, self.plan.ghost, self.predicted,
                                                      self.inflow, boundaries.kinds, self.clock, boundaries.imposed)
        if fill_inflow:  # (a constant state is its own state half a step ahead)
            self._fill_inflow.append(fill_inflow)
        return [make_predictor(ctx, scheme, copy_to_ghosts) if scheme.recon.predicted else None
                for scheme in self.schemes]

    def _predict(self, retry: bool, stage):
        """The states half a step ahead, before a stage's sweeps, for a scheme that predicts
        along every axis; its ghost layers between blocks too."""
        predictor = self._predictors[1 if retry else 0]
        if predictor is None:
            return
        self.halo.complete_exchange(self.W)
        predictor(stage.time)
        self.halo.exchange_ghosts(self.predicted)

    def _stage_sweeps(self, ctx, scheme: FaceScheme, per_cell: bool) -> list:
        """The sweeps of one stage, in launch order (the plan's walked axes)."""
        plan = self.plan
        if plan.split:  # each axis' sweep updates U: a sub-step of its own
            return [make_walk_sweep(ctx, axis, True, scheme, per_cell) for axis in plan.walked]
        sweeps = []
        for k, axis in enumerate(plan.walked):
            across = plan.across if k == 0 else ()
            if plan.shuffle_in_walk and k == 0:
                sweeps.append(make_shuffle_walk(ctx, axis, scheme, per_cell, across))
            elif plan.shuffle_sweep and axis == self.dim - 1:
                sweeps.append(make_shuffle_sweep(ctx, scheme, per_cell))
            else:
                sweeps.append(make_walk_sweep(ctx, axis, k == len(plan.walked) - 1, scheme, per_cell, across))
        return sweeps

    # --- stepping -----------------------------------------------------------------------------
    def check_state(self):
        """Compute W, the CFL rate and admissibility of U; returns (max rate, bad cell or None)."""
        rate, bad = self.step_check.check()
        self.halo.exchange_ghosts(self.W)
        rate, bad = self.halo.reduce_check(self.step_check, rate, bad)
        if bad is None:  # (a failed step is restored and retried on the tiles it ran on)
            self.idle.rebuild()
        return rate, bad

    def step(self, dt: float, t: float, retry: bool = False, index: int = 0):
        """One time step of dt from t; `check_state` must have run on the current U. retry: with
        the [scheme] retry fluxes, after `restore_last_good` of a step that left a bad cell.
        index: the step's number from 0 (a dimensionally split step's order of axes)."""
        self.clock.set(t, dt)
        self._launch_stages(retry, index)

    def run_steps(self, count: int, rows_every: int = 0, steps_before: int = 0):
        """Up to `count` steps with the time step on the device (kernels/clock.py), each
        checked, without a read back: after clock.start, or after the last of these. With
        rows_every, a diagnostics row is recorded on the device (device_rows) after each step
        whose number is a multiple of it, counting from steps_before, the clock's steps now."""
        check = self.step_check
        for k in range(count):
            self._launch_stages(index=steps_before + k)
            check.check_and_primitives(0)
            # (the reduction first: the next step's dt waits for it, its later sweeps for the exchange)
            self.halo.finish_step(check)  # (and the idle tiles' rebuild: kernels/idle.py)
            self.halo.begin_exchange(self.W)  # (completed by the next step's sweeps)
            if rows_every and (steps_before + k + 1) % rows_every == 0:
                if self._reductions_read_ghosts:
                    self.halo.complete_exchange(self.W)
                self.device_rows().launch(rows_every)
        self.halo.complete_exchange(self.W)

    def device_rows(self) -> DeviceRows:
        """The diagnostics rows recorded on the device (created at the first call: its fields
        come after every other, so no kernel built before changes)."""
        if self._device_rows is None:
            self._device_rows = DeviceRows(self.diagnostics, self.clock, self.fallback_counter, self.step_check,
                                           self.idle)
        return self._device_rows

    def _launch_stages(self, retry: bool = False, index: int = 0):
        sweeps = self._sweeps[1 if retry else 0]
        if self.plan.split:
            self._launch_split_step(sweeps, index)
            return
        for s, stage in enumerate(self.plan.stages):
            if s > 0:
                self.step_check.primitives()  # (also the ghost layers: kernels/boundaries.py)
                self.halo.begin_exchange(self.W)
            self._predict(retry, stage)
            for k, sweep in enumerate(sweeps):
                self.halo.complete_exchange(self.W, self._sweep_axes[k])  # (what this sweep reads first)
                a = stage.a if k == 0 else 1.0
                stage_bits, compiled_flags = self._launches[s][k]
                sweep(stage.time, a, stage.c0, stage.c1, stage.c2, stage_bits, compiled_flags)

    def _launch_split_step(self, sweeps, index: int):
        """A dimensionally split step: each axis' sweep a whole step of the one-stage
        integrator, the primitives and ghost layers refreshed between; x, y, z on even steps and
        z, y, x on odd ones (Strang's alternation keeps the splitting second order over two
        steps)."""
        stage = self.plan.stages[0]
        order = range(self.dim) if index % 2 == 0 else reversed(range(self.dim))
        self.halo.complete_exchange(self.W)  # (the first axis changes from step to step)
        for j, k in enumerate(order):
            if j > 0:
                self.step_check.primitives()
                self.halo.exchange_ghosts(self.W)
            stage_bits, compiled_flags = self._launches[j][k]
            sweeps[k](stage.time, stage.a, stage.c0, stage.c1, stage.c2, stage_bits, compiled_flags)

    def restore_last_good(self) -> bool:
        """U back to the state at the start of the last step; False where it was not kept."""
        if self._restore_state is None:
            return False
        self._restore_state()
        self.state_version += 1
        return True

    def refresh_primitives(self):
        self.step_check.primitives()
        self.halo.exchange_ghosts(self.W)

    # --- state, counters and reductions ---------------------------------------------------------
    def primitive_array(self) -> np.ndarray:
        """Interior primitive state as a numpy array (refresh_primitives first)."""
        return self.transfer.primitive_array()

    def primitive_at(self, cell: tuple) -> list:
        """W of one interior cell of this block (a few accessor launches, not a whole-array read)."""
        return [float(v) for v in self.W[cell]]

    def conserved_array(self) -> np.ndarray:
        return self.transfer.conserved_array()

    def set_primitive(self, w: np.ndarray):
        self.transfer.set_primitive(w)
        self.idle.reset()
        self.state_version += 1

    def set_conserved(self, u: np.ndarray):
        self.transfer.set_conserved(u)
        self.idle.reset()
        self.state_version += 1

    def derived_array(self, name: str) -> np.ndarray:
        return self.transfer.derived_array(name)

    @property
    def cell_volume(self) -> float:
        return float(np.prod(self.dx))

    def reductions(self):
        """f64 totals of U (times cell volume), min/max of prim(U) and the model's reduced fields,
        over every block."""
        self._gradients_ready()
        return self.diagnostics.reduce(self.cell_volume, self.halo)

    def diagnostic_values(self) -> list:
        """One diagnostics row's reduced values (Diagnostics.values), over every block."""
        self._gradients_ready()
        return self.diagnostics.values(self.cell_volume, self.halo)

    def _gradients_ready(self):
        """The model's reduced fields of gradients read W with its ghost layers: computed here
        first (before the first step only the fill's interior is there)."""
        if self._reductions_read_ghosts:
            self.refresh_primitives()

    def take_repair_count(self) -> int:
        """Cells the model repaired since the last call, in every block."""
        return int(self.halo.combine(np.array([self.step_check.take_repair_count()], dtype=np.int64), "sum")[0])

    def take_fallback_count(self) -> int:
        """Faces whose states or flux were replaced since the last call, in every block
        (plan.counts_faces: the positivity fallback, the positivity limiter, FORCE's fallback)."""
        return int(self.halo.combine(np.array([self.fallback_counter.take()], dtype=np.int64), "sum")[0])

    def cell(self, linear_index: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(linear_index, self.cells))

    @property
    def sweeps_per_stage(self) -> int:
        return len(self.plan.walked)

    def modelled_bytes_per_cell_step(self) -> int:
        return self.plan.modelled_bytes_per_cell_step(self.phys.U.n, self.phys.W.n, bool(self.phys.advected_indices))

    def resident_bytes(self) -> int:
        """Device bytes of the state arrays and the fallback counters."""
        size = 4 if self.dtype == ti.f32 else 8
        total = sum(int(np.prod(f.shape)) * f.n * size for f in (self.U, self.U0, self.R, self.W, self.predicted)
                    if f is not None)
        return total + self.fallback_counter.resident_bytes()
