"""What a regrid uploads, made on the host (kernels/amr/staging.py) and the criteria's flags
(kernels/amr/criteria.py), without a device: the faces listed incrementally are those of the
definition (every leaf's faces whose neighbour is coarser, or finer or the boundary, in
ascending order), the packed rows hold the tables' rows, and the regions' levels kept per
slot are those of the leaves in the slots."""
import numpy as np
import pytest

from taichiflow.kernels.amr.criteria import Criteria, RegionSlots, coded, decoded, leaf_flags
from taichiflow.kernels.amr.staging import (FACE_KINDS, MAX_AXES, ROW_HEAD, FaceLists, face_counts, face_direction,
                                            row_directions, staged)
from taichiflow.mesh import Forest, Region, RegionLevels, assign_slots, device_tables, plan_regrid, updated_tables

CAPACITY = 3000


def listed_by_definition(tables, dim):
    """Per kind and axis: the faces (slot * 2 + side) of the active slots whose relation
    across is one of the kind's codes, sorted."""
    active = np.asarray(tables.active, np.int64)
    return [[np.sort(np.concatenate([active[np.isin(tables.relation[active, face_direction(dim, axis, side)], codes)]
                                     * 2 + side for side in (0, 1)])) for axis in range(dim)]
            for codes in FACE_KINDS]


def unpacked_rows(update, tables, dim):
    """The check of Staged.rows against the tables and the regions' levels."""
    rows = update.rows
    slots = rows[:, 0].astype(np.int64)
    assert np.array_equal(rows[:, 1], tables.level[slots])
    assert np.array_equal(rows[:, ROW_HEAD:ROW_HEAD + dim], tables.origin[slots])
    directions = row_directions(dim)
    fan = tables.neighbour.shape[2]
    entries = rows[:, ROW_HEAD + dim:].reshape(len(rows), len(directions), 1 + fan)
    for q, direction in enumerate(directions):
        assert np.array_equal(entries[:, q, 0], tables.relation[slots, direction])
        assert np.array_equal(entries[:, q, 1:], tables.neighbour[slots, direction])
    return slots


@pytest.mark.parametrize("roots, periodic, max_level", [((2, 3), (True, False), 3),
                                                        ((2, 1, 2), (False, True, False), 2)])
def test_staged_updates_list_the_faces_and_rows_the_definition_gives(roots, periodic, max_level):
    dim = len(roots)
    rng = np.random.default_rng(len(roots))
    extent = tuple((0.0, float(r)) for r in roots)
    regions = RegionSlots(RegionLevels([Region("sphere", max_level, center=(0.3, 0.4, 0.5), radius=0.3)], extent,
                                       roots), CAPACITY)
    forest = Forest.uniform(roots, 4, max_level, periodic)
    slots = assign_slots(forest, CAPACITY)
    tables = device_tables(forest, slots, CAPACITY, faces_only=True)
    regions.set(forest, slots.array)
    faces = FaceLists(dim, CAPACITY)
    faces.set_slots(tables, np.asarray(tables.active, np.int64))
    for _ in range(8):
        n = len(forest.levels)
        new = forest.refined_where(rng.random(n) < 0.15, rng.random(n) < 0.6)
        if new is forest:
            continue
        plan = plan_regrid(forest, slots, new, CAPACITY)
        tables = updated_tables(tables, forest, new, plan.slots, in_place=True)
        theirs, _ = new.tiling.matches(forest.tiling)
        regions.set(new, plan.slots.array, np.flatnonzero(theirs < 0))
        update = staged(tables, faces, regions)
        forest, slots = new, plan.slots
        written = unpacked_rows(update, tables, dim)
        assert np.array_equal(update.rows[:, 2], regions.asked[written])
        expected = listed_by_definition(tables, dim)
        assert [[list(axis) for axis in kind] for kind in faces.lists()] == [[list(axis) for axis in kind]
                                                                           for kind in expected]
        counts = update.counts
        assert counts[0] == len(update.rows) and counts[1] == len(new.levels)
        assert np.array_equal(update.listed[:counts[1]], tables.active)
        at = counts[1]
        for kind in range(len(FACE_KINDS)):
            for axis, count in enumerate(face_counts(counts, kind)[:dim]):
                assert np.array_equal(update.listed[at:at + count], expected[kind][axis])
                at += count
            assert face_counts(counts, kind)[dim:] == (0,) * (MAX_AXES - dim)
        asked = RegionLevels(regions.regions.regions, extent, roots).levels(new.levels, new.coords)
        assert np.array_equal(regions.asked[slots.array], asked)


def test_the_codes_carry_the_flags_of_the_criteria():
    """Löhner's indicator above refine_above or the gradient above gradient_above refines below
    the criteria's finest level (the regions': max_level); calm leaves merge where the regions
    allow their parent's level."""
    criteria = Criteria(0.8, 0.2, 0.1, up_to=2)
    second = np.array([0.9, 0.1, 0.5, 0.1, 0.9, 0.1, 0.1, 0.1])
    gradient = np.array([0.0, 0.0, 0.0, 0.2, 0.0, 0.01, 0.01, 0.0])
    levels = np.array([1, 2, 2, 1, 2, 3, 1, 2])
    asked = np.array([0, 0, 0, 0, 1, 0, 2, 2])
    parent_asked = np.array([0, 0, 0, 0, 1, 2, 0, 2])
    refine, derefine = leaf_flags(second, gradient, levels, asked, parent_asked, 4, criteria)
    assert refine.tolist() == [True, False, False, True, True, False, True, False]
    assert derefine.tolist() == [False, True, False, False, False, True, True, False]
    assert [a.tolist() for a in decoded(coded(refine, derefine))] == [refine.tolist(), derefine.tolist()]
    no_gradient = criteria._replace(gradient_above=0.0)
    refine, derefine = leaf_flags(second, gradient, levels, asked, parent_asked, 4, no_gradient)
    assert refine[3] == False and derefine[3]  # noqa: E712  (the gradient asks nothing without gradient_above)
