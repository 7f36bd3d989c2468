"""The errors a user can cause, and the did-you-mean hint their messages share.

One module that imports nothing from the package (and not Taichi), so that any module may
raise any of them without an import circle: case.py, model/, the registry, the numerics,
the run and the checkpoints all import from here.
"""
from __future__ import annotations

import difflib

__all__ = ["CaseError", "CheckpointError", "ModelError", "OutputError", "ParameterError", "RunInterrupted",
           "SimulationError", "UnknownNameError", "did_you_mean", "model_error_within", "suggest"]


class CaseError(ValueError):
    """An invalid case file or --set override; the message starts with where it is."""


class ModelError(ValueError):
    """A mistake in a model file; the message names the file, the function and the cause."""


class ParameterError(ModelError):
    """A model parameter value (from a case's [model] params or --params) for which the
    model's functions are singular, e.g. an ideal gas with gamma = 1: the value is the cause,
    not the model or its sample state."""


def model_error_within(err: BaseException):
    """The ModelError that a Taichi compile error wraps (raised by the framework while a
    model function was being compiled, e.g. a wrong layout), else None: its message names
    the model file and function, where Taichi's wrapper names only the kernel's source."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, ModelError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


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
