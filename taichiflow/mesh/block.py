"""Index arithmetic of the blocks of a block-structured AMR forest: parents, children, octants,
neighbour directions and periodic wrapping. Nothing here stores blocks: the forest does."""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple, Sequence


class Block(NamedTuple):
    """One block of the forest: `coords` counts the blocks of `level` from the domain's low corner
    (so a block is named without reference to its root, and its children are 2 * coords + o)."""

    level: int
    coords: tuple[int, ...]


def children(block: Block) -> tuple[Block, ...]:
    """The 2**dim children of `block`, indexed by octant index (bit d set: the upper half on axis d)."""
    dim = len(block.coords)
    return tuple(Block(block.level + 1, tuple(2 * c + ((octant >> axis) & 1) for axis, c in enumerate(block.coords)))
                 for octant in range(1 << dim))


def parent(block: Block) -> Block:
    """The block one level coarser that contains `block`."""
    if block.level <= 0:
        raise ValueError(f"{block} is a root block: it has no parent")
    return Block(block.level - 1, tuple(c >> 1 for c in block.coords))


def octant_index(block: Block) -> int:
    """Where `block` sits in its parent: the index of `children(parent(block))` that it is."""
    return sum((c & 1) << axis for axis, c in enumerate(block.coords))


@functools.lru_cache(maxsize=None)
def neighbour_offsets(dim: int) -> tuple[tuple[int, ...], ...]:
    """The 3**dim offsets in {-1, 0, 1}**dim, centre included, indexed by direction index."""
    return tuple(tuple(reversed(offset)) for offset in itertools.product((-1, 0, 1), repeat=dim))


def direction_index(offset: Sequence[int]) -> int:
    """The device tables' index of `offset`: sum((o_d + 1) * 3**d), axis 0 varying fastest."""
    return sum((o + 1) * 3 ** axis for axis, o in enumerate(offset))


@functools.lru_cache(maxsize=None)
def touching_octants(offset: tuple[int, ...]) -> tuple[int, ...]:
    """The octants of the children of the same-level position at `offset` from a block that touch
    the block: on an axis where the offset moves, only the half facing the block does."""
    dim = len(offset)
    return tuple(octant for octant in range(1 << dim)
                 if all(o == 0 or ((octant >> axis) & 1) == (o < 0) for axis, o in enumerate(offset)))


class Domain(NamedTuple):
    """The root blocks per axis and which axes wrap around."""

    roots: tuple[int, ...]
    periodic: tuple[bool, ...]

    def wrap(self, level: int, coords: Sequence[int]) -> tuple[int, ...] | None:
        """`coords` (at `level`) brought into the domain across periodic axes; None where they
        leave it across a non-periodic one (a physical boundary)."""
        wrapped = []
        for c, roots, periodic in zip(coords, self.roots, self.periodic):
            count = roots << level
            if periodic:
                c %= count
            elif not 0 <= c < count:
                return None
            wrapped.append(c)
        return tuple(wrapped)


def shifted(block: Block, offset: Sequence[int]) -> tuple[int, ...]:
    """The coordinates of the same-level position at `offset` from `block` (not wrapped)."""
    return tuple(c + o for c, o in zip(block.coords, offset))
