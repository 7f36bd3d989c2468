"""RankPackSolver: a PackSolver of one rank of an adaptive run on many ranks, giving the same
numbers as one rank bit for bit.

Every rank knows the whole forest (host arrays: cheap) and the partition (mesh/partition.py);
its pool holds its own leaves and copies of the leaves around them (parallel/amr_layout.py),
whose cells that its kernels read (parallel/amr_slabs.py) are refreshed before every stage,
packed on the device and moved through [parallel] exchange's staging (parallel/staging.py),
and it steps and checks its own leaves only, with the one-rank kernels.
What a step reduces is reduced over the ranks exactly: the CFL rate and the model's globals by
maximum, the totals by gathering every leaf's f64 totals and adding them exactly (exact_sum)
(correctly rounded, so in no particular order), the regrid flags by gathering them in Morton
order. A regrid keeps on the device what it can, as one rank's does: the leaves a rank holds
before and after stay in their slots, it makes the new blocks whose sources it holds with the
one-rank kernel in free slots, and only the blocks that change rank (the carried-over or, past
[amr] rebalance_above, a new partition; the siblings of a merge) cross, whole, through host
buffers (parallel/amr_routes.py); only the tables' changed rows are looked up and uploaded
(parallel/amr_layout.py: updated_local_tables), in the launch that makes the new blocks.
"""
from __future__ import annotations

import numpy as np
import taichi as ti

from ..kernels.amr.cells import NO_BAD_CELL
from ..kernels.amr.pool import padded
from ..kernels.amr.solver import PackSolver, PoolExhausted
from ..kernels.amr.transfer import make_slab_transfers
from ..kernels.indexing import numpy_dtype
from ..mesh import Block
from ..mesh.partition import imbalance, split, updated_pairs
from .amr_exchange import SlabRefresh, swap
from .amr_layout import RankLayout, local_tables, updated_local_tables
from .amr_routes import RegridRoutes
from .amr_slabs import HaloSlabs
from .staging import choose_staging


class RankPoolExhausted(PoolExhausted):
    """PoolExhausted on many ranks: the number is the largest rank's need (every rank raises it)."""

    def __init__(self, needed: int, capacity: int):
        super().__init__(needed, capacity)
        self.args = (f"a rank needs {needed} block slots (its own leaves, copies of the leaves around them and the "
                     f"blocks a regrid makes there) and the pool has {capacity}: raise [amr] capacity",)


class RankPackSolver(PackSolver):
    """The PackSolver of rank comm.rank of comm.size (forest: the whole forest's)."""

    def __init__(self, phys, *args, comm, rebalance_above: float = 1.1, exchange: str = "auto", **kwargs):
        self.comm, self.rebalance_above = comm, float(rebalance_above)
        self.partition = self.layout = self.slabs = self._slab_transfers = None
        self.rebalances = 0  # regrids after which the leaves were shared out anew
        arch = "cuda" if ti.lang.impl.current_cfg().arch == ti.cuda else "cpu"
        cuda_aware = comm.cuda_aware() if arch == "cuda" and exchange in ("auto", "device") else False
        self.staging = choose_staging(exchange, arch, cuda_aware, phys.dtype, comm)
        super().__init__(phys, *args, **kwargs)
        every = self.primitives  # (the step's W: of the own leaves; a copy's comes with its cells)
        self.primitives = lambda n_active: every(self.n_owned)

    @property
    def exchange_path(self) -> str:
        """The staging the copies' cells take (parallel/staging.py): host, pinned, device, nccl."""
        return self.staging.name

    # --- the layout ------------------------------------------------------------------------------
    def _place(self, forest, partition=None) -> None:
        """The pool holding this rank's share of `forest` (the Morton order split by weight
        unless `partition` is given), its state unset."""
        partition = split(forest, self.comm.size) if partition is None else partition
        layout = RankLayout(forest, partition.owners(forest), self.comm.size, self.comm.rank)
        needed = int(layout.slots_needed().max())
        if needed > self.pool.capacity:
            raise RankPoolExhausted(needed, self.pool.capacity)
        self._use(forest, partition, layout)

    def _use(self, forest, partition, layout, tables=None) -> None:
        """The pool's forest, layout and exchange lists; tables: the tables as the device has
        them already (after a regrid: the exchange lists then carry over where it left them
        alone), else built and uploaded whole."""
        previous = self.slabs if tables is not None else None
        self.forest, self.partition, self.layout, self.slots = forest, partition, layout, None
        if tables is None:
            tables = local_tables(forest, layout, self.pool.capacity)
            self.region_slots.set(forest, layout.slot, layout.local)
            self.pool.upload(tables, self.region_slots)
        self.tables = tables
        if self._slab_transfers is None:
            self._slab_transfers = make_slab_transfers(self.pool)
        self.slabs = HaloSlabs(layout, self.pool.ghost, previous)
        self.refresh_halo = SlabRefresh(self.comm, self.staging, self.slabs, *self._slab_transfers, self.phys.U.n)

    @property
    def n_owned(self) -> int:
        return self.layout.n_owned

    def while_refreshing(self, work) -> None:
        """work() (kernels over the own leaves) between the start of the copies' refresh and
        its end: with NCCL the cells travel while it runs."""
        self.refresh_halo.start()
        work()
        self.refresh_halo.finish()

    def _allgather(self, part: np.ndarray) -> np.ndarray:
        """The ranks' arrays joined in rank order (Morton order, for per-leaf arrays)."""
        return np.concatenate(self.comm.world.allgather(part))

    def _scatter_loaded(self, leaves, conserved: np.ndarray) -> None:
        leaves = tuple(leaves)
        if leaves == self.forest.leaves:
            rows = self.layout.local
        else:
            at = {block: k for k, block in enumerate(leaves)}
            rows = np.array([at[self.forest.leaves[g]] for g in self.layout.local], np.int64)
        self._scatter_conserved(self.layout.local_slots.astype(np.int32), np.asarray(conserved)[rows])

    # --- what the ranks reduce ---------------------------------------------------------------------
    def check_state(self):
        """check_state over the ranks: the copies refreshed, the check over the own leaves
        (a copy is current only where this rank's kernels read it), then the largest rate, the
        model's globals and the last bad cell in Morton order over the ranks."""
        self.while_refreshing(lambda: self._check(self.n_owned))
        fields = self.check_fields
        if len(self.phys.model.globals):
            fields.globals_max.from_numpy(self.comm.allreduce_max(fields.globals_max.to_numpy()))
        self._publish()
        rate = float(self.comm.allreduce_max(np.array([fields.rate[None]], np.float64))[0])
        bad, per_block = int(fields.bad[None]), self.N ** self.dim
        key = -1
        if bad != NO_BAD_CELL:
            slot, cell = divmod(bad, per_block)
            key = self.layout.leaf_in(slot) * per_block + cell
        key = int(self.comm.allreduce_max(np.array([key], np.int64))[0])
        if key < 0:
            return rate, None
        leaf, cell = divmod(key, per_block)
        block = Block(int(self.forest.levels[leaf]), tuple(self.forest.coords[leaf].tolist()))
        return rate, (block, tuple(int(i) for i in np.unravel_index(cell, (self.N,) * self.dim)))

    def _block_totals(self) -> np.ndarray:
        return self._allgather(super()._block_totals())

    def take_repair_count(self) -> int:
        """Over the ranks (each counts its own leaves' repairs)."""
        return int(self.comm.allreduce_sum(np.array([super().take_repair_count()], np.int64))[0])

    def take_fallback_count(self) -> int:
        """Over the ranks (each counts its own leaves' faces)."""
        return int(self.comm.allreduce_sum(np.array([super().take_fallback_count()], np.int64))[0])

    def _block_extrema(self) -> tuple[np.ndarray, np.ndarray]:
        return tuple(self._allgather(part) for part in super()._block_extrema())

    def _indicator_codes(self, criteria) -> np.ndarray:
        return self._allgather(super()._indicator_codes(criteria))

    def conserved_blocks(self) -> np.ndarray:
        """Every leaf's U in Morton order, on every rank (gathered)."""
        return self._allgather(self._gather_conserved(self.layout.local_slots[:self.n_owned].astype(np.int32)))

    def primitive_blocks(self, leaves=None) -> dict:
        """{leaf: W} of every leaf on rank 0 (an empty dict elsewhere: a snapshot), or of
        `leaves` on every rank (a few blocks: a failure's report reads them on each)."""
        if leaves is None:
            wanted = np.arange(len(self.forest.levels))
        else:
            at = {block: k for k, block in enumerate(self.forest.leaves)}
            wanted = np.array([at[block] for block in leaves], np.int64)
        mine = wanted[self.layout.owner[wanted] == self.comm.rank]
        data = self._gather(self.layout.slot[mine].astype(np.int32))
        everywhere = leaves is not None
        parts = self.comm.world.allgather((mine, data)) if everywhere else self.comm.gather((mine, data), root=0)
        if not everywhere and self.comm.rank != 0:
            return {}
        found = {int(g): values for indices, block in parts for g, values in zip(indices, block)}
        leaves_of = self.forest.leaves
        return {leaves_of[g]: found[int(g)] for g in wanted}

    # --- adapting --------------------------------------------------------------------------------
    def moved_to(self, new, ghosts_current: bool = False) -> bool:
        """PackSolver.moved_to on every rank at once (`new`: the same forest on each): the
        blocks kept here stay in their slots, those made here are made on the device in free
        slots, in the launch that writes the tables' changed rows, and the blocks that change
        rank cross whole (parallel/amr_routes.py)."""
        if new == self.forest:
            return False
        partition = self.partition
        owner = partition.owners(new)
        if imbalance(owner, self.comm.size) > self.rebalance_above:
            partition = split(new, self.comm.size)
            owner = partition.owners(new)
            self.rebalances += 1
        pairs = updated_pairs(self.layout.pairs, self.forest, new)  # (the new leaves' looked up only)
        layout = RankLayout(new, owner, self.comm.size, self.comm.rank, pairs, previous=self.layout)
        routes = RegridRoutes(self.layout, layout, self.pool.capacity)
        if routes.slots_needed > self.pool.capacity:
            raise RankPoolExhausted(routes.slots_needed, self.pool.capacity)
        layout.place(routes.slots)
        if not ghosts_current:  # (prolongation reads the parents' outer neighbours)
            self.primitives(self.pool.n_active)
            self.fill_ghosts()
        self._bring_siblings(routes)
        tables = updated_local_tables(self.tables, self.layout, layout)
        self.region_slots.set(new, layout.slot, routes.placed)
        update = self.pool.stage(tables, self.region_slots)
        rows, listed, counts = padded(update)
        prolonged, restricted = routes.prolonged, routes.restricted
        self._apply(prolonged if len(prolonged) else np.zeros((1, 3), np.int32),
                    restricted if len(restricted) else np.zeros((1, restricted.shape[1]), np.int32),
                    rows, listed, [len(prolonged), len(restricted)] + counts)
        self.pool.took(update)
        self._swap_blocks({q: routes.send_slots(q) for q in routes.sends},
                          {q: routes.receive_slots(q) for q in routes.receives})
        self._use(new, partition, layout, tables)
        self.checked = self.check_state()
        return True

    def _bring_siblings(self, routes) -> None:
        """The whole U of the other ranks' children of the merges made here, into their copies'
        slots (a restriction reads every cell; a copy is current only where a stage reads it)."""
        slot = self.layout.slot
        self._swap_blocks({q: slot[leaves] for q, leaves in routes.siblings_out.items()},
                          {q: slot[leaves] for q, leaves in routes.siblings_in.items()})

    def _swap_blocks(self, outgoing: dict, incoming: dict) -> None:
        """Whole blocks' U between the ranks through host buffers: those in the slots
        `outgoing` names ({rank: slots here}) sent, those arriving into the slots `incoming`
        names; one gather and one scatter launch at most."""
        sent = np.concatenate([np.zeros(0, np.int64), *outgoing.values()]).astype(np.int32)
        data = self._gather_conserved(sent) if len(sent) else None
        messages, start = {}, 0
        for q, slots in outgoing.items():
            if len(slots):
                messages[q], start = data[start:start + len(slots)], start + len(slots)
        received = swap(self.comm, messages, {q: len(slots) for q, slots in incoming.items()},
                        self.pool.block_shape + (self.phys.U.n,), numpy_dtype(self.pool.dtype))
        if received:
            self._scatter_conserved(np.concatenate([incoming[q] for q in received]).astype(np.int32),
                                    np.concatenate(list(received.values())))
