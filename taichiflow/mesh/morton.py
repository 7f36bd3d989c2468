"""Morton (Z-order) keys: leaves sorted by them make each subtree, and so each device block range
that a kernel walks, a contiguous run, and neighbours mostly close in memory."""
from __future__ import annotations

from typing import Iterable, Sequence

from .block import Block


def morton_key(coords: Sequence[int], bits: int) -> int:
    """The bits of `coords` (non-negative, below 2**bits, 1 to 3 of them) interleaved: bit b of
    axis d becomes bit b * dim + d of the key (axis 0 least significant within each group)."""
    dim = len(coords)
    if not 1 <= dim <= 3:
        raise ValueError(f"Morton keys are for 1 to 3 coordinates, not {dim}")
    if any(c < 0 or c >> bits for c in coords):
        raise ValueError(f"coordinates {tuple(coords)} are not all in [0, 2**{bits})")
    key = 0
    for bit in range(bits):
        for axis, c in enumerate(coords):
            key |= ((c >> bit) & 1) << (bit * dim + axis)
    return key


def morton_sort_key(block: Block, max_level: int) -> tuple[int, int]:
    """The Morton key of the block's origin at the finest level, then its level: a parent sorts
    just before its first child, and leaves (never nested) sort by key alone. The key does not
    depend on how many bits are interleaved as long as the coordinates fit, so any root counts do."""
    if block.level > max_level:
        raise ValueError(f"{block} is finer than max_level {max_level}")
    finest = [c << (max_level - block.level) for c in block.coords]
    return morton_key(finest, max(c.bit_length() for c in finest)), block.level


def morton_sorted(blocks: Iterable[Block], max_level: int) -> list[Block]:
    """`blocks` in Morton order at `max_level`."""
    return sorted(blocks, key=lambda block: morton_sort_key(block, max_level))
