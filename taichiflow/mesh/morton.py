"""Morton (Z-order) keys: leaves sorted by them make each subtree, and so each device block range
that a kernel walks, a contiguous run, and neighbours mostly close in memory."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

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


# Bit spreading for whole arrays: each step doubles the gaps between groups of bits, so the
# bits of one coordinate land every `dim` bits. (shift, mask) per step, for 2 and 3 axes.
_SPREAD = {
    2: ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
        (2, 0x3333333333333333), (1, 0x5555555555555555)),
    3: ((32, 0x001F00000000FFFF), (16, 0x001F0000FF0000FF), (8, 0x100F00F00F00F00F),
        (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249)),
}
KEY_BITS = 63  # how many bits of a uint64 a key may use (dim * bits per axis at most)


def spread_bits(values: np.ndarray, dim: int) -> np.ndarray:
    """Each value's bits moved to every dim-th bit (bit b to bit b * dim), as uint64: one axis's
    share of a Morton key, to be shifted left by the axis and or-ed with the others'."""
    spread = np.asarray(values).astype(np.uint64)
    for shift, mask in _SPREAD.get(dim, ()):
        spread = (spread | (spread << np.uint64(shift))) & np.uint64(mask)
    return spread


def morton_keys(coords: np.ndarray) -> np.ndarray:
    """morton_key of each row of `coords` (an integer array (n, dim), entries non-negative and
    dim * bit_length below KEY_BITS), as uint64: the forest's sort and search keys."""
    coords = np.asarray(coords)
    dim = coords.shape[1]
    if not 1 <= dim <= 3:
        raise ValueError(f"Morton keys are for 1 to 3 coordinates, not {dim}")
    keys = np.zeros(coords.shape[0], np.uint64)
    for axis in range(dim):
        keys |= spread_bits(coords[:, axis], dim) << np.uint64(axis)
    return keys
