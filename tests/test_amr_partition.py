"""The forest shared among ranks, without Taichi or MPI: Morton runs balanced by weight
(mesh/partition.py), what each rank holds and exchanges (parallel/amr_layout.py), the cells of
the copies that a stage moves against a cell-by-cell transcription of the kernels' reads
(parallel/amr_slabs.py), and how a regrid's new blocks reach their ranks (parallel/amr_routes.py)."""
import functools
import itertools

import numpy as np
import pytest

from taichiflow.mesh import Forest
from taichiflow.mesh.block import direction_index, touching_octants
from taichiflow.mesh.partition import (Partition, imbalance, loads, of_owners, pair_table, reach, reach_of_run,
                                      split, touching_pairs, updated_pairs)
from taichiflow.mesh.slot_arrays import LeafSlots
from taichiflow.mesh.tables import RELATION_CODES, device_tables
from taichiflow.parallel.amr_layout import RankLayout, local_tables, updated_local_tables
from taichiflow.parallel.amr_routes import RegridRoutes
from taichiflow.parallel.amr_slabs import HaloSlabs

SAME, COARSER, FINER, BOUNDARY = (RELATION_CODES[kind] for kind in ("same", "coarser", "finer", "boundary"))


def random_forest(roots=(4, 3), periodic=(True, False), rounds=3, seed=1, block_cells=8, share=0.2):
    rng = np.random.default_rng(seed)
    forest = Forest.uniform(roots, block_cells, rounds, periodic)
    for _ in range(rounds):
        forest = forest.refined_where(rng.random(len(forest.levels)) < share, np.zeros(len(forest.levels), bool))
    return forest


def test_runs_are_contiguous_and_balanced_by_count():
    forest = random_forest()
    for ranks in (1, 2, 3, 4, 7):
        owner = split(forest, ranks).owners(forest)
        assert np.all(np.diff(owner) >= 0) and owner[0] == 0 and owner[-1] == ranks - 1
        count = np.bincount(owner, minlength=ranks)
        assert count.max() - count.min() <= 1
        assert imbalance(owner, ranks) <= 1 + ranks / len(owner)


def test_runs_are_balanced_by_weight():
    forest = random_forest(seed=4)
    weights = 1.0 + 3.0 * (forest.levels == forest.levels.max())
    owner = split(forest, 3, weights).owners(forest)
    load = loads(owner, 3, weights)
    assert np.all(np.abs(load - load.mean()) <= weights.max())
    assert imbalance(owner, 3, weights) < imbalance(split(forest, 3).owners(forest), 3, weights)


def test_more_ranks_than_leaves_leave_ranks_empty():
    forest = Forest.uniform((2,), 8, 1, (False,))
    partition = split(forest, 4)
    owner = partition.owners(forest)
    assert sorted(owner.tolist()) == owner.tolist() and len(set(owner.tolist())) == 2
    assert isinstance(partition, Partition) and partition.ranks == 4


def test_ownership_carries_over_a_regrid():
    """Children go where their parent was, a merged parent where its first child was."""
    forest = random_forest(seed=2)
    partition = split(forest, 3)
    before = partition.owners(forest)
    rng = np.random.default_rng(0)
    new = forest.refined_where(rng.random(len(forest.levels)) < 0.3, rng.random(len(forest.levels)) < 0.5)
    after = partition.owners(new)
    assert np.all(np.diff(after) >= 0)
    for j, key in enumerate(new.keys):
        holder = np.searchsorted(forest.keys, key, side="right") - 1  # the old leaf holding its first point
        assert after[j] == before[holder]


def test_owners_must_be_non_decreasing():
    forest = random_forest()
    with pytest.raises(ValueError, match="non-decreasing"):
        of_owners(forest, np.arange(len(forest.levels))[::-1] % 2, 2)


@pytest.mark.parametrize("roots,periodic", [((4, 3), (True, False)), ((2, 2, 2), (False, True, True))])
def test_touching_pairs_are_what_the_forest_says(roots, periodic):
    forest = random_forest(roots, periodic, rounds=2)
    i, j = touching_pairs(forest)
    found = set(zip(i.tolist(), j.tolist()))
    index = {leaf: k for k, leaf in enumerate(forest.leaves)}
    expected = set()
    for k, leaf in enumerate(forest.leaves):
        for offset in itertools.product((-1, 0, 1), repeat=forest.dim):
            if not any(offset):
                continue
            across = forest.neighbour(leaf, offset)
            blocks = across.blocks if across.kind != "finer" else [across.blocks[o] for o in touching_octants(offset)]
            for other in blocks:
                if other != leaf:
                    expected.add((k, index[other]))
    assert found == expected
    assert found == {(b, a) for a, b in found}


def test_layouts_cover_the_forest_and_their_lists_match():
    forest = random_forest(seed=3)
    ranks = 3
    owner = split(forest, ranks).owners(forest)
    pairs = pair_table(forest)
    layouts = [RankLayout(forest, owner, ranks, r, pairs) for r in range(ranks)]
    owned = np.concatenate([layout.local[:layout.n_owned] for layout in layouts])
    assert np.array_equal(owned, np.arange(len(forest.levels)))  # (rank order: Morton order)
    for r, layout in enumerate(layouts):
        assert layout.first == (0 if r == 0 else layouts[r - 1].first + layouts[r - 1].n_owned)
        halo = layout.local[layout.n_owned:]
        assert np.all(owner[halo] != r)
        assert np.array_equal(np.sort(layout.local), np.flatnonzero(reach(pairs, owner == r)))
        for q in range(ranks):
            if q != r:  # what r sends q is what q receives from r, leaf for leaf and in order
                sent = layout.local[layout.sends[q]]
                assert np.array_equal(sent, layouts[q].local[layouts[q].receives[r]])


def test_local_tables_name_the_held_leaves_or_the_void_slot():
    forest = random_forest(seed=5)
    owner = split(forest, 2).owners(forest)
    layout = RankLayout(forest, owner, 2, 1)
    capacity = len(layout.local) + 3
    tables = local_tables(forest, layout, capacity)
    k = len(layout.local)
    assert np.array_equal(tables.active, np.arange(k))
    assert np.array_equal(tables.level[:k], forest.levels[layout.local])
    assert np.all(tables.level[k:-1] == -1) and np.all(tables.relation[k:-1] == RELATION_CODES["boundary"])
    entries = tables.neighbour[:k]
    assert np.all((entries == -1) | (entries < k) | (entries == capacity - 1))
    # an own leaf's neighbours are all held: none of its entries is the void slot
    assert not np.any(tables.neighbour[:layout.n_owned] == capacity - 1)
    # the held leaves' rows looked up for them alone are the whole forest's rows renumbered
    for got, want in zip(tables[:4], whole_tables(forest, layout, capacity)):
        assert np.array_equal(got, want)


def whole_tables(forest, layout, capacity):
    """The rank's tables as first built: the whole forest's rows (a slot per leaf), those of
    the held leaves renumbered into their slots, the leaves not held named by the void slot."""
    n = len(forest.levels)
    whole = device_tables(forest, LeafSlots(forest, np.arange(n)), n, faces_only=True)
    renumber = np.full(n, capacity - 1, np.int64)
    renumber[layout.local] = layout.local_slots
    tables = local_tables(forest, layout, capacity)
    expected = [np.full_like(tables.level, -1), np.full_like(tables.origin, -1), np.full_like(tables.neighbour, -1),
                np.full_like(tables.relation, BOUNDARY)]
    slots = layout.local_slots
    expected[0][slots], expected[1][slots], expected[3][slots] = (whole.level[layout.local],
                                                                  whole.origin[layout.local],
                                                                  whole.relation[layout.local])
    entries = whole.neighbour[layout.local]
    expected[2][slots] = np.where(entries >= 0, renumber[np.maximum(entries, 0)], -1)
    expected[0][-1], expected[1][-1] = 0, 0
    return expected


def regrid_chain(dim, ranks, rebalance, seed, steps=3):
    """A random forest (2D or 3D, a periodic axis) and `steps` random regrids of it on
    `ranks` ranks: [(old layouts, new layouts, routes per rank, capacity)], each regrid's
    layouts placed in the slots its routes plan."""
    roots, periodic = ((4, 3), (True, False)) if dim == 2 else ((2, 2, 1), (True, False, False))
    forest = random_forest(roots, periodic, 2, seed, 4, 0.3)
    rng = np.random.default_rng(seed)
    forests = [forest]
    for _ in range(steps):
        n = len(forests[-1].levels)
        forests.append(forests[-1].refined_where(rng.random(n) < 0.15, rng.random(n) < 0.5))
    capacity = 2 * max(len(f.levels) for f in forests) + 8
    owner, pairs = split(forest, ranks).owners(forest), pair_table(forest)
    layouts = [RankLayout(forest, owner, ranks, r, pairs) for r in range(ranks)]
    chain = []
    for new in forests[1:]:
        new_owner = split(new, ranks).owners(new) if rebalance else of_owners(forest, owner, ranks).owners(new)
        pairs = updated_pairs(pairs, forest, new)  # (as the solver does)
        after = [RankLayout(new, new_owner, ranks, r, pairs) for r in range(ranks)]
        routes = [RegridRoutes(layouts[r], after[r], capacity) for r in range(ranks)]
        assert all(route.slots_needed <= capacity for route in routes)
        for layout, route in zip(after, routes):
            layout.place(route.slots)
        chain.append((layouts, after, routes, capacity))
        forest, owner, layouts = new, new_owner, after
    return chain


def block_of(forest, leaf):
    return int(forest.levels[leaf]), tuple(forest.coords[leaf].tolist())


@pytest.mark.parametrize("dim,ranks,rebalance,seed", [(2, 3, False, 6), (2, 3, True, 6), (2, 4, True, 2),
                                                      (3, 2, False, 1), (3, 3, True, 3)])
def test_a_regrid_moves_only_the_blocks_that_change_rank(dim, ranks, rebalance, seed):
    """Each rank's pool followed block by block through a chain of regrids (what each slot
    holds, and whether whole or only the cells a refresh brings): a leaf held before and after
    stays in its slot, the new blocks are made from held sources in slots no old block holds,
    and the blocks that cross through host buffers are exactly those a rank holds after and
    had no current copy of (or a merge's siblings): none is moved or rebuilt that need not be."""
    crossed = kept_in_place = 0
    for old, new, routes, capacity in chain_of(dim, ranks, rebalance, seed):
        forest, after = old[0].forest, new[0].forest
        pools = [{int(s): (block_of(forest, j), j < len(forest.levels) and layout.owner[j] == r)
                  for j, s in zip(layout.local, layout.local_slots)} for r, layout in enumerate(old)]
        theirs, _ = after.tiling.matches(forest.tiling)
        made = sum((route.made_slot >= 0).astype(int) for route in routes)  # (each new leaf made once)
        assert np.all(made[theirs < 0] == 1) and np.all(made[theirs >= 0] == 0)
        for r, route in enumerate(routes):
            for q, leaves in route.siblings_in.items():
                for j, s in zip(leaves, old[r].slot[leaves]):
                    assert pools[q][int(old[q].slot[j])] == (block_of(forest, j), True)
                    pools[r][int(s)] = (block_of(forest, j), True)
                    crossed += 1
        for r, route in enumerate(routes):
            made_slots = np.concatenate([route.prolonged[:, 1], route.restricted[:, -1]])
            assert not np.isin(made_slots, old[r].local_slots).any() and np.all(made_slots < capacity - 1)
            for parent, child, octant in route.prolonged.tolist():
                level, coords = pools[r][parent][0]
                assert pools[r][parent][1]
                made = (level + 1, tuple(2 * c + ((octant >> d) & 1) for d, c in enumerate(coords)))
                pools[r][child] = (made, True)
            for row in route.restricted.tolist():
                assert all(pools[r][child][1] for child in row[:-1])
                level, coords = pools[r][row[0]][0]
                pools[r][row[-1]] = ((level - 1, tuple(c // 2 for c in coords)), True)
        parcels = {}
        for r, route in enumerate(routes):
            for q in route.sends:
                parcels[r, q] = [pools[r][int(s)] for s in route.send_slots(q)]
                assert all(whole for _, whole in parcels[r, q])
        for r, route in enumerate(routes):
            for q in route.receives:
                assert [block for block, _ in parcels[q, r]] == [block_of(after, j) for j in route.receives[q]]
                for s, parcel in zip(route.receive_slots(q), parcels[q, r]):
                    pools[r][int(s)] = parcel
                crossed += len(parcels[q, r])
        for r, layout in enumerate(new):
            slots = layout.local_slots
            assert len(set(slots.tolist())) == len(slots) and slots.max() < capacity - 1
            for k, (j, s) in enumerate(zip(layout.local, slots)):
                assert pools[r][int(s)][0] == block_of(after, j)
                assert pools[r][int(s)][1] or k >= layout.n_owned  # (an own leaf's block whole)
            stayed = theirs[layout.local] >= 0
            stayed[stayed] = old[r].slot[theirs[layout.local[stayed]]] >= 0
            assert np.array_equal(slots[stayed], old[r].slot[theirs[layout.local[stayed]]])
            kept_in_place += int(stayed.sum())
            # what crosses is what this rank had no current copy of: made elsewhere or new to it
            owned_before = np.zeros(len(after.levels), bool)
            owned_before[theirs >= 0] = old[r].owner[theirs[theirs >= 0]] == r
            copy_kept = np.zeros(len(after.levels), bool)
            copy_kept[layout.local[stayed]] = layout.owner[layout.local[stayed]] != r
            made_here = routes[r].made_slot >= 0
            expected = layout.local[~(owned_before | copy_kept | made_here)[layout.local]]
            arrived = np.concatenate([np.zeros(0, np.int64), *routes[r].receives.values()])
            assert np.array_equal(np.sort(arrived), np.sort(expected))
    assert kept_in_place > 2 * crossed > 0  # (before: every held block through the host)


@pytest.mark.parametrize("dim,ranks,rebalance,seed", [(2, 3, False, 6), (2, 4, True, 2), (3, 3, True, 3)])
def test_a_regrid_uploads_only_the_table_rows_that_change(dim, ranks, rebalance, seed):
    """The tables updated in place equal those built anew for the same slots (and those made
    from the whole forest's rows), and the rows they list as changed, the upload, are exactly
    the rows that differ."""
    built, uploaded, held = {}, 0, 0
    for old, new, _, capacity in chain_of(dim, ranks, rebalance, seed):
        for r in range(ranks):
            before = built.get(r) or local_tables(old[r].forest, old[r], capacity)
            copies = [np.copy(a) for a in before[:4]]
            tables = updated_local_tables(before, old[r], new[r])
            fresh = whole_tables(new[r].forest, new[r], capacity)
            for got, want in zip(tables[:4], fresh):
                assert np.array_equal(got, want)
            assert np.array_equal(tables.active, new[r].local_slots)
            differ = np.flatnonzero(np.any(copies[2].reshape(capacity, -1) != fresh[2].reshape(capacity, -1), axis=1)
                                    | np.any(copies[3] != fresh[3], axis=1) | (copies[0] != fresh[0])
                                    | np.any(copies[1] != fresh[1], axis=1))
            assert np.array_equal(tables.changed, differ)
            uploaded, held = uploaded + len(differ), held + len(new[r].local)
            built[r] = tables
    assert uploaded < 0.75 * held  # (over the chain: a part of the rows, not every held one)


@pytest.mark.parametrize("dim,seed", [(2, 6), (2, 2), (3, 3)])
def test_touching_pairs_carry_over_a_regrid(dim, seed):
    """The pairs kept from before and those of the new leaves looked up are the new forest's
    (as a set; touching is symmetric), each leaf's in its slice of the table,
    through a chain of regrids; and each rank's halo found through the table's slices
    is the one found by the whole-forest search."""
    chain = chain_of(dim, 2, False, seed)
    pairs = pair_table(chain[0][0][0].forest)
    for old, new, _, _ in chain:
        pairs = updated_pairs(pairs, old[0].forest, new[0].forest)
        fresh = touching_pairs(new[0].forest)
        assert set(zip(pairs.i.tolist(), pairs.j.tolist())) == set(zip(*[side.tolist() for side in fresh]))
        assert set(zip(*[side.tolist() for side in fresh])) == set(zip(*[side.tolist() for side in fresh[::-1]]))
        leaves = len(new[0].forest.levels)
        assert len(pairs.j) == pairs.offsets[-1] and len(pairs.offsets) == leaves + 1
        assert np.all(np.diff(pairs.offsets) >= 0)
        for lo, hi in ((0, leaves // 3), (leaves // 3, leaves), (leaves // 2, leaves // 2 + 1)):
            start = np.zeros(leaves, bool)
            start[lo:hi] = True
            for depth in (1, 2, 3):
                assert np.array_equal(reach_of_run(pairs, lo, hi, depth), reach(fresh, start, depth))


@pytest.mark.parametrize("dim,ranks,rebalance,seed", [(2, 3, True, 4), (3, 4, False, 5), (3, 2, True, 7)])
def test_exchange_lists_carried_over_a_regrid_are_those_made_anew(dim, ranks, rebalance, seed):
    """A regrid's exchange lists made from the previous ones (the groups of copies it left
    alone carried over, renumbered) equal lists made from nothing, message by message, and
    who holds each leaf carried over from the previous layout equals it found anew, through a
    chain of regrids with and without a new partition; and at least one regrid carried some
    groups over and worked some out anew (else this would test nothing)."""
    chain = chain_of(dim, ranks, rebalance, seed)
    ghost = 3
    slabs = [HaloSlabs(layout, ghost) for layout in chain[0][0]]
    partly = False
    for old, new, _, _ in chain:
        carried = []
        for before, after, previous in zip(old, new, slabs):
            since = RankLayout(after.forest, after.owner, ranks, after.rank, after.pairs, previous=before)
            assert np.array_equal(since.held, after.held)
            assert np.array_equal(since.local, after.local)
            since.place(after.local_slots)
            carried.append(HaloSlabs(since, ghost, previous))  # (with the layout's own left_alone mask)
        for layout, previous, made in zip(new, slabs, carried):
            fresh = HaloSlabs(layout, ghost)
            assert np.array_equal(made.keys, fresh.keys) and np.array_equal(made.joined, fresh.joined)
            for lists, expected in ((made.sends, fresh.sends), (made.receives, fresh.receives)):
                assert lists.keys() == expected.keys()
                for q in lists:
                    assert np.array_equal(lists[q], expected[q])
            stays = previous._unchanged_groups(layout, ghost)[2]
            partly |= bool(stays.any() and not stays.all())
        slabs = carried
    assert partly


@pytest.mark.parametrize("dim", [2, 3])
def test_a_regrid_away_from_the_ranks_edge_carries_every_group_over(dim):
    """A regrid that splits a leaf far from the other rank's leaves leaves every group of
    copies alone: nothing is worked out anew (no pair at all) and the lists are those made
    anew."""
    forest = Forest.uniform((8,) + (1,) * (dim - 1), 4, 2, (False,) * dim)
    owner = split(forest, 2).owners(forest)
    before = RankLayout(forest, owner, 2, 0)
    slabs = HaloSlabs(before, 3)
    refine = np.zeros(len(forest.levels), bool)
    refine[0] = True  # (the first root block: three blocks from rank 1's first)
    new = forest.refined_where(refine, np.zeros_like(refine))
    after = RankLayout(new, of_owners(forest, owner, 2).owners(new), 2, 0,
                       updated_pairs(before.pairs, forest, new), previous=before)
    stays = slabs._unchanged_groups(after, 3)[2]
    assert stays[np.flatnonzero(after.held[0] & after.held[1])].all()
    carried, fresh = HaloSlabs(after, 3, slabs), HaloSlabs(after, 3)
    assert np.array_equal(carried.joined, fresh.joined) and len(fresh.keys) > 0
    for q in (1,):
        assert np.array_equal(carried.sends[q], fresh.sends[q])
        assert np.array_equal(carried.receives[q], fresh.receives[q])


@functools.lru_cache(maxsize=None)
def chain_of(dim, ranks, rebalance, seed):
    return regrid_chain(dim, ranks, rebalance, seed)


class KernelReads:
    """The cells of U that the kernels of kernels/amr read for one leaf's stage, check,
    indicators and prolongation, transcribed cell by cell from them (ghosts.py: restriction,
    the boundary's copy, prolongation with its slopes; pool.py: read_w across same-level faces;
    fluxes.py and sweeps.py: 2g-cell stencils, the face register at level jumps), on the
    whole forest's tables (a slot per leaf). mirrored: the domain's faces mirror (else they
    copy the outermost cell)."""

    def __init__(self, forest, ghost: int, mirrored: bool):
        n = len(forest.levels)
        self.tables = device_tables(forest, LeafSlots(forest, np.arange(n)), n, faces_only=True)
        self.N, self.dim, self.g, self.mirrored = forest.block_cells, forest.dim, ghost, mirrored

    def face(self, axis, side):
        return direction_index([(-1 if side == 0 else 1) if d == axis else 0 for d in range(self.dim)])

    def across(self, b, axis, side):
        return self.tables.relation[b, self.face(axis, side)], self.tables.neighbour[b, self.face(axis, side)]

    @functools.lru_cache(maxsize=None)
    def w(self, b, c):
        """U cells behind W of cell c of leaf b (c may lie in a face's ghost layers)."""
        N, dim = self.N, self.dim
        outside = [d for d in range(dim) if not 0 <= c[d] < N]
        if not outside:
            return frozenset([(b, c)])
        (axis,) = outside
        side = int(c[axis] >= N)
        offset = [(1 if side else -1) if d == axis else 0 for d in range(dim)]
        relation, neighbour = self.across(b, axis, side)
        if relation == FINER:  # the mean of 2^d fine cells
            octant = sum((2 * c[d] // N - 2 * offset[d]) << d for d in range(dim))
            fine = [2 * c[d] - 2 * c[d] // N * N for d in range(dim)]
            return frozenset((int(neighbour[octant]), tuple(f + ((s >> d) & 1) for d, f in enumerate(fine)))
                             for s in range(2 ** dim))
        if relation == BOUNDARY:
            k = -1 - c[axis] if side == 0 else c[axis] - N
            inside = (k if side == 0 else N - 1 - k) if self.mirrored else (0 if side == 0 else N - 1)
            return self.w(b, tuple(inside if d == axis else c[d] for d in range(dim)))
        assert relation == COARSER
        bits = [(int(self.tables.origin[b][d]) // N) & 1 for d in range(dim)]
        cell = [bits[d] * (N // 2) + c[d] // 2 - ((bits[d] + offset[d]) // 2) * N for d in range(dim)]
        reads = set(self.w(int(neighbour[0]), tuple(cell)))
        for d, step in itertools.product(range(dim), (-1, 1)):
            reads |= self.read_w(int(neighbour[0]), tuple(x + step * (e == d) for e, x in enumerate(cell)), d)
        return frozenset(reads)

    def read_w(self, b, c, axis=None):
        """pool.make_w_reader: past a same-level face, the block across's own cell."""
        c = list(c)
        for d in range(self.dim) if axis is None else (axis,):
            side = 0 if c[d] < 0 else 1 if c[d] >= self.N else None
            if side is not None and self.across(b, d, side)[0] == SAME:
                b, c[d] = int(self.across(b, d, side)[1][0]), c[d] % self.N
        return self.w(b, tuple(c))

    @functools.lru_cache(maxsize=None)
    def flux(self, b, axis, i, row):
        """The face i + 1/2 along axis of the row through cell `row`: its 2g-cell stencil."""
        reads = set()
        for k in range(i - self.g + 1, i + self.g + 1):
            reads |= self.read_w(b, tuple(k if d == axis else x for d, x in enumerate(row)), axis)
        return frozenset(reads)

    def block_face(self, b, axis, side, row):
        """A block's face: solved, or where the neighbour is finer the fine faces' register (the
        flux the sweep solves there too is dropped: what it read does not count)."""
        relation, neighbour = self.across(b, axis, side)
        if relation != FINER:
            return self.flux(b, axis, side * self.N - 1, row)
        reads, half, others = set(), self.N // 2, [d for d in range(self.dim) if d != axis]
        octant = ((1 - side) << axis) + sum((row[d] // half) << d for d in others)
        for bits in itertools.product((0, 1), repeat=self.dim - 1):
            fine = dict(zip(others, (2 * (row[d] % half) + bit for d, bit in zip(others, bits))))
            reads |= self.flux(int(neighbour[octant]), axis, (1 - side) * self.N - 1,
                               tuple(fine.get(d, 0) for d in range(self.dim)))
        return reads

    def leaf(self, b):
        """Every cell leaf b's step (its cells' two faces per axis), check, indicators and
        prolongation (the slopes one cell past each side) read."""
        reads = set()
        for c in itertools.product(range(self.N), repeat=self.dim):
            reads.add((b, c))
            for axis, step in itertools.product(range(self.dim), (-1, 1)):
                reads |= self.read_w(b, tuple(x + step * (d == axis) for d, x in enumerate(c)))  # (slopes)
                f = c[axis] - (step < 0)
                if f in (-1, self.N - 1):
                    reads |= self.block_face(b, axis, int(f >= 0), c)
                else:
                    reads |= self.flux(b, axis, f, c)
        return reads


def listed_cells(layout, entries: np.ndarray) -> list:
    """[(leaf, cell)] of a message's rows (HaloSlabs), in the message's order."""
    N, dim = layout.forest.block_cells, layout.forest.dim
    cells = []
    for slot, row, bits, at in entries.tolist():
        assert at == len(cells)
        head = tuple(int(i) for i in np.unravel_index(row, (N,) * (dim - 1)))
        cells += [(int(layout.local[slot]), head + (i,)) for i in range(N) if (bits >> i) & 1]
    return cells


@pytest.mark.parametrize("roots,periodic,block_cells,ghost,ranks,seed", [
    ((4, 3), (True, False), 8, 1, 2, 1), ((4, 3), (True, False), 8, 3, 3, 1), ((2, 2), (True, True), 8, 2, 4, 2),
    ((1, 2), (True, False), 8, 4, 3, 3), ((2, 2, 2), (False, True, True), 4, 2, 2, 1),
    ((2, 2, 1), (True, True, False), 6, 3, 3, 3)])
def test_a_stage_moves_every_cell_the_kernels_read_from_a_copy(roots, periodic, block_cells, ghost, ranks, seed):
    forest = random_forest(roots, periodic, 2, seed, block_cells, 0.3)
    owner = split(forest, ranks).owners(forest)
    assert len(set(forest.levels.tolist())) >= 2  # (level jumps)
    reads = [KernelReads(forest, ghost, mirrored) for mirrored in (False, True)]
    layouts = [RankLayout(forest, owner, ranks, r) for r in range(ranks)]
    slabs = [HaloSlabs(layout, ghost) for layout in layouts]
    for r, layout in enumerate(layouts):
        needed = {cell for b in np.flatnonzero(owner == r) for kind in reads for cell in kind.leaf(b)
                  if owner[cell[0]] != r}
        moved = {cell for entries in slabs[r].receives.values() for cell in listed_cells(layout, entries)}
        assert len(moved) == slabs[r].cell_counts()[1]
        assert needed <= moved
        # (the rule's layers: more than is read where copies meet own leaves at edges and corners)
        assert len(moved) < 2.1 * len(needed)
        for q in range(ranks):
            if q != r:  # what q sends r is what r receives from q, cell for cell and in order
                assert listed_cells(layouts[q], slabs[q].sends[r]) == listed_cells(layout, slabs[r].receives[q])


@pytest.mark.parametrize("ghost,cells", [(2, 4 * 2 * 8), (3, 4 * 3 * 8 + 6 * 4)])
def test_a_stage_moves_the_layers_beside_the_own_leaves_not_whole_blocks(ghost, cells):
    """4x4 blocks of 8^2 cells on 2 ranks (Morton: the lower two rows and the upper two): each
    rank receives the g rows of the 4 blocks across the cut, and with WENO5's g = 3 the 4
    cells of a 4x4 corner that lie past them beside each of the 6 diagonal own leaves; it holds
    the 4 copies that touch its leaves (the row across the cut), whose whole blocks a refresh
    would move: 256 cells (4 variables of 8 bytes each for Euler in 2D: 2,048 bytes against
    8,192, and 3,840 with g = 3)."""
    forest = Forest.uniform((4, 4), 8, 0, (False, False))
    owner = split(forest, 2).owners(forest)
    for r in range(2):
        layout = RankLayout(forest, owner, 2, r)
        assert HaloSlabs(layout, ghost).cell_counts() == (cells, cells)
        assert len(layout.local) - layout.n_owned == 4
        assert cells * 4 * 8 <= 8192 / 2
