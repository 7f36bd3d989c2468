"""One regrid of a Tiling: flagged splits, the splits that 2:1 balance then forces, and the
merges that keep it. Merges are decided last, against the balanced result, so that a merged
parent is never split again by the balancing (a leaf changes at most once per regrid, which the
device's slot plan relies on). From a balanced tiling the regrid is decided on Edits of the
old arrays and made once (edits.py, merges.py); otherwise, or where a leaf must split twice,
a tiling is made per balancing round (the same leaves, in more time)."""
from __future__ import annotations

import itertools
from typing import Collection

import numpy as np

from .around import blocks_balanced
from .balance import balanced, split_closure
from .edits import Edits
from .leaf_blocks import NOT_A_LEAF
from .merges import family_starts, merge_flagged
from .tiling import Tiling


def flag_indices(tiling: Tiling, key_of: dict, flags: Collection, name: str) -> np.ndarray:
    """The leaf indices of the blocks in `flags` (key_of: {leaf: key}); ValueError naming (up
    to five of, sorted) the flags that are not leaves."""
    keys = np.fromiter(map(key_of.get, flags, itertools.repeat(NOT_A_LEAF)), np.uint64, len(flags))
    strays = keys == NOT_A_LEAF
    if strays.any():
        blocks = sorted(block for block in flags if block not in key_of)
        raise ValueError(f"{name} flags must name leaves; these are not: {blocks[:5]}")
    return tiling.first_at_or_after(keys)


def regridded(tiling: Tiling, refine: np.ndarray, derefine: np.ndarray, known_balanced: bool) -> Tiling:
    """The leaves after splitting the leaves at indices `refine` (or where a boolean mask
    holds; those below max_level), balancing, then merging the families wholly in `derefine`
    and not in `refine` where the merge keeps the balance; `tiling` itself where nothing
    changes. known_balanced: the leaves are 2:1 balanced already, so only the split leaves can
    force splits (a leaf only gets finer neighbours) and balancing looks around them alone;
    otherwise around every leaf."""
    split, flagged = _mask(len(tiling), refine), _mask(len(tiling), derefine)
    flagged &= ~split
    split &= tiling.levels < tiling.space.max_level
    closed = split_closure(tiling, split) if known_balanced else None
    if closed is None:
        return _regridded_in_rounds(tiling, split, flagged, known_balanced)
    edits = Edits(tiling, closed)
    first = family_starts(tiling, flagged)
    for child in range(tiling.space.fan):  # (a family with a child split is no family of leaves)
        first = first[~closed[first + child]]
    refused = merge_flagged(edits, first)
    if not edits.changed():
        tiling.refused = refused  # (refused against the tiling itself: as good a memory)
        return tiling
    made = edits.made()
    made.refused = refused
    return made


def _mask(n: int, flags: np.ndarray) -> np.ndarray:
    """A boolean mask (a copy) of flags given as one or as indices."""
    if flags.dtype == bool:
        return flags.copy()
    mask = np.zeros(n, bool)
    mask[flags] = True
    return mask


def _regridded_in_rounds(tiling: Tiling, split: np.ndarray, flagged: np.ndarray, known_balanced: bool) -> Tiling:
    """regridded() making a tiling per balancing round and per merged level."""
    split_levels, split_coords = tiling.levels[split], tiling.coords[split]
    current = tiling.split(split)
    if known_balanced:
        current = balanced(current, split_levels, split_coords, split_levels)
    else:
        current = balanced(current, current.levels, current.coords, current.levels - 1)
    parent_levels, parent_coords, parent_keys = flagged_families(tiling, flagged)
    return merged(current, parent_levels, parent_coords, parent_keys)


def flagged_families(tiling: Tiling, flagged: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parents (levels, coords, keys) of the families all of whose children are leaves of
    `tiling` flagged in `flagged`. A family of leaves is a run of 2**dim leaves in key order
    from its octant-0 child (whose key is the parent's) to its last child at the same level."""
    space, fan = tiling.space, tiling.space.fan
    first = np.flatnonzero((tiling.levels > 0) & np.all((tiling.coords & 1) == 0, axis=1))
    first = first[first + fan <= len(tiling)]
    last = first + fan - 1
    level = tiling.levels[first]
    whole = (tiling.levels[last] == level) & (
        tiling.keys[last] == tiling.keys[first] + np.uint64(fan - 1) * space.spans(level))
    marked = np.concatenate([[0], np.cumsum(flagged)])
    whole &= marked[last + 1] - marked[first] == fan
    first = first[whole]
    return tiling.levels[first] - 1, tiling.coords[first] >> 1, tiling.keys[first]


def merged(tiling: Tiling, parent_levels: np.ndarray, parent_coords: np.ndarray, parent_keys: np.ndarray) -> Tiling:
    """`tiling` with the families of these parents (levels, coords, keys) merged where all their
    children are still leaves and the merged parent is balanced. Finest families first: merging
    them only lowers the levels a coarser merge must stay within one of, so this order refuses
    no merge that another allows. Families of one level are decided together: a merge only
    changes leaves one level finer than its parent into its level, which the balance of any
    other parent of that level allows either way."""
    space = tiling.space
    for level in np.unique(parent_levels)[::-1].tolist():
        at_level = parent_levels == level
        keys, candidates = parent_keys[at_level], parent_coords[at_level]
        first = tiling.first_at_or_after(keys)
        all_leaves = tiling.first_at_or_after(keys + space.spans(level)) - first == space.fan
        candidates, first = candidates[all_leaves], first[all_leaves]
        ok = blocks_balanced(tiling, np.full(len(first), level, np.int64), candidates)
        tiling = tiling.merge(first[ok])
    return tiling
