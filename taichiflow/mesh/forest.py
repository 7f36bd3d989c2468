"""The block forest: which blocks are leaves, in Morton order, with the neighbour queries and
the regrid that the device's block pool is planned from. Immutable, so a regrid yields a new
forest and the old one stays valid for reading the old blocks' data. The leaves live in numpy
arrays (tiling.py), where regrids and bulk queries run; the Block tuples and the dict behind the
one-block queries are made only when asked for (leaf_blocks.py)."""
from __future__ import annotations

from typing import AbstractSet, Iterable, Sequence

import numpy as np

from .around import blocks_balanced
from .block import Block, Domain, neighbour_offsets
from .leaf_blocks import LeafBlocks
from .neighbourhood import Neighbour, covering_leaf, neighbour_of
from .refinement import flag_indices, regridded
from .tiling import KeySpace, Tiling
from .validation import tiling_of


class Forest:
    """Leaves of `roots` root-block trees (binary, quad or octrees), each block `block_cells`
    cells per axis, refined by 2 per level up to `max_level`."""

    __slots__ = ("_domain", "_block_cells", "_max_level", "_tiling", "_known_balanced", "_blocks")

    def __init__(self, roots: Sequence[int], block_cells: int, max_level: int, periodic: Sequence[bool],
                 leaves: Iterable[Block], *, known_balanced: bool = False):
        """known_balanced: the leaves are 2:1 balanced (as uniform and refined make them), so a
        regrid need balance only around the leaves it splits. The leaves are checked to tile
        the domain (ValueError otherwise)."""
        domain = _checked_domain(roots, periodic, block_cells, max_level)
        space = KeySpace(domain.roots, domain.periodic, max_level)
        self._set(domain, block_cells, max_level, tiling_of(space, list(leaves)), known_balanced)

    def _set(self, domain: Domain, block_cells: int, max_level: int, tiling: Tiling, known_balanced: bool,
             before: LeafBlocks | None = None) -> None:
        for array in (tiling.levels, tiling.coords, tiling.keys):
            array.flags.writeable = False
        self._domain = domain
        self._block_cells = int(block_cells)
        self._max_level = int(max_level)
        self._tiling = tiling
        self._known_balanced = bool(known_balanced)
        self._blocks = LeafBlocks(tiling, before)

    @classmethod
    def _of_tiling(cls, domain: Domain, block_cells: int, max_level: int, tiling: Tiling,
                   before: LeafBlocks | None = None) -> Forest:
        """A balanced forest of a tiling that is known to be valid (no check); `before`: the
        Blocks of the forest it was regridded from."""
        forest = cls.__new__(cls)
        forest._set(domain, block_cells, max_level, tiling, True, before)
        return forest

    @classmethod
    def uniform(cls, roots: Sequence[int], block_cells: int, max_level: int, periodic: Sequence[bool],
                level: int = 0) -> Forest:
        """Every block of `level` a leaf."""
        domain = _checked_domain(roots, periodic, block_cells, max_level)
        if not 0 <= level <= max_level:
            raise ValueError(f"level {level} is not in [0, max_level {max_level}]")
        space = KeySpace(domain.roots, domain.periodic, max_level)
        grid = np.meshgrid(*[np.arange(r << level, dtype=np.int64) for r in domain.roots], indexing="ij")
        coords = np.stack([axis.ravel() for axis in grid], axis=1)
        levels = np.full(len(coords), level, np.int64)
        return cls._of_tiling(domain, block_cells, max_level, Tiling.sorted_from(space, levels, coords))

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
        return self._blocks.leaves

    @property
    def levels(self) -> np.ndarray:
        """The leaves' levels, int64 (n,), aligned with `leaves` (read-only): for whole-forest
        work without the Block tuples."""
        return self._tiling.levels

    @property
    def coords(self) -> np.ndarray:
        """The leaves' block coordinates at their levels, int64 (n, dim), aligned with `leaves` (read-only)."""
        return self._tiling.coords

    @property
    def keys(self) -> np.ndarray:
        """The Morton keys (uint64 (n,), ascending) of the leaves' first finest-level blocks,
        aligned with `leaves` (read-only): the order of the leaves, and searchsorted over them
        finds the leaf holding a point."""
        return self._tiling.keys

    @property
    def tiling(self) -> Tiling:
        """The leaves as arrays (see tiling.py)."""
        return self._tiling

    def is_leaf(self, block: Block) -> bool:
        return block in self._blocks.key_of

    def leaf_count_per_level(self) -> tuple[int, ...]:
        """Leaves at levels 0..max_level."""
        return tuple(np.bincount(self._tiling.levels, minlength=self._max_level + 1).tolist())

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
        if position is None:
            return None
        return covering_leaf(self._blocks.key_of.keys(), level, position)

    def neighbour(self, block: Block, offset: Sequence[int]) -> Neighbour:
        """What lies across the face, edge or corner of leaf `block` at `offset` (see Neighbour)."""
        offset = tuple(int(o) for o in offset)
        if offset not in neighbour_offsets(self.dim) or not any(offset):
            raise ValueError(f"offset {offset} must be in {{-1, 0, 1}}**{self.dim} and not all zero")
        if not self.is_leaf(block):
            raise ValueError(f"{block} is not a leaf")
        return neighbour_of(self._blocks.key_of.keys(), self._domain, block, offset)

    def refined(self, refine: AbstractSet[Block] = frozenset(), derefine: AbstractSet[Block] = frozenset()) -> Forest:
        """The forest after one regrid: flagged leaves below max_level split, then the splits that
        2:1 balance forces (faces, edges and corners, periodic wraps included), then the families
        all flagged for derefine (none for refine) merged where the merge keeps the balance.
        From a balanced forest each leaf is split or merged at most once; an unbalanced one is
        balanced fully, which may split a leaf more than once."""
        refine, derefine = _as_set(refine), _as_set(derefine)
        key_of = self._blocks.key_of if refine or derefine else {}
        split = flag_indices(self._tiling, key_of, refine, "refine")
        merge = flag_indices(self._tiling, key_of, derefine, "derefine")
        return self._with(regridded(self._tiling, split, merge, self._known_balanced))

    def refined_where(self, refine: np.ndarray, derefine: np.ndarray) -> Forest:
        """refined() with the flags as boolean masks aligned with `leaves` (no Block objects: a
        regrid of tens of thousands of leaves stays cheap)."""
        return self._with(regridded(self._tiling, np.asarray(refine, bool), np.asarray(derefine, bool),
                                    self._known_balanced))

    def _with(self, tiling: Tiling) -> Forest:
        """The forest of a regrid's tiling: this one where the regrid changed nothing."""
        if tiling is self._tiling:
            return self
        return Forest._of_tiling(self._domain, self._block_cells, self._max_level, tiling, self._blocks)

    def is_balanced(self) -> bool:
        """Whether touching leaves (even at a single point, across periodic wraps) differ by at most one level."""
        return bool(np.all(blocks_balanced(self._tiling, self._tiling.levels, self._tiling.coords)))

    def _identity(self) -> tuple:
        return (self._domain, self._block_cells, self._max_level, self._tiling.levels.tobytes(),
                self._tiling.coords.tobytes())

    def __eq__(self, other: object) -> bool:
        return other is self or isinstance(other, Forest) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return (f"Forest(roots={self.roots}, block_cells={self._block_cells}, max_level={self._max_level}, "
                f"periodic={self.periodic}, leaves per level {self.leaf_count_per_level()})")


def _as_set(blocks: Iterable[Block]) -> AbstractSet[Block]:
    return blocks if isinstance(blocks, AbstractSet) else set(blocks)


def _checked_domain(roots: Sequence[int], periodic: Sequence[bool], block_cells: int, max_level: int) -> Domain:
    """The domain of these arguments; ValueError where they make no forest."""
    domain = Domain(tuple(int(r) for r in roots), tuple(bool(p) for p in periodic))
    if not 1 <= len(domain.roots) <= 3 or len(domain.periodic) != len(domain.roots):
        raise ValueError(f"roots {domain.roots} and periodic {domain.periodic} must both have 1 to 3 axes")
    if min(domain.roots) < 1:
        raise ValueError(f"roots {domain.roots} must be at least 1 per axis")
    if block_cells < 4 or block_cells % 2:
        raise ValueError(f"block_cells must be even and at least 4, not {block_cells}")
    if max_level < 0:
        raise ValueError(f"max_level must be at least 0, not {max_level}")
    return domain
