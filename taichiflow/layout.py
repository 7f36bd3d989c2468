"""Named layouts of flat state vectors: scalars and 3-vectors by name.

Kernels move flat `ti.Vector`s (fast, uniform arithmetic for the numerics); model
functions see named views (`U.rho`, `W.vel`). This module converts between the two at
compile time, and knows how to rotate the declared 3-vectors into the frame whose local
x is the face normal. Everything here runs in Python while Taichi compiles a kernel:
index choices are static, nothing branches at run time.
"""
from __future__ import annotations

import taichi as ti
from taichi.lang import impl
from taichi.lang.struct import Struct

from .errors import ModelError

AXES = "xyz"


def component(value, index: int):
    """Element `index` of a Taichi vector expression, from plain Python at compile time."""
    return impl.subscript(None, value, index)


class Layout:
    """An ordered set of named components, each a scalar (size 1) or a 3-vector (size 3)."""

    def __init__(self, spec: dict[str, int], role: str):
        self.role = role
        self.sizes = dict(spec)
        self.names = list(spec)
        self.offsets = {}
        offset = 0
        for name, size in spec.items():
            self.offsets[name] = offset
            offset += size
        self.n = offset

    @property
    def vectors(self) -> list[str]:
        return [name for name in self.names if self.sizes[name] == 3]

    def component_names(self) -> list[str]:
        """Flat component labels, e.g. rho, mom_x, mom_y, mom_z, E."""
        labels = []
        for name in self.names:
            if self.sizes[name] == 1:
                labels.append(name)
            else:
                labels += [f"{name}_{axis}" for axis in AXES]
        return labels

    def split(self, flat) -> dict:
        """Named values of a flat host (numpy) vector: floats, and lists for 3-vectors."""
        return {name: float(flat[off]) if self.sizes[name] == 1 else [float(v) for v in flat[off:off + 3]]
                for name, off in self.offsets.items()}

    def index(self, name: str, axis: int = 0) -> int:
        return self.offsets[name] + (axis if self.sizes[name] == 3 else 0)

    # --- compile-time conversions (called from Taichi scope) -------------------------
    def view(self, flat):
        """Named view (a Taichi Struct) of a flat vector expression."""
        members = {}
        for name in self.names:
            off = self.offsets[name]
            if self.sizes[name] == 1:
                members[name] = component(flat, off)
            else:
                members[name] = ti.Vector([component(flat, off + c) for c in range(3)])
        return Struct(members)

    def flatten(self, state, where: str):
        """Flat vector of a named state; `where` names the model function for errors."""
        if not isinstance(state, Struct):
            raise ModelError(f"{where}: must return model.{self.role}(...), got {type(state).__name__}")
        entries = state.to_dict()
        missing = [n for n in self.names if n not in entries]
        extra = [n for n in entries if n not in self.sizes]
        if missing or extra:
            raise ModelError(f"{where}: returned {self.role} with components {sorted(entries)}, "
                             f"expected {self.names}")
        parts = []
        for name in self.names:
            value = entries[name]
            if self.sizes[name] == 1:
                parts.append(value)
            else:
                parts += [component(value, c) for c in range(3)]
        return ti.Vector(parts)

    def rotation(self, axis: int, to_normal: bool) -> list[int]:
        """Permutation p with rotated[k] = flat[p[k]] for the frame whose x is `axis`."""
        perm = list(range(self.n))
        for name in self.vectors:
            off = self.offsets[name]
            for c in range(3):
                if to_normal:
                    perm[off + c] = off + (axis + c) % 3
                else:
                    perm[off + (axis + c) % 3] = off + c
        return perm


def permute(flat, perm: list[int]):
    """Apply a static permutation to a flat vector expression."""
    if perm == list(range(len(perm))):
        return flat
    return ti.Vector([component(flat, p) for p in perm])


def extend(flat, n: int, extra):
    """The flat vector of length `n` with one more component appended."""
    return ti.Vector([component(flat, k) for k in range(n)] + [extra])
