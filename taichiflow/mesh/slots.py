"""The device's block pool: which slot of a fixed-capacity pool holds each leaf, how a regrid
moves data between slots, and the per-slot tables (level, origin, neighbours) kernels read."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .block import Block, children, neighbour_offsets, octant_index, parent, touching_octants
from .forest import Forest

RELATION_CODES = {"same": 0, "coarser": -1, "finer": 1, "boundary": 2}
NO_SLOT = -1


class PoolFull(Exception):
    """The block pool has fewer slots than a forest (or a regrid, old and new at once) needs."""

    def __init__(self, needed: int, capacity: int):
        super().__init__(f"the block pool needs {needed} slots but has capacity for {capacity}")
        self.needed = needed
        self.capacity = capacity


class RegridPlan(NamedTuple):
    """Slots of the new forest's leaves and the copies that fill them from the old slots.
    kept: (old slot, new slot), the same slot; prolonged: (parent's old slot, child's new slot,
    child's octant index); restricted: (the children's old slots by octant, parent's new slot)."""

    slots: dict[Block, int]
    kept: list[tuple[int, int]]
    prolonged: list[tuple[int, int, int]]
    restricted: list[tuple[tuple[int, ...], int]]


class DeviceTables(NamedTuple):
    """Per-slot arrays for the kernels, rows of unused slots filled with -1 (relation 2: nothing
    there). neighbour[slot, direction, octant] and relation[slot, direction] use the direction
    index sum((o_d + 1) * 3**d) of offset o; the centre direction names the slot itself."""

    level: np.ndarray  # int32[capacity]
    origin: np.ndarray  # int32[capacity, dim]: the first cell's index at the block's level
    neighbour: np.ndarray  # int32[capacity, 3**dim, 2**dim]
    relation: np.ndarray  # int8[capacity, 3**dim]: 0 same, -1 coarser, +1 finer, 2 boundary
    active: np.ndarray  # int32[leaves]: the leaves' slots in Morton order


def assign_slots(forest: Forest, capacity: int) -> dict[Block, int]:
    """Slots 0..n-1 to the leaves in Morton order."""
    if len(forest.leaves) > capacity:
        raise PoolFull(len(forest.leaves), capacity)
    return {leaf: slot for slot, leaf in enumerate(forest.leaves)}


def plan_regrid(old: Forest, old_slots: dict[Block, int], new: Forest, capacity: int) -> RegridPlan:
    """Slots for `new`: a kept leaf keeps its slot, a new leaf takes the lowest slot that no old
    leaf holds, so the copies may read every old slot while writing the new ones. `new` must
    differ from `old` by at most one split or merge per leaf (what Forest.refined gives)."""
    if (old.roots, old.block_cells, old.periodic) != (new.roots, new.block_cells, new.periodic):
        raise ValueError("the old and new forests must have the same roots, block_cells and periodic axes")
    _check_slots(old, old_slots, capacity)
    arriving = [leaf for leaf in new.leaves if not old.is_leaf(leaf)]
    for leaf in arriving:
        from_parent = leaf.level > 0 and old.is_leaf(parent(leaf))
        if not from_parent and not all(old.is_leaf(child) for child in children(leaf)):
            raise ValueError(f"the new leaf {leaf} is neither an old leaf, a child of one, "
                             "nor the parent of old leaves")
    needed = len(old_slots) + len(arriving)
    if needed > capacity:
        raise PoolFull(needed, capacity)
    occupied = set(old_slots.values())
    free = (slot for slot in range(capacity) if slot not in occupied)
    plan = RegridPlan({}, [], [], [])
    for leaf in new.leaves:
        if old.is_leaf(leaf):
            slot = old_slots[leaf]
            plan.kept.append((slot, slot))
        else:
            slot = next(free)
            if leaf.level > 0 and old.is_leaf(parent(leaf)):
                plan.prolonged.append((old_slots[parent(leaf)], slot, octant_index(leaf)))
            else:
                plan.restricted.append((tuple(old_slots[child] for child in children(leaf)), slot))
        plan.slots[leaf] = slot
    return plan


def device_tables(forest: Forest, slots: dict[Block, int], capacity: int, faces_only: bool = False) -> DeviceTables:
    """The kernels' tables for `forest` with its leaves in `slots`. faces_only: the rows of the
    edge and corner directions left as at a boundary (-1, relation 2), and of finer neighbours
    only the children that touch the face, for kernels whose stencils run along one axis and so
    read across faces only (in 3D, 6 queries a leaf of 26)."""
    _check_slots(forest, slots, capacity)
    fan = 1 << forest.dim
    active = np.array([slots[leaf] for leaf in forest.leaves], np.int32)
    level = np.full(capacity, -1, np.int32)
    level[active] = [leaf.level for leaf in forest.leaves]
    origin = np.full((capacity, forest.dim), -1, np.int32)
    coords = np.array([leaf.coords for leaf in forest.leaves], np.int32).reshape(-1, forest.dim)
    origin[active] = coords * forest.block_cells
    directions = len(neighbour_offsets(forest.dim))
    neighbour = np.full((capacity, directions, fan), NO_SLOT, np.int32)
    relation = np.full((capacity, directions), RELATION_CODES["boundary"], np.int8)
    rows = [_neighbour_row(forest, slots, leaf, faces_only) for leaf in forest.leaves]  # (at least one leaf)
    neighbour[active] = np.array([entries for entries, _ in rows], np.int32)
    relation[active] = np.array([codes for _, codes in rows], np.int8)
    return DeviceTables(level, origin, neighbour, relation, active)


def updated_tables(old: DeviceTables, old_forest: Forest, forest: Forest, slots: dict[Block, int]) -> DeviceTables:
    """device_tables(forest, slots, capacity, faces_only=True) from the old forest's (faces
    only too) after a regrid that kept the slots of the leaves it kept: only the rows of the new
    leaves and of their face neighbours are looked up again (a neighbour that was removed was
    replaced by new leaves, which touch the same faces). In 3D at 1,400 leaves a whole table
    took 0.1 s of Python a regrid."""
    dim = forest.dim
    new_leaves = [leaf for leaf in forest.leaves if not old_forest.is_leaf(leaf)]
    touched = set(new_leaves)
    faces = [offset for offset in neighbour_offsets(dim) if sum(map(abs, offset)) == 1]
    for leaf in new_leaves:
        for offset in faces:
            touched.update(block for block in forest.neighbour(leaf, offset).blocks if block is not None)
    level, origin = old.level.copy(), old.origin.copy()
    neighbour, relation = old.neighbour.copy(), old.relation.copy()
    freed = [slot for block, slot in _slots_of(old_forest, old).items() if not forest.is_leaf(block)]
    level[freed], origin[freed] = -1, -1
    neighbour[freed], relation[freed] = NO_SLOT, RELATION_CODES["boundary"]
    for leaf in touched:
        slot = slots[leaf]
        level[slot], origin[slot] = leaf.level, [c * forest.block_cells for c in leaf.coords]
        entries, codes = _neighbour_row(forest, slots, leaf, True)
        neighbour[slot], relation[slot] = entries, codes
    active = np.array([slots[leaf] for leaf in forest.leaves], np.int32)
    return DeviceTables(level, origin, neighbour, relation, active)


def _slots_of(forest: Forest, tables: DeviceTables) -> dict[Block, int]:
    """The slots of a forest's leaves, from its tables' active list (in Morton order)."""
    return dict(zip(forest.leaves, tables.active.tolist()))


def _neighbour_row(forest: Forest, slots: dict[Block, int], leaf: Block,
                   faces_only: bool) -> tuple[list[list[int]], list[int]]:
    """One leaf's neighbour slots (per direction, per octant) and relation codes (per direction)."""
    fan = 1 << forest.dim
    entries, codes = [], []
    for offset in neighbour_offsets(forest.dim):
        if not any(offset):
            entries.append([slots[leaf]] * fan)
            codes.append(RELATION_CODES["same"])
            continue
        if faces_only and sum(map(abs, offset)) > 1:
            entries.append([NO_SLOT] * fan)
            codes.append(RELATION_CODES["boundary"])
            continue
        found = forest.neighbour(leaf, offset)
        codes.append(RELATION_CODES[found.kind])
        if found.kind == "finer":
            near = touching_octants(offset) if faces_only else range(fan)  # (the kernels read no other)
            entries.append([NO_SLOT if child is None or k not in near else slots[child]
                            for k, child in enumerate(found.blocks)])
        else:
            entries.append([slots[found.blocks[0]] if found.blocks else NO_SLOT] * fan)
    return entries, codes


def _check_slots(forest: Forest, slots: dict[Block, int], capacity: int) -> None:
    """Raise ValueError unless `slots` gives each leaf of `forest`, and nothing else, its own slot below `capacity`."""
    if len(slots) != len(forest.leaves) or not all(forest.is_leaf(block) for block in slots):
        raise ValueError("the slots must name exactly the leaves of the forest")
    values = list(slots.values())
    if len(set(values)) != len(values) or not all(0 <= slot < capacity for slot in values):
        raise ValueError(f"the slots must be distinct and in [0, {capacity})")
