"""2:1 balance of a Tiling by whole-array rounds: the splits that finer leaves force, and only
those, so the result is the coarsest balanced refinement (the same whatever order the splits
are found in, which lets a round do all it finds at once)."""
from __future__ import annotations

import numpy as np

from .around import around, offsets_array
from .tiling import Tiling, distinct


def balanced(tiling: Tiling, levels: np.ndarray, coords: np.ndarray, required: np.ndarray) -> Tiling:
    """`tiling` split until every leaf touching each given block (levels (m,), coords (m, dim),
    leaves or not) has at least the level `required` of it. A block split in this regrid asks
    for its own level (its children must not touch a leaf two levels coarser), a leaf for one
    below its own. Each round splits every too coarse leaf found; those split become blocks to
    look around, and the blocks still short look again (a leaf may need splitting twice)."""
    offsets, _ = offsets_array(tiling.space.dim)
    while len(levels):
        near = around(tiling, levels, coords, offsets)
        short = tiling.levels[near.cover] < required[near.block]
        if not short.any():
            break
        split = np.zeros(len(tiling), bool)
        split[near.cover[short]] = True
        again = np.unique(near.block[short])
        split_levels, split_coords = tiling.levels[split], tiling.coords[split]
        tiling = tiling.split(split)
        levels = np.concatenate([levels[again], split_levels])
        coords = np.concatenate([coords[again], split_coords])
        required = np.concatenate([required[again], split_levels])
    return tiling


def split_closure(tiling: Tiling, split: np.ndarray) -> np.ndarray | None:
    """balanced(tiling.split(split), ...) for a balanced `tiling` (known_balanced), as the mask
    of the leaves it splits, found without making a tiling a round: each round looks around
    the leaves split last (their positions at the leaf's level, whose covers must not be
    coarser than it), over the old arrays with the split leaves' children one level finer.
    None where a leaf would have to split twice (balanced() handles that case)."""
    split = split.copy()
    offsets, _ = offsets_array(tiling.space.dim)
    levels, coords = tiling.levels[split], tiling.coords[split]
    required = levels
    while len(levels):
        keys, inside = tiling.space.positions(levels, coords, offsets)
        block = np.nonzero(inside.T)[1]  # (offset by offset: searches in key order mostly, as around() does)
        cover = tiling.containing(keys.T[inside.T])
        short = tiling.levels[cover] + split[cover] < required[block]
        if not short.any():
            break
        covers = distinct(cover[short])
        if split[covers].any():
            return None
        split[covers] = True
        again = distinct(block[short])
        levels = np.concatenate([levels[again], tiling.levels[covers]])
        coords = np.concatenate([coords[again], tiling.coords[covers]])
        required = np.concatenate([required[again], tiling.levels[covers]])
    return split
