"""The per-slot tables (level, origin, neighbours) the device's kernels read, built for a whole
forest or updated after a regrid, every row of leaves at once on the forest's arrays."""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .around import Around, around, around_pairs, balanced_rows, offsets_array, touching_table
from .block import Block, neighbour_offsets
from .slot_arrays import NO_SLOT, aligned_slots
from .tiling import Tiling, distinct

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
    for start in range(0, len(slot_of), ROWS_AT_ONCE):
        _write_rows(tables, forest, slot_of, np.arange(start, min(start + ROWS_AT_ONCE, len(slot_of))), faces_only)
    return tables


def updated_tables(old: DeviceTables, old_forest, forest, slots: dict[Block, int], *,
                   in_place: bool = False) -> DeviceTables:
    """device_tables(forest, slots, capacity, faces_only=True) from the old forest's (faces
    only too) after a regrid that kept the slots of the leaves it kept: the rows of the new
    leaves are looked up, and of the kept leaves only the entries facing a new leaf (a kept
    leaf's entry changes only where what lies across that face changed, and then a new leaf
    touches it there; around a removed leaf lie the new leaves that replaced it). in_place:
    write into `old`'s arrays (which then belong to the result) instead of copies of them:
    with a large pool, copying the neighbour table is most of an update's cost."""
    slot_of = aligned_slots(forest, slots, len(old.level))
    copy = np.ascontiguousarray if in_place else np.copy  # (rows are written through flat views)
    tables = DeviceTables(copy(old.level), copy(old.origin), copy(old.neighbour), copy(old.relation),
                          slot_of.astype(np.int32))
    theirs, ours = forest.tiling.matches(old_forest.tiling)
    freed = np.asarray(old.active)[ours < 0]
    tables.level[freed], tables.origin[freed] = -1, -1
    tables.neighbour[freed], tables.relation[freed] = NO_SLOT, RELATION_CODES["boundary"]
    arriving = np.flatnonzero(theirs < 0)
    kept = theirs >= 0
    touched = [freed, slot_of[arriving]]
    for start in range(0, len(arriving), ROWS_AT_ONCE):
        part = arriving[start:start + ROWS_AT_ONCE]
        near = _write_rows(tables, forest, slot_of, part, True)
        touched.append(reverse_entries(tables, forest.tiling, slot_of, part, near, kept))
    return tables._replace(changed=distinct(np.concatenate(touched), len(old.level)))


def _write_rows(tables: DeviceTables, forest, slot_of: np.ndarray, rows: np.ndarray, faces_only: bool) -> Around:
    """The table rows of the leaves at indices `rows` written into `tables` at their slots
    (at most ROWS_AT_ONCE of them); what lies around them."""
    tiling = forest.tiling
    slots = slot_of[rows]
    tables.level[slots] = tiling.levels[rows]
    tables.origin[slots] = tiling.coords[rows] * forest.block_cells
    return _write_neighbours(tables, tiling, slot_of, rows, faces_only)


def _write_neighbours(tables: DeviceTables, tiling: Tiling, slot_of: np.ndarray, rows: np.ndarray,
                      faces_only: bool) -> Around:
    """The neighbour slots (direction, octant) and relation codes (direction) of the leaves at
    indices `rows`, written into their slots' rows; what lies around them. ValueError where
    the leaves are not 2:1 balanced there."""
    directions = 3 ** tiling.space.dim
    neighbour, relation = tables.neighbour.reshape(-1, tiling.space.fan), tables.relation.reshape(-1)
    slots = slot_of[rows]
    offsets, direction_of = offsets_array(tiling.space.dim, faces_only)
    near = around(tiling, tiling.levels[rows], tiling.coords[rows], offsets, with_children=True)
    _require_balance(tiling, rows, near, offsets)
    tables.neighbour[slots] = NO_SLOT
    tables.relation[slots] = RELATION_CODES["boundary"]
    centre = slots * directions + directions // 2
    neighbour[centre], relation[centre] = slots[:, None], RELATION_CODES["same"]
    _write_entries(tables, tiling, slot_of, slots[near.block] * directions + direction_of[near.offset], near,
                   touching_table(offsets) if faces_only else None)
    return near


def _write_entries(tables: DeviceTables, tiling: Tiling, slot_of: np.ndarray, row: np.ndarray, near: Around,
                   touching: np.ndarray | None) -> None:
    """The entries (flat indices `row` of slot * 3**dim + direction) of what `near` found:
    the leaf across (relation same or coarser), or the children there (finer: only those
    touching the block where `touching` is given, as a faces-only table holds)."""
    neighbour, relation = tables.neighbour.reshape(-1, tiling.space.fan), tables.relation.reshape(-1)
    plain = ~near.refined
    cover = near.cover[plain]
    same = tiling.levels[cover] == near.level[plain]
    relation[row[plain]] = np.where(same, RELATION_CODES["same"], RELATION_CODES["coarser"])
    neighbour[row[plain]] = slot_of[cover][:, None]
    children = near.children[near.refined]
    shown = children >= 0
    if touching is not None:  # (the kernels read no other)
        shown &= touching[near.offset[near.refined]]
    relation[row[near.refined]] = RELATION_CODES["finer"]
    neighbour[row[near.refined]] = np.where(shown, slot_of[children], NO_SLOT)


def reverse_entries(tables: DeviceTables, tiling: Tiling, slot_of: np.ndarray, rows: np.ndarray, near: Around,
                    kept: np.ndarray) -> np.ndarray:
    """The faces-only entries of the kept leaves (mask `kept`) facing the new leaves at indices
    `rows`, whose surroundings are `near`: a leaf of the same level across sees the new leaf
    there, finer leaves across see it as coarser; a coarser leaf across sees the children of
    a position, looked up again. Returns the slots written."""
    directions, dim = 3 ** tiling.space.dim, tiling.space.dim
    neighbour, relation = tables.neighbour.reshape(-1, tiling.space.fan), tables.relation.reshape(-1)
    offsets, direction_of = offsets_array(dim, faces_only=True)
    opposite = _opposites(dim)
    new_slot = slot_of[rows[near.block]]
    plain = np.flatnonzero(~near.refined)
    cover = near.cover[plain]
    ahead = kept[cover]
    same = ahead & (tiling.levels[cover] == near.level[plain])
    at = slot_of[cover[same]] * directions + direction_of[opposite[near.offset[plain[same]]]]
    neighbour[at], relation[at] = new_slot[plain[same]][:, None], RELATION_CODES["same"]
    refined = np.flatnonzero(near.refined)
    children = near.children[refined]
    facing = (children >= 0) & touching_table(offsets)[near.offset[refined]]
    facing[facing] = kept[children[facing]]
    which, _ = np.nonzero(facing)
    finer = children[facing]
    at = slot_of[finer] * directions + direction_of[opposite[near.offset[refined[which]]]]
    neighbour[at], relation[at] = new_slot[refined[which]][:, None], RELATION_CODES["coarser"]
    coarser = ahead & ~same
    pairs = distinct(cover[coarser] * len(offsets) + opposite[near.offset[plain[coarser]]])
    leaves, offset = np.divmod(pairs, len(offsets))
    if len(pairs):
        across = around_pairs(tiling, tiling.levels[leaves], tiling.coords[leaves], offsets, offset, with_children=True)
        _require_balance(tiling, leaves, across, offsets)
        _write_entries(tables, tiling, slot_of, slot_of[leaves[across.block]] * directions
                       + direction_of[across.offset], across, touching_table(offsets))
    return np.concatenate([slot_of[cover[same]], slot_of[finer], slot_of[leaves]])


@functools.lru_cache(maxsize=None)
def _opposites(dim: int) -> np.ndarray:
    """Per face offset (offsets_array(dim, faces_only=True)) the index of its opposite."""
    offsets = offsets_array(dim, faces_only=True)[0].tolist()
    return np.array([offsets.index([-o for o in offset]) for offset in offsets], np.int64)


def _require_balance(tiling: Tiling, rows: np.ndarray, near: Around, offsets: np.ndarray) -> None:
    """ValueError naming the first leaf and offset where the leaves across are not within one level."""
    ok = balanced_rows(tiling, near, touching_table(offsets))
    if not ok.all():
        bad = int(np.argmin(ok))
        leaf = rows[near.block[bad]]
        block = Block(int(tiling.levels[leaf]), tuple(tiling.coords[leaf].tolist()))
        raise ValueError(f"not 2:1 balanced: leaf {block} touches leaves more than one level away "
                         f"at offset {tuple(offsets[near.offset[bad]].tolist())}")
