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
from taichiflow.mesh.partition import Partition, imbalance, loads, of_owners, reach, split, touching_pairs
from taichiflow.mesh.slot_arrays import LeafSlots
from taichiflow.mesh.tables import RELATION_CODES, device_tables
from taichiflow.parallel.amr_layout import RankLayout, local_tables
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
    pairs = touching_pairs(forest)
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


@pytest.mark.parametrize("rebalance", [False, True])
def test_regrid_routes_deliver_every_new_leaf_once(rebalance):
    forest = random_forest(seed=6)
    ranks = 3
    partition = split(forest, ranks)
    rng = np.random.default_rng(1)
    new = forest.refined_where(rng.random(len(forest.levels)) < 0.3, rng.random(len(forest.levels)) < 0.6)
    old_owner = partition.owners(forest)
    new_owner = split(new, ranks).owners(new) if rebalance else partition.owners(new)
    routes = []
    for r in range(ranks):
        old_layout = RankLayout(forest, old_owner, ranks, r)
        new_layout = RankLayout(new, new_owner, ranks, r)
        routes.append((RegridRoutes(old_layout, new_layout), new_layout))
    made = np.zeros(len(new.levels), int)
    for r, (route, new_layout) in enumerate(routes):
        made[np.flatnonzero(route.made_slot >= 0)] += 1
        for q in range(ranks):
            if q != r:
                assert np.array_equal(route.sends[q], routes[q][0].receives[r])
        arriving = np.concatenate([np.zeros(0, np.int64)] + [route.receives[q] for q in route.receives])
        have = new_layout.local[route.from_slot >= 0]
        assert np.array_equal(np.sort(np.concatenate([have, arriving])), np.sort(new_layout.local))
        # a copy holds only what a stage reads: a leaf that becomes this rank's own comes whole
        own = new_layout.local[:new_layout.n_owned]
        kept_here = own[route.kept[own] & (route.from_slot[:new_layout.n_owned] >= 0)]
        assert np.all(old_owner[new.tiling.matches(forest.tiling)[0][kept_here]] == r)
        # the children of a merge made here that other ranks own come whole before it
        for q in range(ranks):
            if q != r:
                assert np.array_equal(route.siblings_in[q], routes[q][0].siblings_out[r])
                assert np.all(old_owner[route.siblings_in[q]] == q)
    assert np.all(made[~routes[0][0].kept] == 1) and np.all(made[routes[0][0].kept] == 0)


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
    8 copies, whose whole blocks a refresh moved before: 512 cells (4 variables of 8 bytes
    each for Euler in 2D: 2,048 bytes against 16,384, and 3,840 with g = 3)."""
    forest = Forest.uniform((4, 4), 8, 0, (False, False))
    owner = split(forest, 2).owners(forest)
    for r in range(2):
        layout = RankLayout(forest, owner, 2, r)
        assert HaloSlabs(layout, ghost).cell_counts() == (cells, cells)
        assert len(layout.local) - layout.n_owned == 8
        assert cells * 4 * 8 <= 16384 / 4
