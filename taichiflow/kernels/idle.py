"""Idle tiles: the grid in tiles of idle_tile^D cells, and the kernels that skip the tiles where
nothing can change ([run] skip_idle; Brodtkorb & Saetra's "early exit" for dry land).

A model that declares idle(U) promises that a cell which is idle, with every cell its stencils
read idle too, comes out of a step exactly as it went in (shallow water: dry bed, h = 0 and no
discharge, gives zero face fluxes, zero balance terms and an update of zeros). So a tile is
*active* when it or one of its 3^D neighbours holds a cell that is not idle. In one step a value
moves at most the stencil's reach times the stages (WENO5 with RK3: 9 cells, tiny values ahead
of a front included; PLM with SSP-RK2: 4); the plan asks for tiles at least that wide, so every
cell that can change in the step lies in an active tile. Across a periodic face whose axis the
tiles divide, the neighbours wrap around; the tiles along the other faces through which water
may come in (an inflow face, the block of another MPI rank, a periodic face with a cut last
tile) are always active (two deep along an upper face whose last tile is cut); walls and
copied faces bring nothing that is not inside. The sweeps skip their segments in tiles that
are not active, the primitives and the check skip those cells (their W and rate stay valid: U
did not change), and restoring the last good state skips them (their U0 is not written).
Results are bit for bit those of a run without skipping (tests/test_idle_tiles.py).

The active set is rebuilt after each step's check, from the new state, on the device: the check
(kernels/reductions.py) stamps the active tiles that hold a non-idle cell with the number of
the coming rebuild (it reads every active cell's U anyway; older stamps are stale, so nothing
is cleared), then `spread_tiles`, in the kernel that ends the step, makes the tiles that hold
one and their neighbours active and lists them and their columns. It does nothing after a failed step: a retry repeats the step on the
same tiles, and restores the same. The per-cell passes loop over that list (the primitives a
thread per cell, the check a thread per short run along x), so a dry tile costs them nothing; the
sweeps test a segment's tiles (a whole warp together where the last axis goes through
shuffles). Everything here is built only for a plan with skip_idle: other runs compile as before.
"""
import itertools

import numpy as np
import taichi as ti
from taichi.lang import impl

from ..layout import component
from .boundaries import GHOST_COPIES
from .clock import BAD_STATE, HALT
from .plan import WARP


class IdleTiles:
    """The tiles' fields and functions of a plan with skip_idle (`enabled`); a disabled one
    answers "active" everywhere at compile time and allocates nothing."""

    def __init__(self, phys, cells, tile: int, enabled: bool, clock=None, kinds=None):
        """kinds: per axis the boundary kinds of its lower and upper face (None: every face
        may bring water)."""
        self.enabled = enabled
        self.cells = tuple(cells)
        self.tile = int(tile)
        self.tiles = tuple((n + self.tile - 1) // self.tile for n in self.cells)
        self.wraps, self.frame = _faces(kinds, self.cells, self.tile)
        self.rows_per_tile = self.tile ** (len(self.cells) - 1)  # rows of a tile along x
        if not enabled:
            return
        n_tiles = int(np.prod(self.tiles))
        self.columns = self.tiles[:-1] or (1,)             # tiles with the last axis collapsed
        self.holds = ti.field(ti.i32, shape=self.tiles)   # the stamp of the check that found a non-idle cell
        self.active = ti.field(ti.i32, shape=self.tiles)  # the tile or a neighbour holds one
        self.listed = ti.field(ti.i32, shape=n_tiles)     # the active tiles' linear indices, any order
        self.count = ti.field(ti.i32, shape=())            # how many are listed
        self.column_marks = ti.field(ti.i32, shape=self.columns)  # the stamp of a rebuild that found one active
        self.listed_columns = ti.field(ti.i32, shape=int(np.prod(self.columns)))  # columns with an active tile
        self.column_count = ti.field(ti.i32, shape=())
        self.stamp = ti.field(ti.i32, shape=())            # counts the rebuilds: marks of older checks are stale
        self.fresh = ti.field(ti.i32, shape=())            # a check marked since the last rebuild
        self.phys = phys
        self._build(clock)
        self.reset()                                       # (until the first rebuild: all active)

    # --- Taichi functions for the kernels that skip ---------------------------------------
    def cell_active(self, I):
        """Whether cell I lies in an active tile (plain Python, inlined while compiling)."""
        if not self.enabled:
            return True
        return impl.subscript(None, self.active, self._tile_of(I)) != 0

    def segment_active(self, segment, axis: int, first, end):
        """Whether a walk's cells first..end-1 along `axis` (the other indices of `segment`)
        touch an active tile (plain Python, inlined while compiling)."""
        if not self.enabled:
            return True
        dim = len(self.cells)
        tile = self.tile
        lo = [first // tile if d == axis else component(segment, d) // tile for d in range(dim)]
        hi = (end - 1) // tile
        return _any_along(self.active, lo, axis, hi)

    def run_length(self, most: int) -> int:
        """The longest run along x, at most `most` cells, that divides a tile."""
        return next(length for length in range(min(most, self.tile), 0, -1) if self.tile % length == 0)

    def listed_runs(self, length: int):
        """The number of runs of `length` cells along x (run_length) in the listed tiles: the
        bound of a loop over them, read on the device at launch."""
        return impl.subscript(None, self.count, ()) * (self.rows_per_tile * (self.tile // length))

    def column_walk(self, row_shape, length: int, slots_per_row: int, stride: int, total_slots: int):
        """The shuffle walk's threads (kernels/shuffles.py: rows of its thread layout, each a
        walking segment of `length` cells along x at one index of the axes before the last,
        `slots_per_row` slots along the last axis, `stride` of them a warp) over the listed
        columns only, so a dry column costs nothing: (threads per listed column, and the slot of
        a thread: ti.func k -> its slot, or total_slots where the thread has none). None where
        segments do not tile the tiles along x (a segment would then belong to two columns)."""
        if not self.enabled or self.tile % length:
            return None
        tile, columns, listed_columns = self.tile, self.columns, self.listed_columns
        spans = [tile // length] + [tile] * (len(row_shape) - 1)  # a column's rows per row axis, at most
        run = spans[-1]          # rows along the last row axis: neighbours in the slots' order
        outer = int(np.prod(spans[:-1]))
        warps = (run * slots_per_row + stride - 1) // stride
        per_column = outer * warps * WARP

        @ti.func
        def slot_of(k):
            C = ti.Vector.zero(ti.i32, len(columns))
            rest = listed_columns[k // per_column]
            for d in ti.static(list(reversed(range(len(columns))))):
                C[d] = rest % columns[d]
                rest = rest // columns[d]
            o = (k % per_column) // (warps * WARP)
            t = k % (warps * WARP)
            first_row, rows_here, inside = 0, 0, 1
            for a in ti.static(range(len(row_shape))):
                lo = C[a] * spans[a]
                if ti.static(a < len(row_shape) - 1):
                    digit = o % spans[a]
                    o = o // spans[a]
                    inside = inside & (lo + digit < row_shape[a])
                    first_row = first_row * row_shape[a] + lo + digit
                else:
                    first_row = first_row * row_shape[a] + lo
                    rows_here = ti.min(lo + run, row_shape[a]) - lo
            local = (t // WARP) * stride + t % WARP
            slot = total_slots
            if inside and local < rows_here * slots_per_row:
                slot = first_row * slots_per_row + local
            return slot

        return per_column, slot_of

    def listed_columns_times(self, per_column: int):
        """A loop bound: the listed columns' count times per_column, read on the device."""
        return impl.subscript(None, self.column_count, ()) * per_column

    def _tile_of(self, I):
        return ti.Vector([component(I, d) // self.tile for d in range(len(self.cells))])

    # --- the rebuild ------------------------------------------------------------------------
    def _build(self, clock):
        """The Taichi functions and kernels of the active set."""
        self.run, self.checking, self.mark, ravel = self._cell_functions()
        self.spread_tiles, self._spread, self._list_all = self._spread_functions(clock, ravel)

    def _cell_functions(self):
        """What the check and the per-cell passes call: run (a loop index to its cells),
        checking and mark (the check's marks), and ravel (a tile's linear index)."""
        holds, listed, stamp, fresh = self.holds, self.listed, self.stamp, self.fresh
        tile, cells, tiles, dim, rows = self.tile, self.cells, self.tiles, len(self.cells), self.rows_per_tile

        @ti.func
        def ravel(T):
            """Row-major linear index of tile T (i32: tiles are few)."""
            index = T[0]
            for d in ti.static(range(1, dim)):
                index = index * tiles[d] + T[d]
            return index

        @ti.func
        def unravel(index):
            """Tile index vector of a row-major linear index."""
            T = ti.Vector.zero(ti.i32, dim)
            rest = index
            for d in ti.static(list(reversed(range(dim)))):
                T[d] = rest % tiles[d]
                rest = rest // tiles[d]
            return T

        @ti.func
        def run(k, length: ti.template()):
            """Run k of `length` cells along x in the listed tiles: its first cell, and whether
            that lies in the grid (the last tiles of an axis may be cut; a run that starts in
            the grid ends at its end along x). Neighbouring k differ along the last axis first,
            where the cells are neighbours in memory."""
            per_tile = rows * (tile // length)
            T = unravel(listed[k // per_tile])
            r = k % per_tile
            I = ti.Vector.zero(ti.i32, dim)
            I[0] = T[0] * tile + (r // rows) * length
            inside = I[0] < cells[0]
            r = r % rows
            for d in ti.static(list(reversed(range(1, dim)))):
                I[d] = T[d] * tile + r % tile
                r = r // tile
                inside = inside & (I[d] < cells[d])
            return I, inside

        @ti.func
        def checking():
            """Called where a check runs: its marks are the next rebuild's."""
            fresh[None] = 1

        @ti.func
        def mark(I):
            """Cell I's tile holds a cell that is not idle (in this check: the stamp)."""
            holds[ti.Vector([component(I, d) // tile for d in range(dim)])] = stamp[None]

        return run, checking, mark, ravel

    def _spread_functions(self, clock, ravel):
        """spread_tiles (the rebuild, in the kernel that ends a step), the spread kernel (the
        rebuild after a check on the host) and list_all. The rebuild is a no-op where the device
        clock halted on a bad state (the restore and the retry then use the tiles of the failed
        step)."""
        holds, active, listed, count, stamp, fresh = self.holds, self.active, self.listed, self.count, self.stamp, \
            self.fresh
        column_marks, listed_columns, column_count = self.column_marks, self.listed_columns, self.column_count
        tiles, dim, wraps, frame = self.tiles, len(self.cells), self.wraps, self.frame
        neighbours = list(itertools.product((-1, 0, 1), repeat=dim))

        @ti.func
        def column_of(T):
            """The linear index of the column of tile T (or of a column's index vector)."""
            index = 0
            for d in ti.static(range(dim - 1)):
                index = index * tiles[d] + T[d]
            return index

        @ti.func
        def column_vector(T):
            return ti.Vector([T[d] for d in ti.static(range(dim - 1))] or [0])

        @ti.func
        def spread_tiles():
            """The active set from the marks of the last check: a tile is active if it or a
            neighbour holds a non-idle cell; the active tiles and the columns holding one are
            listed. A no-op after a bad state, and where no check ran since the last rebuild
            (a halted clock's steps change nothing)."""
            good = clock.counts[HALT] != BAD_STATE and fresh[None] != 0  # (no check since: U unchanged)
            if good:
                fresh[None] = 0
                count[None] = 0
                column_count[None] = 0
                stamp[None] += 1  # (the marks of the check before: stamp - 1)
            for T in ti.grouped(active):
                if good:
                    marked = stamp[None] - 1
                    holding = 0
                    for d in ti.static(range(dim)):  # faces that may bring water: always active
                        if ti.static(frame[d][0] > 0):
                            holding = holding | (T[d] < frame[d][0])
                        if ti.static(frame[d][1] > 0):
                            holding = holding | (T[d] >= tiles[d] - frame[d][1])
                    for k in ti.static(range(len(neighbours))):
                        N = T + ti.Vector(list(neighbours[k]))
                        inside = 1
                        for d in ti.static(range(dim)):
                            if ti.static(wraps[d]):  # (a periodic axis the tiles divide)
                                N[d] = (N[d] + tiles[d]) % tiles[d]
                            else:
                                inside = inside & (N[d] >= 0) & (N[d] < tiles[d])
                        if inside:
                            holding = holding | (holds[N] == marked)
                    active[T] = holding
                    if holding != 0:
                        listed[ti.atomic_add(count[None], 1)] = ravel(T)
                        column_marks[column_vector(T)] = stamp[None]
            for C in ti.grouped(column_marks):
                if good and column_marks[C] == stamp[None]:
                    listed_columns[ti.atomic_add(column_count[None], 1)] = column_of(C)

        @ti.kernel
        def spread():
            spread_tiles()

        @ti.kernel
        def list_all():
            count[None] = listed.shape[0]
            column_count[None] = listed_columns.shape[0]
            stamp[None] = ti.max(stamp[None], 1)  # (0, the holds' start, is no check's)
            fresh[None] = 0
            for k in listed:
                listed[k] = k
            for k in listed_columns:
                listed_columns[k] = k

        return spread_tiles, spread, list_all

    def rebuild(self):
        """The active set from the holds the last check marked (after a good step's check)."""
        if self.enabled:
            self._spread()

    def reset(self):
        """Every tile active: after the state was set from outside (an initial fill, a restart)."""
        if self.enabled:
            self.active.fill(1)
            self._list_all()

    def active_counts(self) -> np.ndarray:
        """(active tiles, all tiles) of this block, int64 (all active where skipping is off)."""
        total = int(np.prod(self.tiles))
        active = int(np.count_nonzero(self.active.to_numpy())) if self.enabled else total
        return np.array([active, total], dtype=np.int64)


def _faces(kinds, cells, tile: int):
    """(per axis whether its tile neighbours wrap around, per axis (lower, upper) how many
    tiles along that face are always active). A periodic axis of one block wraps where the
    tiles divide it; copied faces (outflow, walls) bring only what is inside; every other face
    (a constant state, another block, a periodic face with a cut last tile) may bring water,
    which a step carries up to a tile's width inside: one tile along a lower face, and along an
    upper face two where the last tile is cut (narrower than a step's reach, possibly)."""
    if kinds is None:
        kinds = [("inflow", "inflow")] * len(cells)
    wraps, frame = [], []
    for (lower, upper), n in zip(kinds, cells):
        wrap = lower == upper == "periodic" and n % tile == 0
        wraps.append(wrap)
        brings = [not wrap and (kind == "periodic" or kind not in GHOST_COPIES) for kind in (lower, upper)]
        frame.append((int(brings[0]), (2 if n % tile else 1) if brings[1] else 0))
    return wraps, frame


def _any_along(active, lo: list, axis: int, hi):
    """active at tile lo or at its neighbour hi along `axis` (plain Python building Taichi IR:
    a walk, no longer than a tile (the plan says so), spans one tile or two)."""
    last = [hi if d == axis else lo[d] for d in range(len(lo))]
    return (impl.subscript(None, active, ti.Vector(lo)) != 0) | (impl.subscript(None, active, ti.Vector(last)) != 0)
