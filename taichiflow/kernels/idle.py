"""Idle tiles: the grid in tiles of idle_tile^D cells, and the kernels that skip the tiles where
nothing can change ([run] skip_idle; Brodtkorb & Saetra's "early exit" for dry land).

A model that declares idle(U) promises that a cell which is idle, with every cell its stencils
read idle too, comes out of a step exactly as it went in (shallow water: dry bed, h = 0 and no
discharge, gives zero face fluxes, zero balance terms and an update of zeros). So a tile is
*active* when it or one of its 3^D neighbours holds a cell that is not idle. In one step a value
moves at most the stencil's reach times the stages (WENO5 with RK3: 9 cells, tiny values ahead
of a front included; PLM with SSP-RK2: 4); the plan asks for tiles at least that wide, so every
cell that can change in the step lies in an active tile. The tiles along the block's faces are always active:
water may come in there (an inflow face, a periodic wrap, the block of another MPI rank). The sweeps skip their segments in tiles that are not
active, the primitives and the check skip those cells (their W and rate stay valid: U did not
change), and restoring the last good state skips them (their U0 is not written). Results are
bit for bit those of a run without skipping (tests/test_idle_tiles.py).

The active set is rebuilt after each step's check, from the new state, on the device (two
small kernels: mark the tiles holding a non-idle cell, then spread to the neighbours), and
not after a failed step: a retry repeats the step on the same tiles, and restores the same.
Everything here is built only for a plan with skip_idle: other runs compile as before.
"""
import itertools

import numpy as np
import taichi as ti
from taichi.lang import impl

from ..layout import component
from .clock import BAD_STATE, HALT


class IdleTiles:
    """The tiles' fields and functions of a plan with skip_idle (`enabled`); a disabled one
    answers "active" everywhere at compile time and allocates nothing."""

    def __init__(self, phys, cells, tile: int, enabled: bool, clock=None):
        self.enabled = enabled
        self.cells = tuple(cells)
        self.tile = int(tile)
        self.tiles = tuple((n + self.tile - 1) // self.tile for n in self.cells)
        if not enabled:
            return
        self.holds = ti.field(ti.i32, shape=self.tiles)   # a cell in the tile is not idle
        self.active = ti.field(ti.i32, shape=self.tiles)  # the tile or a neighbour holds one
        self.active.fill(1)                                # (until the first rebuild: all)
        self.phys = phys
        self._build(clock)

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

    def _tile_of(self, I):
        return ti.Vector([component(I, d) // self.tile for d in range(len(self.cells))])

    # --- the rebuild ------------------------------------------------------------------------
    def _build(self, clock):
        """mark and spread, no-ops where the device clock halted on a bad state (the restore
        and the retry then use the tiles of the failed step; the host-driven check calls
        rebuild only after a good step)."""
        phys, holds, active, tile, cells = self.phys, self.holds, self.active, self.tile, self.cells
        tiles, dim = self.tiles, len(self.cells)
        neighbours = list(itertools.product((-1, 0, 1), repeat=dim))

        @ti.kernel
        def mark(U: ti.template()):
            good = clock.counts[HALT] != BAD_STATE
            for T in ti.grouped(holds):
                if good:
                    holds[T] = 0
            for I in ti.grouped(ti.ndrange(*cells)):
                T = ti.Vector([component(I, d) // tile for d in range(dim)])
                if good and active[T] != 0:  # (only an active tile can have changed)
                    if not phys.idle(U[I]):
                        holds[T] = 1

        @ti.kernel
        def spread():
            good = clock.counts[HALT] != BAD_STATE
            for T in ti.grouped(active):
                if good:
                    holding = 0
                    for d in ti.static(range(dim)):  # the block's frame: always active
                        holding = holding | (T[d] == 0) | (T[d] == tiles[d] - 1)
                    for k in ti.static(range(len(neighbours))):
                        N = T + ti.Vector(list(neighbours[k]))
                        inside = 1
                        for d in ti.static(range(dim)):
                            inside = inside & (N[d] >= 0) & (N[d] < tiles[d])
                        if inside:
                            holding = holding | holds[N]
                    active[T] = holding

        self._mark, self._spread = mark, spread

    def rebuild(self, U):
        """The active set of the state U (after a good step's check)."""
        if self.enabled:
            self._mark(U)
            self._spread()

    def reset(self):
        """Every tile active: after the state was set from outside (an initial fill, a restart)."""
        if self.enabled:
            self.active.fill(1)

    def active_counts(self) -> np.ndarray:
        """(active tiles, all tiles) of this block, int64 (all active where skipping is off)."""
        total = int(np.prod(self.tiles))
        active = int(np.count_nonzero(self.active.to_numpy())) if self.enabled else total
        return np.array([active, total], dtype=np.int64)


def _any_along(active, lo: list, axis: int, hi):
    """active at tile lo or at its neighbour hi along `axis` (plain Python building Taichi IR:
    a walk, no longer than a tile (the plan says so), spans one tile or two)."""
    last = [hi if d == axis else lo[d] for d in range(len(lo))]
    return (impl.subscript(None, active, ti.Vector(lo)) != 0) | (impl.subscript(None, active, ti.Vector(last)) != 0)
