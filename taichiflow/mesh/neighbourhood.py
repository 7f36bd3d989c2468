"""Queries of a set of leaves around one block: which leaf covers a position and what lies across
each face, edge and corner. Plain functions on a set of Blocks, for the forest's one-block
queries (around.py answers the same questions for many blocks at once, on arrays)."""
from __future__ import annotations

from typing import AbstractSet, NamedTuple, Sequence

from .block import Block, Domain, children, shifted, touching_octants


class Neighbour(NamedTuple):
    """What lies at one offset from a leaf. kind: "same" (blocks = (the leaf,)), "coarser"
    (blocks = (the coarser leaf covering that position,)), "finer" (blocks = the 2**dim children
    of that position by octant index: a child that does not touch the block may itself be refined
    further, which 2:1 balance allows, and is then None) or "boundary" (blocks = ())."""

    kind: str
    blocks: tuple[Block | None, ...]


def covering_leaf(leaves: AbstractSet[Block], level: int, coords: Sequence[int]) -> Block | None:
    """The leaf equal to or an ancestor of Block(level, coords) (coords inside the domain), or
    None where that position is refined further."""
    coords = tuple(coords)
    for coarser in range(level, -1, -1):
        candidate = Block(coarser, coords)
        if candidate in leaves:
            return candidate
        coords = tuple(c >> 1 for c in coords)
    return None


def neighbour_of(leaves: AbstractSet[Block], domain: Domain, block: Block, offset: tuple[int, ...]) -> Neighbour:
    """The neighbour of leaf `block` at `offset` (in {-1, 0, 1}**dim, not all zero). Raises
    ValueError where the leaves across are not within one level of `block` (not 2:1 balanced)."""
    position = domain.wrap(block.level, shifted(block, offset))
    if position is None:
        return Neighbour("boundary", ())
    cover = covering_leaf(leaves, block.level, position)
    if cover is not None:
        if cover.level == block.level:
            return Neighbour("same", (cover,))
        if cover.level < block.level - 1:
            raise ValueError(f"not 2:1 balanced: leaf {block} touches the leaf {cover} at offset {offset}")
        return Neighbour("coarser", (cover,))
    touching = touching_octants(offset)
    found: list[Block | None] = []
    for octant, child in enumerate(children(Block(block.level, position))):
        if child in leaves:
            found.append(child)
        elif octant in touching:
            raise ValueError(f"not 2:1 balanced: leaf {block} touches leaves inside {child} at offset {offset}")
        else:
            found.append(None)
    return Neighbour("finer", tuple(found))
