"""Diagnostics rows recorded on the device after the steps they describe, read back a batch
at a time.

A row after every step ([output] diagnostics_every = 1, the default) read back on its own cost
a run a batch of one step between read backs, and a dozen small read backs per row (each a
synchronisation): on an H200 a 384x192x192 two-phase run stepped at 1.33e9 cell-updates/s
with a row every step and at 1.79e9 with one every 16 steps (docs/performance.md). Here the
host launches the reductions after each step that is due for a row, without waiting, and a
record kernel copies what they reduced, the clock's t, dt and step count and the step's
counters (face fallbacks, repaired cells, active tiles) into the next of ROWS rows. The host
reads the rows once per batch of steps.

A step the clock did not take (it halted earlier in the batch, at an output time) or that
left a bad cell (the host redoes it) records nothing: the record kernel checks the clock's
step count against the last row's and the row interval, and the counters go on counting until
a row takes them. The values are those the
host path (Outputs.diagnostics_row) reads for the same state: the same kernels reduce them.
"""
import numpy as np
import taichi as ti

from .clock import BAD_STATE, HALT, LAST_DT, STEPS, T

ROWS = 16  # rows held between two read backs: at least the steps of a batch (run/driver.py)


@ti.data_oriented
class DeviceRows:
    """The rows of one solver's diagnostics (kernels/reductions.py: Diagnostics), its counters
    and clock; `launch()` after a step, `take()` to read the rows recorded since the last take.

    A row is one f64 vector, read back with the others in one copy: t, dt, the step, face
    fallbacks, repaired cells and active tiles (integers below 2^53, exact in f64), the totals
    of U, then the extremes of W and the min/max keys of the model's reduced fields as their
    int64 order-preserving bits (bit-cast, not converted), and the sums of its reduced fields."""

    def __init__(self, diagnostics, clock, fallback_counter, step_check, idle):
        self.diagnostics = diagnostics
        self.fallback_counter = fallback_counter
        self._launched = 0  # launches since the last take: none, no row, and take() reads nothing back
        n_conserved, n_primitive = diagnostics.totals.n, diagnostics.w_min.n
        width = diagnostics.reduced_keys.n
        parts = {"head": 6, "totals": n_conserved, "low": n_primitive, "high": n_primitive, "keys": width,
                 "sums": width}
        self.columns, first = {}, 0
        for name, size in parts.items():
            self.columns[name] = slice(first, first + size)
            first += size
        self.rows = ti.Vector.field(first, ti.f64, shape=ROWS)
        self.count = ti.field(ti.i64, shape=())         # rows recorded since the last take
        self.last_step = ti.field(ti.i64, shape=())     # the step of the last row recorded
        self.recorded = ti.field(ti.i32, shape=())      # whether the last record kernel recorded
        self.repair_total = ti.field(ti.i64, shape=())
        self.active_total = ti.field(ti.i64, shape=())
        self.last_step[None] = -1
        self._kernels = _row_kernels(self, diagnostics, clock, fallback_counter, step_check, idle)

    def launch(self, every: int):
        """After a step (no read back): reduce its state and record a row if the clock took it
        and its number is a multiple of `every` (the clock may have halted earlier in the batch)."""
        reduce, record, clear = self._kernels
        self._launched += 1
        reduce()  # (the counters first: their slots are made before the diagnostics' partial sums)
        self.diagnostics.launch_reduction()
        record(every)
        clear()

    def take(self) -> dict:
        """The rows recorded since the last take (two read backs; one without rows, none without
        a launch since the last take: a script stepping one step at a time), as numpy
        arrays of one row each: t, dt, step, fallbacks, repairs, active (tiles), totals, low,
        high, keys, sums (the last five as Diagnostics reduces them, before their finish on the
        host)."""
        n = int(self.count[None]) if self._launched else 0  # (no launch since the last take: no read back)
        self._launched = 0
        if n:
            self.count[None] = 0
        rows = self.rows.to_numpy()[:n] if n else np.zeros((0, self.rows.n))
        head, column = rows[:, self.columns["head"]], self.columns
        bits = lambda name: np.ascontiguousarray(rows[:, column[name]]).view(np.int64)  # noqa: E731
        return {"t": head[:, 0], "dt": head[:, 1], "step": head[:, 2].astype(np.int64),
                "fallbacks": head[:, 3].astype(np.int64), "repairs": head[:, 4].astype(np.int64),
                "active": head[:, 5].astype(np.int64), "totals": rows[:, column["totals"]], "low": bits("low"),
                "high": bits("high"), "keys": bits("keys"), "sums": rows[:, column["sums"]]}

    def forget_before(self, step: int):
        """Steps up to `step` are not recorded (the host wrote that step's row itself)."""
        self.last_step[None] = step


def _row_kernels(rows: DeviceRows, diagnostics, clock, fallback_counter, step_check, idle):
    """(count: the counters' sums; record: the row; clear: the counters a row took start over)."""
    packed, count, last_step, recorded = rows.rows, rows.count, rows.last_step, rows.recorded
    n_conserved, n_primitive, width = diagnostics.totals.n, diagnostics.w_min.n, diagnostics.reduced_keys.n
    repair_slots, repair_total, active_total = step_check.repair_slots, rows.repair_total, rows.active_total
    fallbacks, fallback_total = fallback_counter.fallbacks, fallback_counter.fallback_total
    counting_fallbacks, skipping = fallback_counter.enabled, idle.enabled
    active = idle.active if skipping else None
    clock_times, clock_counts = clock.times, clock.counts
    totals, w_min, w_max = diagnostics.totals, diagnostics.w_min, diagnostics.w_max
    reduced_keys, reduced_sums = diagnostics.reduced_keys, diagnostics.reduced_sums

    @ti.kernel
    def count_repairs():
        for s in repair_slots:
            if repair_slots[s] != 0:
                ti.atomic_add(repair_total[None], repair_slots[s])

    @ti.kernel
    def count_active():
        for I in ti.grouped(active):
            if active[I] != 0:
                ti.atomic_add(active_total[None], ti.cast(1, ti.i64))

    def reduce():
        count_repairs()
        if counting_fallbacks:
            fallback_counter.sum_into_total()
        if skipping:
            count_active()

    @ti.func
    def as_f64(value):
        return ti.cast(value, ti.f64)

    @ti.kernel
    def record(every: ti.i64):
        step = clock_counts[STEPS]
        recorded[None] = 0
        if clock_counts[HALT] != BAD_STATE and step > last_step[None] and step % every == 0 and count[None] < ROWS:
            r = ti.cast(count[None], ti.i32)
            head = [clock_times[T], clock_times[LAST_DT], as_f64(step), as_f64(fallback_total[None]),
                    as_f64(repair_total[None]), as_f64(active_total[None])]
            values = (head + [totals[None][k] for k in range(n_conserved)]
                      + [ti.bit_cast(w_min[None][k], ti.f64) for k in range(n_primitive)]
                      + [ti.bit_cast(w_max[None][k], ti.f64) for k in range(n_primitive)]
                      + [ti.bit_cast(reduced_keys[None][k], ti.f64) for k in range(width)]
                      + [reduced_sums[None][k] for k in range(width)])
            packed[r] = ti.Vector(values, ti.f64)
            count[None] = r + 1
            last_step[None] = step
            recorded[None] = 1
        fallback_total[None] = 0   # (the fields still hold what no row took: summed again next time)
        repair_total[None] = 0
        active_total[None] = 0

    @ti.kernel
    def clear_repairs():
        for s in repair_slots:
            if recorded[None] != 0:
                repair_slots[s] = 0

    @ti.kernel
    def clear_fallbacks():
        for I in ti.grouped(fallbacks):
            if recorded[None] != 0:
                fallbacks[I] = 0

    def clear():
        clear_repairs()
        if counting_fallbacks:
            clear_fallbacks()

    return reduce, record, clear
