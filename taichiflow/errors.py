"""The errors a user can cause, and the did-you-mean hint their messages share.

One module that imports nothing from the package (and not Taichi), so that any module may
raise any of them without an import circle: case.py, model/, the registry, the numerics,
the run and the checkpoints all import from here.
"""
from __future__ import annotations

import difflib

__all__ = ["CaseError", "CheckpointError", "ModelError", "OutputError", "RunInterrupted", "SimulationError",
           "UnknownNameError", "did_you_mean", "suggest"]


class CaseError(ValueError):
    """An invalid case file or --set override; the message starts with where it is."""


class ModelError(ValueError):
    """A mistake in a model file; the message names the file, the function and the cause."""


class SimulationError(RuntimeError):
    """The run stopped on a bad state; the message says where and what to change."""


class RunInterrupted(SimulationError):
    """The run stopped on request (signal, wall time) after writing a checkpoint."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: corrupt, or from another model, grid or precision."""


class OutputError(RuntimeError):
    """An output folder a run may not use: not a folder, or holding another run's results."""


class UnknownNameError(KeyError, ValueError):
    """A scheme name the registry does not know; the message names the choices.

    A KeyError, so that name -> factory tables built on the registry behave as mappings,
    and a ValueError, like the other refusals of a bad setting."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def suggest(word, choices) -> str:
    """" (did you mean 'x'?)" for the closest choice (case-insensitive), else ""."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    match = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1)
    return f" (did you mean '{by_lower[match[0]]}'?)" if match else ""


def did_you_mean(word: str, choices) -> str:
    """" (did you mean 'x'?)" for the closest choice (case-sensitive), else ""."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
