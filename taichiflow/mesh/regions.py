"""Geometric refinement regions ([[amr.regions]]): a box, sphere or cylinder whose blocks are
kept at least at a level, whatever the indicators say. A block belongs to a region when its
box of cells touches the shape; only the grid's axes count (a 2D sphere is a disc, a 2D
cylinder along z a disc too)."""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from .block import Block


class Region(NamedTuple):
    """One [[amr.regions]] table (its vectors padded to 3 by the case loader)."""
    shape: str                     # "box", "sphere" or "cylinder" (infinite along its axis)
    level: int
    lower: tuple = ()              # box
    upper: tuple = ()
    center: tuple = ()             # sphere, cylinder
    radius: float = 0.0
    axis: tuple = ()               # cylinder

    @classmethod
    def of(cls, table: dict) -> "Region":
        return cls(table["shape"], table["level"], **{key: (tuple(value) if isinstance(value, list) else value)
                                                      for key, value in table.items() if key not in ("shape", "level")})

    def touches(self, lower: Sequence[float], upper: Sequence[float]) -> bool:
        """Whether the shape meets the box [lower, upper] (one entry per grid axis). The
        cylinder's test is a slight overestimate: the box's centre within the radius plus the
        box's half diagonal of the axis (refining a block too many costs cells, never accuracy)."""
        dim = len(lower)
        if self.shape == "box":
            return all(lower[d] <= self.upper[d] and upper[d] >= self.lower[d] for d in range(dim))
        if self.shape == "sphere":
            nearest = [min(max(self.center[d], lower[d]), upper[d]) for d in range(dim)]
            return math.dist(nearest, self.center[:dim]) <= self.radius
        centre = [0.5 * (a + b) for a, b in zip(lower, upper)]
        half_diagonal = 0.5 * math.dist(lower, upper)
        return _distance_to_line(centre, self.center[:dim], self.axis[:dim]) <= self.radius + half_diagonal


def _distance_to_line(point, origin, direction) -> float:
    """Distance from a point to the line through origin along direction (in the grid's axes;
    a direction with no component in them, a 2D cylinder along z, leaves the distance to origin)."""
    offset = [p - o for p, o in zip(point, origin)]
    norm = math.sqrt(sum(c * c for c in direction))
    along = sum(a * b for a, b in zip(offset, direction)) / norm if norm else 0.0
    return math.sqrt(max(sum(c * c for c in offset) - along * along, 0.0))


class RegionLevels:
    """The least level the regions ask of each block of a forest's domain."""

    def __init__(self, regions: Sequence[Region], extent, roots):
        self.regions = tuple(regions)
        self.lower = [a for a, _ in extent]
        self.root_width = [(b - a) / r for (a, b), r in zip(extent, roots)]
        self._known: dict[Block, int] = {}

    def __bool__(self) -> bool:
        return bool(self.regions)

    def bounds(self, block: Block) -> tuple[list, list]:
        """The box a block covers."""
        scale = 2.0 ** -block.level
        lower = [a + c * w * scale for a, c, w in zip(self.lower, block.coords, self.root_width)]
        return lower, [a + w * scale for a, w in zip(lower, self.root_width)]

    def level(self, block: Block) -> int:
        """The largest level of the regions the block touches (0 where none does)."""
        if block not in self._known:
            lower, upper = self.bounds(block)
            self._known[block] = max((r.level for r in self.regions if r.touches(lower, upper)), default=0)
        return self._known[block]
