"""The refinement criteria ([amr] keys) as split and merge flags over a forest's leaves. The
device applies them (kernels/amr/regrid.py: indicate) and sends one byte a leaf, in leaf order:
REFINE, DEREFINE. It reads per slot the levels the geometric regions ask of the leaf and of its
parent, which the host keeps per slot and computes only for the leaves a regrid adds (at 33,000
leaves the boxes of every leaf cost milliseconds a regrid). `leaf_flags` is the same rules in
numpy (for tests and tools). numpy only."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

REFINE, DEREFINE = 1, 2  # the device's code bits


class Criteria(NamedTuple):
    """When a regrid splits and merges blocks ([amr] keys of the same names)."""
    refine_above: float
    derefine_below: float
    gradient_above: float = 0.0   # 0: the relative gradient is not a criterion
    up_to: int = 99               # the finest level they ask for outside the regions ([amr] criteria_max_level)

    @classmethod
    def of(cls, amr: dict) -> "Criteria":
        return cls(amr["refine_above"], amr["derefine_below"], amr["gradient_above"],
                   amr.get("criteria_max_level", amr["max_level"]))

    def thresholds(self) -> tuple[float, float, float, float]:
        """What a leaf's Löhner indicator E and relative gradient G are compared with: steep
        where E > refine_above or G > gradient_above (never without it), calm where E <
        derefine_below and G < gradient_above / 2 (always, for a finite G, without it)."""
        limit = self.gradient_above or float("inf")
        return (float(self.refine_above), float(self.derefine_below), limit, 0.5 * limit)


def leaf_flags(second: np.ndarray, gradient: np.ndarray, levels: np.ndarray, asked: np.ndarray,
               parent_asked: np.ndarray, max_level: int, criteria: Criteria) -> tuple[np.ndarray, np.ndarray]:
    """(refine, derefine) per leaf from Löhner's indicator `second` and the relative
    `gradient`: split where either is past its refine threshold, merge where both are below
    their derefine ones. Outside the regions the criteria refine up to criteria.up_to (finer
    blocks there merge); the regions' blocks (asked: the level they ask of each leaf,
    parent_asked: of its parent) are kept at least at their level, and may go up to max_level."""
    refine_above, derefine_below, limit, half = criteria.thresholds()
    steep = (second > refine_above) | (gradient > limit)
    calm = (second < derefine_below) & (gradient < half)
    finest_asked = np.where(asked > 0, max_level, criteria.up_to)
    refine = steep & (levels < finest_asked) | (levels < asked)
    derefine = (levels > 0) & (calm | (levels > finest_asked))
    derefine &= parent_asked < levels  # (a family merges only to a level they allow)
    return refine, derefine


def coded(refine: np.ndarray, derefine: np.ndarray) -> np.ndarray:
    """The device's codes of these flags."""
    return (refine * REFINE + derefine * DEREFINE).astype(np.int8)


def decoded(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(refine, derefine) masks of the device's codes."""
    return (codes & REFINE) != 0, (codes & DEREFINE) != 0


class RegionSlots:
    """The levels the regions (a mesh.RegionLevels) ask of the leaf in each slot and of its
    parent, kept per slot: a kept leaf keeps its slot, so a regrid computes them only for the
    leaves it adds."""

    def __init__(self, regions, capacity: int):
        self.regions = regions
        self.asked = np.zeros(capacity, np.int64)
        self.parent_asked = np.zeros(capacity, np.int64)

    def set(self, forest, slots: np.ndarray, leaves: np.ndarray | None = None) -> None:
        """The levels of the leaves at indices `leaves` (all if None) of `forest`, whose slots
        are `slots` (aligned with the forest's leaves)."""
        if not self.regions:
            return
        leaves = np.arange(len(slots)) if leaves is None else leaves
        levels, coords = forest.levels[leaves], forest.coords[leaves]
        self.asked[slots[leaves]] = self.regions.levels(levels, coords)
        self.parent_asked[slots[leaves]] = self.regions.levels(levels - 1, coords >> 1)
