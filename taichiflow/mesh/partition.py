"""The leaves of a forest shared among ranks: contiguous runs of the Morton order, balanced by
cost, and what each rank must hold besides its own leaves (its halo). Numpy only.

A partition is a set of splitters, the first Morton key of each rank's run, so that it carries
over to the forest after a regrid: a kept leaf stays with its rank, the children of a split
leaf go where the parent was, and a merged parent where its first child was (a family never
straddles two runs' first keys, since the runs start at leaves). Concatenating the ranks'
leaves in rank order gives the forest's own order, which is what keeps a multi-rank run's
gathered arrays those of one rank.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .around import around, offsets_array, touching_table

LAST_KEY = np.iinfo(np.uint64).max  # (the first key of a rank left without leaves at the end)
HALO_DEPTH = 1  # touching steps a rank's copies reach (kernels/amr: see parallel/amr_layout.py)


class Partition(NamedTuple):
    """splitters: uint64 (ranks,), the first Morton key of each rank's run (non-decreasing; the
    first is 0). A rank whose splitter equals the next one's holds no leaves."""

    splitters: np.ndarray

    @property
    def ranks(self) -> int:
        return len(self.splitters)

    def owners(self, forest) -> np.ndarray:
        """The rank of each leaf of `forest` (int64, non-decreasing in leaf order)."""
        return np.searchsorted(self.splitters, forest.keys, side="right").astype(np.int64) - 1


def split(forest, ranks: int, weights: np.ndarray | None = None) -> Partition:
    """The Morton order cut into `ranks` runs of nearly equal weight (each leaf's cost; default
    1 a leaf: every block has the same cells and takes the same time steps): leaf i goes to
    the rank whose share of the total holds the middle of its weight."""
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, not {ranks}")
    w = np.ones(len(forest.keys)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(w) != len(forest.keys) or (w < 0).any():
        raise ValueError("weights must be one non-negative number per leaf")
    total = w.sum()
    middle = np.cumsum(w) - 0.5 * w
    owner = np.minimum((middle * ranks // total).astype(np.int64), ranks - 1) if total > 0 else \
        np.zeros(len(w), np.int64)
    return of_owners(forest, owner, ranks)


def of_owners(forest, owner: np.ndarray, ranks: int) -> Partition:
    """The partition of a non-decreasing rank per leaf."""
    owner = np.asarray(owner, np.int64)
    if len(owner) and (np.any(np.diff(owner) < 0) or owner[0] < 0 or owner[-1] >= ranks):
        raise ValueError("owners must be non-decreasing ranks in [0, ranks)")
    first = np.searchsorted(owner, np.arange(ranks), side="left")
    keys = np.append(np.asarray(forest.keys, np.uint64), np.uint64(LAST_KEY))
    splitters = keys[first]
    splitters[0] = 0
    return Partition(splitters)


def loads(owner: np.ndarray, ranks: int, weights: np.ndarray | None = None) -> np.ndarray:
    """The summed weight of each rank's leaves."""
    return np.bincount(owner, weights=weights, minlength=ranks).astype(np.float64)


def imbalance(owner: np.ndarray, ranks: int, weights: np.ndarray | None = None) -> float:
    """The largest rank's load over the mean load (1: perfectly balanced)."""
    load = loads(owner, ranks, weights)
    mean = load.sum() / ranks
    return float(load.max() / mean) if mean > 0 else 1.0


def touching_pairs(forest, leaves: np.ndarray | None = None, faces_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(i, j): every ordered pair of distinct leaves that touch at a face, edge or corner
    (periodic wraps included), as leaf indices; only those with i in `leaves` if given; only
    across faces if faces_only (the pairs a faces-only table's rows name)."""
    tiling = forest.tiling
    offsets, _ = offsets_array(forest.dim, faces_only)
    leaves = np.arange(len(tiling.levels)) if leaves is None else np.asarray(leaves, np.int64)
    near = around(tiling, tiling.levels[leaves], tiling.coords[leaves], offsets, with_children=True)
    plain = ~near.refined
    first = [leaves[near.block[plain]]]
    second = [near.cover[plain]]
    refined = np.flatnonzero(near.refined)
    if len(refined):
        children = near.children[refined]
        shown = (children >= 0) & touching_table(offsets)[near.offset[refined]]
        row, octant = np.nonzero(shown)
        first.append(leaves[near.block[refined[row]]])
        second.append(children[row, octant])
    i, j = np.concatenate(first), np.concatenate(second)
    keep = i != j  # (a periodic axis of one root block: a block touches itself)
    return i[keep], j[keep]


class Pairs(NamedTuple):
    """Every ordered pair (i, j) of distinct touching leaves (touching_pairs), sorted by i: leaf
    k's partners are j[offsets[k]:offsets[k + 1]] (`offsets`: one more than the leaves), so the
    pairs of a run of leaves (a rank's own) are one slice, not a search of every pair. The
    first leaves, i, are not stored (the offsets say them): a regrid updates only j, a million
    entries at 35,000 leaves in 3D, and a table's i is made where asked."""

    j: np.ndarray
    offsets: np.ndarray

    @property
    def i(self) -> np.ndarray:
        """The first leaf of every pair (int32, non-decreasing)."""
        return firsts(self, np.arange(len(self.offsets) - 1))

    def of_run(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(i, j) of the pairs whose i is one of the leaves lo..hi-1."""
        start, end = self.offsets[lo], self.offsets[hi]
        return firsts(self, np.arange(lo, hi)), self.j[start:end]


def firsts(pairs: Pairs, leaves: np.ndarray) -> np.ndarray:
    """The first leaf of each pair of `leaves` (their slices joined, as pairs_of gives them)."""
    leaves = np.asarray(leaves)
    return np.repeat(leaves.astype(np.int32), pairs.offsets[leaves + 1] - pairs.offsets[leaves])


def pair_table(forest) -> Pairs:
    """touching_pairs(forest) as a Pairs table."""
    i, j = touching_pairs(forest)
    order = np.argsort(i, kind="stable")
    counts = np.bincount(i, minlength=len(forest.levels))
    return Pairs(j[order].astype(np.int32), _offsets(counts))


def _offsets(counts: np.ndarray) -> np.ndarray:
    """Each leaf's first position in j from the leaves' pair counts. (j holds 32-bit leaf
    indices: a regrid's passes over the million pairs of a 35,000-leaf forest take half the
    time of 64-bit ones.)"""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def updated_pairs(pairs: Pairs, old, new) -> Pairs:
    """pair_table(new) (the same pairs; within a leaf's, in another order) from the old forest's
    table after a regrid: the pairs of two kept leaves carry over, renumbered (in order: kept
    leaves keep their order), and only the new leaves' are looked up and put after each
    leaf's kept ones (touching is symmetric: each is taken both ways), so that besides a few
    passes over j the work follows the changes, not the whole forest. (A pair may be listed
    more than once, as touching_pairs finds it across more than one offset.)"""
    theirs, ours = new.tiling.matches(old.tiling)
    renumbered = ours.astype(np.int32)
    removed = np.flatnonzero(ours < 0)
    j = np.take(renumbered, pairs.j)  # (np.take: 1.5 ms here where indexing takes 2.6)
    keep = j >= 0
    keep[pairs_of(pairs, removed)] = False  # (the removed leaves' own slices)
    kept_j = j[keep]
    dropped = np.flatnonzero(~keep)  # (a few: those of the removed leaves and toward them)
    lost = np.bincount(np.searchsorted(pairs.offsets, dropped, side="right") - 1, minlength=len(ours))
    kept_counts = np.zeros(len(theirs), np.int64)
    kept = theirs >= 0
    kept_counts[kept] = (np.diff(pairs.offsets) - lost)[theirs[kept]]
    a, b = touching_pairs(new, np.flatnonzero(~kept))
    other_kept = kept[b]  # (a pair of two new leaves is found from both sides already)
    found_i = np.concatenate([a, b[other_kept]])
    found_j = np.concatenate([b, a[other_kept]]).astype(np.int32)
    order = np.argsort(found_i, kind="stable")
    found_i, found_j = found_i[order], found_j[order]
    ends = np.cumsum(kept_counts)  # (each leaf's kept pairs end here in kept_j)
    counts = kept_counts + np.bincount(found_i, minlength=len(theirs))
    return Pairs(np.insert(kept_j, ends[found_i], found_j), _offsets(counts))


def reach(pairs, start: np.ndarray, depth: int = HALO_DEPTH) -> np.ndarray:
    """The leaves within `depth` touching steps of the mask `start` (itself included); pairs:
    (i, j) arrays or a Pairs table."""
    i, j = (pairs.i, pairs.j) if isinstance(pairs, Pairs) else pairs
    mask = np.asarray(start, bool).copy()
    for _ in range(depth):
        grown = mask.copy()
        grown[j[mask[i]]] = True
        mask = grown
    return mask


def reach_of_run(pairs: Pairs, lo: int, hi: int, depth: int = HALO_DEPTH) -> np.ndarray:
    """reach(pairs, leaves lo..hi-1), through the table's slices: each step reads the pairs of
    the leaves it adds only (a rank's own run, then its rings), not every pair."""
    mask = np.zeros(len(pairs.offsets) - 1, bool)
    mask[lo:hi] = True
    added = np.arange(lo, hi)
    for _ in range(depth):
        before = mask.copy()
        mask[pairs.j[pairs_of(pairs, added)]] = True
        added = np.flatnonzero(mask & ~before)
    return mask


def pairs_of(pairs: Pairs, leaves: np.ndarray) -> np.ndarray:
    """The positions in the table of the pairs whose first leaf is one of `leaves` (their
    slices joined, in the order of `leaves`)."""
    starts, ends = pairs.offsets[leaves], pairs.offsets[np.asarray(leaves) + 1]
    counts = ends - starts
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())


def left_alone(pairs: Pairs, old, new, old_owner: np.ndarray, new_owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per leaf of `new`: whether a regrid of `old` left it and every leaf touching it as they
    were, kept and with the same rank; per leaf of `new` its index in `old`, -1 if new). Only
    the changed leaves' pairs are read (touching is symmetric: a changed leaf marks the leaves
    it touches), so the work follows the regrid's changes, not the forest."""
    theirs, _ = new.tiling.matches(old.tiling)
    kept = theirs >= 0
    changed = ~kept
    changed[kept] = new_owner[kept] != old_owner[theirs[kept]]
    alone = ~changed
    alone[pairs.j[pairs_of(pairs, np.flatnonzero(changed))]] = False
    return alone, theirs
