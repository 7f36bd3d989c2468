"""What lies around many blocks at once, on a Tiling: for each block and offset the same-level
position there, the leaf covering it or, where it is refined further, which of its children are
leaves. The whole-array counterpart of neighbourhood.py, for balance, merges, tables."""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from .block import neighbour_offsets, touching_octants
from .tiling import Tiling


class Around(NamedTuple):
    """One row per (block, offset) whose position lies in the domain (boundary rows dropped).
    cover: the leaf holding the position's first finest-level block; refined: that leaf is finer
    than the position (so no leaf covers it); children: for refined rows the leaf index of each
    child of the position by octant, -1 where that child is refined further (-1 elsewhere too)."""

    block: np.ndarray  # int64: row of the queried block
    offset: np.ndarray  # int64: index into the offsets asked for
    level: np.ndarray  # int64: the queried block's (and the position's) level
    cover: np.ndarray  # int64
    refined: np.ndarray  # bool
    children: np.ndarray | None  # int64 (rows, 2**dim), or None where not asked for


@functools.lru_cache(maxsize=None)
def offsets_array(dim: int, faces_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The offsets other than the centre (only the 2 * dim faces if faces_only), as an array
    (k, dim), and their direction indices (the order of neighbour_offsets)."""
    picked = [(index, offset) for index, offset in enumerate(neighbour_offsets(dim))
              if any(offset) and (not faces_only or sum(map(abs, offset)) == 1)]
    offsets = np.array([offset for _, offset in picked], np.int64).reshape(-1, dim)
    return offsets, np.array([index for index, _ in picked], np.int64)


def touching_table(offsets: np.ndarray) -> np.ndarray:
    """bool (k, 2**dim): which children of the position at each offset touch the block
    (remembered per set of offsets: the regrid's tables ask for the same few each time)."""
    return _touching_table(offsets.shape[1], offsets.tobytes())


@functools.lru_cache(maxsize=64)
def _touching_table(dim: int, packed: bytes) -> np.ndarray:
    offsets = np.frombuffer(packed, np.int64).reshape(-1, dim)
    table = np.zeros((len(offsets), 1 << dim), bool)
    for row, offset in enumerate(offsets.tolist()):
        table[row, list(touching_octants(tuple(offset)))] = True
    table.flags.writeable = False
    return table


def around(tiling: Tiling, levels: np.ndarray, coords: np.ndarray, offsets: np.ndarray,
           with_children: bool = False) -> Around:
    """The positions at `offsets` from each block (levels (m,), coords (m, dim), inside the
    domain, leaves or not) and what covers them; children only if with_children."""
    keys, inside = tiling.space.positions(levels, coords, offsets)
    # (offset by offset, the blocks in key order mostly see their neighbours in key order too,
    # which makes the binary searches below several times faster than in a random order)
    block = np.tile(np.arange(len(levels)), len(offsets))
    offset = np.repeat(np.arange(len(offsets)), len(levels))
    keys = keys.T.ravel()
    if not inside.all():
        inside = inside.T.ravel()
        block, offset, keys = block[inside], offset[inside], keys[inside]
    return _covers(tiling, block, offset, levels[block], keys, with_children)


def around_pairs(tiling: Tiling, levels: np.ndarray, coords: np.ndarray, offsets: np.ndarray,
                 offset_index: np.ndarray, with_children: bool = False) -> Around:
    """around() of one offset per block: block k's position at offsets[offset_index[k]]."""
    keys, inside = tiling.space.positions(levels, coords + offsets[offset_index],
                                          np.zeros((1, tiling.space.dim), np.int64))
    block = np.flatnonzero(inside[:, 0])
    return _covers(tiling, block, offset_index[block], levels[block], keys[block, 0], with_children)


def _covers(tiling: Tiling, block: np.ndarray, offset: np.ndarray, level: np.ndarray, keys: np.ndarray,
            with_children: bool) -> Around:
    """The Around of positions (their keys, inside the domain) of these rows."""
    cover = tiling.containing(keys)
    refined = tiling.levels[cover] > level
    children = _children(tiling, keys[refined], level[refined], cover[refined], len(level), refined) \
        if with_children else None
    return Around(block, offset, level, cover, refined, children)


def _children(tiling: Tiling, keys: np.ndarray, levels: np.ndarray, first: np.ndarray, rows: int,
              refined: np.ndarray) -> np.ndarray:
    """Leaf index by octant of the children of refined positions (their keys, levels, and their
    first leaf `first`), -1 where a child is refined further; placed in rows where `refined`."""
    space = tiling.space
    fan = space.fan
    found = np.full((len(keys), fan), -1, np.int64)
    after = tiling.first_at_or_after(keys + space.spans(levels))
    whole = after - first == fan  # exactly the children are leaves: one run in octant order
    found[whole] = first[whole, None] + np.arange(fan)[None, :]
    rest = np.flatnonzero(~whole)
    if len(rest):
        octants = np.arange(fan, dtype=np.uint64)[None, :]
        child_keys = keys[rest, None] + octants * space.spans(levels[rest] + 1)[:, None]
        at = tiling.first_at_or_after(child_keys.ravel()).reshape(len(rest), fan)
        # (a leaf starts at every child's key of a refined position; a child is a leaf if it is that one)
        found[rest] = np.where(tiling.levels[at] == levels[rest, None] + 1, at, -1)
    placed = np.full((rows, fan), -1, np.int64)
    placed[refined] = found
    return placed


def balanced_rows(tiling: Tiling, near: Around, touching: np.ndarray) -> np.ndarray:
    """Per row of `near` (with children): whether the leaves touching the block there are within
    one level of it: the covering leaf at most one level coarser, or, where the position is
    refined, the children touching the block leaves themselves."""
    ok = tiling.levels[near.cover] >= near.level - 1  # (true where refined)
    refined = np.flatnonzero(near.refined)
    missing = (near.children[refined] < 0) & touching[near.offset[refined]]
    ok[refined[missing.any(axis=1)]] = False
    return ok


@functools.lru_cache(maxsize=None)
def ring_offsets(dim: int) -> np.ndarray:
    """The offsets, in blocks one level finer, of the blocks around a block's children: the
    4**dim - 2**dim positions of {-1, 0, 1, 2}**dim outside {0, 1}**dim (k, dim)."""
    ring = [offset for offset in itertools.product(range(-1, 3), repeat=dim) if not all(0 <= o <= 1 for o in offset)]
    return np.array(ring, np.int64).reshape(-1, dim)


def blocks_balanced(tiling: Tiling, levels: np.ndarray, coords: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Per block (levels (m,), coords (m, dim); leaves or not): whether every leaf touching it at
    a face, edge or corner (across periodic wraps) is within one level of it. Every such leaf
    holds the first point of one of the ring of one-level-finer positions around the block, and
    each of those lies in such a leaf or in a leaf inside the block: so the leaves holding
    those points must all be within a level of the block. (At max_level nothing is finer: the
    same-level positions around the block suffice.)"""
    space = tiling.space
    ok = np.ones(len(levels), bool)
    deepest = levels >= space.max_level
    for subset, offsets, finer in ((np.flatnonzero(~deepest), ring_offsets(space.dim), 1),
                                   (np.flatnonzero(deepest), offsets_array(space.dim)[0], 0)):
        for start in range(0, len(subset), chunk):
            part = subset[start:start + chunk]
            keys, inside = space.positions(levels[part] + finer, coords[part] << finer, offsets)
            row, _ = np.nonzero(inside)
            found, level = tiling.levels[tiling.containing(keys[inside])], levels[part][row]
            ok[part[row[(found < level - 1) | (found > level + 1)]]] = False
    return ok
