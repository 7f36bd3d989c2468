"""Named layouts of flat state vectors: scalars and 3-vectors by name.

Kernels move flat `ti.Vector`s (fast, uniform arithmetic for the numerics); model
functions see named views (`U.rho`, `W.vel`). This module converts between the two at
compile time, and knows how to rotate the declared 3-vectors into the frame whose local
x is the face normal. Everything here runs in Python while Taichi compiles a kernel:
index choices are static, nothing branches at run time.
"""
from __future__ import annotations

import numbers

import taichi as ti
from taichi.lang import impl
from taichi.lang.matrix import Matrix
from taichi.lang.struct import Struct

from .errors import ModelError

AXES = "xyz"


def component(value, index: int):
    """Element `index` of a Taichi vector expression, from plain Python at compile time."""
    return impl.subscript(None, value, index)


def with_component(value, index: int, replacement, length: int):
    """The first `length` elements of a Taichi vector expression, element `index` replaced
    (compiled in: index and length are Python ints)."""
    return ti.Vector([replacement if k == index else component(value, k) for k in range(length)])


def shape_of(value):
    """() for a scalar, (n,) for a vector, (n, m) for a matrix, as Taichi sees a value while a
    kernel compiles; None for anything else (left for Taichi to judge)."""
    if isinstance(value, numbers.Number):
        return ()
    if isinstance(value, Matrix):
        return tuple(value.get_shape())
    is_tensor = getattr(value, "is_tensor", None)
    if callable(is_tensor):
        return tuple(value.get_shape()) if is_tensor() else ()
    return None


def _shape_text(shape: tuple) -> str:
    if not shape:
        return "a scalar"
    return f"a {shape[0]}-vector" if len(shape) == 1 else f"a {' x '.join(map(str, shape))} matrix"


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

    def describe(self) -> str:
        """The layout in words, e.g. rho (scalar), mom (3-vector), E (scalar)."""
        return ", ".join(f"{name} ({'scalar' if self.sizes[name] == 1 else '3-vector'})" for name in self.names)

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

    def gradient_view(self, grads):
        """Named view of the gradient of a flat vector, from its derivatives along x, y, z
        (three flat vector expressions): a scalar's gradient as a 3-vector, a 3-vector's as
        the 3 x 3 matrix [i, j] = d(component i)/dx_j (div B = trace, curl from its entries)."""
        members = {}
        for name in self.names:
            off = self.offsets[name]
            if self.sizes[name] == 1:
                members[name] = ti.Vector([component(grads[d], off) for d in range(3)])
            else:
                members[name] = ti.Matrix([[component(grads[d], off + i) for d in range(3)] for i in range(3)])
        return Struct(members)

    def flatten(self, state, where: str):
        """Flat vector of a named state; `where` names the model function for errors."""
        if not isinstance(state, Struct):
            raise ModelError(f"{where}: must return model.{self.role}(...) ({self.role} is {self.describe()}), "
                             f"got {type(state).__name__}")
        entries = state.to_dict()
        missing = [n for n in self.names if n not in entries]
        extra = [n for n in entries if n not in self.sizes]
        if missing or extra:
            raise ModelError(f"{where}: returned {self.role} with components {sorted(entries)}, "
                             f"expected {self.names}")
        parts = []
        for name in self.names:
            value = entries[name]
            self._check_size(name, value, where)
            if self.sizes[name] == 1:
                parts.append(value)
            else:
                parts += [component(value, c) for c in range(3)]
        return ti.Vector(parts)

    def _check_size(self, name: str, value, where: str):
        """A component of the declared size: a mismatch found here names the function and the
        layout, where Taichi would fail later on a tensor-type error, an assertion, or by
        reading past the end of a short vector."""
        shape = shape_of(value)
        expected = () if self.sizes[name] == 1 else (3,)
        if shape is not None and shape != expected:
            raise ModelError(f"{where}: returned {name} as {_shape_text(shape)}; {self.role} is {self.describe()}")

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
