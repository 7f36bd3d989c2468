"""How a regrid of an adaptive run on many ranks fills the new forest's blocks (numpy only).

Every rank decides the same new forest (the flags are gathered first), so every rank can work
out every move without asking: a new leaf is made by one rank from blocks it holds, with the
one-rank kernels (a child by the owner of its parent, which holds the parent's neighbours; a
merged parent by the owner of its first child, which holds the siblings), or it is an old leaf
kept. Then each rank that holds a new leaf under the new partition and had no current copy of
it receives it from the rank that made it (or owned it), in Morton order per pair of ranks.
"""
from __future__ import annotations

import numpy as np

from ..mesh.slot_arrays import LeafSlots
from ..mesh.slots import plan_regrid
from .amr_layout import RankLayout


class RegridRoutes:
    """The moves of one regrid, `old` -> `new` (leaves of one regrid apart), for rank
    `old_layout.rank`: what it makes, sends, receives, and where each of its new leaves' U
    comes from."""

    def __init__(self, old_layout: RankLayout, new_layout: RankLayout):
        old, new = old_layout.forest, new_layout.forest
        rank, ranks = old_layout.rank, old_layout.ranks
        n_old, n_new = len(old.levels), len(new.levels)
        plan = plan_regrid(old, LeafSlots(old, np.arange(n_old)), new, n_old + n_new)  # (slots: leaf indices)
        virtual = plan.slots.array  # per new leaf: its old index if kept, else an id >= n_old
        self.kept = virtual < n_old
        at = np.full(n_old + n_new, -1, np.int64)
        at[virtual] = np.arange(n_new)  # new leaf of a virtual id
        prolonged, restricted = plan.prolonged_moves.astype(np.int64), plan.restricted_moves.astype(np.int64)
        source = np.empty(n_new, np.int64)  # the rank that has each new leaf's U after the moves
        source[self.kept] = old_layout.owner[virtual[self.kept]]
        source[at[prolonged[:, 1]]] = old_layout.owner[prolonged[:, 0]]
        source[at[restricted[:, -1]]] = old_layout.owner[restricted[:, 0]]
        mine_p = old_layout.owner[prolonged[:, 0]] == rank
        mine_r = old_layout.owner[restricted[:, 0]] == rank
        made = np.concatenate([at[prolonged[mine_p, 1]], at[restricted[mine_r, -1]]])
        self.n_made = len(made)
        first_free = len(old_layout.local)
        self.made_slot = np.full(n_new, -1, np.int64)  # the spare slot a new leaf is made in, here
        self.made_slot[made] = first_free + np.arange(len(made))
        self.prolonged = np.stack([old_layout.slot[prolonged[mine_p, 0]], self.made_slot[at[prolonged[mine_p, 1]]],
                                   prolonged[mine_p, 2]], axis=1).astype(np.int32).reshape(-1, 3)
        children = old_layout.slot[restricted[mine_r, :-1]]
        self.restricted = np.concatenate([children, self.made_slot[at[restricted[mine_r, -1]], None]],
                                         axis=1).astype(np.int32).reshape(-1, restricted.shape[1])
        # had[q, j]: rank q holds what it needs of kept leaf j: all of it where q owned it, the
        # cells its copies' refresh brings (parallel/amr_slabs.py) where j stays a copy on q
        had, each = np.zeros((ranks, n_new), bool), np.arange(ranks)[:, None]
        owned_before, copy_after = old_layout.owner[virtual[self.kept]] == each, new_layout.owner[self.kept] != each
        had[:, self.kept] = owned_before | (old_layout.held[:, virtual[self.kept]] & copy_after)
        wanted = new_layout.held & ~had
        self.sends = {q: np.flatnonzero(wanted[q] & (source == rank)) for q in range(ranks) if q != rank}
        self.receives = {q: np.flatnonzero(wanted[rank] & (source == q)) for q in range(ranks) if q != rank}
        # per new leaf this rank holds: the slot of its current U here (-1: it arrives)
        here = np.where(self.kept & had[rank], old_layout.slot[np.where(self.kept, virtual, 0)], self.made_slot)
        self.from_slot = here[new_layout.local]
        self.old_slot_of_new = here  # (for the sends)
        self.siblings_in, self.siblings_out = _merged_siblings(old_layout.owner, restricted[:, :-1], rank, ranks)
        counts = np.bincount(source[~self.kept], minlength=ranks)  # made per rank
        self.slots_needed = int(max((old_layout.slots_needed() + counts).max(), new_layout.slots_needed().max()))

    def send_slots(self, q: int) -> np.ndarray:
        """The slots here of the new leaves rank q receives from this rank (Morton order)."""
        return self.old_slot_of_new[self.sends[q]]


def _merged_siblings(owner: np.ndarray, children: np.ndarray, rank: int, ranks: int) -> tuple[dict, dict]:
    """({q: old leaves}, {q: old leaves}): the children of merges made here that rank q owns,
    which q sends whole (a restriction reads every cell, and a copy holds only what a stage
    reads), and the children this rank owns of merges q makes, in Morton order."""
    maker = np.repeat(owner[children[:, 0]], children.shape[1])
    leaves = children.reshape(-1)
    holder = owner[leaves]
    incoming = {q: np.sort(leaves[(maker == rank) & (holder == q)]) for q in range(ranks) if q != rank}
    outgoing = {q: np.sort(leaves[(maker == q) & (holder == rank)]) for q in range(ranks) if q != rank}
    return incoming, outgoing
