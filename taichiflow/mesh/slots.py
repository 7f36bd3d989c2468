"""The device's block pool: which slot of a fixed-capacity pool holds each leaf and how a regrid
moves data between slots. (The per-slot tables the kernels read are in tables.py, and are
re-exported here, where they used to live.)"""
from __future__ import annotations


import numpy as np

from .block import Block
from .forest import Forest
from .slot_arrays import NO_SLOT, LeafSlots, aligned_slots
from .tables import RELATION_CODES, DeviceTables, device_tables, updated_tables
from .tiling import Tiling, on_common_keys

__all__ = ["NO_SLOT", "RELATION_CODES", "DeviceTables", "PoolFull", "RegridPlan", "assign_slots", "device_tables",
           "plan_regrid", "updated_tables"]


class PoolFull(Exception):
    """The block pool has fewer slots than a forest (or a regrid, old and new at once) needs."""

    def __init__(self, needed: int, capacity: int):
        super().__init__(f"the block pool needs {needed} slots but has capacity for {capacity}")
        self.needed = needed
        self.capacity = capacity


class RegridPlan:
    """Slots of the new forest's leaves and the copies that fill them from the old slots.
    kept: (old slot, new slot), the same slot; prolonged: (parent's old slot, child's new slot,
    child's octant index); restricted: (the children's old slots by octant, parent's new slot).
    Each list is in the new forest's Morton order, and made only when asked: the device reads
    the arrays prolonged_moves (rows (parent, child, octant)) and restricted_moves (rows: the
    children's slots by octant, then the parent's), int32."""

    def __init__(self, slots: LeafSlots, kept_slots: np.ndarray, prolonged_moves: np.ndarray,
                 restricted_moves: np.ndarray):
        self.slots: LeafSlots = slots
        self._kept_slots = kept_slots
        self.prolonged_moves = prolonged_moves
        self.restricted_moves = restricted_moves

    @property
    def kept(self) -> list[tuple[int, int]]:
        slots = self._kept_slots.tolist()
        return list(zip(slots, slots))

    @property
    def prolonged(self) -> list[tuple[int, int, int]]:
        return list(map(tuple, self.prolonged_moves.tolist()))

    @property
    def restricted(self) -> list[tuple[tuple[int, ...], int]]:
        return [(tuple(row[:-1]), row[-1]) for row in self.restricted_moves.tolist()]


def assign_slots(forest: Forest, capacity: int) -> LeafSlots:
    """Slots 0..n-1 to the leaves in Morton order."""
    if len(forest.levels) > capacity:
        raise PoolFull(len(forest.levels), capacity)
    return LeafSlots(forest, np.arange(len(forest.levels)))


def plan_regrid(old: Forest, old_slots: dict[Block, int], new: Forest, capacity: int) -> RegridPlan:
    """Slots for `new`: a kept leaf keeps its slot, a new leaf takes the lowest slot that no old
    leaf holds, so the copies may read every old slot while writing the new ones. `new` must
    differ from `old` by at most one split or merge per leaf (what Forest.refined gives)."""
    if (old.roots, old.block_cells, old.periodic) != (new.roots, new.block_cells, new.periodic):
        raise ValueError("the old and new forests must have the same roots, block_cells and periodic axes")
    old_slot = aligned_slots(old, old_slots, capacity)
    same, _ = new.tiling.matches(old.tiling)
    kept = same >= 0
    arriving = np.flatnonzero(~kept)
    holder, first, from_parent = _sources(old.tiling, new.tiling, arriving)
    stray = ~from_parent & (first < 0)
    if stray.any():
        raise ValueError(f"the new leaf {new.leaves[arriving[np.argmax(stray)]]} is neither an old leaf, a child "
                         "of one, nor the parent of old leaves")
    if len(old_slot) + len(arriving) > capacity:
        raise PoolFull(len(old_slot) + len(arriving), capacity)
    free = np.ones(capacity, bool)
    free[old_slot] = False
    slot = old_slot[np.maximum(same, 0)]
    slot[arriving] = np.flatnonzero(free)[:len(arriving)]
    return RegridPlan(LeafSlots(new, slot),
                      *_copies(new.tiling, old_slot, slot, kept, arriving[from_parent], holder[from_parent],
                               arriving[~from_parent], first[~from_parent]))


def _sources(old: Tiling, new: Tiling, arriving: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the new leaves `arriving`: the old leaf holding each one's first point, the old
    leaf where its children start (-1 where they are not a run of old leaves), and whether it
    was split from its holder. Read off the regrid that made `new` where it is remembered."""
    made_from = new.made_from(old)
    levels = new.levels[arriving]
    if made_from is not None:
        holder = made_from[arriving]
        from_parent = old.levels[holder] == levels - 1
        first = np.where(old.levels[holder] == levels + 1, holder, -1)
        return holder, first, from_parent
    before, after = on_common_keys(old, new)
    keys = after.keys[arriving]
    holder = before.containing(keys)
    from_parent = before.levels[holder] == levels - 1
    first = before.first_at_or_after(keys)
    from_children = before.first_at_or_after(keys + before.space.spans(levels)) - first == before.space.fan
    return holder, np.where(from_children, first, -1), from_parent


def _copies(after: Tiling, old_slot: np.ndarray, slot: np.ndarray, kept: np.ndarray, split: np.ndarray,
            parents: np.ndarray, merged: np.ndarray, first_children: np.ndarray) -> tuple:
    """The plan's kept slots and its prolonged and restricted moves (arrays, Morton order of
    the new leaves): new leaves `split` from the old leaves `parents`, and `merged` from the
    old families starting at `first_children` (their children are a run of old leaves in
    octant order)."""
    dim, fan = after.space.dim, after.space.fan
    octants = np.sum((after.coords[split] & 1) << np.arange(dim)[None, :], axis=1)
    children = first_children[:, None] + np.arange(fan)[None, :]
    prolonged = np.stack([old_slot[parents], slot[split], octants], axis=1).astype(np.int32).reshape(-1, 3)
    restricted = np.concatenate([old_slot[children], slot[merged][:, None]], axis=1).astype(np.int32)
    return slot[kept], prolonged, restricted.reshape(-1, fan + 1)
