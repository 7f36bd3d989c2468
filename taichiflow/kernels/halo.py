"""The halo seam: where a grid split into blocks (MPI ranks) exchanges what its kernels share.

The solver calls `exchange_ghosts(W)` after every kernel that writes W (the ghost layers of
faces between blocks come from the neighbouring block; faces on the grid's boundary are
filled by kernels/boundaries.py), or inside a step `begin_exchange` and, before each sweep,
`complete_exchange` with the axes that sweep reads (a block split only along axes that the
first sweep does not read has its layers travel while that sweep runs); `reduce_check` after
a check read back on the host, and `finish_step` inside a batch of steps in place of the
check's own finish (merge the slots, reduce over the blocks, then let the device clock plan
the next dt); the diagnostics reduce their block's values through `combine`. On one block
all of them are the single-block kernels alone (SingleBlock), so a one-rank run launches
exactly the kernels it always did; kernels/exchange.py is the MPI one.
"""

import numpy as np


class SingleBlock:
    """The whole grid on one device: nothing to exchange or reduce."""

    ranks = 1
    rank = 0
    exchange_path = None  # (several blocks: "host", "pinned", "device" or "nccl", parallel/staging.py)

    def describe(self, arch: str) -> str:
        """run.log's line on the split of the grid: none for one block."""
        return ""

    def exchange_ghosts(self, W) -> None:
        """Ghost layers of W on faces shared with other blocks: none here."""

    def begin_exchange(self, W) -> None:
        """Start exchange_ghosts without finishing it."""

    def complete_exchange(self, W, axes=None) -> bool:
        """Finish the begun exchange if `axes` (None: any axis) holds an axis it carries, ghost
        layers unpacked; whether this call finished one."""
        return False

    def reduce_check(self, check, rate: float, bad):
        """(max rate, first bad cell) over every block, from this block's (check: the step
        check, whose model globals are this block's)."""
        return rate, bad

    def finish_step(self, check) -> None:
        """Merge the step's check, reduce it over the blocks and plan the next dt: one kernel here."""
        check.finish_step()

    def combine(self, values: np.ndarray, how: str) -> np.ndarray:
        """A block's reduced values over every block: how is "sum", "min" or "max"."""
        return values

    def global_index(self, linear_index: int) -> int:
        """A cell's linear index in the whole grid from its index in this block."""
        return linear_index

    def bcast(self, value, root: int = 0):
        return value

    def any(self, flag: bool) -> bool:
        return bool(flag)
