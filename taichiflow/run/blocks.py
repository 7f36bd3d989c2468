"""A rank's share of the grid: its block, the kinds of its faces, and its halo.

On one rank the block is the whole grid and the halo does nothing (kernels/halo.py). On K
ranks (parallel/comm.py) the grid is split ([parallel] ranks, parallel/decomposition.py): a
face of the block that borders another block is of the kind NEIGHBOUR (the exchange fills its
ghost layers, kernels/exchange.py), including across a periodic axis split between ranks; the
grid's own faces keep the case's kinds.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import CaseError
from ..resolved import ResolvedCase
from ..kernels.boundaries import NEIGHBOUR
from ..kernels.halo import SingleBlock
from ..parallel.decomposition import Decomposition, DecompositionError, choose_dims


class RankShare(NamedTuple):
    """This rank's block of the grid and the layout of them all: the owner of the block layout
    that outputs (one piece per rank), checkpoints and the bad-cell lookup read. The halo
    (kernels/halo.py, kernels/exchange.py) only moves data between the blocks."""
    cells: tuple          # the block's cells
    offset: tuple         # its first cell in the grid ((): the whole grid)
    kinds: tuple          # per axis, the kinds of its lower and upper face
    decomposition: object  # parallel.decomposition.Decomposition, or None on one rank
    block: object         # its Block, or None on one rank
    periodic: tuple = ()  # per axis, whether the grid is periodic along it

    @property
    def first_cell(self) -> tuple:
        return self.offset or (0,) * len(self.cells)

    def pieces(self) -> list:
        """(rank, first cell, cells) of every block, rank order (one rank: the whole grid)."""
        if self.decomposition is None:
            return [(0, self.first_cell, self.cells)]
        return [(b.rank, b.offset, b.cells) for b in self.decomposition.blocks()]

    def owner(self, global_index: int, rank: int) -> tuple:
        """(the rank owning a cell of the whole grid given by its linear index, the cell's linear
        index in this rank's block, or None where another rank owns it)."""
        grid = self.cells if self.decomposition is None else self.decomposition.cells
        cell = np.unravel_index(int(global_index), grid)
        for owner, first, cells in self.pieces():
            local = [i - o for i, o in zip(cell, first)]
            if all(0 <= i < n for i, n in zip(local, cells)):
                return owner, (int(np.ravel_multi_index(local, cells)) if owner == rank else None)
        raise ValueError(f"cell {tuple(int(i) for i in cell)} is outside the grid {grid}")


def share_of(case: ResolvedCase, comm, kinds: tuple, ghost: int, read_first=()) -> RankShare:
    """This rank's share of the case's grid (kinds: the grid's faces' kinds per axis;
    read_first: the axes a stage's first sweep reads, decomposition.choose_dims)."""
    cells = tuple(int(n) for n in case.grid.cells)
    if comm.size == 1:  # (one process holds the whole grid, whatever [parallel] ranks asks of an MPI run)
        return RankShare(cells, (), kinds, None, None)
    try:
        dims = choose_dims(comm.size, cells, case.parallel.ranks, ghost, read_first)
    except DecompositionError as err:
        raise CaseError(f"{case.source}: {err}") from None
    decomposition = Decomposition(cells, dims)
    block = decomposition.block(comm.rank)
    block_kinds = []
    for axis, (lower, upper) in enumerate(kinds):
        periodic = lower == "periodic"
        faces = []
        for side, kind in enumerate((lower, upper)):
            across = decomposition.neighbour(comm.rank, axis, side, periodic)
            faces.append(NEIGHBOUR if across is not None else kind)
        block_kinds.append(tuple(faces))
    periodic = tuple(lower == "periodic" for lower, _ in kinds)
    return RankShare(block.cells, block.offset, tuple(block_kinds), decomposition, block, periodic)


def halo_of(share: RankShare, comm, ghost: int, n_primitive: int, dtype, arch: str, exchange: str = "auto"):
    """The halo of a share: SingleBlock on one rank, the MPI exchange on several, its slabs
    staged as `exchange` ([parallel] exchange) asks (parallel/staging.py)."""
    if share.decomposition is None:
        return SingleBlock()
    from ..kernels.exchange import BlockExchange
    from ..parallel.staging import choose_staging
    cuda_aware = comm.cuda_aware() if arch == "cuda" and exchange in ("auto", "device") else False
    staging = choose_staging(exchange, arch, cuda_aware, dtype, comm)
    return BlockExchange(comm, share.decomposition, share.block, share.periodic, ghost, n_primitive, dtype, staging)
