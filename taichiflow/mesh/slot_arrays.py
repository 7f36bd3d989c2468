"""Slots of the device's block pool as an array aligned with a forest's leaves: the form the
plans and tables are computed in, from the {Block: slot} dicts of the public API."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

NO_SLOT = -1


class LeafSlots(Mapping):
    """{leaf Block: slot} of a forest's leaves, held as an int64 array in leaf order: the
    Blocks and a dict of them are made only when a block is looked up (at tens of thousands
    of leaves they cost milliseconds a regrid), while the plans and tables read the array.
    Made by the mesh only (assign_slots, plan_regrid), whose slots are valid by construction."""

    def __init__(self, forest, array: np.ndarray):
        self.forest = forest
        self.array = np.asarray(array, dtype=np.int64)
        self._dict: dict | None = None

    def _mapping(self) -> dict:
        if self._dict is None:
            self._dict = dict(zip(self.forest.leaves, self.array.tolist()))
        return self._dict

    def __getitem__(self, block):
        return self._mapping()[block]

    def __iter__(self):
        return iter(self.forest.leaves)

    def __len__(self) -> int:
        return len(self.array)

    def values(self):
        return self.array.tolist()

    def items(self):
        return self._mapping().items()


def aligned_slots(forest, slots: dict, capacity: int) -> np.ndarray:
    """The slot of each leaf of `forest` (int64, in leaf order). ValueError unless `slots` gives
    each leaf, and nothing else, its own slot below `capacity`."""
    if isinstance(slots, LeafSlots) and slots.forest is forest:
        return slots.array
    leaves = forest.leaves
    if len(slots) != len(leaves):
        raise ValueError("the slots must name exactly the leaves of the forest")
    try:
        values = [slots[leaf] for leaf in leaves]
    except KeyError:
        raise ValueError("the slots must name exactly the leaves of the forest") from None
    array = np.array(values)
    if len(array) == 0:
        return np.zeros(0, np.int64)
    if array.dtype.kind not in "iu" or array.min() < 0 or array.max() >= capacity:
        raise ValueError(f"the slots must be distinct and in [0, {capacity})")
    taken = np.zeros(capacity, bool)
    taken[array] = True
    if np.count_nonzero(taken) != len(array):
        raise ValueError(f"the slots must be distinct and in [0, {capacity})")
    return array.astype(np.int64)
