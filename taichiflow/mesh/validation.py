"""Leaves handed in from outside (a checkpoint's, a test's) made into a Tiling, refused unless
they tile the domain. The check runs on arrays; only a refused list is walked block by block,
to name the first problem as a reader would look for it."""
from __future__ import annotations

import itertools
import math
from operator import itemgetter

import numpy as np

from .block import Block, Domain
from .tiling import KeySpace, Tiling


def tiling_of(space: KeySpace, blocks: list) -> Tiling:
    """The Tiling of `blocks` ((level, coords) pairs); ValueError unless they tile the domain.
    Tree blocks are either nested or disjoint, so: all inside the domain, none inside another
    (in key order a block holding another holds the one just after it), and volumes adding up
    to the domain's."""
    tiling = _fast_tiling(space, blocks)
    if tiling is None:
        _raise_first_problem(space, blocks)
        raise ValueError("the leaves do not tile the domain")  # (the walk below names why)
    return tiling


def _fast_tiling(space: KeySpace, blocks: list) -> Tiling | None:
    """The tiling, or None where anything is wrong with the blocks."""
    dim = space.dim
    try:
        if set(map(len, map(itemgetter(1), blocks))) != {dim}:
            return None
        levels = np.fromiter(map(itemgetter(0), blocks), np.int64, len(blocks))
        coords = np.fromiter(itertools.chain.from_iterable(map(itemgetter(1), blocks)), np.int64,
                             len(blocks) * dim).reshape(len(blocks), dim)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if np.any(levels < 0) or np.any(levels > space.max_level) or not np.all(space.inside(levels, coords)):
        return None
    tiling = Tiling.sorted_from(space, levels, coords)
    spans = space.spans(tiling.levels)
    if np.any(tiling.keys[1:] < tiling.keys[:-1] + spans[:-1]):  # (duplicates too)
        return None
    volume = math.prod(int(r) for r in space.roots) << (dim * space.max_level)
    return tiling if int(spans.sum(dtype=np.uint64)) == volume else None


def _raise_first_problem(space: KeySpace, blocks: list) -> None:
    """Raise ValueError naming what is wrong with `blocks`: a repeated block, then the first
    block (in the order given) outside the forest's levels or domain or inside another, then
    a part of the domain left uncovered."""
    domain = Domain(tuple(int(r) for r in space.roots), tuple(bool(p) for p in space.periodic))
    dim, max_level = space.dim, space.max_level
    blocks = [Block(int(block[0]), tuple(int(c) for c in block[1])) for block in blocks]
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
