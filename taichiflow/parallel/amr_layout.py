"""What one rank's block pool holds in an adaptive run on many ranks (numpy only).

Each rank holds its own leaves and copies of the other ranks' leaves within two touching
steps of them (mesh/partition.HALO_DEPTH), so that every value its own leaves' step reads is
computed there exactly as on one rank: a leaf's same-level neighbours (the reader of W), the
fine blocks whose U restricts into its ghost layers and whose face fluxes it takes at a level
jump, and the coarse block a fine leaf's ghost layers are prolonged from, with that block's own
ghost layers and neighbours (the second step). Before every stage the copies' cells that the
rank's kernels read are refreshed from their owners (parallel/amr_slabs.py: all of them lie in
copies that touch an own leaf, so the second step's copies receive none); only a rank's own
leaves are stepped and checked, so what a copy holds elsewhere, and what the copies' ghost
layers hold at the halo's outer edge (read from a void slot), never reaches a leaf that counts.

The tables are the whole forest's (mesh.device_tables), their rows taken for the held leaves
and their entries renumbered into the rank's slots: own leaves first (Morton order), then the
copies (Morton order), then free slots, the last slot the void one.
"""
from __future__ import annotations

import numpy as np

from ..mesh.partition import reach, touching_pairs
from ..mesh.slot_arrays import NO_SLOT, LeafSlots
from ..mesh.tables import RELATION_CODES, DeviceTables, device_tables


class RankLayout:
    """The leaves of `forest` each rank holds under `owner` (a rank per leaf, non-decreasing),
    and for rank `rank`: its slots and its exchange lists."""

    def __init__(self, forest, owner: np.ndarray, ranks: int, rank: int, pairs=None):
        self.forest, self.ranks, self.rank = forest, ranks, rank
        self.owner = np.asarray(owner, np.int64)
        self.pairs = pairs = touching_pairs(forest) if pairs is None else pairs
        self.held = np.stack([reach(pairs, self.owner == q) for q in range(ranks)]) if len(self.owner) else \
            np.zeros((ranks, 0), bool)
        own = self.owner == rank
        self.local = np.concatenate([np.flatnonzero(own), np.flatnonzero(self.held[rank] & ~own)])
        self.n_owned = int(own.sum())
        self.slot = np.full(len(self.owner), NO_SLOT, np.int64)  # global leaf index -> this rank's slot
        self.slot[self.local] = np.arange(len(self.local))
        self.sends = {q: self.slot[np.flatnonzero(own & self.held[q])] for q in range(ranks) if q != rank}
        self.receives = {q: self.slot[np.flatnonzero((self.owner == q) & self.held[rank])]
                         for q in range(ranks) if q != rank}

    @property
    def first(self) -> int:
        """The global index of this rank's first own leaf (own leaves are one run)."""
        return int(np.searchsorted(self.owner, self.rank, side="left"))

    def slots_needed(self) -> np.ndarray:
        """Per rank the slots its pool needs: its leaves, the copies, the void slot."""
        return self.held.sum(axis=1) + 1


def local_tables(forest, layout: RankLayout, capacity: int) -> DeviceTables:
    """The kernels' tables of this rank's pool (faces only, as one rank's): the held leaves in
    slots 0..k-1; an entry naming a leaf this rank does not hold names the void slot (the
    last), so that nothing reads outside the pool."""
    n, local = len(forest.levels), layout.local
    whole = device_tables(forest, LeafSlots(forest, np.arange(n)), max(n, 1), faces_only=True)
    void = capacity - 1
    renumber = np.full(n + 1, void, np.int64)  # (index n: NO_SLOT, mapped back below)
    renumber[local] = np.arange(len(local))
    directions, fan = whole.neighbour.shape[1], whole.neighbour.shape[2]
    level = np.full(capacity, -1, np.int32)
    origin = np.full((capacity, forest.dim), -1, np.int32)
    neighbour = np.full((capacity, directions, fan), NO_SLOT, np.int32)
    relation = np.full((capacity, directions), RELATION_CODES["boundary"], np.int8)
    k = len(local)
    level[:k], origin[:k], relation[:k] = whole.level[local], whole.origin[local], whole.relation[local]
    entries = whole.neighbour[local].astype(np.int64)
    named = entries != NO_SLOT
    neighbour[:k] = np.where(named, renumber[np.where(named, entries, n)], NO_SLOT)
    level[void], origin[void] = 0, 0
    return DeviceTables(level, origin, neighbour, relation, np.arange(k, dtype=np.int32))
