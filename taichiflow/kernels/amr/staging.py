"""What a regrid sends to the device, made on the host: the tables' changed rows packed one
array row per slot (the face directions only: a faces-only table's other entries never change),
the active list, and per axis the faces where the level jumps or the domain ends. Those faces
are kept as masks over the pool's faces, so a regrid recomputes only its changed slots' faces
(recomputing every leaf's cost milliseconds at 33,000 leaves) and the sorted lists are one
flatnonzero each. numpy only: tools/amr-regrid-profile.py times it without a device."""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ...mesh.block import direction_index
from ...mesh.slots import RELATION_CODES

COARSER, FINER, BOUNDARY = (RELATION_CODES[kind] for kind in ("coarser", "finer", "boundary"))
# the two lists of faces: prolonged from a coarser block (and their flux kept in the register),
# and pulled from a finer block or the boundary
FACE_KINDS = ((COARSER,), (FINER, BOUNDARY))
MAX_AXES = 3


def face_direction(dim: int, axis: int, side: int) -> int:
    """The direction index of a block's lower (side 0) or upper (side 1) face along axis."""
    return direction_index([(-1 if side == 0 else 1) if d == axis else 0 for d in range(dim)])


@functools.lru_cache(maxsize=None)
def row_directions(dim: int) -> tuple[int, ...]:
    """The directions an update writes: the 2 * dim faces, then the centre (the block itself)."""
    return tuple(face_direction(dim, axis, side) for axis in range(dim) for side in (0, 1)) + ((3 ** dim) // 2,)


class Staged(NamedTuple):
    """One regrid's upload. rows: int32 (k, ROW_HEAD + dim + len(row_directions) * (1 + 2**dim)):
    slot, level, the levels the regions ask of the leaf and of its parent, origin, then per
    direction its relation and neighbour slots by octant. listed: int32, the active list then
    per kind (FACE_KINDS) and axis its faces (slot * 2 + side). counts: the rows, the active
    leaves, then the faces per kind and axis (3 axes each)."""
    rows: np.ndarray
    listed: np.ndarray
    counts: tuple


ROW_HEAD = 4  # slot, level, asked, parent_asked


class FaceLists:
    """Per kind (FACE_KINDS) and axis, which faces (slot * 2 + side) of the pool's leaves are
    listed, as masks over the 2 * capacity faces."""

    def __init__(self, dim: int, capacity: int):
        self.dim = dim
        self.masks = np.zeros((len(FACE_KINDS), dim, 2 * capacity), bool)
        self._directions = np.array(row_directions(dim)[:-1], np.int64)  # (axis, side) order
        # the flat index of face (axis, side) of slot s in a kind's masks: s * 2 + this
        self._face_base = np.array([axis * 2 * capacity + side for axis in range(dim) for side in (0, 1)], np.int64)

    def set_slots(self, tables, slots: np.ndarray) -> None:
        """The masks of `slots` from the tables (a slot whose level is -1 holds no leaf)."""
        across = tables.relation[slots][:, self._directions]
        leaf = (tables.level[slots] >= 0)[:, None]
        at = slots[:, None] * 2 + self._face_base[None, :]
        for kind, codes in enumerate(FACE_KINDS):
            listed = across == codes[0]
            for code in codes[1:]:
                listed |= across == code
            self.masks[kind].reshape(-1)[at] = listed & leaf

    def lists(self) -> list[list[np.ndarray]]:
        """Per kind, per axis the listed faces in ascending order."""
        return [[np.flatnonzero(mask) for mask in kind] for kind in self.masks]


def staged(tables, faces: FaceLists, regions) -> Staged:
    """The upload of an update of the tables (tables.changed: its rows), with the masks of
    `faces` brought up to date first; regions: the criteria.RegionSlots of the new forest."""
    rows = np.asarray(tables.changed, np.int64)
    faces.set_slots(tables, rows)
    dim = faces.dim
    fan = tables.neighbour.shape[2]
    directions = np.array(row_directions(dim), np.int64)
    packed = np.empty((len(rows), ROW_HEAD + dim + len(directions) * (1 + fan)), np.int32)
    packed[:, 0] = rows
    packed[:, 1] = tables.level[rows]
    packed[:, 2] = regions.asked[rows]
    packed[:, 3] = regions.parent_asked[rows]
    packed[:, ROW_HEAD:ROW_HEAD + dim] = np.take(tables.origin, rows, axis=0)
    entries = packed[:, ROW_HEAD + dim:].reshape(len(rows), len(directions), 1 + fan)
    at = rows[:, None] * tables.relation.shape[1] + directions[None, :]  # (flat gathers: 2D indexing is slower)
    entries[:, :, 0] = np.take(tables.relation.reshape(-1), at)
    entries[:, :, 1:] = np.take(tables.neighbour.reshape(-1, fan), at, axis=0)
    lists = faces.lists()
    counts = [len(rows), len(tables.active)]
    for kind in lists:
        counts += [len(axis) for axis in kind] + [0] * (MAX_AXES - dim)
    listed = np.concatenate([np.asarray(tables.active, np.int32)] + [axis.astype(np.int32) for kind in lists
                                                                       for axis in kind])
    return Staged(packed, listed, tuple(counts))


def face_counts(counts: tuple, kind: int) -> tuple:
    """The per-axis face counts (3 of them) of a kind from Staged.counts."""
    return tuple(counts[2 + MAX_AXES * kind:2 + MAX_AXES * (kind + 1)])
