"""Geometric refinement regions ([[amr.regions]]): a box, sphere or cylinder whose blocks are
kept at least at a level, whatever the indicators say. A block belongs to a region when its
box of cells touches the shape; only the grid's axes count (a 2D sphere is a disc, a 2D
cylinder along z a disc too)."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

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
        """Whether the shape meets the box [lower, upper] (one entry per grid axis)."""
        return bool(self.touches_boxes(np.asarray([lower], float), np.asarray([upper], float))[0])

    def touches_boxes(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Whether the shape meets each box [lower[k], upper[k]] (arrays (n, dim)). The
        cylinder's test is a slight overestimate: the box's centre within the radius plus the
        box's half diagonal of the axis (refining a block too many costs cells, never accuracy)."""
        dim = lower.shape[1]
        if self.shape == "box":
            return np.all((lower <= np.asarray(self.upper[:dim])) & (upper >= np.asarray(self.lower[:dim])), axis=1)
        centre = np.asarray(self.center[:dim])
        if self.shape == "sphere":
            nearest = np.clip(centre, lower, upper)
            return np.linalg.norm(nearest - centre, axis=1) <= self.radius
        middle, half_diagonal = 0.5 * (lower + upper), 0.5 * np.linalg.norm(upper - lower, axis=1)
        return _distance_to_line(middle, centre, np.asarray(self.axis[:dim], float)) <= self.radius + half_diagonal


def _distance_to_line(points: np.ndarray, origin: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Distance from each point to the line through origin along direction (in the grid's
    axes; a direction with no component in them, a 2D cylinder along z, leaves the distance to
    origin)."""
    offset = points - origin
    norm = np.linalg.norm(direction)
    along = offset @ direction / norm if norm else np.zeros(len(points))
    return np.sqrt(np.maximum(np.sum(offset * offset, axis=1) - along * along, 0.0))


class RegionLevels:
    """The least level the regions ask of each block of a forest's domain."""

    def __init__(self, regions: Sequence[Region], extent, roots):
        self.regions = tuple(regions)
        self.lower = np.array([a for a, _ in extent], float)
        self.root_width = np.array([(b - a) / r for (a, b), r in zip(extent, roots)], float)

    def __bool__(self) -> bool:
        return bool(self.regions)

    def bounds(self, block: Block) -> tuple[list, list]:
        """The box a block covers."""
        lower, upper = self.boxes(np.array([block.level]), np.array([block.coords]))
        return lower[0].tolist(), upper[0].tolist()

    def boxes(self, levels: np.ndarray, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The boxes of blocks given as arrays of levels (n,) and coordinates (n, dim)."""
        width = self.root_width[None, :] * np.ldexp(1.0, -np.asarray(levels))[:, None]
        lower = self.lower[None, :] + np.asarray(coords) * width
        return lower, lower + width

    def level(self, block: Block) -> int:
        """The largest level of the regions the block touches (0 where none does)."""
        return int(self.levels(np.array([block.level]), np.array([block.coords]))[0])

    def levels(self, levels: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """level() of each block given as arrays (all zeros without regions)."""
        out = np.zeros(len(levels), np.int64)
        if self.regions and len(levels):
            lower, upper = self.boxes(levels, coords)
            for region in self.regions:
                out = np.where(region.touches_boxes(lower, upper), np.maximum(out, region.level), out)
        return out
