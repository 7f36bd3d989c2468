"""Device arrays of the solver's state, placed so that GPU loads and stores stay aligned.

Each vector field is a structure of arrays: one dense array per component, so neighbouring
threads touch neighbouring addresses. Where those arrays start matters as much: a warp's
store that straddles 32-byte sectors costs extra partial-sector traffic. On an H100 a copy
into arrays starting 4 or 16 bytes past a 128-byte line ran at 1.3-1.5 TB/s against 2.4 TB/s
aligned, and the primitives kernel writing W, whose interior rows began 3 cells past a
sector, streamed at 1.5 TB/s (tools/stream-probe.py; docs/performance.md, v11). So:

- all of U, U0, R and W live in one tree of their own (Taichi's default root also holds small
  fields, whose bytes would shift every array after them), each component array padded to
  whole 128-byte lines so the next one starts on a line;
- the ghosted array (W) keeps `ghosts` layers on the strided axes but, along the last axis,
  contiguous in memory, a lower layer of whole sectors (at least `ghosts` cells) and rows
  rounded up to whole sectors, so every interior row starts on a sector. The extra cells are
  never read or written.
"""
from __future__ import annotations

import numpy as np
import taichi as ti
from taichi.lang.field import ScalarField

LINE_BYTES = 128   # each component array starts on a cache line
SECTOR_BYTES = 32  # the unit of DRAM traffic: W's interior rows start on one


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def itemsize(dtype) -> int:
    return 8 if dtype in (ti.f64, ti.i64) else 4


def ghosted_extent(cells, ghosts: int, dtype):
    """(shape, offset) of an array of `cells` with `ghosts` layers around them, its last axis
    widened as the module docstring says."""
    per_sector = SECTOR_BYTES // itemsize(dtype)
    lower_last = _round_up(ghosts, per_sector) if ghosts else 0
    shape = [n + 2 * ghosts for n in cells[:-1]]
    shape.append(_round_up(lower_last + cells[-1] + ghosts, per_sector) if ghosts else cells[-1])
    offset = [-ghosts] * (len(cells) - 1) + [-lower_last]
    return tuple(shape), tuple(offset)


class StateArrays:
    """Collects vector fields (`vector`), then places them all in one tree (`place`)."""

    def __init__(self, dtype):
        self.dtype = dtype
        self._requests = []

    def vector(self, n: int, cells, ghosts: int = 0, slots: int = 0):
        """A vector field of n components over `cells` (+ `ghosts` layers), placed by `place`;
        with `slots`, one such array per block slot of a pool (the slot the outermost index:
        kernels/amr/pool.py), each block's rows aligned as a lone block's are."""
        field = ti.Vector.field(n, self.dtype)
        shape, offset = ghosted_extent(tuple(cells), ghosts, self.dtype)
        if slots:
            shape, offset = (slots,) + shape, (0,) + offset
        self._requests.append((field, shape, offset))
        return field

    def place(self):
        """Allocates every requested field: component arrays back to back, each padded to
        whole lines."""
        builder = ti.FieldsBuilder()
        size = itemsize(self.dtype)
        for field, shape, offset in self._requests:
            axes = ti.axes(*range(len(shape)))
            gap = (-int(np.prod(shape)) * size) % LINE_BYTES // size
            for member in field._get_field_members():
                # (one dense array per component, as Taichi's own SOA layout places them)
                builder.dense(axes, shape).place(ScalarField(member), offset=offset)
                if gap:
                    builder.dense(ti.i, gap).place(ti.field(self.dtype))
        self.tree = builder.finalize()
