"""A forest's leaves as numpy arrays sorted by Morton key, the form every bulk query and every
regrid works on. The leaves tile the domain and each covers one contiguous run of finest-level
keys, so the leaf holding a point is one binary search away, a block's descendants are one run
of the arrays, and splitting or merging a family never reorders the others."""
from __future__ import annotations

import functools
import weakref
from typing import Sequence

import numpy as np

from .morton import KEY_BITS, spread_bits


class KeySpace:
    """The domain seen as keys: block coordinates per level wrapped or cut at its edges, and the
    Morton key of a block's first finest-level block (its origin at max_level)."""

    __slots__ = ("roots", "periodic", "max_level", "dim", "fan", "_shares")
    SHARE_TABLE = 1 << 16  # finest-level blocks per axis up to which each axis's key shares are tabled

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
        self._shares = None

    def share(self, axis: int, finest: np.ndarray) -> np.ndarray:
        """Axis `axis`'s share of the keys of finest-level coordinates `finest` (inside the
        domain): their bits spread (morton.spread_bits) and shifted by the axis; looked up in a
        table where the domain is at most SHARE_TABLE finest blocks across (one gather instead
        of ten whole-array steps)."""
        if self._shares is None:
            counts = [int(r) << self.max_level for r in self.roots]
            self._shares = [spread_bits(np.arange(c), self.dim) << np.uint64(d) if c <= self.SHARE_TABLE else None
                            for d, c in enumerate(counts)]
        table = self._shares[axis]
        if table is None:
            return spread_bits(finest, self.dim) << np.uint64(axis)
        return table[finest]

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
        keys = inside = None
        finer = (self.max_level - levels)[:, None]
        for axis, (steps, pick) in enumerate(_offset_steps(np.ascontiguousarray(offsets, np.int64).tobytes(),
                                                            offsets.shape[1])):
            along = coords[:, axis, None] + steps[None, :]
            count = (self.roots[axis] << levels)[:, None]
            if self.periodic[axis]:
                share = self.share(axis, (along % count) << finer)[:, pick]
            else:
                valid = (along >= 0) & (along < count)
                share = self.share(axis, np.where(valid, along, 0) << finer)[:, pick]
                inside = valid[:, pick] if inside is None else inside & valid[:, pick]
            keys = share if keys is None else keys | share
        if inside is None:
            inside = np.ones(keys.shape, bool)
        return keys, inside

    def keys(self, levels: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Morton keys (uint64) of the blocks' first finest-level blocks (blocks inside the domain)."""
        finest = coords << (self.max_level - levels)[:, None]
        keys = self.share(0, finest[:, 0])
        for axis in range(1, self.dim):
            keys = keys | self.share(axis, finest[:, axis])
        return keys

    def spans(self, levels) -> np.ndarray:
        """How many finest-level keys a block of each level covers (uint64)."""
        shifts = (self.dim * (self.max_level - np.asarray(levels, np.int64))).astype(np.uint64)
        return np.left_shift(np.uint64(1), shifts)


@functools.lru_cache(maxsize=64)
def _offset_steps(packed: bytes, dim: int) -> tuple:
    """Per axis, the distinct steps of a set of offsets (k, dim) along it, ascending, and
    which of them each offset takes (positions() works out a share per step)."""
    offsets = np.frombuffer(packed, np.int64).reshape(-1, dim)
    plan = []
    for axis in range(dim):
        low, high = int(offsets[:, axis].min()), int(offsets[:, axis].max())
        plan.append((np.arange(low, high + 1), offsets[:, axis] - low))
    return tuple(plan)


class Tiling:
    """Leaves tiling the domain, sorted by key: levels (n,), coords (n, dim) and keys (n,),
    int64, int64 and uint64. Treated as immutable: edits return a new tiling."""

    __slots__ = ("space", "levels", "coords", "keys", "_matched", "refused", "__weakref__")

    def __init__(self, space: KeySpace, levels: np.ndarray, coords: np.ndarray, keys: np.ndarray):
        self.space, self.levels, self.coords, self.keys = space, levels, coords, keys
        self._matched = None
        # the families (parents' keys, sorted, and levels) whose merge the regrid that made this
        # tiling refused for balance (None: unknown); see refinement.py
        self.refused: tuple[np.ndarray, np.ndarray] | None = None

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
            self._matched = (weakref.ref(before), old.find(new.keys, new.levels), new.find(old.keys, old.levels), None)
        return self._matched[1], self._matched[2]

    def remember_matches(self, before: Tiling, theirs: np.ndarray, ours: np.ndarray, made_from: np.ndarray) -> None:
        """What matches(before) would find, as the regrid that made this tiling from `before`
        knows it, and per leaf the old leaf it came from (made_from)."""
        self._matched = (weakref.ref(before), theirs, ours, made_from)

    def made_from(self, before: Tiling) -> np.ndarray | None:
        """Per leaf of this tiling made by a regrid of `before`: the index in `before` of the
        leaf it was split from or of the first child it was merged from (-1 for a kept leaf);
        None where that regrid is not the one remembered."""
        if self._matched is None or self._matched[0]() is not before:
            return None
        return self._matched[3]

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


def distinct(values: np.ndarray, below: int = 0) -> np.ndarray:
    """The distinct values of an integer array, ascending: np.unique's answer, several times
    faster (numpy 2's np.unique hashes first, which costs 60 us for a thousand values). below:
    a bound on the values (non-negative) under which a mask is cheaper than a sort."""
    values = np.asarray(values)
    if below and 16 * len(values) > below:
        mask = np.zeros(below, bool)
        mask[values] = True
        return np.flatnonzero(mask).astype(values.dtype, copy=False)
    ordered = np.sort(values)
    keep = np.empty(len(ordered), bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
