"""A forest's leaves as numpy arrays sorted by Morton key, the form every bulk query and every
regrid works on. The leaves tile the domain and each covers one contiguous run of finest-level
keys, so the leaf holding a point is one binary search away, a block's descendants are one run
of the arrays, and splitting or merging a family never reorders the others."""
from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np

from .morton import KEY_BITS, morton_keys, spread_bits


class KeySpace:
    """The domain seen as keys: block coordinates per level wrapped or cut at its edges, and the
    Morton key of a block's first finest-level block (its origin at max_level)."""

    __slots__ = ("roots", "periodic", "max_level", "dim", "fan")

    def __init__(self, roots: Sequence[int], periodic: Sequence[bool], max_level: int):
        self.roots = np.array(roots, np.int64)
        self.periodic = np.array(periodic, bool)
        self.max_level = int(max_level)
        self.dim = len(self.roots)
        self.fan = 1 << self.dim
        bits = max(int((int(r) << self.max_level) - 1).bit_length() for r in self.roots)
        if self.dim * bits > KEY_BITS:
            raise ValueError(f"{tuple(roots)} roots refined to level {max_level} need more than "
                             f"{KEY_BITS} bits of Morton key")

    def same_as(self, other: KeySpace) -> bool:
        return (self.max_level == other.max_level and np.array_equal(self.roots, other.roots)
                and np.array_equal(self.periodic, other.periodic))

    def inside(self, levels: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Which blocks (levels (n,), coords (n, dim)) lie in the domain, periodic axes unwrapped."""
        inside = np.ones(len(levels), bool)
        for axis in range(self.dim):  # (as unsigned, a negative coordinate is past the end too)
            inside &= coords[:, axis].astype(np.uint64) < (self.roots[axis] << levels).astype(np.uint64)
        return inside

    def positions(self, levels: np.ndarray, coords: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys (uint64 (m, k)) of the same-level positions at `offsets` (k, dim; each within
        one domain length) from the blocks (levels (m,), coords (m, dim), inside the domain),
        wrapped across periodic axes, and which are in the domain (bool (m, k); the others lie
        across a non-periodic edge, their keys meaningless). A key is the or of one share per
        axis, and each axis's share takes only a few values per block: those are computed."""
        keys = np.zeros((len(levels), len(offsets)), np.uint64)
        inside = np.ones((len(levels), len(offsets)), bool)
        finer = (self.max_level - levels)[:, None]
        for axis in range(self.dim):
            low = int(offsets[:, axis].min())
            count = (self.roots[axis] << levels)[:, None]
            along = coords[:, axis, None] + np.arange(low, int(offsets[:, axis].max()) + 1)[None, :]
            if self.periodic[axis]:
                along += np.where(along < 0, count, 0) - np.where(along >= count, count, 0)
            valid = (along >= 0) & (along < count)
            share = spread_bits(np.where(valid, along, 0) << finer, self.dim) << np.uint64(axis)
            pick = offsets[:, axis] - low
            keys |= share[:, pick]
            inside &= valid[:, pick]
        return keys, inside

    def keys(self, levels: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Morton keys (uint64) of the blocks' first finest-level blocks (blocks inside the domain)."""
        return morton_keys(coords << (self.max_level - levels)[:, None])

    def spans(self, levels) -> np.ndarray:
        """How many finest-level keys a block of each level covers (uint64)."""
        shifts = (self.dim * (self.max_level - np.asarray(levels, np.int64))).astype(np.uint64)
        return np.left_shift(np.uint64(1), shifts)


class Tiling:
    """Leaves tiling the domain, sorted by key: levels (n,), coords (n, dim) and keys (n,),
    int64, int64 and uint64. Treated as immutable: edits return a new tiling."""

    __slots__ = ("space", "levels", "coords", "keys", "_matched", "__weakref__")

    def __init__(self, space: KeySpace, levels: np.ndarray, coords: np.ndarray, keys: np.ndarray):
        self.space, self.levels, self.coords, self.keys = space, levels, coords, keys
        self._matched = None

    @classmethod
    def sorted_from(cls, space: KeySpace, levels: np.ndarray, coords: np.ndarray) -> Tiling:
        """The tiling of these blocks (inside the domain, not checked to tile it) in key order."""
        keys = space.keys(levels, coords)
        order = np.lexsort((levels, keys))
        return cls(space, levels[order], coords[order], keys[order])

    def __len__(self) -> int:
        return len(self.levels)

    def containing(self, keys: np.ndarray) -> np.ndarray:
        """Index of the leaf that holds each finest-level key (keys inside the domain)."""
        return np.searchsorted(self.keys, keys, side="right") - 1

    def first_at_or_after(self, keys: np.ndarray) -> np.ndarray:
        """Index of the first leaf whose key is not below each key (len(self) past the last)."""
        return np.searchsorted(self.keys, keys, side="left")

    def find(self, keys: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Index of each block given by its key and level among the leaves, -1 where it is not
        a leaf (blocks of this key space, such as another tiling's leaves)."""
        at = np.minimum(self.first_at_or_after(keys), len(self) - 1)
        return np.where((self.keys[at] == keys) & (self.levels[at] == levels), at, -1)

    def matches(self, before: Tiling) -> tuple[np.ndarray, np.ndarray]:
        """Per leaf of this tiling the index of the same leaf in `before` (-1 where it has none),
        and per leaf of `before` its index here: what a regrid kept. Remembered for the last
        `before` asked about (the Blocks, the slot plan and the tables of a regrid all ask)."""
        if self._matched is None or self._matched[0]() is not before:
            old, new = on_common_keys(before, self)
            self._matched = (weakref.ref(before), old.find(new.keys, new.levels), new.find(old.keys, old.levels))
        return self._matched[1], self._matched[2]

    def split(self, mask: np.ndarray) -> Tiling:
        """The leaves where `mask` holds replaced by their 2**dim children: the children of a
        leaf cover its run of keys in octant order, so they take its place in the arrays."""
        fan = self.space.fan
        counts = np.where(mask, fan, 1)
        source = np.repeat(np.arange(len(self)), counts)
        is_child = mask[source]
        octant = np.arange(len(source)) - np.repeat(np.cumsum(counts) - counts, counts)
        levels = self.levels[source] + is_child
        bits = (octant[:, None] >> np.arange(self.space.dim)[None, :]) & 1
        coords = np.where(is_child[:, None], 2 * self.coords[source] + bits, self.coords[source])
        keys = self.keys[source] + np.where(is_child, octant.astype(np.uint64), np.uint64(0)) * self.space.spans(levels)
        return Tiling(self.space, levels, coords, keys)

    def merge(self, first_children: np.ndarray) -> Tiling:
        """The families whose first child (octant 0, whose key is the parent's) sits at each
        index of `first_children`, all 2**dim of them leaves, replaced by their parents."""
        keep = np.ones(len(self), bool)
        gone = first_children[:, None] + np.arange(1, self.space.fan)[None, :]
        keep[gone.ravel()] = False
        levels, coords = self.levels.copy(), self.coords.copy()
        levels[first_children] -= 1
        coords[first_children] >>= 1
        return Tiling(self.space, levels[keep], coords[keep], self.keys[keep])


def on_common_keys(first: Tiling, second: Tiling) -> tuple[Tiling, Tiling]:
    """Two tilings of one domain keyed at the same finest level (the finer max_level of the two),
    so that keys of the one search the other."""
    if first.space.max_level == second.space.max_level:
        return first, second
    finest = max(first.space.max_level, second.space.max_level)
    space = KeySpace(first.space.roots.tolist(), first.space.periodic.tolist(), finest)

    def rekeyed(tiling: Tiling) -> Tiling:
        shift = np.uint64(space.dim * (finest - tiling.space.max_level))
        return Tiling(space, tiling.levels, tiling.coords, tiling.keys << shift)

    return rekeyed(first), rekeyed(second)
