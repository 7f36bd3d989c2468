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
    depth = reach_depths(ghost)[up[:, 0] + 1, (shared.sum(axis=1) == dim - 1).astype(np.int64)][:, None, None]
    x = first[:, :, None] + np.arange(N)
    along = np.zeros(x.shape, bool)  # per axis the copy's cells within reach
    for s, allowed in shifts:
        low, high = (lo + s * period)[:, :, None] - depth, (hi + s * period)[:, :, None] + depth
        along |= allowed[:, :, None] & (x >= low) & (x < high)
    word = _word(N)
    last = np.bitwise_or.reduce(along[:, -1].astype(word) << np.arange(N, dtype=word), axis=1)
    rows = np.ones((len(along), 1), bool)
    for d in range(dim - 1):
        rows = (rows[:, :, None] & along[:, d, None, :]).reshape(len(rows), -1)
    return np.where(rows, last[:, None], word(0))


def _word(N: int):
    """The smallest unsigned integer type of at least N bits."""
    return next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= N)


def _ones(words: np.ndarray) -> np.ndarray:
    """The number of bits set in each of `words`."""
    flat = np.ascontiguousarray(words.astype(words.dtype.newbyteorder("<")))
    return np.unpackbits(flat.view(np.uint8).reshape(len(flat), flat.itemsize), axis=1).sum(axis=1, dtype=np.int64)


class HaloSlabs:
    """The cells a rank receives from each other rank before a stage, and those it sends:
    per rank an int64 (rows, 4) array of (slot here, row of the block along its last axis
    (row-major over the other axes), the row's cells as bits, where its first cell goes in
    the message), leaves in Morton order and rows in order on both sides of a message (a row
    a thread: a list of single cells took 0.07 s of numpy a regrid at 22,000 leaves of 16^3
    on 2 ranks, 2 million cells; these rows, 0.4 million of them, 0.04 s)."""

    def __init__(self, layout, ghost: int):
        forest, owner, rank, n = layout.forest, layout.owner, layout.rank, len(layout.owner)
        lo, hi = layout.first, layout.first + layout.n_owned
        own, near = layout.pairs.of_run(lo, hi)
        other = (near < lo) | (near >= hi)
        own, near = own[other], near[other]  # (touching is symmetric: these, both ways, are every pair across)
        reader, copy = np.concatenate([own, near]), np.concatenate([near, own])
        key = owner[reader] * n + copy  # (reader's rank, copy): one group of cells each
        order = np.argsort(key, kind="stable")
        rows = pair_rows(forest, reader[order], copy[order], ghost)
        groups, starts, counts = np.unique(key[order], return_index=True, return_counts=True)
        joined = rows[starts]
        for k in range(1, int(counts.max(initial=1))):  # (the pairs of a group, k-th of each at once)
            more = counts > k
            joined[more] |= rows[starts[more] + k]
        reader, leaf = groups // n, groups % n
        self.receives = {q: self._listed(layout, leaf, joined, (reader == rank) & (owner[leaf] == q))
                         for q in range(layout.ranks) if q != rank}
        self.sends = {q: self._listed(layout, leaf, joined, reader == q) for q in range(layout.ranks) if q != rank}

    @staticmethod
    def _listed(layout, leaf: np.ndarray, joined: np.ndarray, picked: np.ndarray) -> np.ndarray:
        group, row = np.nonzero(joined[picked])
        bits = joined[picked][group, row]
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
