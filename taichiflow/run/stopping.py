"""When a run stops early or writes: signals, the wall-time limit, output and checkpoint times."""
from __future__ import annotations

import math
import signal
import time as wallclock


class RunStopped(Exception):
    """A signal or the wall-time limit asked the run to stop after the current step."""


class WallLimit:
    """`--max-wall-time` counted from the command's launch, as a batch job's limit is: the
    build (compiling, the initial state or the checkpoint read) spends it too, so a limit set a
    margin below the job's leaves that margin for the final checkpoint and snapshot."""

    def __init__(self, seconds: float, launched: float | None = None):
        self.seconds = seconds
        self.launched = wallclock.perf_counter() if launched is None else launched

    def spent(self) -> float:
        return wallclock.perf_counter() - self.launched

    def note(self) -> str:
        """run.log's line before the run starts: what the build took of the limit (a limit spent
        before the first step stops the run after that step, with its checkpoint)."""
        spent = self.spent()
        return (f"--max-wall-time {self.seconds:g} s: {spent:.1f} s spent before the first step, "
                f"{max(self.seconds - spent, 0.0):.1f} s left")


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


def output_times(end: float, interval: float) -> list[float]:
    """The snapshot times of [output] interval up to the end time (always the end time)."""
    if interval <= 0:
        return [end]
    n = int(math.floor(end / interval * (1 + 1e-12)))
    times = [k * interval for k in range(1, n + 1) if k * interval < end * (1 - 1e-12)]
    return times + [end]


def checkpoint_due(t: float, last_dt: float, interval: float, wall: float, since_last_s: float) -> bool:
    """Whether the steps that ended at t, last_dt long together, crossed a multiple of [output]
    checkpoint_interval, or checkpoint_wall seconds have passed since the last checkpoint."""
    due = False
    if interval > 0:
        due = math.floor(t / interval * (1 + 1e-12)) > math.floor((t - last_dt) / interval * (1 + 1e-12))
    if wall > 0 and since_last_s >= wall:
        due = True
    return due
