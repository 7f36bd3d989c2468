"""Slots of the device's block pool as an array aligned with a forest's leaves: the form the
plans and tables are computed in, from the {Block: slot} dicts of the public API."""
from __future__ import annotations

import numpy as np

NO_SLOT = -1


def aligned_slots(forest, slots: dict, capacity: int) -> np.ndarray:
    """The slot of each leaf of `forest` (int64, in leaf order). ValueError unless `slots` gives
    each leaf, and nothing else, its own slot below `capacity`."""
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
