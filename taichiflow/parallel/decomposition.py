"""How a grid is split into blocks, one per MPI rank (Taichi-free).

Ranks are laid out as a Cartesian array of px x py x pz blocks, rank = (cx py + cy) pz + cz
(x slowest, as the grid's cells are). Along an axis of n cells split p ways the first n mod p
blocks get one cell more than the others, so blocks differ by at most a cell. A face of a
block is either a face of the grid (its boundary kind applies) or borders the next block,
which on a periodic axis wraps around; the ghost layers of such a face come from that block
(kernels/exchange.py), never from the boundary kernels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product


class DecompositionError(ValueError):
    """A split that cannot work, said in the words of the case keys."""


@dataclass(frozen=True)
class Block:
    rank: int
    coords: tuple      # the block's position in the array of blocks
    offset: tuple      # its first cell in the grid
    cells: tuple       # its cells per axis


@dataclass(frozen=True)
class Decomposition:
    cells: tuple       # the grid's cells per axis
    dims: tuple        # blocks per axis

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    def coords(self, rank: int) -> tuple:
        out = []
        for p in reversed(self.dims):
            out.append(rank % p)
            rank //= p
        return tuple(reversed(out))

    def rank_of(self, coords) -> int:
        rank = 0
        for c, p in zip(coords, self.dims):
            rank = rank * p + c
        return rank

    def block(self, rank: int) -> Block:
        coords = self.coords(rank)
        offset, cells = [], []
        for c, n, p in zip(coords, self.cells, self.dims):
            base, extra = divmod(n, p)
            offset.append(c * base + min(c, extra))
            cells.append(base + (1 if c < extra else 0))
        return Block(rank, coords, tuple(offset), tuple(cells))

    def blocks(self) -> list:
        return [self.block(r) for r in range(self.size)]

    def neighbour(self, rank: int, axis: int, side: int, periodic: bool):
        """The rank across the block's lower (side 0) or upper (1) face along axis, or None where
        that face is the grid's (and not periodic): its boundary kind fills it then."""
        coords = list(self.coords(rank))
        step = -1 if side == 0 else 1
        c = coords[axis] + step
        if 0 <= c < self.dims[axis]:
            coords[axis] = c
        elif periodic and self.dims[axis] > 1:
            coords[axis] = c % self.dims[axis]
        else:
            return None
        return self.rank_of(coords)


def choose_dims(ranks: int, cells, asked=(), ghost: int = 1, read_first=()) -> tuple:
    """Blocks per axis for `ranks` ranks: `asked` ([parallel] ranks) checked, or the split with
    the least face area between blocks whose blocks have at least `ghost` cells along every split
    axis (a thinner block would need ghost cells from two blocks away). Among splits of equal
    area, one along axes that a stage's first sweep does not read (`read_first`: the axes it
    does): its ghost layers then travel while that sweep runs (kernels/exchange.py)."""
    cells = tuple(int(n) for n in cells)
    dim = len(cells)
    if asked:
        asked = tuple(int(p) for p in asked)
        if len(asked) != dim:
            raise DecompositionError(f"[parallel] ranks has {len(asked)} values for a {dim}D grid")
        if math.prod(asked) != ranks:
            raise DecompositionError(f"[parallel] ranks = {list(asked)} makes {math.prod(asked)} blocks, but the run "
                                     f"has {ranks} MPI ranks (mpirun -n)")
        _check_thin(asked, cells, ghost)
        return asked
    best = None
    for dims in product(*[_divisors(ranks) for _ in range(dim)]):
        if math.prod(dims) != ranks or any(p > 1 and n // p < max(ghost, 1) for n, p in zip(cells, dims)):
            continue
        read_early = any(p > 1 and d in read_first for d, p in enumerate(dims))
        key = (_interface_area(dims, cells), read_early, dims)
        if best is None or key < best[0]:
            best = (key, dims)
    if best is None:
        raise DecompositionError(f"{ranks} MPI ranks cannot split the grid {list(cells)} into blocks of at least "
                                 f"{ghost} cells (the scheme's ghost layers) along each split axis; use fewer ranks "
                                 f"or more cells")
    return best[1]


def _check_thin(dims, cells, ghost: int) -> None:
    for d, (n, p) in enumerate(zip(cells, dims)):
        if p > 1 and n // p < ghost:
            raise DecompositionError(f"[parallel] ranks: {p} blocks along {'xyz'[d]} leave {n // p} cells each, fewer "
                                     f"than the scheme's {ghost} ghost layers; split another axis or use fewer ranks")
        if p > n:
            raise DecompositionError(f"[parallel] ranks: {p} blocks along {'xyz'[d]} for {n} cells")


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def _interface_area(dims, cells) -> int:
    """Cell faces between blocks: along each axis, (p - 1) planes of the other axes' cells."""
    total = 0
    for d, p in enumerate(dims):
        total += (p - 1) * math.prod(n for e, n in enumerate(cells) if e != d)
    return total
