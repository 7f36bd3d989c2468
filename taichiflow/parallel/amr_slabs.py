"""Which cells of other ranks' leaves a rank's kernels read, so that only those travel before a
stage (numpy only). A copy's U is read (directly or through W, its ghost layers or its face
register) only near the rank's own leaves, so a copy moves the cells within a few layers of
each own leaf it touches (faces, edges, corners, periodic wraps), not the whole block.

How far, in the copy's cells, for ghost width g (tests/test_amr_partition.py traces the
kernels' reads cell by cell and finds each of them in this set; with one layer less of any
kind that has some, it found cells missing):

- the same level across a face: g (the sweeps' stencils read g cells past the face);
- the same level across an edge or a corner only: 2 ((g - 1) // 2) + 2 (a fine own leaf's
  ghost layers are prolonged from a coarse block, whose slope across its own face reads its
  ghost layer there, restricted from the 2x2 fine cells of a block diagonal to the own leaf,
  up to (g - 1) // 2 coarse cells from the face: 4 layers for WENO5's 3);
- a finer copy across a face: max(2 g - 2, g, 2) (an own leaf's ghost layers restrict 2 g of
  its layers, but the outermost ghost layer is read only by the flux through the block's own
  face, which the fine faces' register replaces there; the register reads g layers, the
  slopes of a prolongation the first ghost layer's 2); across an edge or a corner: none;
- a coarser copy across a face: (g - 1) // 2 + 2 (prolongation of g fine ghost layers reads
  (g - 1) // 2 + 1 coarse layers, and the slope one more); across an edge or a corner: one
  less (the slope across the coarse block's face reads the block beside it).
"""
from __future__ import annotations

import numpy as np

from ..mesh.partition import left_alone


def reach_depths(ghost: int) -> np.ndarray:
    """int (3, 2): layers of a copy read next to an own leaf, by [copy's level - own's + 1,
    whether the two share a face]."""
    coarse = (ghost - 1) // 2 + 2
    return np.array([[coarse - 1, coarse], [2 * ((ghost - 1) // 2) + 2, ghost], [0, max(2 * ghost - 2, ghost, 2)]],
                    np.int64)


def pair_rows(forest, reader: np.ndarray, copy: np.ndarray, ghost: int) -> np.ndarray:
    """(pairs, N**(dim-1)) unsigned integers: per touching pair, the cells of leaf copy[k]
    within reach of leaf reader[k], a row of cells along the last axis as the bits of one
    number (cell i: bit i), the rows in row-major order of the other axes."""
    N, dim = forest.block_cells, forest.dim
    up = (forest.levels[copy] - forest.levels[reader])[:, None]  # the copy's level - the reader's: -1, 0, 1
    corner = forest.coords[reader]
    lo = np.where(up >= 0, (corner * N) << np.maximum(up, 0), (corner * N) >> np.maximum(-up, 0))
    hi = np.where(up >= 0, ((corner + 1) * N) << np.maximum(up, 0), ((corner + 1) * N) >> np.maximum(-up, 0))
    first = forest.coords[copy] * N
    period = np.array(forest.roots, np.int64)[None, :] * N << forest.levels[copy][:, None]
    shifts = [(s, np.array(forest.periodic)[None, :] | (s == 0)) for s in (-1, 0, 1)
              if s == 0 or any(forest.periodic)]  # (the wraps: none where no axis is periodic)
    shared = np.zeros(lo.shape, bool)  # per axis: the two overlap (by more than a point) across it
    for s, allowed in shifts:
        shared |= allowed & (np.minimum(hi + s * period, first + N) > np.maximum(lo + s * period, first))
    depth = reach_depths(ghost)[up[:, 0] + 1, (shared.sum(axis=1) == dim - 1).astype(np.int64)][:, None]
    word = _word(N)
    within = np.zeros(lo.shape, word)  # per axis the copy's cells within reach, as bits (cell i: bit i)
    for s, allowed in shifts:
        a = np.clip(lo + s * period - depth - first, 0, N)
        b = np.clip(hi + s * period + depth - first, 0, N)
        within |= np.where(allowed & (b > a), _span_bits(b, word) ^ _span_bits(a, word), word(0))
    rows = np.ones((len(within), 1), bool)
    for d in range(dim - 1):
        along = (within[:, d, None] >> np.arange(N, dtype=word)) & word(1)
        rows = (rows[:, :, None] & along[:, None, :].astype(bool)).reshape(len(rows), N ** (d + 1))
    return np.where(rows, within[:, -1, None], word(0))


def _span_bits(end: np.ndarray, word) -> np.ndarray:
    """The bits 0..end-1 set (end from 0 to the word's size), as `word`s."""
    bits = np.iinfo(word).bits
    ones = np.left_shift(word(1), np.minimum(end, bits - 1).astype(word)) - word(1)
    return np.where(end >= bits, np.iinfo(word).max, ones).astype(word)


def _word(N: int):
    """The smallest unsigned integer type of at least N bits."""
    return next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= N)


def _ones(words: np.ndarray) -> np.ndarray:
    """The number of bits set in each of `words`."""
    if hasattr(np, "bitwise_count"):  # (numpy 2)
        return np.bitwise_count(words).astype(np.int64)
    flat = np.ascontiguousarray(words.astype(words.dtype.newbyteorder("<")))
    return np.unpackbits(flat.view(np.uint8).reshape(len(flat), flat.itemsize), axis=1).sum(axis=1, dtype=np.int64)


class HaloSlabs:
    """The cells a rank receives from each other rank before a stage, and those it sends:
    per rank an int64 (rows, 4) array of (slot here, row of the block along its last axis
    (row-major over the other axes), the row's cells as bits, where its first cell goes in
    the message), leaves in Morton order and rows in order on both sides of a message (a row
    a thread: a list of single cells took 0.07 s of numpy a regrid at 22,000 leaves of 16^3
    on 2 ranks, 2 million cells; these rows, 0.4 million of them, 0.04 s)."""

    def __init__(self, layout, ghost: int, previous: HaloSlabs | None = None):
        """previous: this rank's lists of the forest before a regrid (same ghost width): the
        groups (a rank reading a copy) that the regrid leaves alone carry over, renumbered,
        and only the others are worked out (a regrid's host work follows its changes)."""
        forest, owner, rank, n = layout.forest, layout.owner, layout.rank, len(layout.owner)
        self.layout, self.ghost = layout, ghost
        lo, hi = layout.first, layout.first + layout.n_owned
        own, near = layout.pairs.of_run(lo, hi)
        other = (near < lo) | (near >= hi)
        own, near = own[other], near[other]  # (touching is symmetric: these, both ways, are every pair across)
        reader, copy = np.concatenate([own, near]), np.concatenate([near, own])
        kept = None if previous is None else previous._unchanged_groups(layout, ghost)
        if kept is not None:
            fresh = ~kept[2][copy]
            reader, copy = reader[fresh], copy[fresh]
        key = owner[reader] * n + copy  # (reader's rank, copy): one group of cells each
        order = np.argsort(key, kind="stable")
        key = key[order]
        rows = pair_rows(forest, reader[order], copy[order], ghost)
        starts = np.flatnonzero(np.diff(key, prepend=-1))  # (each group's first pair: the keys are sorted)
        self.keys = key[starts]
        self.joined = np.bitwise_or.reduceat(rows, starts, axis=0) if len(starts) else rows
        if kept is not None:
            keys, joined, _ = kept
            merged = np.argsort(np.concatenate([keys, self.keys]), kind="stable")
            self.keys = np.concatenate([keys, self.keys])[merged]
            self.joined = np.concatenate([joined, self.joined])[merged]
        reader, leaf = self.keys // n, self.keys % n
        self.receives = {q: self._listed(layout, leaf, self.joined, (reader == rank) & (owner[leaf] == q))
                         for q in range(layout.ranks) if q != rank}
        self.sends = {q: self._listed(layout, leaf, self.joined, reader == q)
                      for q in range(layout.ranks) if q != rank}

    def _unchanged_groups(self, new, ghost: int) -> tuple | None:
        """(keys, joined rows, per new leaf whether its groups carry over) of the groups of
        `new` (the layout after a regrid) that are this one's: those of a copy that the regrid
        kept, whose owner and every touching leaf's owner stayed, and no touching leaf of which
        is new (touching is symmetric: a new or re-owned leaf marks the leaves it touches).
        None where the two cannot be compared (another rank, rank count or ghost width)."""
        old = self.layout
        if (new.rank, new.ranks, ghost) != (old.rank, old.ranks, self.ghost):
            return None
        if new.alone_since is not None and new.alone_since[0]() is old:  # (the layout worked it out)
            stays = new.alone_since[1]
        else:
            stays, _ = left_alone(new.pairs, old.forest, new.forest, old.owner, new.owner)
        _, ours = new.forest.tiling.matches(old.forest.tiling)
        n_old, n_new = len(old.owner), len(new.owner)
        copy = ours[self.keys % n_old]
        alive = copy >= 0
        alive[alive] = stays[copy[alive]]
        return (self.keys[alive] // n_old) * n_new + copy[alive], self.joined[alive], stays

    @staticmethod
    def _listed(layout, leaf: np.ndarray, joined: np.ndarray, picked: np.ndarray) -> np.ndarray:
        rows = joined[picked]
        group, row = np.nonzero(rows)
        bits = rows[group, row]
        ones = _ones(bits)
        entries = np.stack([layout.slot[leaf[picked][group]], row, bits.astype(np.uint64).view(np.int64),
                            np.cumsum(ones) - ones], axis=1)
        return entries.astype(np.int64).reshape(-1, 4)

    @staticmethod
    def cells(entries: np.ndarray) -> int:
        """The cells of a message's rows."""
        return int(entries[-1, 3] + _ones(entries[-1:, 2].view(np.uint64))[0]) if len(entries) else 0

    def cell_counts(self) -> tuple[int, int]:
        """(cells sent, cells received) by this rank at each refresh."""
        return tuple(sum(self.cells(e) for e in lists.values()) for lists in (self.sends, self.receives))
