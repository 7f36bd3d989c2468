"""2:1 balance of a Tiling by whole-array rounds: the splits that finer leaves force, and only
those, so the result is the coarsest balanced refinement (the same whatever order the splits
are found in, which lets a round do all it finds at once)."""
from __future__ import annotations

import numpy as np

from .around import around, offsets_array
from .tiling import Tiling


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
