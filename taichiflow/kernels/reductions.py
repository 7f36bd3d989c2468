"""Reductions over the cells: the step check (W, the CFL rate, admissibility, the model's
globals), the diagnostics (totals of U, extremes of W, the model's reduced fields) and the
counters (face fallbacks, cells the model repaired).

Each reduces in registers along chunks of x, then into REDUCTION_SLOTS addresses by integer
atomics on order-preserving bits (kernels/ordered.py), then one kernel combines the slots:
one atomic per cell on a single address serialised the GPU (14 ms at 256^3), and 262,144
atomics on one address per step still took 0.8 ms on an H100.

The fields are created in the order the solver asks for them: that order places them in
Taichi's trees, which the generated code addresses (tests/kernel_fingerprints.py).
"""
import numpy as np
import taichi as ti
from taichi.lang import impl

from ..bound_model import is_finite
from ..layout import component, permute
from .clock import HALT, RUNNING
from .indexing import centred_gradients, int64_max, int64_min, linear_index, with_axis0
from .ordered import (HIGHEST_KEY, LOWEST_KEY, NO_BAD_CELL, fill_keys, from_ordered_bits, ordered_bits,
                      ordered_value)

REDUCTION_CHUNK = 64
REDUCTION_SLOTS = 1024  # addresses the chunks' atomics are spread over (chunk index mod slots)
FAN_IN = 32  # the diagnostics' f64 sums: partial sums a thread adds in order, at each level (_Partials)
# Skipping idle tiles, the check's thread reduces a run of at most this many cells along x (on
# an H200 at 10% wet, 4096^2, runs of 4 and of a whole tile of 16 measured alike: 0.050 and
# 0.048 ms a check).
CHECK_RUN = 4


def chunk_ranges(cells):
    """The thread grid of a chunked reduction: chunks of REDUCTION_CHUNK cells along x."""
    chunk = REDUCTION_CHUNK
    return [(0, (cells[0] + chunk - 1) // chunk)] + [(0, cells[d]) for d in range(1, len(cells))]


class StepCheck:
    """The primitives kernels (W from U, the ghost layers, the model's repair) and the check of
    a new state: CFL rate, first bad cell, the model's global values; finish_step hands the
    result to the device clock."""

    def __init__(self, n_globals: int):
        self.max_rate = ti.field(ti.i64, shape=())
        self.bad_cell = ti.field(ti.i64, shape=())  # NO_BAD_CELL between checks (combine_check)
        self.rate_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)
        self.key_slots = ti.Vector.field(n_globals, ti.i64, shape=REDUCTION_SLOTS)
        self.rate_slots.fill(0)
        self.bad_cell[None] = NO_BAD_CELL
        fill_keys(self.key_slots, LOWEST_KEY)
        # Rare events (a bad cell, a repaired one) go to slots as well, though their atomics
        # seldom run: Taichi turns an atomic on a 0-D field inside a parallel loop into a
        # thread-local value that every thread adds to the field when it ends, taken or not.
        # That was 1.08M atomics on one address per primitives launch of a model with repair()
        # (1.12 ms of it at 256^3 on an H200) and 262,144 per check.
        self.bad_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)
        fill_keys(self.bad_slots, NO_BAD_CELL)
        self.repair_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)  # cells the model's repair() changed

    def build(self, phys, cells, dx, U, W, copy_to_ghosts, clock, global_keys, global_values, idle):
        """The kernels: primitives, check_and_primitives, combine_check, finish_step. With
        skipping (`idle`, kernels/idle.py: enabled) the per-cell passes loop over the listed
        active tiles only, and the step's last kernel rebuilds the active set."""
        model_globals = list(phys.model.globals)
        listing = idle.enabled
        bad_slots, slots = self.bad_slots, REDUCTION_SLOTS
        rate_slots, key_slots, max_rate_key, bad_cell = self.rate_slots, self.key_slots, self.max_rate, self.bad_cell

        primitives, check_and_primitives = _cell_pass_kernels(self, phys, cells, dx, U, W, copy_to_ghosts, clock, idle)

        @ti.func
        def merge_slot(s):
            """Slot s into max_rate, bad_cell and the model's globals; the slot starts over."""
            ti.atomic_max(max_rate_key[None], rate_slots[s])
            rate_slots[s] = 0
            ti.atomic_min(bad_cell[None], bad_slots[s])
            bad_slots[s] = int64_max()
            for k in ti.static(range(len(model_globals))):
                ti.atomic_max(global_keys[None][k], key_slots[s][k])
                key_slots[s][k] = int64_min()

        @ti.func
        def start_merge():
            max_rate_key[None] = 0
            for k in ti.static(range(len(model_globals))):
                global_keys[None][k] = int64_min()

        @ti.func
        def publish_globals():
            for k in ti.static(range(len(model_globals))):
                global_values[None][k] = ordered_value(global_keys[None][k])

        @ti.kernel
        def combine_check() -> ti.types.vector(2, ti.i64):
            """Slots into max_rate and the model's globals; the slots start over. Returns (max
            rate as ordered bits, bad cell) and resets the bad cell: one read back per check."""
            start_merge()
            for s in range(slots):
                merge_slot(s)
            publish_globals()
            found = ti.Vector([max_rate_key[None], bad_cell[None]], ti.i64)
            bad_cell[None] = int64_max()
            return found

        @ti.kernel
        def finish_step():
            """combine_check's merge, then the device clock finishes the step (no read back).
            Once the clock has halted the check is skipped and the combined values stay."""
            running = clock.counts[HALT] == RUNNING
            if running:
                start_merge()
            for s in range(slots):
                merge_slot(s)
            if running:
                publish_globals()
            clock.finish(ordered_value(max_rate_key[None]), bad_cell[None], int64_max())
            bad_cell[None] = int64_max()
            if ti.static(listing):  # (the idle tiles' rebuild: one launch less a step)
                idle.spread_tiles()

        self.primitives, self.check_and_primitives = primitives, check_and_primitives
        self.combine_check, self.finish_step = combine_check, finish_step
        self._block_kernels = _block_kernels(self, clock, global_keys, start_merge, merge_slot, publish_globals, idle)

    # --- a grid of several blocks (kernels/exchange.py): the finish split around the reduction -----
    def merge_into(self, values) -> None:
        """(running, max rate key, bad cell, the model's global keys...) of this block's step
        written into `values`, the slots merged but nothing planned (finish_merged plans)."""
        self._block_kernels.merge_into(values)

    def finish_merged(self, values) -> None:
        """The device clock finishes the step with the values of every block: (running, max
        rate key, minus the first bad cell's index in the grid, global keys...), reduced by
        maximum, in a numpy array or a device tensor."""
        self._block_kernels.finish(values)

    def block_value_count(self) -> int:
        return 3 + self._block_kernels.global_key_field.n

    def global_key_values(self) -> np.ndarray:
        return self._block_kernels.global_key_field.to_numpy()

    def set_global_keys(self, keys) -> None:
        """The model's globals from their keys over every block (after a check)."""
        self._block_kernels.set_keys(np.asarray(keys, dtype=np.int64))

    def check(self) -> tuple:
        """W, the CFL rate and admissibility of U: (max rate, bad cell's linear index or None)."""
        self.check_and_primitives(1)
        found = self.combine_check()
        rate, bad = float(from_ordered_bits(int(found[0]))), int(found[1])
        return rate, (None if bad == NO_BAD_CELL else bad)

    def take_repair_count(self) -> int:
        """Cells changed by the model's repair() since the last call."""
        count = int(self.repair_slots.to_numpy().sum())
        self.repair_slots.fill(0)
        return count


def _cell_pass_kernels(check, phys, cells, dx, U, W, copy_to_ghosts, clock, idle):
    """The kernels that visit the cells: primitives (W from U, its ghost copies, the model's
    repair) and check_and_primitives (also the CFL rate, first bad cell and the model's globals
    into the check's slots). With skipping they loop over the listed active tiles only and the
    check marks the tiles that hold a non-idle cell (kernels/idle.py)."""
    dim = len(cells)
    model_globals = list(phys.model.globals)
    listing = idle.enabled
    bad_slots, rate_slots, key_slots, slots = check.bad_slots, check.rate_slots, check.key_slots, REDUCTION_SLOTS
    chunk = REDUCTION_CHUNK
    chunks = chunk_ranges(cells)
    chunk_shape = [b for _, b in chunks]
    rate_and_finite = _max_rate_func(phys, dx)

    @ti.func
    def max_rate(w):
        rate, _ = rate_and_finite(w)
        return rate
    # faces that bring values from outside (hydraulic inlets) add their ghosts' rate, else nothing
    ghost_rate = getattr(copy_to_ghosts, "ghost_rate", None)
    rated_ghosts = ghost_rate is not None
    repaired_now, repairs = _repair_func(phys, cells, U, check.repair_slots), "repair" in phys.model.functions
    repaired_primitive = repaired_primitive_func(phys, U, repaired_now)

    @ti.func
    def primitive_of(I):
        w = repaired_primitive(I)
        W[I] = w
        copy_to_ghosts(I, w)
        return w

    @ti.kernel
    def primitives():
        if ti.static(listing):
            for k in range(idle.listed_runs(1)):
                I, inside = idle.run(k, 1)
                if inside:
                    primitive_of(I)
        else:
            for I in ti.grouped(ti.ndrange(*cells)):
                primitive_of(I)

    def make_check_row(slot_of):
        @ti.func
        def check_row(J, scale: ti.template(), length: ti.template()):
            """W of `length` cells along x from cell scale * J[0] (the other indices J's);
            their largest rate, first bad cell and the model's globals' keys into slot
            slot_of(J); skipping, the tile marked if one of them is not idle. A row where
            repair() changed a cell is visited again (the `again` pass), W then read from the
            stored U: a later check (a checkpoint's, a resumed run's) finds the same W bit for
            bit, which W from repair()'s registers did not give (fast-math rounds them apart)."""
            rate = 0.0
            bad = int64_max()
            keys = ti.Vector([int64_min() for _ in ti.static(model_globals)] or [0], ti.i64)
            holding = 0
            repaired = 0
            for again in ti.static(range(2 if repairs else 1)):
                if ti.static(again == 0) or repaired != 0:
                    for i in range(component(J, 0) * scale, ti.min(component(J, 0) * scale + length, cells[0])):
                        I = with_axis0(J, i, dim)
                        w = phys.prim(U[I])
                        if ti.static(repairs and again == 0):
                            if repaired_now(I, w):
                                repaired = 1
                                continue
                        W[I] = w
                        copy_to_ghosts(I, w)
                        cell_rate, finite = rate_and_finite(w)
                        rate = ti.max(rate, cell_rate)
                        if ti.static(rated_ghosts):
                            rate = ti.max(rate, ghost_rate(I, w, max_rate))
                        if not (phys.admissible(w) & finite):  # (a NaN speed: the model fails here)
                            bad = ti.min(bad, linear_index(I, cells))
                        for k in ti.static(range(len(model_globals))):
                            keys[k] = ti.max(keys[k], ordered_bits(phys.global_value(model_globals[k], w)))
                        if ti.static(listing):
                            if not phys.idle(U[I]):
                                holding = 1
            slot = slot_of(J)
            ti.atomic_max(rate_slots[slot], ordered_bits(rate))
            if bad != int64_max():  # rare
                ti.atomic_min(bad_slots[slot], bad)
            for k in ti.static(range(len(model_globals))):
                ti.atomic_max(key_slots[slot][k], keys[k])
            if ti.static(listing):
                if holding != 0:
                    idle.mark(J)

        return check_row

    check_chunk = make_check_row(lambda J: ti.cast(linear_index(J, chunk_shape) % slots, ti.i32))
    check_tile_run = make_check_row(lambda J: ti.cast(linear_index(J, cells) % slots, ti.i32))
    run = idle.run_length(CHECK_RUN) if listing else 0

    @ti.kernel
    def check_and_primitives(always: ti.i32):
        """always = 0: only while the device clock runs (after a halted step U is unchanged,
        and a cell that repair() cannot mend would be counted again)."""
        checking = always != 0 or clock.counts[HALT] == RUNNING
        if ti.static(listing):  # (the check marks the tiles holding a non-idle cell)
            if checking:
                idle.checking()
            for k in range(idle.listed_runs(run)):
                if not checking:
                    continue
                I0, inside = idle.run(k, run)
                if inside:
                    check_tile_run(I0, 1, run)
        else:
            for chunk_index in ti.grouped(ti.ndrange(*chunks)):
                if not checking:
                    continue
                check_chunk(chunk_index, chunk, chunk)

    return primitives, check_and_primitives


def _max_rate_func(phys, dx):
    """ti.func w -> (the largest signal speed over the cell width along any axis (the CFL rate),
    whether every speed is finite). ti.max drops a NaN, so a model's NaN speed would leave a
    finite rate (and a run going on from a wrong state): the check makes such a cell a bad
    one, tested on the speeds' bits (fast math assumes no NaN)."""
    dim = len(dx)
    to_normal_W = [phys.W.rotation(d, True) for d in range(dim)]
    inv_dx = [1.0 / h for h in dx]

    @ti.func
    def rate_and_finite(w):
        rate = 0.0
        finite = True
        for d in ti.static(range(dim)):
            smin, smax = phys.signal_speeds(permute(w, to_normal_W[d]))
            rate = ti.max(rate, ti.max(ti.abs(smin), ti.abs(smax)) * inv_dx[d])
            finite = (finite & is_finite(ti.cast(smin, phys.dtype), phys.dtype)
                      & is_finite(ti.cast(smax, phys.dtype), phys.dtype))
        return rate, finite

    return rate_and_finite


def _repair_func(phys, cells, U, repair_slots):
    """repair_func counting in repair_slots, by the cell's linear index (a slot of REDUCTION_SLOTS)."""
    slots = REDUCTION_SLOTS

    @ti.func
    def count(I):
        ti.atomic_add(repair_slots[ti.cast(linear_index(I, cells) % slots, ti.i32)], ti.cast(1, ti.i64))

    return repair_func(phys, U, count)


def repair_func(phys, U, count=None):
    """ti.func (I, w = prim(U[I])) -> whether the model's repair() changed U[I] (w inadmissible),
    then count(I) (a ti.func; None: not counted). Models without repair(): never. The uniform
    grid's and the adaptive pool's (kernels/amr/cells.py) checks share it, so that blocks of one
    level repair as the uniform grid does."""
    repairs, counted = "repair" in phys.model.functions, count is not None

    @ti.func
    def repaired_now(I, w):
        changed = False
        if ti.static(repairs):
            if not phys.admissible(w):
                U[I] = phys.repair(U[I], w)
                if ti.static(counted):
                    count(I)
                changed = True
        return changed

    return repaired_now


def repaired_primitive_func(phys, U, repaired_now):
    """ti.func I -> W of cell I, after the model's repair() of U where W is inadmissible."""

    @ti.func
    def repaired_primitive(I):
        w = phys.prim(U[I])
        if repaired_now(I, w):
            w = phys.prim(U[I])
        return w

    return repaired_primitive


class _BlockKernels:
    """The kernels of StepCheck that only a decomposed grid launches (compiled on first use)."""

    def __init__(self, merge_into, finish, set_keys, global_key_field):
        self.merge_into, self._finish, self._set_keys = merge_into, finish, set_keys
        self.global_key_field = global_key_field

    def finish(self, values):
        self._finish(values)

    def set_keys(self, keys):
        self._set_keys(keys)


def _block_kernels(check, clock, global_keys, start_merge, merge_slot, publish_globals, idle):
    """merge_into (the check's slots, as finish_step merges them, without planning, written
    into an array: numpy, or a Taichi ndarray that stays on the device), finish (set the values reduced over
    the blocks, publish the globals, plan) and set_keys (after a host check). The values are
    (running, max rate key, bad cell, the model's global keys...); the keys' vector has one
    entry where the model has no globals, which nothing reads."""
    slots, max_rate_key, bad_cell = REDUCTION_SLOTS, check.max_rate, check.bad_cell
    n_globals = global_keys.n

    @ti.func
    def merged():
        running = clock.counts[HALT] == RUNNING
        if running:
            start_merge()
        for s in range(slots):
            merge_slot(s)
        out = ti.Vector.zero(ti.i64, 3 + n_globals)
        out[0] = ti.cast(running, ti.i64)
        out[1] = max_rate_key[None]
        out[2] = bad_cell[None]
        for k in ti.static(range(n_globals)):
            out[3 + k] = global_keys[None][k]
        return out

    @ti.kernel
    def merge_into(values: ti.types.ndarray(dtype=ti.i64, ndim=1)):
        out = merged()
        for k in ti.static(range(3 + n_globals)):
            values[k] = out[k]

    @ti.kernel
    def finish(values: ti.types.ndarray(dtype=ti.i64, ndim=1)):
        """values as merge_into writes them, the bad cell then negated (a reduction by maximum
        carries it), reduced over the blocks."""
        running = clock.counts[HALT] == RUNNING
        max_rate_key[None] = values[1]
        for k in ti.static(range(n_globals)):
            global_keys[None][k] = values[3 + k]
        if running:
            publish_globals()
        clock.finish(ordered_value(max_rate_key[None]), -values[2], int64_max())
        bad_cell[None] = int64_max()
        if ti.static(idle.enabled):
            idle.spread_tiles()

    @ti.kernel
    def set_keys(keys: ti.types.ndarray(dtype=ti.i64, ndim=1)):
        for k in ti.static(range(n_globals)):
            global_keys[None][k] = keys[k]
        publish_globals()

    return _BlockKernels(merge_into, finish, set_keys, global_keys)


class FallbackCounter:
    """Faces whose states or fluxes were replaced (the positivity fallback's first-order states,
    the positivity limiter's bounded fluxes, FORCE's Lax-Friedrichs ones: plan.counts_faces),
    counted per sweep thread (per warp with shuffles), not on one address: an atomic counter in
    the face kernel made it 2-5x slower on an H200 even where it never fired. The counters serve every sweep (axes run one
    after the other); the sum is taken on demand, through REDUCTION_SLOTS addresses like the
    other reductions (an atomic on fallback_total itself, which Taichi makes one per thread,
    took 0.80 ms at 384x192x192 on an H200)."""

    def __init__(self, plan):
        self.enabled = plan.counts_faces
        self.fallbacks = ti.field(ti.i32, shape=max(plan.fallback_counters(d) for d in range(plan.dim))
                                  if self.enabled else ())
        self.fallback_total = ti.field(ti.i64, shape=())
        self._kernels = None

    def _sum_kernels(self):
        """The slots (made at the first sum, after every kernel built before: none of them changes)
        and the two kernels of a sum."""
        if self._kernels is None:
            fallbacks, fallback_total, slots = self.fallbacks, self.fallback_total, REDUCTION_SLOTS
            fallback_slots = ti.field(ti.i64, shape=slots)

            @ti.kernel
            def sum_into_slots():
                for I in ti.grouped(fallbacks):
                    if fallbacks[I] != 0:
                        ti.atomic_add(fallback_slots[ti.cast(linear_index(I, fallbacks.shape) % slots, ti.i32)],
                                      ti.cast(fallbacks[I], ti.i64))

            @ti.kernel
            def combine_slots():
                for s in range(slots):
                    if fallback_slots[s] != 0:
                        ti.atomic_add(fallback_total[None], fallback_slots[s])
                        fallback_slots[s] = 0

            self._kernels = (sum_into_slots, combine_slots)
        return self._kernels

    def take(self) -> int:
        """Faces replaced since the last call."""
        if not self.enabled:
            return 0
        self.sum_into_total()
        self.fallbacks.fill(0)
        taken = int(self.fallback_total[None])
        self.fallback_total[None] = 0  # (zero between takes: kernels/diagnostic_rows.py sums into it too)
        return taken

    def sum_into_total(self):
        """Add the counters into fallback_total (zero before), without reading it back."""
        for kernel in self._sum_kernels():
            kernel()

    def resident_bytes(self) -> int:
        return int(np.prod(self.fallbacks.shape)) * 4


class Diagnostics:
    """Totals of U (f64), extremes of W and the model's reduced derived fields, over the
    cells. Its results name their own columns (`columns`, in the order of `values`)."""

    def __init__(self, phys):
        n_conserved, n_primitive = phys.U.n, phys.W.n
        self.phys = phys
        self.totals = ti.Vector.field(n_conserved, ti.f64, shape=())
        self.w_min = ti.Vector.field(n_primitive, ti.i64, shape=())
        self.w_max = ti.Vector.field(n_primitive, ti.i64, shape=())
        # (total_slots and reduced_sum_slots are unused since _Partials sums in a fixed order; they
        # stay: without them the tree they are in would change, and the code of every kernel that
        # reads its other fields: tests/kernel_fingerprints.py)
        self.total_slots = ti.Vector.field(n_conserved, ti.f64, shape=REDUCTION_SLOTS)
        self.low_slots = ti.Vector.field(n_primitive, ti.i64, shape=REDUCTION_SLOTS)
        self.high_slots = ti.Vector.field(n_primitive, ti.i64, shape=REDUCTION_SLOTS)
        # The model's reduced derived fields, (field, how) for each reduction of each field:
        # max/min as ordered keys, sums (and the squares of rms) in f64.
        self.reduced = [(name, how) for name, hows in phys.model.reductions.items() for how in hows]
        width = max(len(self.reduced), 1)
        self.reduced_keys = ti.Vector.field(width, ti.i64, shape=())
        self.reduced_sums = ti.Vector.field(width, ti.f64, shape=())
        self.reduced_key_slots = ti.Vector.field(width, ti.i64, shape=REDUCTION_SLOTS)
        self.reduced_sum_slots = ti.Vector.field(width, ti.f64, shape=REDUCTION_SLOTS)
        fill_keys(self.low_slots, HIGHEST_KEY)
        fill_keys(self.high_slots, LOWEST_KEY)
        identities = [HIGHEST_KEY if how == "min" else LOWEST_KEY for _, how in self.reduced] or [0]
        self.reduced_key_slots.from_numpy(np.tile(np.array(identities, dtype=np.int64), (REDUCTION_SLOTS, 1)))

    def columns(self) -> list:
        """Column names of `values`: total_<U component>, min_/max_<W component>, <how>_<field>."""
        model = self.phys.model
        names = [f"total_{c}" for c in model.conserved.component_names()]
        for c in model.primitive.component_names():
            names += [f"min_{c}", f"max_{c}"]
        return names + [f"{how}_{name}" for name, how in self.reduced]

    def build(self, cells, U, W, dx):
        """What the kernels read; W (current, with ghost layers) serves the derived fields of
        gradients. The kernels and their partial sums are made at the first reduction (fields
        made after every kernel built before: none of them changes)."""
        self.cell_count = int(np.prod(cells))
        self._inputs = (cells, U, W, dx)
        self._kernels = None

    def launch_reduction(self):
        """Reduce the cells into totals, w_min, w_max, reduced_keys and reduced_sums, without
        reading them back (kernels/diagnostic_rows.py records them on the device)."""
        if self._kernels is None:
            self._kernels = _diagnostics_kernels(self, *self._inputs)
        for kernel in self._kernels:
            kernel()

    def reduce(self, volume: float, blocks=None):
        """(f64 totals of U times the cell volume, min of W, max of W, {column: reduced field}),
        over every block of a decomposed grid (`blocks`: its halo, kernels/halo.py)."""
        self.launch_reduction()
        raw = {"totals": self.totals.to_numpy()[None], "low": self.w_min.to_numpy()[None],
               "high": self.w_max.to_numpy()[None], "keys": self.reduced_keys.to_numpy()[None],
               "sums": self.reduced_sums.to_numpy()[None]}
        return self.finish(raw, volume, blocks)[0]

    def finish(self, raw: dict, volume: float, blocks=None) -> list:
        """Rows of reduced values as `reduce` returns them, from what the kernels left for each
        row (arrays with a leading row axis: totals, low, high, keys, sums), over every block."""
        combine = blocks.combine if blocks is not None else (lambda values, how: values)
        keys, sums = np.array(raw["keys"]), combine(raw["sums"], "sum")
        for r, (_, how) in enumerate(self.reduced):
            if how in ("max", "min"):
                keys[:, r] = combine(np.ascontiguousarray(keys[:, r]), how)
        keys = from_ordered_bits(keys)
        count = combine(np.array([self.cell_count], dtype=np.int64), "sum")[0]
        totals = combine(raw["totals"], "sum") * volume
        low, high = from_ordered_bits(combine(raw["low"], "min")), from_ordered_bits(combine(raw["high"], "max"))
        rows = []
        for row in range(len(totals)):
            finish = {"sum": lambda r: sums[row, r] * volume, "rms": lambda r: np.sqrt(sums[row, r] / count)}
            derived = {f"{how}_{name}": float(finish[how](r) if how in finish else keys[row, r])
                       for r, (name, how) in enumerate(self.reduced)}
            rows.append((totals[row], low[row], high[row], derived))
        return rows

    def values(self, volume: float, blocks=None) -> list:
        """One diagnostics row's reduced values, in the order of `columns`."""
        return self.as_values(self.reduce(volume, blocks))

    @staticmethod
    def as_values(reduced) -> list:
        """(totals, w_min, w_max, derived) as a row's values, in the order of `columns`."""
        totals, w_min, w_max, derived = reduced
        row = [float(x) for x in totals]
        for lo, hi in zip(w_min, w_max):
            row += [float(lo), float(hi)]
        return row + list(derived.values())


class _Partials:
    """The sums of a diagnostics reduction in a fixed order, so that two runs write the same
    totals bit for bit: each x-chunk's sum stored at its own index (no atomic), then levels of
    FAN_IN: entry j of a level of n the sum of entries j, j + n, j + 2n, ... of the level before
    (at most FAN_IN, in that order; neighbouring threads read neighbouring addresses), down to
    one. Atomic adds of f64 into slots and into the result added in whatever order the threads
    came (on one CPU rank 11 of 36 rows of a Sedov run were equal between two runs). The
    min/max keys stay atomic: integers, exact in any order.

    The levels are fields made at the first reduction, after every kernel built before: none of
    those changes. (Ndarrays, passed to the kernels, would make no tree, but one freed after a
    newer Simulation restarted Taichi crashed the process.) A run takes the face fallbacks'
    count before its first reduction (kernels/diagnostic_rows.py too), so that the fallback
    counter's slots are made before these, as they were before these existed.
    """

    def __init__(self, chunk_count: int, n_conserved: int, width: int):
        self.sizes = level_sizes(chunk_count)
        self.totals = [ti.Vector.field(n_conserved, ti.f64, shape=n) for n in self.sizes]
        self.sums = [ti.Vector.field(width, ti.f64, shape=n) for n in self.sizes]


def level_sizes(count: int) -> list[int]:
    """The sizes of the levels of a fixed-order sum of `count` terms: count, count / FAN_IN
    (rounded up), ..., 1."""
    sizes = [count]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // FAN_IN))
    return sizes

def _diagnostics_kernels(diag: Diagnostics, cells, U, W, dx):
    """(reduce each x-chunk, sum the chunks in a fixed order, merge into the results)."""
    chunk_shape = [b for _, b in chunk_ranges(cells)]
    partials = _Partials(int(np.prod(chunk_shape)), diag.phys.U.n, max(len(diag.reduced), 1))
    return (_chunk_kernel(diag, partials, cells, U, W, dx),) + _sum_kernels(diag, partials)


def _chunk_kernel(diag: Diagnostics, partials: _Partials, cells, U, W, dx):
    """The kernel that reduces each x-chunk: its sums into its own partials, its min/max keys
    into the slots."""
    phys, dim = diag.phys, len(cells)
    gradient_fields, least_width, dtype = phys.model.gradient_fields, min(dx), phys.dtype
    n_conserved, n_primitive = phys.U.n, phys.W.n
    reduced = diag.reduced
    low_slots, high_slots, key_slots = diag.low_slots, diag.high_slots, diag.reduced_key_slots
    chunk_totals, chunk_sums = partials.totals[0], partials.sums[0]
    slots, chunk = REDUCTION_SLOTS, REDUCTION_CHUNK
    chunks = chunk_ranges(cells)
    chunk_shape = [b for _, b in chunks]

    def derived_value(name, I, w):
        """A reduced field's value at cell I (w = prim(U[I])); a field of gradients reads W
        around it (compile-time Python: nothing here for models without such fields)."""
        if name in gradient_fields:
            return phys.derived(name, impl.subscript(None, W, I), centred_gradients(W, I, dx, n_primitive, dtype),
                                least_width)
        return phys.derived(name, w)

    @ti.kernel
    def diagnostics():
        """f64 totals of U and min/max of prim(U), reduced in registers per x-chunk: the sums
        stored at the chunk's index, the keys into the slots (one address per quantity
        serialised the chunks' atomics)."""
        for chunk_index in ti.grouped(ti.ndrange(*chunks)):
            total = ti.Vector([0.0] * n_conserved, ti.f64)
            low = ti.Vector([int64_max()] * n_primitive, ti.i64)
            high = ti.Vector([int64_min()] * n_primitive, ti.i64)
            keys = _key_identities(reduced)
            sums = ti.Vector([0.0] * max(len(reduced), 1), ti.f64)
            for i in range(component(chunk_index, 0) * chunk, ti.min(component(chunk_index, 0) * chunk + chunk,
                                                                       cells[0])):
                u = U[with_axis0(chunk_index, i, dim)]
                total += ti.cast(u, ti.f64)
                w = phys.prim(u)
                for k in ti.static(range(n_primitive)):
                    key = ordered_bits(w[k])
                    low[k] = ti.min(low[k], key)
                    high[k] = ti.max(high[k], key)
                for r in ti.static(range(len(reduced))):
                    value = derived_value(reduced[r][0], with_axis0(chunk_index, i, dim), w)
                    if ti.static(reduced[r][1] == "sum"):
                        sums[r] += ti.cast(value, ti.f64)
                    elif ti.static(reduced[r][1] == "rms"):
                        sums[r] += ti.cast(value, ti.f64) * ti.cast(value, ti.f64)
                    elif ti.static(reduced[r][1] == "max"):
                        keys[r] = ti.max(keys[r], ordered_bits(value))
                    else:
                        keys[r] = ti.min(keys[r], ordered_bits(value))
            index = ti.cast(linear_index(chunk_index, chunk_shape), ti.i32)  # (chunks < 2^31: 32-bit ranges)
            chunk_totals[index] = total
            chunk_sums[index] = sums
            slot = index % slots
            for k in ti.static(range(n_primitive)):
                ti.atomic_min(low_slots[slot][k], low[k])
                ti.atomic_max(high_slots[slot][k], high[k])
            _merge_keys(reduced, key_slots[slot], keys)

    return diagnostics


@ti.func
def _key_identities(reduced: ti.template()):
    """Start values of the derived keys: the largest for a min, the smallest for a max."""
    return ti.Vector([int64_max() if how == "min" else int64_min() for _, how in reduced] or [0], ti.i64)


@ti.func
def _merge_keys(reduced: ti.template(), into: ti.template(), keys):
    """Atomic min or max, as each derived key asks, of keys into the vector `into` (a field
    element, by reference)."""
    for r in ti.static(range(len(reduced))):
        if ti.static(reduced[r][1] == "max"):
            ti.atomic_max(into[r], keys[r])
        elif ti.static(reduced[r][1] == "min"):
            ti.atomic_min(into[r], keys[r])


def _sum_kernels(diag: Diagnostics, partials: _Partials):
    """(the levels of the fixed-order sums; the last level into the results, and the slots' keys
    merged): the results start over, and so do the slots."""
    n_conserved, n_primitive, reduced = diag.phys.U.n, diag.phys.W.n, diag.reduced
    width = max(len(reduced), 1)
    totals, w_min, w_max, reduced_keys, reduced_sums = (diag.totals, diag.w_min, diag.w_max, diag.reduced_keys,
                                                        diag.reduced_sums)
    low_slots, high_slots, key_slots = diag.low_slots, diag.high_slots, diag.reduced_key_slots
    sizes, level_totals, level_sums = partials.sizes, partials.totals, partials.sums
    slots, last = REDUCTION_SLOTS, len(partials.sizes) - 1

    @ti.kernel
    def sum_partials():
        """Each level from the one before: entry j of n sums j, j + n, ... (a thread, in order)."""
        for k in ti.static(range(1, len(sizes))):
            for j in range(sizes[k]):
                total = ti.Vector([0.0] * n_conserved, ti.f64)
                sums = ti.Vector([0.0] * width, ti.f64)
                for m in range(FAN_IN):
                    c = j + m * sizes[k]
                    if c < sizes[k - 1]:
                        total += ti.static(level_totals[k - 1])[c]
                        sums += ti.static(level_sums[k - 1])[c]
                ti.static(level_totals[k])[j] = total
                ti.static(level_sums[k])[j] = sums

    @ti.kernel
    def combine_diagnostics():
        """The last level's sum into the results; the slots' keys merged (atomics on integers);
        the slots start over."""
        totals[None] = ti.static(level_totals[last])[0]
        reduced_sums[None] = ti.static(level_sums[last])[0]
        w_min[None] = ti.Vector([int64_max()] * n_primitive, ti.i64)
        w_max[None] = ti.Vector([int64_min()] * n_primitive, ti.i64)
        reduced_keys[None] = _key_identities(reduced)
        for s in range(slots):
            for k in ti.static(range(n_primitive)):
                ti.atomic_min(w_min[None][k], low_slots[s][k])
                ti.atomic_max(w_max[None][k], high_slots[s][k])
            _merge_keys(reduced, reduced_keys[None], key_slots[s])
            low_slots[s] = ti.Vector([int64_max()] * n_primitive, ti.i64)
            high_slots[s] = ti.Vector([int64_min()] * n_primitive, ti.i64)
            key_slots[s] = _key_identities(reduced)

    return sum_partials, combine_diagnostics
