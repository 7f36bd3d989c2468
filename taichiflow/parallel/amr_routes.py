"""How a regrid of an adaptive run on many ranks fills the new forest's blocks (numpy only).

Every rank decides the same new forest (the flags are gathered first), so every rank can work
out every move without asking: a new leaf is made by one rank from blocks it holds, with the
one-rank kernels (a child by the owner of its parent, which holds the parent's neighbours; a
merged parent by the owner of its first child, which holds the siblings), or it is an old leaf
kept. Then each rank that holds a new leaf under the new partition and had no current copy of
it receives it from the rank that made it (or owned it), in Morton order per pair of ranks.

The slots are planned as one rank's (mesh.plan_regrid): a leaf held before and after keeps
its slot, so that its block stays where it is on the device; a block made here takes a slot
that no old block held (the old ones are read while the new ones are written); a block that
arrives takes a slot free after the regrid (those that leave are read before it is written).
"""
from __future__ import annotations

import numpy as np

from ..mesh.slot_arrays import NO_SLOT, LeafSlots
from ..mesh.slots import plan_regrid
from .amr_layout import RankLayout


class RegridRoutes:
    """The moves of one regrid, `old` -> `new` (leaves of one regrid apart), for rank
    `old_layout.rank` with a pool of `capacity` slots (the last the void one): what it makes
    and in which slot, what it sends and receives, and the slot of each leaf it holds after
    (`slots`, aligned with new_layout.local: new_layout.place takes them)."""

    def __init__(self, old_layout: RankLayout, new_layout: RankLayout, capacity: int):
        """(Where the pool is too small, slots_needed > capacity, only slots_needed is set.)"""
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
        counts = np.bincount(source[~self.kept], minlength=ranks)  # made per rank
        self.slots_needed = int(max((old_layout.slots_needed() + counts).max(), new_layout.slots_needed().max()))
        if self.slots_needed > capacity:
            return  # (the solver stops: every rank sees it)
        mine_p = old_layout.owner[prolonged[:, 0]] == rank
        mine_r = old_layout.owner[restricted[:, 0]] == rank
        made = np.sort(np.concatenate([at[prolonged[mine_p, 1]], at[restricted[mine_r, -1]]]))
        self.n_made = len(made)
        old_slot = np.where(self.kept, old_layout.slot[np.where(self.kept, virtual, 0)], NO_SLOT)  # per new leaf
        self._plan_slots(old_layout, new_layout, old_slot, made, capacity)
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
        self.current_slot = np.where(self.made_slot >= 0, self.made_slot, old_slot)  # (of what this rank sends)
        self.siblings_in, self.siblings_out = _merged_siblings(old_layout.owner, restricted[:, :-1], rank, ranks)

    def _plan_slots(self, old_layout: RankLayout, new_layout: RankLayout, old_slot: np.ndarray, made: np.ndarray,
                    capacity: int) -> None:
        """made_slot (per new leaf: the slot it is made in here, -1 elsewhere), slot (per new
        leaf held here: its slot after the regrid), slots (those of new_layout.local) and placed."""
        self.made_slot = np.full(len(old_slot), NO_SLOT, np.int64)
        free = np.ones(capacity, bool)
        free[old_layout.local_slots], free[capacity - 1] = False, False
        self.made_slot[made] = np.flatnonzero(free)[:len(made)]
        held = new_layout.held[new_layout.rank]
        self.slot = np.where(held, np.where(old_slot != NO_SLOT, old_slot, self.made_slot), NO_SLOT)
        arriving = np.flatnonzero(held & (self.slot == NO_SLOT))
        self.placed = np.flatnonzero(held & (old_slot == NO_SLOT))  # (held here anew: in slots new to them)
        free[:] = True
        free[self.slot[self.slot != NO_SLOT]], free[capacity - 1] = False, False
        self.slot[arriving] = np.flatnonzero(free)[:len(arriving)]
        self.slots = self.slot[new_layout.local]

    def send_slots(self, q: int) -> np.ndarray:
        """The slots here of the new leaves rank q receives from this rank (Morton order)."""
        return self.current_slot[self.sends[q]]

    def receive_slots(self, q: int) -> np.ndarray:
        """The slots here that the new leaves from rank q arrive in (Morton order)."""
        return self.slot[self.receives[q]]


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
