"""What one rank's block pool holds in an adaptive run on many ranks (numpy only).

Each rank holds its own leaves and copies of the other ranks' leaves that touch them (one
touching step: mesh/partition.HALO_DEPTH), so that every value its own leaves' step reads is
computed there exactly as on one rank: a leaf's same-level neighbours (the reader of W), the
fine blocks whose U restricts into its ghost layers and whose face fluxes it takes at a level
jump, and the coarse block a fine leaf's ghost layers are prolonged from, with the neighbours
of that block its slopes read (they touch the fine leaf too). Before every stage the copies'
cells that the rank's kernels read are refreshed from their owners (parallel/amr_slabs.py);
only a rank's own leaves are stepped and checked, so what a copy holds elsewhere, and what the
copies' ghost layers hold (filled from the void slot past the halo's edge), never reaches a
leaf that counts: tests/test_amr_partition.py traces the kernels' reads cell by cell, and the
MPI tests poison every copy with NaN before each refresh. (A second ring, the leaves touching
the copies, was held for those ghost layers until it was found that nothing reads them.)

The tables are what the whole forest's (mesh.device_tables) would be with their rows taken for
the held leaves and their entries renumbered into the rank's slots, but only the held leaves'
rows are looked up (and after a regrid only those that change: updated_local_tables). The
slots: as first placed, own leaves first (Morton order), then the copies (Morton order); after
a regrid, a leaf held before keeps its slot (parallel/amr_routes.py); the last slot is the void
one.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..mesh.partition import firsts, left_alone, pair_table, pairs_of, reach_of_run, touching_pairs
from ..mesh.slot_arrays import NO_SLOT
from ..mesh.tables import RELATION_CODES, ROWS_AT_ONCE, DeviceTables
from ..mesh.tables import _write_rows as write_rows  # (the rows of some leaves: the one-rank tables' own code)
from ..mesh.tiling import distinct


class RankLayout:
    """The leaves of `forest` each rank holds under `owner` (a rank per leaf, non-decreasing),
    and for rank `rank`: its slots (`slots`, aligned with `local`: slots 0..k-1 unless a
    regrid kept its blocks where they were, parallel/amr_routes.py) and its exchange lists."""

    def __init__(self, forest, owner: np.ndarray, ranks: int, rank: int, pairs=None, slots=None, previous=None):
        """previous: the layout of the forest before a regrid (on as many ranks): who holds
        each leaf carries over where the regrid left the leaf and those touching it alone."""
        self.forest, self.ranks, self.rank = forest, ranks, rank
        self.owner = np.asarray(owner, np.int64)
        self.alone_since = None  # (layout before a regrid, per leaf whether it left the leaf alone)
        self.pairs = pairs = pair_table(forest) if pairs is None else pairs  # (mesh/partition.Pairs)
        if previous is not None and previous.ranks == ranks:
            self.held = self._held_since(previous)
        elif len(self.owner):
            runs = np.searchsorted(self.owner, np.arange(ranks + 1))  # (each rank's own leaves: one run)
            self.held = np.stack([reach_of_run(pairs, runs[q], runs[q + 1]) for q in range(ranks)])
        else:
            self.held = np.zeros((ranks, 0), bool)
        own = self.owner == rank
        self.local = np.concatenate([np.flatnonzero(own), np.flatnonzero(self.held[rank] & ~own)])
        self.n_owned = int(own.sum())
        self.place(np.arange(len(self.local)) if slots is None else slots)

    def _held_since(self, previous) -> np.ndarray:
        """held (per rank, per leaf) from the previous layout's: a leaf left alone by the
        regrid is held where it was; any other is held by its owner and by the owners of the
        leaves touching it (touching is symmetric: its own pairs)."""
        alone, theirs = left_alone(self.pairs, previous.forest, self.forest, previous.owner, self.owner)
        # (the exchange lists carry over by the same mask, amr_slabs.py; a weak reference: no
        # chain of earlier layouts kept alive)
        self.alone_since = (weakref.ref(previous), alone)
        held = np.zeros((self.ranks, len(self.owner)), bool)
        held[:, alone] = previous.held[:, theirs[alone]]
        redone = np.flatnonzero(~alone)
        at = pairs_of(self.pairs, redone)
        held[self.owner[redone], redone] = True
        held[self.owner[self.pairs.j[at]], firsts(self.pairs, redone)] = True
        return held

    def place(self, slots: np.ndarray) -> None:
        """The held leaves in `slots` (aligned with `local`)."""
        self.local_slots = np.asarray(slots, np.int64)
        self.slot = np.full(len(self.owner), NO_SLOT, np.int64)  # global leaf index -> this rank's slot
        self.slot[self.local] = self.local_slots

    @property
    def sends(self) -> dict:
        """{q: the slots of the own leaves rank q holds copies of} (Morton order)."""
        own = self.owner == self.rank
        return {q: self.slot[np.flatnonzero(own & self.held[q])] for q in range(self.ranks) if q != self.rank}

    @property
    def receives(self) -> dict:
        """{q: the slots of the copies here of rank q's leaves} (Morton order)."""
        return {q: self.slot[np.flatnonzero((self.owner == q) & self.held[self.rank])]
                for q in range(self.ranks) if q != self.rank}

    @property
    def first(self) -> int:
        """The global index of this rank's first own leaf (own leaves are one run)."""
        return int(np.searchsorted(self.owner, self.rank, side="left"))

    def slots_needed(self) -> np.ndarray:
        """Per rank the slots its pool needs: its leaves, the copies, the void slot."""
        return self.held.sum(axis=1) + 1

    def leaf_in(self, slot: int) -> int:
        """The global index of the leaf held in `slot`."""
        return int(self.local[np.flatnonzero(self.local_slots == slot)[0]])


def local_tables(forest, layout: RankLayout, capacity: int) -> DeviceTables:
    """The kernels' tables of this rank's pool (faces only, as one rank's): the held leaves'
    rows in their slots, looked up for them only; an entry naming a leaf this rank does not
    hold names the void slot (the last), so that nothing reads outside the pool."""
    dim, directions = forest.dim, 3 ** forest.dim
    tables = DeviceTables(np.full(capacity, -1, np.int32), np.full((capacity, dim), -1, np.int32),
                          np.full((capacity, directions, 1 << dim), NO_SLOT, np.int32),
                          np.full((capacity, directions), RELATION_CODES["boundary"], np.int8),
                          layout.local_slots.astype(np.int32))
    tables.level[capacity - 1], tables.origin[capacity - 1] = 0, 0
    write_held_rows(tables, layout, np.sort(layout.local))
    return tables


def write_held_rows(tables: DeviceTables, layout: RankLayout, leaves: np.ndarray) -> None:
    """The rows of the held leaves at global indices `leaves` (ascending) written into their
    slots, the leaves this rank does not hold named by the void slot."""
    void = len(tables.level) - 1
    slot_of = np.where(layout.slot != NO_SLOT, layout.slot, void)
    for start in range(0, len(leaves), ROWS_AT_ONCE):
        write_rows(tables, layout.forest, slot_of, leaves[start:start + ROWS_AT_ONCE], True)


def updated_local_tables(tables: DeviceTables, old: RankLayout, new: RankLayout) -> DeviceTables:
    """local_tables(new.forest, new, capacity) from the old layout's, in place, for a regrid
    after which each leaf held before and after keeps its slot (parallel/amr_routes.py): the
    rows of the leaves held anew are looked up, of the kept ones only those that face a new
    leaf or a leaf held anew or no longer (whose entry turns from the void slot to a slot or
    back); the freed slots' rows are cleared. `changed` lists the rows written, the upload."""
    theirs, _ = new.forest.tiling.matches(old.forest.tiling)
    kept = theirs >= 0
    held = new.slot != NO_SLOT
    was_held = np.zeros(len(held), bool)
    was_held[kept] = old.slot[theirs[kept]] != NO_SLOT
    stayed = was_held & held  # (in the same slot)
    facing = np.zeros(len(held), bool)  # (what the rows name: the leaf across a face, or its children there)
    facing[touching_pairs(new.forest, np.flatnonzero(~kept | (held != was_held)), faces_only=True)[1]] = True
    rows = np.flatnonzero(held & (~stayed | facing))
    freed = np.setdiff1d(old.local_slots, new.slot[stayed], assume_unique=True)
    tables.level[freed], tables.origin[freed] = -1, -1
    tables.neighbour[freed], tables.relation[freed] = NO_SLOT, RELATION_CODES["boundary"]
    write_held_rows(tables, new, rows)
    changed = distinct(np.concatenate([freed, new.slot[rows]]), len(tables.level))
    return tables._replace(active=new.local_slots.astype(np.int32), changed=changed)

