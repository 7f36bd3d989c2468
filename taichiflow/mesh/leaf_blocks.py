"""The Block tuples of a forest's leaves and a {Block: key} dict of them, for the public API and
the one-block queries. Python objects by the thousand cost milliseconds, so both are made only
when first asked for, and from the forest's predecessor where it has them: a regrid keeps most
leaves, whose Blocks (and dict entries) carry over, and only the changed ones are made."""
from __future__ import annotations

import numpy as np

from .block import Block
from .tiling import Tiling

NOT_A_LEAF = (1 << 64) - 1  # the key given for a block that is not a leaf (keys stay below 2**63)


class LeafBlocks:
    """The Blocks of the leaves of `tiling`, reusing those of `before` (the blocks of the forest
    it was regridded from) where it has them."""

    __slots__ = ("_tiling", "_before", "_leaves", "_key_of")

    def __init__(self, tiling: Tiling, before: LeafBlocks | None = None):
        self._tiling = tiling
        if before is not None and before._leaves is None:
            before = before._before  # (only a predecessor with its Blocks made helps)
        if before is not None and not before._tiling.space.same_as(tiling.space):
            before = None
        if before is not None:
            before._before = None  # (so that no chain of forests is kept alive: it makes its dict afresh)
        self._before = before
        self._leaves: tuple[Block, ...] | None = None
        self._key_of: dict[Block, int] | None = None

    @property
    def leaves(self) -> tuple[Block, ...]:
        """The leaves in key (Morton) order."""
        if self._leaves is None:
            self._leaves = self._made_leaves()
            self._forget_before()
        return self._leaves

    @property
    def key_of(self) -> dict[Block, int]:
        """{leaf: its key}: membership is whether a block is a leaf, and the key finds its index."""
        if self._key_of is None:
            self._key_of = self._made_keys()
            self._forget_before()
        return self._key_of

    def _forget_before(self) -> None:
        if self._leaves is not None and self._key_of is not None:
            self._before = None

    def _changes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per leaf, ours then the predecessor's, the index of the same leaf in the other
        tiling, -1 where the other has no such leaf."""
        return self._tiling.matches(self._before._tiling)

    def _made_leaves(self) -> tuple[Block, ...]:
        tiling = self._tiling
        if self._before is None:
            return tuple(map(Block, tiling.levels.tolist(), map(tuple, tiling.coords.tolist())))
        theirs, _ = self._changes()
        leaves = list(map(self._before._leaves.__getitem__, theirs.tolist()))
        for at in np.flatnonzero(theirs < 0).tolist():
            leaves[at] = Block(int(tiling.levels[at]), tuple(tiling.coords[at].tolist()))
        return tuple(leaves)

    def _made_keys(self) -> dict[Block, int]:
        leaves = self.leaves
        before = self._before
        if before is None or before._key_of is None:
            return dict(zip(leaves, self._tiling.keys.tolist()))
        theirs, ours = self._changes()
        key_of = before._key_of.copy()
        for gone in np.flatnonzero(ours < 0).tolist():
            del key_of[before._leaves[gone]]
        arrived = np.flatnonzero(theirs < 0)
        key_of.update(zip([leaves[at] for at in arrived.tolist()], self._tiling.keys[arrived].tolist()))
        return key_of
