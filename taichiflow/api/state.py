"""The state of a Simulation as named numpy arrays, and back; its copies for PyVista and
PyTorch; the copy an older Simulation keeps when a newer one starts Taichi again.

Every array here is a copy of device memory: Taichi 1.7 fields export no DLPack or CUDA
array interface (only ndarray kernel arguments are used in place), so nothing aliases the
solver's fields and nothing written into an array reaches the device except set_state.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import suggest

__all__ = ["Kept", "assemble", "image_data", "named", "torch_tensors"]


def named(array: np.ndarray, layout) -> dict[str, np.ndarray]:
    """The variables of a flat state array (cells + (n,)) by name, read-only: a scalar as an
    array of the grid's shape, a 3-vector with a trailing axis of its 3 components."""
    array.flags.writeable = False
    out = {}
    for name in layout.names:
        off = layout.offsets[name]
        out[name] = array[..., off] if layout.sizes[name] == 1 else array[..., off:off + 3]
    return out


def assemble(values: Mapping[str, Any], layout, cells: tuple, base: np.ndarray | None, what: str,
             dtype) -> np.ndarray:
    """A flat state array (cells + (layout.n,)) from named values: each scalar an array of the
    grid's shape or a number, each vector of shape cells + (k,) or (k,) with k = 1 to 3
    components (the rest zero). Variables not named keep `base`'s values; without a base
    every variable must be given."""
    if not isinstance(values, Mapping):
        raise TypeError(f"set_state({what}=...): expected a dict name -> array, got {type(values).__name__}")
    for name in values:
        if name not in layout.sizes:
            raise KeyError(f"set_state: unknown {what} variable '{name}'{suggest(name, layout.names)}; the model's "
                           f"{what} variables are {', '.join(layout.names)}")
    missing = [name for name in layout.names if name not in values]
    if base is None and missing:
        raise KeyError(f"set_state({what}=...): missing {', '.join(missing)} (a whole state needs "
                       f"{', '.join(layout.names)})")
    out = np.array(base, dtype=dtype) if base is not None else np.empty(tuple(cells) + (layout.n,), dtype=dtype)
    for name, value in values.items():
        off, size = layout.offsets[name], layout.sizes[name]
        out[..., off:off + size] = _shaped(name, value, size, tuple(cells))
    if not np.all(np.isfinite(out)):
        raise ValueError(f"set_state({what}=...): the state holds non-finite values (NaN or inf)")
    return out


def _shaped(name: str, value: Any, size: int, cells: tuple) -> np.ndarray:
    """One variable's values as cells + (size,), broadcast and padded to 3 components."""
    a = np.asarray(value, dtype=np.float64)
    if size == 1:
        try:
            return np.broadcast_to(a, cells)[..., None]
        except ValueError:
            raise ValueError(f"set_state: '{name}' has shape {a.shape}; expected the grid's {cells} (or a "
                             f"number)") from None
    k = a.shape[-1] if a.ndim else 0
    if a.ndim not in (1, len(cells) + 1) or not 1 <= k <= 3:
        raise ValueError(f"set_state: '{name}' has shape {a.shape}; expected {cells + (3,)} (1 to 3 components, "
                         f"the rest zero) or one vector of 1 to 3 components")
    try:
        a = np.broadcast_to(a, cells + (k,))
    except ValueError:
        raise ValueError(f"set_state: '{name}' has shape {a.shape}; expected {cells + (k,)}") from None
    return np.concatenate([a, np.zeros(cells + (3 - k,))], axis=-1) if k < 3 else a


@dataclass
class Kept:
    """What an older Simulation keeps when a newer one starts Taichi again: its last state
    (numpy copies) and clock."""
    t: float
    step: int
    dt: float
    primitive: np.ndarray | None   # None: the copy failed (released_by says why)
    conserved: np.ndarray | None
    derived: dict[str, np.ndarray] = field(default_factory=dict)
    released_by: str = ""   # why the device state is gone


def image_data(cells: tuple, lower: tuple, dx: tuple, arrays: Mapping[str, np.ndarray], t: float):
    """A pyvista.ImageData of cell arrays, laid out as the run's snapshots are (io.write_vti:
    1D and 2D grids one cell thick along the missing axes, with the x spacing)."""
    try:
        import pyvista as pv
    except ImportError as err:
        raise ImportError(f"to_pyvista() needs pyvista (pip install pyvista): {err}") from None
    dim = len(cells)
    grid = pv.ImageData(dimensions=[n + 1 for n in cells] + [2] * (3 - dim),
                        spacing=list(dx) + [dx[0]] * (3 - dim), origin=list(lower) + [0.0] * (3 - dim))
    order = tuple(reversed(range(dim)))  # (VTK's cells: x fastest)
    count = int(np.prod(cells))
    for name, a in arrays.items():
        a = np.asarray(a)
        flat = a.transpose(order + tuple(range(dim, a.ndim))).reshape(count, -1)
        grid.cell_data[name] = flat[:, 0] if flat.shape[1] == 1 else flat
    grid.field_data["TIME"] = np.array([t])
    return grid


def torch_tensors(arrays: Mapping[str, np.ndarray], device: str) -> dict[str, Any]:
    """Copies of the arrays as torch tensors on `device` (a copy each: see the module's note)."""
    try:
        import torch
    except ImportError as err:
        raise ImportError(f"torch_tensors() needs PyTorch (pip install torch): {err}; sim.primitive and "
                          f"sim.conserved give the same arrays in numpy") from None
    return {name: torch.from_numpy(np.array(a)).to(device) for name, a in arrays.items()}
