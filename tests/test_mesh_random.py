"""Random regrids of taichiflow.mesh against a brute-force model that shares none of its code:
leaves as boxes in finest-level block units, touching tested box against box over every
periodic image, and the regrid redone step by step from its definition (split the flagged
leaves, split the coarser of any two touching leaves more than a level apart until none are,
then merge flagged families, finest first, where the merged parent touches no leaf more than a
level away). After every regrid the forest must equal the model's, and the slot plan and the
incrementally updated device tables must equal what their definitions give."""
import itertools

import numpy as np
import pytest

from taichiflow.mesh import Block, Forest, assign_slots, device_tables, plan_regrid, updated_tables
from taichiflow.mesh.refinement import _regridded_in_rounds, regridded
from taichiflow.mesh.tiling import Tiling

# (roots, periodic, max_level): 2D and 3D, periodic, mixed and not, root counts not powers of two.
CONFIGS = [
    ((2, 3), (False, False), 3),
    ((1, 1), (True, True), 4),
    ((3, 1), (True, False), 3),
    ((1, 1, 1), (True, True, True), 3),
    ((2, 1, 1), (False, True, False), 2),
    ((1, 2, 1), (False, False, False), 3),
]
IDS = ["%dD-%s-%s" % (len(r), "x".join(map(str, r)), "".join("p" if q else "n" for q in p)) for r, p, _ in CONFIGS]
CAPACITY = 1500


# ---- the model: boxes [lo, hi) in finest-level block units ----

def kids(block):
    level, coords = block
    return [Block(level + 1, tuple(2 * c + ((octant >> axis) & 1) for axis, c in enumerate(coords)))
            for octant in range(1 << len(coords))]


def mother(block):
    return Block(block.level - 1, tuple(c // 2 for c in block.coords))


def box_arrays(blocks, max_level, dim=None):
    dim = dim or len(blocks[0].coords)
    size = np.array([1 << (max_level - b.level) for b in blocks], np.int64)
    lo = np.array([b.coords for b in blocks], np.int64).reshape(len(blocks), dim) * size[:, None]
    return lo, lo + size[:, None], np.array([b.level for b in blocks], np.int64)


def image_shifts(roots, periodic, max_level):
    extent = np.array(roots) << max_level
    return [np.array(s) for s in itertools.product(*[(-e, 0, e) if p else (0,) for e, p in zip(extent, periodic)])]


def touching_pairs(a, b, shifts):
    """[i, j]: closed box i of `a` meets closed box j of `b` in some periodic image."""
    (alo, ahi), (blo, bhi) = a, b
    met = np.zeros((len(alo), len(blo)), bool)
    for s in shifts:
        met |= np.all((alo[:, None, :] <= bhi[None, :, :] + s) & (blo[None, :, :] + s <= ahi[:, None, :]), axis=2)
    return met


def too_far_pairs(blocks, shifts, max_level):
    lo, hi, level = box_arrays(blocks, max_level)
    return touching_pairs((lo, hi), (lo, hi), shifts) & (np.abs(level[:, None] - level[None, :]) > 1)


def model_regrid(leaves, roots, periodic, max_level, refine, derefine):
    """The regrid redone by brute force from its definition."""
    shifts = image_shifts(roots, periodic, max_level)
    leaves = set(leaves)
    for block in refine:
        if block.level < max_level:
            leaves = (leaves - {block}) | set(kids(block))
    while True:  # the coarsest balanced refinement: only forced splits, all of them
        blocks = sorted(leaves)
        far = too_far_pairs(blocks, shifts, max_level)
        levels = np.array([b.level for b in blocks])
        coarse = {blocks[j] for i, j in zip(*np.nonzero(far)) if levels[j] < levels[i]}
        if not coarse:
            break
        for block in coarse:
            leaves = (leaves - {block}) | set(kids(block))
    flagged = set(derefine) - set(refine)
    families = {mother(b) for b in flagged if b.level > 0}
    for parent in sorted(families, key=lambda b: -b.level):
        family = kids(parent)
        if not all(child in flagged and child in leaves for child in family):
            continue
        others = sorted(leaves - set(family))
        lo, hi, level = box_arrays(others, max_level, len(roots))
        plo, phi, _ = box_arrays([parent], max_level)
        near = touching_pairs((plo, phi), (lo, hi), shifts)[0]
        if np.all(np.abs(level[near] - parent.level) <= 1):
            leaves = (leaves - set(family)) | {parent}
    return leaves


def model_plan(old, old_slots, new):
    """The slot plan from its definition: a kept leaf keeps its slot, new leaves in Morton order
    take the lowest slots no old leaf holds."""
    free = iter(sorted(set(range(CAPACITY)) - set(old_slots.values())))
    slots, kept, prolonged, restricted = {}, [], [], []
    for leaf in new.leaves:
        if leaf in old_slots:
            slots[leaf] = old_slots[leaf]
            kept.append((slots[leaf], slots[leaf]))
            continue
        slots[leaf] = next(free)
        if leaf.level > 0 and mother(leaf) in old_slots:
            octant = sum((c % 2) << axis for axis, c in enumerate(leaf.coords))
            prolonged.append((old_slots[mother(leaf)], slots[leaf], octant))
        else:
            restricted.append((tuple(old_slots[child] for child in kids(leaf)), slots[leaf]))
    return slots, kept, prolonged, restricted


# ---- checks ----

def assert_tiles(forest):
    lo, hi, _ = box_arrays(forest.leaves, forest.max_level)
    extent = np.array(forest.roots) << forest.max_level
    assert np.all(lo >= 0) and np.all(hi <= extent)
    assert np.prod(hi - lo, axis=1).sum() == np.prod(extent)
    overlap = np.all((lo[:, None, :] < hi[None, :, :]) & (lo[None, :, :] < hi[:, None, :]), axis=2)
    assert np.array_equal(overlap, np.eye(len(lo), dtype=bool))


def assert_regrid(old, new, refine, derefine):
    shifts = image_shifts(new.roots, new.periodic, new.max_level)
    assert_tiles(new)
    assert not too_far_pairs(new.leaves, shifts, new.max_level).any()
    assert new.is_balanced()
    now = set(new.leaves)
    for block in refine:  # every flag below max_level honoured (a block at max_level stays)
        assert (block in now) == (block.level >= new.max_level)
    for leaf in now - set(old.leaves):  # new leaves: children of split leaves, or merged parents
        if not (leaf.level > 0 and old.is_leaf(mother(leaf))):
            assert all(child in derefine and child not in refine for child in kids(leaf))
    assert list(new.leaves) == sorted(now, key=lambda b: _key(b, new))  # (Morton order)


def _key(block, forest):
    """Morton key of the block's first finest-level block, by bit interleaving in Python."""
    finest = [c << (forest.max_level - block.level) for c in block.coords]
    return sum(((c >> bit) & 1) << (bit * forest.dim + axis) for bit in range(24) for axis, c in enumerate(finest))


TABLE_ROWS = ("level", "origin", "neighbour", "relation")


def assert_same_tables(a, b):
    for name in TABLE_ROWS + ("active",):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name


def random_flags(forest, rng):
    """Random leaves to refine; whole families (of which some children may not be leaves) and
    single leaves to derefine, a few leaves flagged both ways."""
    leaves = forest.leaves
    fraction = rng.uniform(0.03, 0.3)
    refine = {b for b in leaves if rng.random() < fraction}
    families = sorted({mother(b) for b in leaves if b.level > 0})
    derefine = {c for f in families if rng.random() < 0.7 for c in kids(f) if forest.is_leaf(c)}
    derefine |= {b for b in leaves if rng.random() < 0.15}
    return refine, derefine


# ---- tests ----

@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=IDS)
def test_random_regrids_match_the_brute_force_model(roots, periodic, max_level, seed):
    rng = np.random.default_rng([seed, len(roots), *roots])
    forest = Forest.uniform(roots, 4, max_level, periodic, level=int(rng.integers(0, 2)))
    slots = assign_slots(forest, CAPACITY)
    tables = device_tables(forest, slots, CAPACITY, faces_only=True)
    merged = split = 0
    for _ in range(10):
        refine, derefine = random_flags(forest, rng)
        new = forest.refined(refine, derefine)
        assert set(new.leaves) == model_regrid(forest.leaves, roots, periodic, max_level, refine, derefine)
        assert_regrid(forest, new, refine, derefine)
        plan = plan_regrid(forest, slots, new, CAPACITY)
        expected = model_plan(forest, slots, new)
        assert list(plan.slots.items()) == list(expected[0].items())
        assert (plan.kept, plan.prolonged, plan.restricted) == expected[1:]
        before = {name: getattr(tables, name).copy() for name in TABLE_ROWS}
        tables = updated_tables(tables, forest, new, plan.slots, in_place=bool(rng.integers(0, 2)))
        assert_same_tables(tables, device_tables(new, plan.slots, CAPACITY, faces_only=True))
        differs = np.zeros(CAPACITY, bool)  # (rows not listed as changed must be as they were)
        for name in TABLE_ROWS:
            differs |= (before[name] != getattr(tables, name)).reshape(CAPACITY, -1).any(axis=1)
        assert np.isin(np.flatnonzero(differs), tables.changed).all()
        merged += len(plan.restricted)
        split += len(plan.prolonged)
        forest, slots = new, plan.slots
    assert merged > 0 and split > 0


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=IDS)
def test_unbalanced_leaves_from_outside_are_balanced_as_the_model_does(roots, periodic, max_level):
    """Leaves handed in (as a restart does) need not be balanced: a regrid balances them fully."""
    rng = np.random.default_rng(77 + sum(roots))
    leaves = set(Forest.uniform(roots, 4, max_level, periodic).leaves)
    for _ in range(2 * max_level):  # splits anywhere, without balancing
        splittable = sorted(b for b in leaves if b.level < max_level)
        pick = splittable[int(rng.integers(len(splittable)))]
        leaves = (leaves - {pick}) | set(kids(pick))
    forest = Forest(roots, 4, max_level, periodic, list(leaves))
    shifts = image_shifts(roots, periodic, max_level)
    assert forest.is_balanced() == (not too_far_pairs(forest.leaves, shifts, max_level).any())
    refine, derefine = random_flags(forest, rng)
    new = forest.refined(refine, derefine)
    assert set(new.leaves) == model_regrid(forest.leaves, roots, periodic, max_level, refine, derefine)
    assert new.is_balanced() and not too_far_pairs(new.leaves, shifts, max_level).any()


def test_the_array_views_follow_the_leaves():
    forest = Forest.uniform((2, 1, 1), 4, 3, (True, False, False)).refined({Block(0, (1, 0, 0))})
    forest = forest.refined({forest.leaves[3]})
    assert forest.levels.tolist() == [b.level for b in forest.leaves]
    assert forest.coords.tolist() == [list(b.coords) for b in forest.leaves]
    assert forest.keys.tolist() == [_key(b, forest) for b in forest.leaves]
    with pytest.raises(ValueError):
        forest.levels[0] = 1  # (read-only)


def test_regrids_decided_on_edits_equal_regrids_made_round_by_round():
    """A balanced forest's regrid is decided on the old arrays (mesh/edits.py), refusing again
    without a look the merges the last regrid refused unless a finer family merged beside
    them (mesh/merges.py); the same leaves as a tiling made per balancing round and per merged
    level, over chains of regrids that merge much. Some refusals must come back as merges
    (the look again beside finer merges), and every regrid's matches and sources must be the
    ones a search finds."""
    revived = 0
    for (roots, periodic, max_level), seed in itertools.product(
            CONFIGS + [((2, 2, 2), (False, False, False), 4), ((3,), (True,), 6)], range(3)):
        rng = np.random.default_rng([seed, len(roots), *roots, max_level])
        forest = Forest.uniform(roots, 4, max_level, periodic)
        for _ in range(20):
            n = len(forest.levels)
            refine = np.flatnonzero(rng.random(n) < rng.uniform(0.0, 0.15))
            derefine = np.flatnonzero(rng.random(n) < rng.uniform(0.5, 1.0))
            old = forest.tiling
            new = regridded(old, refine, derefine, True)
            split = np.zeros(n, bool)
            split[refine] = True
            flagged = np.zeros(n, bool)
            flagged[derefine] = True
            flagged[refine] = False
            rounds = _regridded_in_rounds(old, split & (old.levels < max_level), flagged, True)
            for name in ("levels", "coords", "keys"):
                assert np.array_equal(getattr(new, name), getattr(rounds, name)), name
            if new is old:
                continue
            theirs, ours = new.matches(old)
            searched = Tiling(new.space, new.levels, new.coords, new.keys).matches(old)
            assert np.array_equal(theirs, searched[0]) and np.array_equal(ours, searched[1])
            source = new.made_from(old)
            assert np.array_equal(source < 0, theirs >= 0)
            arriving = theirs < 0
            from_level = old.levels[source[arriving]]
            assert np.all(np.abs(from_level - new.levels[arriving]) == 1)
            if old.refused is not None:
                merged_keys = new.keys[arriving][from_level > new.levels[arriving]]
                revived += int(np.isin(merged_keys, old.refused[0]).sum())
            forest = Forest._of_tiling(forest._domain, 4, max_level, new)
    assert revived > 0
