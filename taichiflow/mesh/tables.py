"""The per-slot tables (level, origin, neighbours) the device's kernels read, built for a whole
forest or updated after a regrid, every row of leaves at once on the forest's arrays."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .around import Around, around, balanced_rows, offsets_array, touching_table
from .block import Block, neighbour_offsets
from .slot_arrays import NO_SLOT, aligned_slots
from .tiling import Tiling

RELATION_CODES = {"same": 0, "coarser": -1, "finer": 1, "boundary": 2}
ROWS_AT_ONCE = 16384  # leaves whose rows are worked out together (bounds the temporary arrays)


class DeviceTables(NamedTuple):
    """Per-slot arrays for the kernels, rows of unused slots filled with -1 (relation 2: nothing
    there). neighbour[slot, direction, octant] and relation[slot, direction] use the direction
    index sum((o_d + 1) * 3**d) of offset o; the centre direction names the slot itself."""

    level: np.ndarray  # int32[capacity]
    origin: np.ndarray  # int32[capacity, dim]: the first cell's index at the block's level
    neighbour: np.ndarray  # int32[capacity, 3**dim, 2**dim]
    relation: np.ndarray  # int8[capacity, 3**dim]: 0 same, -1 coarser, +1 finer, 2 boundary
    active: np.ndarray  # int32[leaves]: the leaves' slots in Morton order
    changed: np.ndarray | None = None  # int64[k]: the slots whose rows an update wrote (None: every row)


def device_tables(forest, slots: dict[Block, int], capacity: int, faces_only: bool = False) -> DeviceTables:
    """The kernels' tables for `forest` with its leaves in `slots`. faces_only: the rows of the
    edge and corner directions left as at a boundary (-1, relation 2), and of finer neighbours
    only the children that touch the face, for kernels whose stencils run along one axis and so
    read across faces only (in 3D, 6 queries a leaf of 26)."""
    slot_of = aligned_slots(forest, slots, capacity)
    dim, directions = forest.dim, len(neighbour_offsets(forest.dim))
    tables = DeviceTables(np.full(capacity, -1, np.int32), np.full((capacity, dim), -1, np.int32),
                          np.full((capacity, directions, 1 << dim), NO_SLOT, np.int32),
                          np.full((capacity, directions), RELATION_CODES["boundary"], np.int8),
                          slot_of.astype(np.int32))
    _write_rows(tables, forest, slot_of, np.arange(len(slot_of)), faces_only)
    return tables


def updated_tables(old: DeviceTables, old_forest, forest, slots: dict[Block, int], *,
                   in_place: bool = False) -> DeviceTables:
    """device_tables(forest, slots, capacity, faces_only=True) from the old forest's (faces
    only too) after a regrid that kept the slots of the leaves it kept: only the rows of the new
    leaves and of their face neighbours are looked up again (a neighbour that was removed was
    replaced by new leaves, which touch the same faces). in_place: write into `old`'s arrays
    (which then belong to the result) instead of copies of them: with a large pool, copying
    the neighbour table is most of an update's cost."""
    slot_of = aligned_slots(forest, slots, len(old.level))
    copy = np.ascontiguousarray if in_place else np.copy  # (rows are written through flat views)
    tables = DeviceTables(copy(old.level), copy(old.origin), copy(old.neighbour), copy(old.relation),
                          slot_of.astype(np.int32))
    theirs, ours = forest.tiling.matches(old_forest.tiling)
    freed = np.asarray(old.active)[ours < 0]
    tables.level[freed], tables.origin[freed] = -1, -1
    tables.neighbour[freed], tables.relation[freed] = NO_SLOT, RELATION_CODES["boundary"]
    arriving = np.flatnonzero(theirs < 0)
    rows = _with_face_neighbours(forest.tiling, arriving)
    _write_rows(tables, forest, slot_of, rows, True)
    return tables._replace(changed=np.union1d(freed, slot_of[rows]))


def _with_face_neighbours(tiling: Tiling, leaves: np.ndarray) -> np.ndarray:
    """The leaf indices `leaves` and those of the leaves touching them across a face: the only
    rows of a faces-only table that a change of these leaves can change (a far child of a
    finer neighbour position reads nothing of them)."""
    offsets, _ = offsets_array(tiling.space.dim, faces_only=True)
    near = around(tiling, tiling.levels[leaves], tiling.coords[leaves], offsets, with_children=True)
    touched = np.zeros(len(tiling), bool)
    touched[leaves] = True
    touched[near.cover[~near.refined]] = True
    children = near.children[near.refined]
    touched[children[(children >= 0) & touching_table(offsets)[near.offset[near.refined]]]] = True
    return np.flatnonzero(touched)


def _write_rows(tables: DeviceTables, forest, slot_of: np.ndarray, rows: np.ndarray, faces_only: bool) -> None:
    """The table rows of the leaves at indices `rows` written into `tables` at their slots."""
    tiling = forest.tiling
    for start in range(0, len(rows), ROWS_AT_ONCE):
        part = rows[start:start + ROWS_AT_ONCE]
        slots = slot_of[part]
        tables.level[slots] = tiling.levels[part]
        tables.origin[slots] = tiling.coords[part] * forest.block_cells
        _write_neighbours(tables, tiling, slot_of, part, faces_only)


def _write_neighbours(tables: DeviceTables, tiling: Tiling, slot_of: np.ndarray, rows: np.ndarray,
                      faces_only: bool) -> None:
    """The neighbour slots (direction, octant) and relation codes (direction) of the leaves at
    indices `rows`, written into their slots' rows. ValueError where the leaves are not 2:1
    balanced there."""
    directions, fan = 3 ** tiling.space.dim, tiling.space.fan
    neighbour, relation = tables.neighbour.reshape(-1, fan), tables.relation.reshape(-1)  # (views: one index a row)
    slots = slot_of[rows]
    offsets, direction_of = offsets_array(tiling.space.dim, faces_only)
    touching = touching_table(offsets)
    near = around(tiling, tiling.levels[rows], tiling.coords[rows], offsets, with_children=True)
    _require_balance(tiling, rows, near, touching, offsets)
    tables.neighbour[slots] = NO_SLOT
    tables.relation[slots] = RELATION_CODES["boundary"]
    centre = slots * directions + directions // 2
    neighbour[centre], relation[centre] = slots[:, None], RELATION_CODES["same"]
    row = slots[near.block] * directions + direction_of[near.offset]
    plain = ~near.refined
    cover = near.cover[plain]
    same = tiling.levels[cover] == near.level[plain]
    relation[row[plain]] = np.where(same, RELATION_CODES["same"], RELATION_CODES["coarser"])
    neighbour[row[plain]] = slot_of[cover][:, None]
    children = near.children[near.refined]
    shown = children >= 0
    if faces_only:  # (the kernels read no other)
        shown &= touching[near.offset[near.refined]]
    relation[row[near.refined]] = RELATION_CODES["finer"]
    neighbour[row[near.refined]] = np.where(shown, slot_of[children], NO_SLOT)


def _require_balance(tiling: Tiling, rows: np.ndarray, near: Around, touching: np.ndarray,
                     offsets: np.ndarray) -> None:
    """ValueError naming the first leaf and offset where the leaves across are not within one level."""
    ok = balanced_rows(tiling, near, touching)
    if not ok.all():
        bad = int(np.argmin(ok))
        leaf = rows[near.block[bad]]
        block = Block(int(tiling.levels[leaf]), tuple(tiling.coords[leaf].tolist()))
        raise ValueError(f"not 2:1 balanced: leaf {block} touches leaves more than one level away "
                         f"at offset {tuple(offsets[near.offset[bad]].tolist())}")
