"""Linear waves: the wave frame of a wave vector and the model's eigenvector in the lab frame.

A `linear_wave` perturbation adds A R_W cos(k . x + phase) to the state, R_W a right
eigenvector of the model's primitive system along k. The model gives its eigenvectors along
its normal direction, in the *wave frame* whose x' is the unit wave vector, through the
plain-Python hook `@model.linear_waves`; this module rotates the background state into that
frame, calls the hook once and rotates the eigenvector back. numpy only.

The frame is Athena++'s (src/pgen/linear_wave.cpp): with the unit wave vector
khat = (cos a2 cos a3, cos a2 sin a3, sin a2),

    x' = khat,  y' = (-sin a3, cos a3, 0),  z' = (-sin a2 cos a3, -sin a2 sin a3, cos a2),

right-handed; a wave vector along z takes a3 = 0.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import CaseError, ModelError, suggest

__all__ = ["wave_frame", "to_wave_frame", "from_wave_frame", "linear_wave_eigenvector"]


def wave_frame(wavenumber) -> np.ndarray:
    """The 3x3 matrix whose rows are x', y', z' for the wave vector `wavenumber` (3 numbers,
    nonzero): a lab vector v is F @ v in the wave frame, and F.T @ v' back in the lab."""
    k = np.asarray(wavenumber, dtype=float)
    khat = k / np.linalg.norm(k)
    a2 = math.asin(max(-1.0, min(1.0, khat[2])))
    a3 = math.atan2(khat[1], khat[0])
    return np.array([
        [math.cos(a2) * math.cos(a3), math.cos(a2) * math.sin(a3), math.sin(a2)],
        [-math.sin(a3), math.cos(a3), 0.0],
        [-math.sin(a2) * math.cos(a3), -math.sin(a2) * math.sin(a3), math.cos(a2)],
    ])


def _rotate(state: dict, sizes, matrix) -> dict:
    return {name: ([float(v) for v in matrix @ np.asarray(value, dtype=float)] if sizes[name] == 3
                   else float(value)) for name, value in state.items()}


def to_wave_frame(state: dict, sizes, frame) -> dict:
    """A state (name -> number or 3-vector) with its 3-vectors in the wave frame."""
    return _rotate(state, sizes, frame)


def from_wave_frame(state: dict, sizes, frame) -> dict:
    """A wave-frame state with its 3-vectors back in the lab frame."""
    return _rotate(state, sizes, np.asarray(frame).T)


def linear_wave_eigenvector(p: dict, background: dict, model, params: dict, where: str):
    """(R_W in the lab frame as a flat primitive vector in layout order, phase speed) of the
    wave p["wave"] of the model along p["wavenumber"], at the background state. CaseError for
    a model without the hook or a wave it does not have; ModelError for what the hook returns
    wrongly."""
    hook = model.setup.get("linear_waves")
    if hook is None:
        raise CaseError(f"{where}: model '{model.name}' has no linear waves (no @model.linear_waves hook)")
    sizes = model.primitive.sizes
    frame = wave_frame(p["wavenumber"])
    waves = hook(to_wave_frame(background, sizes, frame), dict(params))
    if not isinstance(waves, dict) or not waves:
        raise ModelError(f"{model.source_file}: linear_waves(): expected a dict wave name -> (perturbation, speed), "
                         f"got {waves!r}")
    name = p["wave"]
    if name not in waves:
        raise CaseError(f"{where}.wave: unknown wave '{name}'{suggest(name, waves)}; model '{model.name}' has "
                        f"{', '.join(waves)}")
    perturbation, speed = _checked_wave(waves[name], name, sizes, model)
    lab = from_wave_frame(perturbation, sizes, frame)
    flat = [v for var, size in sizes.items()
            for v in (lab.get(var, [0.0] * 3) if size == 3 else [lab.get(var, 0.0)])]
    return flat, speed


def _checked_wave(entry, name: str, sizes, model):
    """(perturbation dict, speed) of one wave as the hook returned it, checked against the layout."""
    where = f"{model.source_file}: linear_waves(): wave '{name}'"
    if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], dict)
            and isinstance(entry[1], numbers.Real)):
        raise ModelError(f"{where}: expected (dict of primitive perturbations, phase speed), got {entry!r}")
    perturbation, speed = entry
    for var, value in perturbation.items():
        if var not in sizes:
            raise ModelError(f"{where}: unknown primitive '{var}'{suggest(var, sizes)}; W is {', '.join(sizes)}")
        shape = np.shape(value)
        if shape != (() if sizes[var] == 1 else (3,)):
            raise ModelError(f"{where}: {var} must be {'a number' if sizes[var] == 1 else 'a 3-vector'}, "
                             f"got {value!r}")
    return perturbation, float(speed)
