"""What asks an adaptive run for finer blocks besides Löhner's indicator: geometric regions
([[amr.regions]]) and a model's own indicator (@model.refinement: the two-phase interface)."""
import math

import numpy as np
import pytest

from helpers import case_from_text, precise
from taichiflow.errors import CaseError
from taichiflow.kernels.amr.criteria import DEREFINE, REFINE, Criteria, coded, leaf_flags
from taichiflow.mesh import Block, Region, RegionLevels
from taichiflow.mesh.block import parent
from taichiflow.run.adaptive import AdaptiveRun


def test_region_shapes_touch_the_boxes_they_meet():
    sphere = Region("sphere", 2, center=(0.5, 0.5, 0.0), radius=0.1)
    assert sphere.touches((0.55, 0.55), (0.7, 0.7))        # corner (0.55, 0.55) at 0.0707
    assert not sphere.touches((0.58, 0.58), (0.7, 0.7))    # corner at 0.113
    assert sphere.touches((0.0, 0.45), (0.41, 0.55))       # face at x = 0.41: 0.09 away
    assert not sphere.touches((0.0, 0.45), (0.39, 0.55))
    box = Region("box", 1, lower=(0.2, 0.2, 0.0), upper=(0.4, 0.3, 0.0))
    assert box.touches((0.4, 0.3), (0.5, 0.5)) and not box.touches((0.41, 0.0), (0.5, 0.5))
    line = Region("cylinder", 1, center=(0.0, 0.0, 0.0), radius=0.1, axis=(1.0, 1.0, 0.0))
    assert line.touches((0.9, 0.9, 0.1), (1.0, 1.0, 0.2))  # the box's centre 0.15 from the line, half diagonal 0.087
    assert not line.touches((0.9, 0.9, 0.3), (1.0, 1.0, 0.4))
    disc = Region("cylinder", 1, center=(0.5, 0.5, 0.0), radius=0.1, axis=(0.0, 0.0, 1.0))
    assert disc.touches((0.55, 0.45), (0.65, 0.55)) and not disc.touches((0.7, 0.7), (0.8, 0.8))


def test_region_levels_of_blocks():
    levels = RegionLevels([Region("sphere", 2, center=(0.1, 0.1, 0.0), radius=0.05),
                           Region("box", 1, lower=(0.0, 0.0, 0.0), upper=(0.5, 0.25, 0.0))], ((0.0, 1.0), (0.0, 1.0)),
                          (2, 2))
    assert levels.bounds(Block(1, (1, 2))) == ([0.25, 0.5], [0.5, 0.75])
    assert levels.level(Block(2, (0, 0))) == 2     # [0, 0.125]^2: both
    assert levels.level(Block(2, (3, 0))) == 1     # [0.375, 0.5] x [0, 0.125]: the box only
    assert levels.level(Block(0, (1, 1))) == 0


REGION_CASE = """
[model]
name = "euler"
[grid]
cells = [32, 32]
upper = [1.0, 1.0]
[amr]
block_cells = 8
max_level = 2
regrid_every = 2
[[amr.regions]]
shape = "sphere"
center = [0.5, 0.5]
radius = 0.1
level = 2
[[amr.regions]]
shape = "box"
lower = [0.0, 0.0]
upper = [1.0, 0.1]
level = 1
[time]
end = 1.0
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = { rho = 1.0, vel = [1.0, 0.5, 0.0], p = 1.0 }
"""


def test_regions_hold_their_level_in_a_free_stream(tmp_path, arch):
    """A free stream gives Löhner's indicator nothing: only the regions refine, from the first
    step on, and every regrid keeps them (the free stream kept to round-off across the jumps)."""
    run = AdaptiveRun(precise(case_from_text(tmp_path, REGION_CASE), arch))
    regions = run.solver.region_levels
    first = run.solver.forest.leaves
    for block in first:
        assert block.level >= regions.level(block)
    touching = {b for b in first if regions.level(b) == 2}
    assert touching and all(b.level == 2 for b in touching)
    assert any(b.level == 1 and b.coords[1] == 0 for b in first)        # the box's row of blocks
    assert Block(0, (0, 3)) in first and Block(0, (3, 2)) in first                 # far from both
    run.advance(1e9, max_steps=6)
    assert run.solver.forest.leaves == first
    w = run.uniform()
    assert abs(w[..., 0] - 1.0).max() < 1e-13 and abs(w[..., 1] - 1.0).max() < 1e-13


def test_region_above_max_level_is_refused(tmp_path):
    with pytest.raises(CaseError, match=r"\[amr\] regions\.0\.level: must be at most max_level \(1\), got 2"):
        case_from_text(tmp_path, REGION_CASE.replace("max_level = 2", "max_level = 1"))


BUBBLE = """
[model]
name = "two_phase"
params = { gamma_liquid = 4.4, pc_liquid = 0.6, gamma_gas = 1.4, pc_gas = 0.0 }
[materials]
water = { gamma = 4.4, pc = 0.6 }
air = { gamma = 1.4, pc = 0.0 }
[grid]
cells = [32, 32]
upper = [1.0, 1.0]
[amr]
block_cells = 8
max_level = 1
fields = ["p"]
[scheme]
reconstruction = "plm"
riemann = "hllc"
[time]
end = 1.0
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = { material = "water", rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }
[[initial.regions]]
shape = "sphere"
center = [0.5, 0.5]
radius = 0.2
state = { material = "air", rho = 0.05, p = 1.0 }
"""


def test_the_two_phase_interface_asks_for_the_finest_blocks(tmp_path, arch):
    """Pressure is uniform, so Löhner's indicator of [amr] fields = ["p"] sees nothing: the
    blocks the bubble's interface crosses are refined by the model's own indicator alone."""
    run = AdaptiveRun(precise(case_from_text(tmp_path, BUBBLE), arch))
    width = 1.0 / 4
    for block in run.solver.forest.leaves:
        root = tuple(c >> block.level for c in block.coords)
        corners = [math.dist(((root[0] + i) * width, (root[1] + j) * width), (0.5, 0.5)) for i in (0, 1) for j in (0, 1)]
        centre = math.dist(((root[0] + 0.5) * width, (root[1] + 0.5) * width), (0.5, 0.5))
        crossed = min(corners + [centre]) < 0.2 < max(corners)
        assert block.level == (1 if crossed else 0), (block, root)


CAPPED = """
[model]
name = "euler"
[grid]
cells = [32, 32]
upper = [1.0, 1.0]
[amr]
block_cells = 8
max_level = 2
criteria_max_level = 1
regrid_every = 2
[[amr.regions]]
shape = "box"
lower = [0.0, 0.0]
upper = [0.3, 1.0]
level = 1
[time]
end = 1.0
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = { rho = 1.0, vel = [1.0, 0.5, 0.0], p = 1.0 }
[[initial.regions]]
shape = "sphere"
center = [0.3, 0.5]
radius = 0.15
state = { rho = 4.0 }
"""


def test_criteria_refine_beyond_their_max_level_only_in_regions(tmp_path, arch):
    """A blob's edge asks for level 2 everywhere; it gets it only where it crosses the region,
    and stays at level 1 outside, through regrids as it moves."""
    run = AdaptiveRun(precise(case_from_text(tmp_path, CAPPED), arch))
    regions = run.solver.region_levels
    for _ in range(3):
        leaves = run.solver.forest.leaves
        assert any(b.level == 2 for b in leaves if regions.level(b))
        assert any(b.level == 1 for b in leaves if not regions.level(b))
        assert all(b.level <= 1 or regions.level(parent(b)) for b in leaves)  # (a region's block splits whole)
        run.advance(1e9, max_steps=4)


def test_the_device_flags_the_leaves_as_the_rules_say(tmp_path, arch):
    """The indicator kernel applies the criteria and sends a byte a leaf (kernels/amr/regrid.py):
    the flags of criteria.leaf_flags on its indicators and the regions' levels of each leaf,
    with the gradient criterion and without, in regions and out."""
    run = AdaptiveRun(precise(case_from_text(tmp_path, CAPPED.replace("regrid_every = 2", "regrid_every = 2\n"
                                                                      "gradient_above = 0.05")), arch))
    run.advance(1e9, max_steps=3)
    solver, forest = run.solver, run.solver.forest
    regions = solver.region_levels
    seen = set()
    for criteria in (Criteria.of(run.case["amr"]), Criteria(0.5, 0.3, 0.0, up_to=1)):
        codes = solver._indicator_codes(criteria)
        slots = solver.slots.array
        second, gradient = solver._second.to_numpy()[slots], solver._gradient.to_numpy()[slots]
        expected = leaf_flags(second, gradient, forest.levels, regions.levels(forest.levels, forest.coords),
                              regions.levels(forest.levels - 1, forest.coords >> 1), forest.max_level, criteria)
        assert np.array_equal(codes, coded(*expected))
        seen |= set(codes.tolist())
    assert seen >= {REFINE, DEREFINE}
