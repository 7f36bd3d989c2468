"""Progress bar for long runs: simulated time, ETA and cell-updates per second."""
from __future__ import annotations

import time


class Progress:
    """A rich progress bar over simulated time; a no-op when disabled (--quiet)."""

    def __init__(self, end_time: float, cells: int, enabled: bool = True, refresh_s: float = 0.25,
                 first_step: int = 0, first_time: float = 0.0):
        self.end_time, self.cells, self.enabled, self.refresh_s = end_time, cells, enabled, refresh_s
        # where a restarted run starts: its rate counts only the steps it takes
        self.first_step, self.first_time = first_step, first_time
        self._bar = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self._bar = RichProgress(TextColumn("t = {task.fields[t]:.4g} / {task.total:.4g}"), BarColumn(),
                                     TextColumn("step {task.fields[step]}"),
                                     TextColumn("{task.fields[rate]:.3g} cell-updates/s"),
                                     TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                     transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("run", total=self.end_time, completed=self.first_time,
                                            t=self.first_time, step=self.first_step, rate=0.0)
        self._start = self._last = time.perf_counter()
        self._steps0 = self.first_step
        return self

    def update(self, t: float, step: int):
        if not self._bar:
            return
        now = time.perf_counter()
        if now - self._last < self.refresh_s and t < self.end_time:
            return
        rate = self.cells * (step - self._steps0) / max(now - self._last, 1e-9)
        self._last, self._steps0 = now, step
        self._bar.update(self._task, completed=t, t=t, step=step, rate=rate)

    def __exit__(self, *exc):
        if self._bar:
            self._bar.__exit__(*exc)
        return False
