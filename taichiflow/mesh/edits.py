"""A regrid's edits of a Tiling before they are made: per leaf whether it splits into its
children or merges into its parent. The leaf covering a point is read off the old arrays (a
split leaf's child is one level finer, a merged leaf's parent one coarser), so balancing and
the merge checks cost binary searches over arrays that do not change; the new Tiling, and
which of its leaves are the old ones, are made once at the end, in a few passes over the
arrays (a tiling edited round by round cost a full copy a round)."""
from __future__ import annotations

import numpy as np

from .tiling import Tiling

KEPT, SPLIT, MERGED = 0, 1, -1


class Edits:
    """Edits of `tiling`: `change` per leaf, +1 split, -1 merged into its parent, 0 kept."""

    __slots__ = ("tiling", "change", "_firsts")

    def __init__(self, tiling: Tiling, split: np.ndarray):
        self.tiling = tiling
        self.change = split.astype(np.int8)
        self._firsts: list[np.ndarray] = []

    def levels_of(self, leaves: np.ndarray) -> np.ndarray:
        """The level of the leaf that will cover the first point of each old leaf in `leaves`."""
        return self.tiling.levels[leaves] + self.change[leaves]

    def changed(self) -> bool:
        return bool(self._firsts) or bool(self.change.any())

    def merge(self, first_children: np.ndarray) -> None:
        """Merge the families whose octant-0 children sit at these indices (all 2**dim of
        them leaves, none split)."""
        if len(first_children):
            fan = self.tiling.space.fan
            self.change[(first_children[:, None] + np.arange(fan)[None, :]).ravel()] = MERGED
            self._firsts.append(first_children)

    def made(self) -> Tiling:
        """The edited tiling, which knows (Tiling.matches) which of its leaves are the old ones
        and (Tiling.made_from) the old leaf each new one came from. Edits are few: the kept
        leaves move by boolean masks (numpy's fastest whole-array copies), and only the split
        and merged places are worked out one by one."""
        old, fan, dim = self.tiling, self.tiling.space.fan, self.tiling.space.dim
        split = np.flatnonzero(self.change == SPLIT)
        firsts = np.sort(np.concatenate(self._firsts)) if self._firsts else np.zeros(0, np.int64)
        # where the children of each split leaf and each merged parent start in the new arrays
        children_at = split + (fan - 1) * (np.arange(len(split)) - np.searchsorted(firsts, split))
        parents = firsts + (fan - 1) * (np.searchsorted(split, firsts) - np.arange(len(firsts)))
        total = len(old) + (fan - 1) * (len(split) - len(firsts))
        keep = self.change == KEPT  # (the old leaves that stay, merged families' first children too)
        keep[firsts] = True
        children = (children_at[:, None] + np.arange(fan)[None, :]).ravel()
        placed = np.ones(total, bool)  # (where they go)
        placed[children] = False
        levels, keys = np.empty(total, np.int64), np.empty(total, np.uint64)
        coords = np.empty((total, dim), np.int64)
        levels[placed] = old.levels[keep]
        keys[placed] = old.keys[keep]
        _rows(coords)[placed] = _rows(old.coords)[keep]
        levels[parents] -= 1
        coords[parents] >>= 1
        octant = np.tile(np.arange(fan), len(split))
        source = np.repeat(split, fan)
        levels[children] = old.levels[source] + 1
        coords[children] = 2 * old.coords[source] + ((octant[:, None] >> np.arange(dim)[None, :]) & 1)
        keys[children] = old.keys[source] + octant.astype(np.uint64) * old.space.spans(levels[children])
        theirs, ours = np.full(total, -1, np.int64), np.full(len(old), -1, np.int64)
        theirs[placed] = np.flatnonzero(keep)
        ours[keep] = np.flatnonzero(placed)
        theirs[parents], ours[firsts] = -1, -1
        made_from = np.full(total, -1, np.int64)
        made_from[children], made_from[parents] = source, firsts
        tiling = Tiling(old.space, levels, coords, keys)
        tiling.remember_matches(old, theirs, ours, made_from)
        return tiling


def _rows(array: np.ndarray) -> np.ndarray:
    """A C-contiguous (n, k) array seen as n opaque rows: copying rows through this view is
    several times faster than numpy's row indexing of the 2D array."""
    array = np.ascontiguousarray(array)  # (the array itself where it is: writes go through)
    return array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()
