"""Callbacks of a Simulation: every N steps, at output times; any of them may stop the run.

The time loop runs on the device clock in batches of steps; a callback every N steps cuts
the batches at the multiples of N (run/driver.py's step limit), so it sees exactly those
steps, and a case without callbacks steps as the command line does.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["STOP", "Callbacks", "Stop"]


class _StopSentinel:
    """What a callback returns to stop the run (taichiflow.STOP)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "taichiflow.STOP"


STOP = _StopSentinel()


class Stop(Exception):
    """Raised by a callback to stop the run cleanly after the current step; the message is
    the reason (Simulation.stop_reason)."""


Callback = Callable[[Any], Any]


class Every(NamedTuple):
    steps: int
    fn: Callback


class Callbacks:
    """The callbacks of one Simulation, and whether one asked to stop."""

    def __init__(self):
        self.every: list[Every] = []
        self.outputs: list[Callback] = []

    def add_every(self, steps: int, fn: Callback) -> None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"every(n_steps, fn): n_steps must be a positive integer, got {steps!r}")
        self.every.append(Every(steps, checked(fn)))

    def add_at_outputs(self, fn: Callback) -> None:
        self.outputs.append(checked(fn))

    def next_step(self, step: int) -> int:
        """The next step after `step` at which a callback is due (0: none)."""
        if not self.every:
            return 0
        return min((step // e.steps + 1) * e.steps for e in self.every)

    def fire_every(self, sim, step: int) -> str | None:
        """Call the callbacks due at `step`; the reason to stop, or None."""
        return fire([e.fn for e in self.every if step % e.steps == 0], sim)

    def fire_outputs(self, sim) -> str | None:
        return fire(self.outputs, sim)


def checked(fn: Callback) -> Callback:
    if not callable(fn):
        raise TypeError(f"a callback must be callable as fn(sim), got {type(fn).__name__}")
    return fn


def fire(fns: list[Callback], sim) -> str | None:
    """Call fns(sim) in order; the first that returns STOP or raises Stop ends the calls and
    gives the reason."""
    for fn in fns:
        try:
            result = fn(sim)
        except Stop as stop:
            return str(stop) or f"{name_of(fn)} raised taichiflow.Stop"
        if result is STOP:
            return f"{name_of(fn)} returned taichiflow.STOP"
    return None


def name_of(fn: Callback) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def reached(t: float, target: float) -> bool:
    """The device clock's test of a target time reached (kernels/clock.py)."""
    return not t < target * (1 - 1e-14) if math.isfinite(target) else False
