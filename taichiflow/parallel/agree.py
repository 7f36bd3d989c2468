"""Decisions every rank must take alike although each sees its own clock and signals: a
checkpoint due by wall time, a stop asked by a signal or --max-wall-time (one rank alone
taking it would leave the others waiting in the next collective)."""
from __future__ import annotations

from .comm import world


def agreed(flag: bool) -> bool:
    """True on every rank where it is true on any."""
    return world().any(flag)


def agreed_reason(reason: str | None) -> str | None:
    """The first rank's reason among the ranks that have one, on every rank (None: none has)."""
    comm = world()
    if comm.size == 1:
        return reason
    return next((r for r in comm.world.allgather(reason) if r), None)
