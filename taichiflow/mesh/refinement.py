"""One regrid of a set of leaves: flagged splits, the splits that 2:1 balance then forces, and
the merges that keep it. Merges are decided last, against the balanced result, so that a merged
parent is never split again by the balancing (a leaf changes at most once per regrid, which the
device's slot plan relies on)."""
from __future__ import annotations

from typing import AbstractSet

from .block import Block, Domain, children, neighbour_offsets, parent, shifted
from .neighbourhood import balanced_around, covering_leaf


def regridded_leaves(leaves: AbstractSet[Block], domain: Domain, max_level: int,
                     refine: AbstractSet[Block], derefine: AbstractSet[Block], balanced: bool = False) -> set[Block]:
    """The leaves after splitting `refine` (below max_level), balancing, then merging the families
    wholly in `derefine` and not in `refine` where the merge keeps the balance. balanced: the
    leaves are 2:1 balanced already, so only the new children can force splits (a leaf only
    gets finer neighbours), and the balancing looks around them alone."""
    for name, flags in (("refine", refine), ("derefine", derefine)):
        strays = sorted(flag for flag in flags if flag not in leaves)
        if strays:
            raise ValueError(f"{name} flags must name leaves; these are not: {strays[:5]}")
    current = set(leaves)
    split = []
    for block in refine:
        if block.level < max_level:
            current.remove(block)
            split.extend(children(block))
    current.update(split)
    balance(current, domain, split if balanced else None)
    _merge_families(current, domain, derefine - refine)
    return current


def balance(current: set[Block], domain: Domain, pending=None) -> None:
    """Split leaves of `current` in place until no two touching leaves differ by more than one
    level. Each leaf, once all its splits are done, looks for a too coarse leaf around it; a leaf
    only gets finer neighbours later, so what it checked stays true. This gives the coarsest
    balanced refinement: every split is one that some finer leaf forces. pending: the only
    leaves that may be out of balance (default: all of them)."""
    pending = list(current if pending is None else pending)
    while pending:
        leaf = pending.pop()
        if leaf not in current:
            continue
        for offset in neighbour_offsets(len(leaf.coords)):
            position = domain.wrap(leaf.level, shifted(leaf, offset)) if any(offset) else None
            while position is not None:
                cover = covering_leaf(current, leaf.level, position)
                if cover is None or cover.level >= leaf.level - 1:
                    break
                current.remove(cover)
                current.update(children(cover))
                pending.extend(children(cover))


def _merge_families(current: set[Block], domain: Domain, derefine: AbstractSet[Block]) -> None:
    """Merge, in place, each family whose children are all still leaves and all flagged, where the
    merged parent is balanced. Finest families first: merging them only lowers the levels a
    coarser merge must stay within one of, so this order refuses no merge that another allows."""
    parents = {parent(block) for block in derefine if block.level > 0}
    for candidate in sorted(parents, key=lambda block: (-block.level, block.coords)):
        family = children(candidate)
        if not all(child in derefine and child in current for child in family):
            continue
        current.difference_update(family)
        current.add(candidate)
        if not balanced_around(current, domain, candidate):
            current.remove(candidate)
            current.update(family)
