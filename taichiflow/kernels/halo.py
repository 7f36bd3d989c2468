"""The halo seam: where a grid split into blocks (MPI ranks) exchanges what its kernels share.

The solver calls `exchange_ghosts(W)` after every kernel that writes W (the ghost layers of
faces between blocks come from the neighbouring block; faces on the grid's boundary are
filled by kernels/boundaries.py), and reduces the step check's results over the blocks
before the device clock plans the next dt: `reduce_global` for a check read back on the
host, `reduce_global_in_step` inside a batch of steps (between merging the check's slots and
planning dt). On one block all of them are no-ops (SingleBlock), so a one-rank run launches
exactly the kernels it always did.
"""


class SingleBlock:
    """The whole grid on one device: nothing to exchange or reduce."""

    ranks = 1

    def exchange_ghosts(self, W) -> None:
        """Ghost layers of W on faces shared with other blocks: none here."""

    def reduce_global(self, rate: float, bad):
        """(max rate, first bad cell) over every block, from this block's."""
        return rate, bad

    def reduce_global_in_step(self, check) -> None:
        """The step check's merged rate, bad cell and model globals over every block: one block
        already has them."""
