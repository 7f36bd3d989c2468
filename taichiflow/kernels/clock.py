"""The time step on the device, so that a run of steps needs no read back between them.

Reading the check's result back after every step (the rate for the next dt, a bad cell)
drains the GPU's queue while the host reads it and launches the next step: 4-6% of a 256^3
step on an H200 (docs/performance.md). Here the check's combine kernel finishes each step on
the device instead: it advances t, records a bad cell, and plans the next dt with the same
f64 operations as the host loop did, so the steps are the same; the sweeps read dt and t
from these fields and do nothing once the clock has halted (a bad state, the target time or
step count reached, a collapsed dt), which keeps U0, the state before a bad step, for the
host to retry or write out. The host reads the clock once per batch of steps.
"""

from typing import NamedTuple

import taichi as ti

# times (f64): the time, the planned dt, the dt of the last step and the time before it, the
# target time, cfl, the least admissible dt, the rate the dt came from
T, DT, LAST_DT, T_BEFORE, T_TARGET, CFL, DT_FLOOR, RATE = range(8)
# counts (i64): why the clock halted, steps taken, the step limit (0: none), the bad cell
HALT, STEPS, MAX_STEPS, BAD = range(4)
RUNNING, DONE, BAD_STATE, DT_COLLAPSED = range(4)


class ClockReading(NamedTuple):
    t: float
    steps: int
    last_dt: float
    t_before: float
    halt: int
    bad: int
    dt: float
    rate: float


@ti.data_oriented
class DeviceClock:
    def __init__(self, dtype):
        self.dtype = dtype
        self.times = ti.field(ti.f64, shape=8)
        self.counts = ti.field(ti.i64, shape=4)
        self.counts[HALT] = DONE

    @ti.func
    def stage(self, time_fraction):
        """(dt, the stage's time, whether the clock runs) for a stage at t + time_fraction dt."""
        dt = self.times[DT]
        return (ti.cast(dt, self.dtype), ti.cast(self.times[T] + time_fraction * dt, self.dtype),
                self.counts[HALT] == RUNNING)

    @ti.func
    def plan(self, rate):
        """The next dt from the maximum rate (signal speed over dx), or halt: the host loop's
        test and formula, in the same f64 operations."""
        t, target = self.times[T], self.times[T_TARGET]
        limit = self.counts[MAX_STEPS]
        self.times[RATE] = rate  # (also where the clock halts: the driver's next advance starts from it)
        if not t < target * (1 - 1e-14) or (limit != 0 and self.counts[STEPS] >= limit):
            self.counts[HALT] = DONE
        else:
            dt = ti.cast(ti.math.inf, ti.f64)  # f64 in f32 runs too: the host loop's f64 dt
            if rate > 0.0:
                dt = self.times[CFL] / rate
            dt = ti.min(dt, target - t)
            self.times[DT] = dt
            if not (dt < ti.math.inf and dt > self.times[DT_FLOOR]):
                self.counts[HALT] = DT_COLLAPSED

    @ti.func
    def finish(self, rate, bad, no_bad):
        """After a step and the check of its new state: advance t, then halt on a bad cell or
        plan the next step."""
        if self.counts[HALT] == RUNNING:
            t, dt, target = self.times[T], self.times[DT], self.times[T_TARGET]
            self.times[T_BEFORE] = t
            self.times[LAST_DT] = dt
            self.times[T] = t + dt if dt < target - t else target
            self.counts[STEPS] += 1
            if bad != no_bad:
                self.counts[HALT] = BAD_STATE
                self.counts[BAD] = bad
            else:
                self.plan(rate)

    @ti.kernel
    def set(self, t: ti.f64, dt: ti.f64):
        """A step of dt from t chosen by the host (a retried step)."""
        self.times[T] = t
        self.times[DT] = dt
        self.counts[HALT] = RUNNING

    @ti.kernel
    def start(self, t: ti.f64, target: ti.f64, cfl: ti.f64, dt_floor: ti.f64, steps: ti.i64, max_steps: ti.i64,
              rate: ti.f64):
        """Hand the time loop to the device, from a checked state whose maximum rate is rate."""
        self.times[T] = t
        self.times[T_TARGET] = target
        self.times[CFL] = cfl
        self.times[DT_FLOOR] = dt_floor
        self.counts[STEPS] = steps
        self.counts[MAX_STEPS] = max_steps
        self.counts[HALT] = RUNNING
        self.plan(rate)

    @ti.kernel
    def _read(self) -> ti.types.vector(12, ti.f64):
        return ti.Vector([self.times[k] for k in range(8)] + [ti.cast(self.counts[k], ti.f64) for k in range(4)])

    def read(self) -> ClockReading:
        """One read back (a synchronisation)."""
        v = [float(x) for x in self._read()]
        return ClockReading(t=v[T], steps=int(v[8 + STEPS]), last_dt=v[LAST_DT], t_before=v[T_BEFORE],
                            halt=int(v[8 + HALT]), bad=int(v[8 + BAD]), dt=v[DT], rate=v[RATE])
