"""Which flagged families a regrid merges, decided on its Edits (edits.py): finest families
first, each where its merged parent stays 2:1 balanced against the leaves as edited so far.

Most flagged families of a forest are refused, and by the same leaves regrid after regrid:
calm blocks beside finer ones (a shell's or a cloud's coarse side). Each look costs 4**dim -
2**dim binary searches, so a tiling made by a regrid remembers the families that regrid
refused (Tiling.refused), and the next regrid refuses them again without a look unless a
family one level finer merged beside them in it. That gives the same answer: a family with
parent p (level P) was refused because a leaf of level P + 2 or finer touched p; later splits
leave a leaf that fine there, and the only edit that removes one is a merge into a parent of
level P + 1 touching p."""
from __future__ import annotations

import functools

import numpy as np

from .around import ring_offsets
from .edits import Edits
from .tiling import KeySpace, Tiling


def family_starts(tiling: Tiling, flagged: np.ndarray) -> np.ndarray:
    """Indices of the octant-0 children of the families all of whose 2**dim children are
    leaves flagged in `flagged`: a run of 2**dim leaves in key order from the octant-0 child
    (whose key is the parent's) to the last child at the same level."""
    space, fan = tiling.space, tiling.space.fan
    # (an octant-0 child's key is a multiple of its parent's span: whole-array steps on the keys)
    start = flagged & ((tiling.keys & _below_parent_span(space)[tiling.levels]) == 0) & (tiling.levels > 0)
    start[max(len(tiling) - fan + 1, 0):] = False
    first = np.flatnonzero(start)
    last = first + fan - 1
    level = tiling.levels[first]
    whole = (tiling.levels[last] == level) & (
        tiling.keys[last] == tiling.keys[first] + np.uint64(fan - 1) * space.spans(level))
    first = first[whole]
    for child in range(1, fan):
        first = first[flagged[first + child]]
    return first


def _below_parent_span(space: KeySpace) -> np.ndarray:
    """Per level, the mask of the key bits below a parent's span (uint64 (max_level + 1,);
    level 0 has no parent: 0)."""
    levels = np.arange(space.max_level + 1)
    return np.where(levels > 0, space.spans(np.maximum(levels - 1, 0)) - np.uint64(1), 0).astype(np.uint64)


def merge_flagged(edits: Edits, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge, in `edits`, the families starting at `first` (none of their children split)
    whose parent stays balanced, finest first, each level's families against the leaves after
    the finer merges; the families of one level are decided together (a merge only turns
    leaves one level finer than its parent into its level, which the balance of any other
    parent of that level allows either way). All are first looked at once against the splits
    alone: a family that passes then passes after finer merges too (they only make leaves
    coarser, and no coarser than its level + 1), and one that fails stays refused unless a
    family one level finer merged beside it; only those are looked at again. Returns the
    refused families' parents (keys, sorted, and levels), for Tiling.refused."""
    tiling = edits.tiling
    levels, keys, parents = tiling.levels[first] - 1, tiling.keys[first], tiling.coords[first] >> 1
    ok = np.zeros(len(first), bool)
    look = np.flatnonzero(~_refused_before(tiling, keys, levels))
    ok[look] = balanced_if_merged(edits, levels[look], parents[look])
    finer = (-1, parents[:0])  # (level, coords) of the last level's merged parents
    for level in np.flatnonzero(np.bincount(levels))[::-1].tolist():
        at = np.flatnonzero(levels == level)
        if finer[0] == level + 1 and len(finer[1]):
            again = at[~ok[at]]
            again = again[_beside(tiling.space, level, keys[again], finer[1])]
            ok[again] = balanced_if_merged(edits, levels[again], parents[again])
        merged = at[ok[at]]
        edits.merge(first[merged])
        finer = (level, parents[merged])
    order = np.flatnonzero(~ok)
    order = order[np.argsort(keys[order])]
    return keys[order], levels[order]


def balanced_if_merged(edits: Edits, levels: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Per parent (levels (m,), below max_level, and coords (m, dim)): whether every leaf
    touching it after the edits is within one level of it. Each such leaf holds the first
    point of one of the ring of one-level-finer positions around it (around.blocks_balanced)."""
    tiling = edits.tiling
    ok = np.ones(len(parents), bool)
    if len(parents):
        keys, inside = tiling.space.positions(levels + 1, parents << 1, ring_offsets(tiling.space.dim))
        row = np.nonzero(inside.T)[1]  # (offset by offset: searches in key order mostly)
        found = edits.levels_of(tiling.containing(keys.T[inside.T]))
        level = levels[row]
        ok[row[(found < level - 1) | (found > level + 1)]] = False
    return ok


def _refused_before(tiling: Tiling, keys: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Whether each family (its parent's key and level) was refused by the regrid that made
    `tiling` (a tree has one family per key whose children are all leaves)."""
    if tiling.refused is None or not len(tiling.refused[0]):
        return np.zeros(len(keys), bool)
    refused_keys, refused_levels = tiling.refused
    at = np.minimum(np.searchsorted(refused_keys, keys), len(refused_keys) - 1)
    return (refused_keys[at] == keys) & (refused_levels[at] == levels)


def _beside(space: KeySpace, level: int, keys: np.ndarray, merged: np.ndarray) -> np.ndarray:
    """Whether each parent (its key, at `level`) touches one of the blocks `merged` (coords at
    level + 1; periodic wraps included). Along each axis a block touches the two positions of
    the coarser level on its side of its parent's middle: 2**dim positions a block."""
    low = (merged >> 1) + (merged & 1) - 1
    near, inside = space.positions(np.full(len(merged), level, np.int64), low, _corner_offsets(space.dim))
    near = np.sort(near[inside])
    at = np.minimum(np.searchsorted(near, keys), len(near) - 1)
    return near[at] == keys if len(near) else np.zeros(len(keys), bool)


@functools.lru_cache(maxsize=None)
def _corner_offsets(dim: int) -> np.ndarray:
    """{0, 1}**dim, (2**dim, dim)."""
    return (np.arange(1 << dim)[:, None] >> np.arange(dim)[None, :]) & 1
