"""The block forest of taichiflow.mesh against brute force: leaves as boxes in finest-level block
units, touching tested box against box over every periodic image, neighbours found by the
leaves that a one-unit-thick layer just outside a face, edge or corner overlaps."""
import itertools

import numpy as np
import pytest

from taichiflow.mesh import (Block, DeviceTables, Forest, PoolFull, assign_slots, device_tables, morton_key,
                             plan_regrid, updated_tables)
from taichiflow.mesh.block import children, direction_index, neighbour_offsets, parent, touching_octants
from taichiflow.mesh.morton import morton_sorted

# (roots, periodic, max_level): 1D, 2D and 3D, periodic and not, root counts not powers of two.
CONFIGS = [
    ((3,), (True,), 4),
    ((2,), (False,), 4),
    ((2, 3), (True, False), 3),
    ((1, 1), (True, True), 3),
    ((3, 2), (False, False), 3),
    ((2, 1, 1), (False, True, True), 2),
    ((1, 1, 1), (True, True, True), 3),
]
CONFIG_IDS = ["%dD-%s-%s" % (len(r), "x".join(map(str, r)), "".join("p" if q else "n" for q in p))
              for r, p, _ in CONFIGS]


# ---- brute force: boxes in finest-level block units ----

def boxes(forest, blocks=None):
    """[lo, hi) of each block in finest-level block units, and its level."""
    blocks = forest.leaves if blocks is None else blocks
    size = np.array([1 << (forest.max_level - b.level) for b in blocks])
    lo = np.array([b.coords for b in blocks]).reshape(len(blocks), forest.dim) * size[:, None]
    return lo, lo + size[:, None], np.array([b.level for b in blocks])


def extent(forest):
    return np.array(forest.roots) << forest.max_level


def image_shifts(forest):
    """The shifts of the periodic images that can touch a box inside the domain."""
    per_axis = [(-e, 0, e) if p else (0,) for e, p in zip(extent(forest), forest.periodic)]
    return [np.array(shift) for shift in itertools.product(*per_axis)]


def touching(lo, hi, shift):
    """[i, j]: closed box i meets box j shifted by `shift` (faces, edges or corners)."""
    return np.all((lo[:, None, :] <= hi[None, :, :] + shift) & (lo[None, :, :] + shift <= hi[:, None, :]), axis=2)


def brute_force_balanced(forest):
    """No two closed boxes that meet (faces, edges, corners, periodic images) differ by over a level."""
    lo, hi, level = boxes(forest)
    too_far = np.abs(level[:, None] - level[None, :]) > 1
    for shift in image_shifts(forest):
        if np.any(touching(lo, hi, shift) & too_far):
            return False
    return True


def assert_tiles_the_domain(forest):
    lo, hi, _ = boxes(forest)
    assert np.prod(hi - lo, axis=1).sum() == np.prod(extent(forest))
    assert np.all(lo >= 0) and np.all(hi <= extent(forest))
    overlap = np.all((lo[:, None, :] < hi[None, :, :]) & (lo[None, :, :] < hi[:, None, :]), axis=2)
    assert np.array_equal(overlap, np.eye(len(lo), dtype=bool))


def split_without_balance(forest, blocks):
    leaves = (set(forest.leaves) - set(blocks)) | {c for b in blocks for c in children(b)}
    return Forest(forest.roots, forest.block_cells, forest.max_level, forest.periodic, leaves)


def random_flags(forest, rng):
    """A quarter of the leaves flagged to refine; whole families (of which all, some or none are
    leaves) flagged to derefine, so that merges happen, and some single leaves too."""
    refine = {b for b in forest.leaves if rng.random() < 0.25}
    families = sorted({parent(b) for b in forest.leaves if b.level > 0})
    derefine = {c for f in families if rng.random() < 0.6 for c in children(f) if forest.is_leaf(c)}
    derefine |= {b for b in forest.leaves if rng.random() < 0.2}
    return refine, derefine


def random_balanced_forests(roots, periodic, max_level, seed, rounds=4):
    rng = np.random.default_rng(seed)
    forest = Forest.uniform(roots, 4, max_level, periodic)
    for _ in range(rounds):
        forest = forest.refined(*random_flags(forest, rng))
        yield forest


# ---- Morton order ----

def test_morton_keys_interleave_bits_axis_0_lowest():
    assert morton_key((13,), 4) == 13
    assert [morton_key(c, 1) for c in [(0, 0), (1, 0), (0, 1), (1, 1)]] == [0, 1, 2, 3]
    assert morton_key((2, 0), 2) == 4 and morton_key((0, 2), 2) == 8
    assert morton_key((3, 5), 3) == 0b100111  # x = 011, y = 101 -> y2 x2 y1 x1 y0 x0 = 1 0 0 1 1 1
    assert morton_key((0, 0, 1), 1) == 4 and morton_key((1, 1, 1), 1) == 7
    assert morton_key((5, 0, 0), 3) == 0b1000001 and morton_key((0, 6, 1), 3) == 0b010010100
    with pytest.raises(ValueError):
        morton_key((4,), 2)
    with pytest.raises(ValueError):
        morton_key((-1, 0), 3)


def test_uniform_leaves_sort_into_z_order():
    forest = Forest.uniform((1, 1), 4, 2, (False, False), level=2)
    z = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1),
         (0, 2), (1, 2), (0, 3), (1, 3), (2, 2), (3, 2), (2, 3), (3, 3)]
    assert forest.leaves == tuple(Block(2, c) for c in z)
    # Three roots by one, one level: x runs to 5, so x = 4, 5 come after the whole 4 x 2 Z.
    forest = Forest.uniform((3, 1), 4, 1, (True, False), level=1)
    z = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1), (4, 0), (5, 0), (4, 1), (5, 1)]
    assert forest.leaves == tuple(Block(1, c) for c in z)


def test_mixed_levels_sort_by_their_origin_at_the_finest_level():
    forest = split_without_balance(Forest.uniform((2, 1), 4, 1, (False, False)), [Block(0, (0, 0))])
    assert forest.leaves == (Block(1, (0, 0)), Block(1, (1, 0)), Block(1, (0, 1)), Block(1, (1, 1)), Block(0, (1, 0)))
    assert morton_sorted([Block(1, (0, 0)), Block(0, (0, 0))], 1) == [Block(0, (0, 0)), Block(1, (0, 0))]


# ---- forest basics ----

def test_uniform_forest_counts_and_covering_leaf():
    forest = Forest.uniform((2, 1, 1), 4, 2, (False, True, False), level=1)
    assert (forest.dim, forest.roots, forest.block_cells, forest.max_level) == (3, (2, 1, 1), 4, 2)
    assert forest.periodic == (False, True, False)
    assert forest.leaf_count_per_level() == (0, 16, 0) and forest.cells_per_level() == (0, 16 * 64, 0)
    assert forest.covering_leaf(2, (3, 1, 2)) == Block(1, (1, 0, 1))
    assert forest.covering_leaf(1, (3, -1, 0)) == Block(1, (3, 1, 0))  # wrapped on the periodic y axis
    assert forest.covering_leaf(2, (6, -7, 1)) == Block(1, (3, 0, 0))  # -7 is 1 mod 4: y = 0 at level 1
    assert forest.covering_leaf(1, (4, 0, 0)) is None  # beyond the non-periodic x edge
    assert forest.covering_leaf(0, (1, 0, 0)) is None  # refined further
    assert forest.is_leaf(Block(1, (2, 1, 0))) and not forest.is_leaf(Block(0, (1, 0, 0)))


def test_forests_that_do_not_tile_the_domain_are_refused():
    whole = set(Forest.uniform((2,), 4, 2, (False,), level=1).leaves)
    with pytest.raises(ValueError, match="uncovered"):
        Forest((2,), 4, 2, (False,), whole - {Block(1, (3,))})
    with pytest.raises(ValueError, match="overlap"):
        Forest((2,), 4, 2, (False,), whole | {Block(0, (0,))})
    with pytest.raises(ValueError, match="outside"):
        Forest((2,), 4, 2, (True,), (whole - {Block(1, (3,))}) | {Block(1, (4,))})
    with pytest.raises(ValueError):
        Forest((2,), 6, 0, (False,), whole)  # finer than max_level
    with pytest.raises(ValueError):
        Forest((2,), 5, 2, (False,), whole)  # odd block_cells


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_is_balanced_agrees_with_brute_force_on_unbalanced_random_forests(roots, periodic, max_level):
    rng = np.random.default_rng(7)
    max_level += 1  # deep enough for a level-0 root of the single-root 3D forest to touch level 2
    seen = set()
    for _ in range(10):
        forest = Forest.uniform(roots, 4, max_level, periodic)
        fraction = rng.uniform(0.05, 0.6)
        for _ in range(rng.integers(1, max_level + 1)):
            splittable = [b for b in forest.leaves if b.level < max_level]
            picked = rng.choice(len(splittable), size=max(1, int(fraction * len(splittable))), replace=False)
            forest = split_without_balance(forest, [splittable[i] for i in picked])
        assert_tiles_the_domain(forest)
        assert forest.is_balanced() == brute_force_balanced(forest)
        seen.add(forest.is_balanced())
    assert seen == {True, False}


# ---- regrids ----

def assert_regrid_as_flagged(old, new, refine, derefine):
    """Flagged splits done; every other split forced by balance; merges only of flagged families,
    and every family left unmerged one whose merge would break the balance. Returns how many
    splits the balance forced and how many families merged."""
    merges = 0
    for leaf in new.leaves:
        came_from_split = leaf.level > 0 and old.is_leaf(parent(leaf))
        came_from_merge = not old.is_leaf(leaf) and not came_from_split
        assert old.is_leaf(leaf) or came_from_split or all(old.is_leaf(c) for c in children(leaf))
        if came_from_merge:
            assert all(c in derefine and c not in refine for c in children(leaf))
            merges += 1
    for block in refine:
        assert not new.is_leaf(block) if block.level < old.max_level else new.is_leaf(block)
    forced = {parent(leaf) for leaf in new.leaves if leaf.level > 0 and old.is_leaf(parent(leaf))} - set(refine)
    for block in forced:
        undone = (set(new.leaves) - set(children(block))) | {block}
        assert not brute_force_balanced(Forest(new.roots, 4, new.max_level, new.periodic, undone))
    families = {parent(b) for b in derefine - refine if b.level > 0}
    for family in families:
        if all(new.is_leaf(c) and c in derefine and c not in refine for c in children(family)):
            merged = (set(new.leaves) - set(children(family))) | {family}
            assert not brute_force_balanced(Forest(new.roots, 4, new.max_level, new.periodic, merged))
    return len(forced), merges


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_random_regrids_stay_balanced_and_do_what_was_flagged(roots, periodic, max_level):
    rng = np.random.default_rng(11)
    forest = Forest.uniform(roots, 4, max_level, periodic)
    forced_and_merged = np.zeros(2, int)
    for _ in range(6):
        refine, derefine = random_flags(forest, rng)
        new = forest.refined(refine, derefine)
        assert new.is_balanced() and brute_force_balanced(new)
        assert_tiles_the_domain(new)
        forced_and_merged += assert_regrid_as_flagged(forest, new, refine, derefine)
        forest = new
    assert max(leaf.level for leaf in forest.leaves) >= 2 and forced_and_merged.sum() > 0


def corner_chain(roots, periodic, max_level):
    """The root at the origin refined to max_level only towards its corner, every other root at level 0."""
    forest = Forest.uniform(roots, 4, max_level, periodic)
    for level in range(max_level):
        forest = split_without_balance(forest, [Block(level, (0,) * len(roots))])
    return forest


def least_balanced_refinement(forest):
    """Brute force: split the coarser of any two touching leaves more than a level apart until none are."""
    leaves = set(forest.leaves)
    while True:
        current = Forest(forest.roots, 4, forest.max_level, forest.periodic, leaves)
        lo, hi, level = boxes(current)
        for shift in image_shifts(current):
            pairs = np.argwhere(touching(lo, hi, shift) & (level[:, None] > level[None, :] + 1))
            if len(pairs):
                coarse = current.leaves[pairs[0][1]]
                leaves = (leaves - {coarse}) | set(children(coarse))
                break
        else:
            return current


def test_sharp_refinement_in_a_periodic_1d_corner_grades_across_the_wrap():
    """Four regrids each splitting the leaf at x = 0 (four roots, periodic): to the right 4, 4, 3, 2, 1
    and to the left, across the wrap, 3, 3, 2, 1 (x in [-1/8, 0), [-1/4, -1/8), [-1/2, -1/4), [-1, -1/2)),
    two roots left at level 0; the same as balancing the unbalanced chain in one regrid."""
    forest = Forest.uniform((4,), 4, 4, (True,))
    for _ in range(4):
        forest = forest.refined({forest.covering_leaf(4, (0,))})
    expected = {Block(4, (0,)), Block(4, (1,)), Block(3, (1,)), Block(2, (1,)), Block(1, (1,)), Block(0, (1,)),
                Block(0, (2,)), Block(1, (6,)), Block(2, (14,)), Block(3, (30,)), Block(3, (31,))}
    assert set(forest.leaves) == expected and forest.leaf_count_per_level() == (2, 2, 2, 3, 2)
    chain = corner_chain((4,), (True,), 4)
    assert not chain.is_balanced() and not brute_force_balanced(chain)
    assert chain.refined() == forest


@pytest.mark.parametrize("roots, periodic", [((2, 2), (True, True)), ((2, 3), (False, True)),
                                             ((1, 1, 1), (True, True, True))])
def test_sharp_refinement_gives_the_least_balanced_forest(roots, periodic):
    max_level = 4 if len(roots) == 2 else 3
    chain = corner_chain(roots, periodic, max_level)
    graded = least_balanced_refinement(chain)
    assert chain.refined() == graded
    forest = Forest.uniform(roots, 4, max_level, periodic)
    for _ in range(max_level):
        forest = forest.refined({forest.covering_leaf(max_level, (0,) * len(roots))})
    assert forest == graded and forest.is_leaf(Block(max_level, (0,) * len(roots)))
    # Derefining everything takes away the finest level per regrid (a leaf merges once per regrid).
    for finest in range(max_level - 1, -1, -1):
        forest = forest.refined(derefine=set(forest.leaves))
        assert max(leaf.level for leaf in forest.leaves) == finest and brute_force_balanced(forest)
    assert forest == Forest.uniform(roots, 4, max_level, periodic)


def test_a_merge_that_would_break_balance_is_refused():
    """1D: [0, 1/2) level 1, [1/2, 3/4) and [3/4, 1) level 2, [1, 3/2) and [3/2, 2) level 1."""
    leaves = [Block(1, (0,)), Block(2, (2,)), Block(2, (3,)), Block(1, (2,)), Block(1, (3,))]
    forest = Forest((2,), 4, 2, (False,), leaves)
    assert forest.refined(derefine={Block(1, (2,)), Block(1, (3,))}) == forest  # root 1 would touch level 2
    both = forest.refined(derefine={Block(1, (2,)), Block(1, (3,)), Block(2, (2,)), Block(2, (3,))})
    assert set(both.leaves) == {Block(1, (0,)), Block(1, (1,)), Block(0, (1,))}
    # A leaf flagged both ways is split, and its family is not merged.
    split = forest.refined(refine={Block(1, (2,))}, derefine={Block(1, (2,)), Block(1, (3,))})
    assert set(split.leaves) == set(leaves) - {Block(1, (2,))} | {Block(2, (4,)), Block(2, (5,))}
    with pytest.raises(ValueError, match="leaves"):
        forest.refined(refine={Block(0, (0,))})
    with pytest.raises(ValueError, match="leaves"):
        forest.refined(derefine={Block(2, (0,))})
    at_max = forest.refined(refine={Block(2, (2,))})
    assert at_max == forest  # already at max_level


# ---- neighbours ----

def brute_force_neighbour(forest, leaf, offset):
    """The kind and leaves across `offset`, from the leaves overlapping a one-unit-thick layer just outside."""
    (blo,), (bhi,), _ = boxes(forest, [leaf])
    offset = np.array(offset)
    size = bhi - blo
    rlo = np.where(offset < 0, blo - 1, np.where(offset > 0, bhi, blo))
    rhi = np.where(offset == 0, bhi, rlo + 1)
    outside = (rlo < 0) | (rhi > extent(forest))
    if np.any(outside & ~np.array(forest.periodic)):
        return "boundary", set(), None
    shift = np.where(outside, -np.sign(offset) * extent(forest), 0)
    rlo, rhi = rlo + shift, rhi + shift
    lo, hi, level = boxes(forest)
    hits = np.flatnonzero(np.all((lo < rhi) & (rlo < hi), axis=1))
    found = {forest.leaves[i] for i in hits}
    levels = set(level[hits])
    kind = "same" if levels == {leaf.level} else "coarser" if max(levels) < leaf.level else "finer"
    assert kind != "finer" or levels == {leaf.level + 1}
    return kind, found, blo + offset * size + shift  # the low corner of the same-level position


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_neighbours_agree_with_brute_force(roots, periodic, max_level):
    kinds = set()
    for forest in random_balanced_forests(roots, periodic, max_level, seed=3, rounds=3):
        leaf_boxes = {tuple(lo) + tuple(hi) for lo, hi in zip(*boxes(forest)[:2])}
        for leaf in forest.leaves:
            for offset in neighbour_offsets(forest.dim):
                if not any(offset):
                    continue
                found = forest.neighbour(leaf, offset)
                kind, touching, corner = brute_force_neighbour(forest, leaf, offset)
                kinds.add(kind)
                assert found.kind == kind
                if kind in ("same", "coarser"):
                    assert set(found.blocks) == touching and len(found.blocks) == 1
                elif kind == "boundary":
                    assert found.blocks == ()
                else:
                    assert len(found.blocks) == 2 ** forest.dim
                    assert touching <= set(found.blocks)
                    half = (1 << (forest.max_level - leaf.level)) // 2
                    for k, child in enumerate(found.blocks):
                        octant_lo = corner + half * np.array([(k >> d) & 1 for d in range(forest.dim)])
                        if child is None:  # a far child refined further: no leaf has its box
                            assert tuple(octant_lo) + tuple(octant_lo + half) not in leaf_boxes
                        else:
                            (lo,), (hi,), _ = boxes(forest, [child])
                            assert np.array_equal(lo, octant_lo) and np.array_equal(hi, lo + half)
    assert {"same", "coarser", "finer"} <= kinds
    assert ("boundary" in kinds) == (not all(periodic))


def test_a_far_child_refined_further_is_none_and_a_near_one_must_be_a_leaf():
    """1D: [0, 1/4) and [1/4, 1/2) level 2, [1/2, 1) level 1, root 1 level 0: balanced, though the
    far child [0, 1/2) of root 1's left neighbour position is refined."""
    forest = Forest((2,), 4, 2, (False,), [Block(2, (0,)), Block(2, (1,)), Block(1, (1,)), Block(0, (1,))])
    assert forest.is_balanced()
    assert forest.neighbour(Block(0, (1,)), (-1,)) == ("finer", (None, Block(1, (1,))))
    assert forest.neighbour(Block(0, (1,)), (1,)) == ("boundary", ())
    assert forest.neighbour(Block(1, (1,)), (-1,)) == ("finer", (Block(2, (0,)), Block(2, (1,))))
    assert forest.neighbour(Block(2, (1,)), (1,)) == ("coarser", (Block(1, (1,)),))
    unbalanced = Forest((2,), 4, 2, (False,), [Block(1, (0,)), Block(2, (2,)), Block(2, (3,)), Block(0, (1,))])
    with pytest.raises(ValueError, match="balanced"):
        unbalanced.neighbour(Block(0, (1,)), (-1,))
    with pytest.raises(ValueError):
        forest.neighbour(Block(0, (1,)), (0,))
    with pytest.raises(ValueError):
        forest.neighbour(Block(0, (0,)), (1,))  # not a leaf


# ---- slots and device tables ----

def test_assign_slots_and_the_first_regrid_of_four_roots():
    forest = Forest.uniform((2, 2), 4, 2, (False, False))
    slots = assign_slots(forest, 16)
    assert slots == {Block(0, (0, 0)): 0, Block(0, (1, 0)): 1, Block(0, (0, 1)): 2, Block(0, (1, 1)): 3}
    new = forest.refined({Block(0, (0, 0))})
    plan = plan_regrid(forest, slots, new, 8)
    assert plan.kept == [(1, 1), (2, 2), (3, 3)]
    assert plan.prolonged == [(0, 4, 0), (0, 5, 1), (0, 6, 2), (0, 7, 3)]  # slot 0 still holds the parent
    assert plan.restricted == []
    back = plan_regrid(new, plan.slots, forest, 9)
    assert back.restricted == [((4, 5, 6, 7), 0)] and back.slots[Block(0, (0, 0))] == 0
    with pytest.raises(PoolFull, match="8.*7") as full:
        plan_regrid(forest, slots, new, 7)
    assert (full.value.needed, full.value.capacity) == (8, 7)
    with pytest.raises(PoolFull, match="4.*3"):
        assign_slots(forest, 3)


def assert_is_octant(forest, child, block, octant):
    """`child`'s box is the octant `octant` (bit d: upper half on axis d) of `block`'s box."""
    (lo,), (hi,), _ = boxes(forest, [block])
    (child_lo,), (child_hi,), _ = boxes(forest, [child])
    half = (hi - lo) // 2
    assert np.array_equal(child_lo, lo + half * np.array([(octant >> d) & 1 for d in range(forest.dim)]))
    assert np.array_equal(child_hi, child_lo + half)


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_regrid_plans_move_the_data_of_every_leaf(roots, periodic, max_level):
    """A density per slot, copied by the plan in place (prolonged: the parent's value, restricted:
    the children's mean), keeps sum(density * volume) and each kept or split leaf's value."""
    rng = np.random.default_rng(5)
    capacity = 3000
    forest = Forest.uniform(roots, 4, max_level, periodic)
    slots = assign_slots(forest, capacity)
    pool = np.full(capacity, np.nan)
    pool[list(slots.values())] = rng.random(len(slots))
    for _ in range(5):
        new = forest.refined(*random_flags(forest, rng))
        plan = plan_regrid(forest, slots, new, capacity)
        occupied = set(slots.values())
        for leaf, slot in plan.slots.items():
            assert (slot == slots[leaf]) if forest.is_leaf(leaf) else (slot not in occupied)
        assert len(set(plan.slots.values())) == len(new.leaves)
        volume = {leaf: 2.0 ** (-forest.dim * leaf.level) for leaf in set(forest.leaves) | set(new.leaves)}
        mass = sum(pool[slots[leaf]] * volume[leaf] for leaf in forest.leaves)
        old_value = {leaf: pool[slot] for leaf, slot in slots.items()}
        for old_slot, new_slot in plan.kept:
            pool[new_slot] = pool[old_slot]
        for parent_slot, child_slot, _ in plan.prolonged:
            pool[child_slot] = pool[parent_slot]
        for child_slots, parent_slot in plan.restricted:
            pool[parent_slot] = np.mean(pool[list(child_slots)])
        for leaf in new.leaves:
            if leaf.level > 0 and forest.is_leaf(parent(leaf)):
                assert pool[plan.slots[leaf]] == old_value[parent(leaf)]
            elif forest.is_leaf(leaf):
                assert pool[plan.slots[leaf]] == old_value[leaf]
        assert sum(pool[plan.slots[leaf]] * volume[leaf] for leaf in new.leaves) == pytest.approx(mass, rel=1e-12)
        assert len(plan.kept) + len(plan.prolonged) + len(plan.restricted) == len(new.leaves)
        old_at = {slot: leaf for leaf, slot in slots.items()}
        new_at = {slot: leaf for leaf, slot in plan.slots.items()}
        for parent_slot, child_slot, octant in plan.prolonged:
            assert_is_octant(forest, new_at[child_slot], old_at[parent_slot], octant)
        for child_slots, parent_slot in plan.restricted:
            for octant, child_slot in enumerate(child_slots):
                assert_is_octant(forest, old_at[child_slot], new_at[parent_slot], octant)
        pool[sorted(occupied - set(plan.slots.values()))] = np.nan  # the pool frees what the new forest dropped
        forest, slots = new, plan.slots


def test_plan_regrid_refuses_forests_more_than_one_level_apart():
    forest = Forest.uniform((1,), 4, 2, (False,))
    deep = Forest.uniform((1,), 4, 2, (False,), level=2)
    with pytest.raises(ValueError, match="neither"):
        plan_regrid(forest, assign_slots(forest, 8), deep, 8)


def test_device_tables_of_a_small_1d_forest_by_hand():
    forest = Forest((2,), 4, 1, (False,), [Block(0, (0,)), Block(1, (2,)), Block(1, (3,))])
    tables = device_tables(forest, assign_slots(forest, 5), 5)
    assert isinstance(tables, DeviceTables)
    assert tables.level.tolist() == [0, 1, 1, -1, -1] and tables.origin[:3, 0].tolist() == [0, 8, 12]
    # directions: 0 is -x, 1 the centre, 2 is +x
    assert tables.neighbour[0].tolist() == [[-1, -1], [0, 0], [1, 2]]
    assert tables.neighbour[1].tolist() == [[0, 0], [1, 1], [2, 2]]
    assert tables.neighbour[2].tolist() == [[1, 1], [2, 2], [-1, -1]]
    assert tables.relation[:3].tolist() == [[2, 0, 1], [-1, 0, 0], [0, 0, 2]]
    assert np.all(tables.neighbour[3:] == -1) and tables.active.tolist() == [0, 1, 2]
    assert tables.neighbour.dtype == np.int32 and tables.relation.dtype == np.int8


def test_direction_index_counts_axis_0_fastest():
    assert direction_index((1, 0)) == 5 and direction_index((0, 0)) == 4 and direction_index((-1, 1)) == 6
    assert direction_index((0, 0, 0)) == 13 and direction_index((1, 1, 1)) == 26
    for dim in (1, 2, 3):
        assert [direction_index(o) for o in neighbour_offsets(dim)] == list(range(3 ** dim))


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_device_tables_of_faces_only_are_the_full_tables_at_the_faces(roots, periodic, max_level):
    rng = np.random.default_rng(4)
    forest = Forest.uniform(roots, 4, max_level, periodic)
    forest = forest.refined(*random_flags(forest, rng))
    slots = assign_slots(forest, 3000)
    full, faces = device_tables(forest, slots, 3000), device_tables(forest, slots, 3000, faces_only=True)
    dim = forest.dim
    for offset in itertools.product((-1, 0, 1), repeat=dim):
        row = direction_index(offset)
        if sum(map(abs, offset)) <= 1:  # (of finer neighbours, the children touching the face)
            near = [k for k in range(2 ** dim) if k in touching_octants(offset)] if any(offset) else range(2 ** dim)
            assert np.array_equal(faces.neighbour[:, row][:, near], full.neighbour[:, row][:, near])
            far = [k for k in range(2 ** dim) if k not in near]
            finer = full.relation[:, row] == 1
            assert np.all(faces.neighbour[finer, row][:, far] == -1)
            assert np.array_equal(faces.relation[:, row], full.relation[:, row])
        else:
            assert np.all(faces.neighbour[:, row] == -1) and np.all(faces.relation[:, row] == 2)


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_updated_tables_are_the_tables_of_the_new_forest(roots, periodic, max_level):
    rng = np.random.default_rng(11)
    capacity = 3000
    forest = Forest.uniform(roots, 4, max_level, periodic)
    slots = assign_slots(forest, capacity)
    tables = device_tables(forest, slots, capacity, faces_only=True)
    rows_changed = 0
    for _ in range(4):
        new = forest.refined(*random_flags(forest, rng))
        slots = plan_regrid(forest, slots, new, capacity).slots
        before, (tables, forest) = tables, (updated_tables(tables, forest, new, slots), new)
        whole = device_tables(forest, slots, capacity, faces_only=True)
        for name in ("level", "origin", "neighbour", "relation", "active"):
            assert np.array_equal(getattr(tables, name), getattr(whole, name)), name
        # every row that differs from the tables before is listed as changed (a device copy
        # updated with those rows only equals the new tables)
        differs = np.zeros(capacity, bool)
        for name in ("level", "origin", "neighbour", "relation"):
            old, now = getattr(before, name), getattr(tables, name)
            differs |= (old != now).reshape(capacity, -1).any(axis=1)
        assert np.isin(np.flatnonzero(differs), tables.changed).all()
        rows_changed += int(differs.sum())
    assert rows_changed > 0


@pytest.mark.parametrize("roots, periodic, max_level", CONFIGS, ids=CONFIG_IDS)
def test_device_table_rows_agree_with_the_neighbour_queries(roots, periodic, max_level):
    rng = np.random.default_rng(9)
    capacity = 3000
    forest = Forest.uniform(roots, 4, max_level, periodic)
    slots = assign_slots(forest, capacity)
    for _ in range(3):  # slots scattered by regrids, not 0..n-1
        new = forest.refined(*random_flags(forest, rng))
        forest, slots = new, plan_regrid(forest, slots, new, capacity).slots
    tables = device_tables(forest, slots, capacity)
    dim, fan = forest.dim, 2 ** forest.dim
    assert tables.neighbour.shape == (capacity, 3 ** dim, fan) and tables.origin.shape == (capacity, dim)
    assert tables.active.tolist() == [slots[leaf] for leaf in forest.leaves]
    unused = np.setdiff1d(np.arange(capacity), tables.active)
    assert np.all(tables.level[unused] == -1) and np.all(tables.neighbour[unused] == -1)
    codes = {"same": 0, "coarser": -1, "finer": 1, "boundary": 2}
    for leaf in forest.leaves:
        slot = slots[leaf]
        assert tables.level[slot] == leaf.level and tables.origin[slot].tolist() == [4 * c for c in leaf.coords]
        for offset in itertools.product((-1, 0, 1), repeat=dim):
            row = direction_index(offset)
            if not any(offset):
                assert tables.neighbour[slot, row].tolist() == [slot] * fan and tables.relation[slot, row] == 0
                continue
            found = forest.neighbour(leaf, offset)
            assert tables.relation[slot, row] == codes[found.kind]
            if found.kind == "finer":
                expected = [-1 if child is None else slots[child] for child in found.blocks]
            else:
                expected = [slots[found.blocks[0]] if found.blocks else -1] * fan
            assert tables.neighbour[slot, row].tolist() == expected
