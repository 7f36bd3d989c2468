"""The block forest: which blocks are leaves, in Morton order, with the neighbour queries and
the regrid that the device's block pool is planned from. Immutable, so a regrid yields a new
forest and the old one stays valid for reading the old blocks' data."""
from __future__ import annotations

import itertools
import math
from typing import AbstractSet, Iterable, Sequence

from .block import Block, Domain, neighbour_offsets
from .morton import morton_sorted
from .neighbourhood import Neighbour, balanced_around, covering_leaf, neighbour_of
from .refinement import regridded_leaves


class Forest:
    """Leaves of `roots` root-block trees (binary, quad or octrees), each block `block_cells`
    cells per axis, refined by 2 per level up to `max_level`."""

    __slots__ = ("_domain", "_block_cells", "_max_level", "_leaves", "_leaf_set", "_known_balanced")

    def __init__(self, roots: Sequence[int], block_cells: int, max_level: int, periodic: Sequence[bool],
                 leaves: Iterable[Block], *, known_balanced: bool = False):
        """known_balanced: the leaves are 2:1 balanced (as uniform and refined make them), so a
        regrid need balance only around the leaves it splits."""
        domain = Domain(tuple(int(r) for r in roots), tuple(bool(p) for p in periodic))
        if not 1 <= len(domain.roots) <= 3 or len(domain.periodic) != len(domain.roots):
            raise ValueError(f"roots {domain.roots} and periodic {domain.periodic} must both have 1 to 3 axes")
        if min(domain.roots) < 1:
            raise ValueError(f"roots {domain.roots} must be at least 1 per axis")
        if block_cells < 4 or block_cells % 2:
            raise ValueError(f"block_cells must be even and at least 4, not {block_cells}")
        if max_level < 0:
            raise ValueError(f"max_level must be at least 0, not {max_level}")
        blocks = [Block(int(block.level), tuple(int(c) for c in block.coords)) for block in leaves]
        _check_tiling(domain, max_level, blocks)
        self._domain = domain
        self._block_cells = int(block_cells)
        self._max_level = int(max_level)
        self._leaves = tuple(morton_sorted(blocks, max_level))
        self._leaf_set = frozenset(self._leaves)
        self._known_balanced = bool(known_balanced)

    @classmethod
    def uniform(cls, roots: Sequence[int], block_cells: int, max_level: int, periodic: Sequence[bool],
                level: int = 0) -> Forest:
        """Every block of `level` a leaf."""
        ranges = [range(int(r) << level) for r in roots]
        blocks = (Block(level, coords) for coords in itertools.product(*ranges))
        return cls(roots, block_cells, max_level, periodic, blocks, known_balanced=True)

    @property
    def dim(self) -> int:
        return len(self._domain.roots)

    @property
    def roots(self) -> tuple[int, ...]:
        return self._domain.roots

    @property
    def block_cells(self) -> int:
        return self._block_cells

    @property
    def max_level(self) -> int:
        return self._max_level

    @property
    def periodic(self) -> tuple[bool, ...]:
        return self._domain.periodic

    @property
    def leaves(self) -> tuple[Block, ...]:
        """The leaves in Morton order."""
        return self._leaves

    def is_leaf(self, block: Block) -> bool:
        return block in self._leaf_set

    def leaf_count_per_level(self) -> tuple[int, ...]:
        """Leaves at levels 0..max_level."""
        counts = [0] * (self._max_level + 1)
        for leaf in self._leaves:
            counts[leaf.level] += 1
        return tuple(counts)

    def cells_per_level(self) -> tuple[int, ...]:
        """Cells of the leaves at levels 0..max_level."""
        per_block = self._block_cells ** self.dim
        return tuple(count * per_block for count in self.leaf_count_per_level())

    def covering_leaf(self, level: int, coords: Sequence[int]) -> Block | None:
        """The leaf equal to or an ancestor of Block(level, coords), periodic coords wrapped first;
        None beyond a non-periodic edge or where that region is refined further."""
        if level < 0 or len(coords) != self.dim:
            raise ValueError(f"no block of level {level} has the {len(coords)} coordinates {tuple(coords)}")
        position = self._domain.wrap(level, coords)
        return None if position is None else covering_leaf(self._leaf_set, level, position)

    def neighbour(self, block: Block, offset: Sequence[int]) -> Neighbour:
        """What lies across the face, edge or corner of leaf `block` at `offset` (see Neighbour)."""
        offset = tuple(int(o) for o in offset)
        if offset not in neighbour_offsets(self.dim) or not any(offset):
            raise ValueError(f"offset {offset} must be in {{-1, 0, 1}}**{self.dim} and not all zero")
        if not self.is_leaf(block):
            raise ValueError(f"{block} is not a leaf")
        return neighbour_of(self._leaf_set, self._domain, block, offset)

    def refined(self, refine: AbstractSet[Block] = frozenset(), derefine: AbstractSet[Block] = frozenset()) -> Forest:
        """The forest after one regrid: flagged leaves below max_level split, then the splits that
        2:1 balance forces (faces, edges and corners, periodic wraps included), then the families
        all flagged for derefine (none for refine) merged where the merge keeps the balance.
        From a balanced forest each leaf is split or merged at most once; an unbalanced one is
        balanced fully, which may split a leaf more than once."""
        leaves = regridded_leaves(self._leaf_set, self._domain, self._max_level, set(refine), set(derefine),
                                  self._known_balanced)
        return Forest(self.roots, self._block_cells, self._max_level, self.periodic, leaves, known_balanced=True)

    def is_balanced(self) -> bool:
        """Whether touching leaves (even at a single point, across periodic wraps) differ by at most one level."""
        return all(balanced_around(self._leaf_set, self._domain, leaf) for leaf in self._leaves)

    def _identity(self) -> tuple:
        return self._domain, self._block_cells, self._max_level, self._leaves

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Forest) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return (f"Forest(roots={self.roots}, block_cells={self._block_cells}, max_level={self._max_level}, "
                f"periodic={self.periodic}, leaves per level {self.leaf_count_per_level()})")


def _check_tiling(domain: Domain, max_level: int, blocks: list[Block]) -> None:
    """Raise ValueError unless `blocks` tile the domain exactly. Tree blocks are either nested or
    disjoint, so: all inside the domain, none inside another, and volumes adding up to the domain's."""
    dim = len(domain.roots)
    present = set(blocks)
    if len(present) != len(blocks):
        raise ValueError("the leaves name a block more than once")
    volume = 0
    for block in blocks:
        if len(block.coords) != dim or not 0 <= block.level <= max_level:
            raise ValueError(f"{block} is not a block of a {dim}D forest with max_level {max_level}")
        if domain.wrap(block.level, block.coords) != block.coords:
            raise ValueError(f"{block} lies outside the domain of {domain.roots} root blocks")
        for up in range(1, block.level + 1):
            ancestor = Block(block.level - up, tuple(c >> up for c in block.coords))
            if ancestor in present:
                raise ValueError(f"the leaves {ancestor} and {block} overlap")
        volume += 1 << (dim * (max_level - block.level))
    if volume != math.prod(domain.roots) << (dim * max_level):
        raise ValueError("the leaves leave part of the domain uncovered")
