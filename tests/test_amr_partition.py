"""The forest shared among ranks, without Taichi or MPI: Morton runs balanced by weight
(mesh/partition.py), what each rank holds and exchanges (parallel/amr_layout.py), and how a
regrid's new blocks reach their ranks (parallel/amr_routes.py)."""
import itertools

import numpy as np
import pytest

from taichiflow.mesh import Forest
from taichiflow.mesh.block import touching_octants
from taichiflow.mesh.partition import Partition, imbalance, loads, of_owners, reach, split, touching_pairs
from taichiflow.mesh.tables import RELATION_CODES
from taichiflow.parallel.amr_layout import RankLayout, local_tables
from taichiflow.parallel.amr_routes import RegridRoutes


def random_forest(roots=(4, 3), periodic=(True, False), rounds=3, seed=1):
    rng = np.random.default_rng(seed)
    forest = Forest.uniform(roots, 8, rounds, periodic)
    for _ in range(rounds):
        forest = forest.refined_where(rng.random(len(forest.levels)) < 0.2, np.zeros(len(forest.levels), bool))
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
    assert np.all(made[~routes[0][0].kept] == 1) and np.all(made[routes[0][0].kept] == 0)
