"""U between the ranks of an adaptive run: before every stage the cells of the copies of other
ranks' leaves that this rank's kernels read (parallel/amr_slabs.py), packed on the device and
moved through the staging the uniform grid's ghost slabs take ([parallel] exchange:
parallel/staging.py: host, pinned, device or NCCL); and, rarely, whole blocks (a regrid's new
blocks, the siblings a merge reads) through host buffers."""
from __future__ import annotations

import numpy as np
import taichi as ti

from .amr_slabs import HaloSlabs

TAG = 7  # (one message per pair of ranks at a time: a fixed tag)


def swap(comm, outgoing: dict, incoming: dict, block_shape: tuple, dtype) -> dict:
    """{rank: array} sent to each rank of `outgoing` while {rank: (count, *block_shape) array}
    arrives from each rank of `incoming` ({rank: count}); empty messages are not sent."""
    received = {q: np.empty((count,) + tuple(block_shape), dtype) for q, count in incoming.items() if count}
    sends = [(np.ascontiguousarray(data), q, TAG) for q, data in outgoing.items() if len(data)]
    if sends or received:
        comm.wait_all(comm.post_exchange(sends, [(buffer, q, TAG) for q, buffer in received.items()]))
    return received


def _runs(lists: dict) -> list:
    """[(rank, start, end)]: each non-empty message's cells in the concatenation (rank order)."""
    runs, start = [], 0
    for q, entries in lists.items():
        cells = HaloSlabs.cells(entries)
        if cells:
            runs.append((q, start, start + cells))
            start += cells
    return runs


def _row_array(lists: dict, runs: list):
    """The messages' rows joined, each one's cells placed after the messages before it, as a
    Taichi ndarray (on the device: the pack and unpack kernels take it at every refresh
    without a copy); None where there are none."""
    parts = [lists[q] + np.array([0, 0, 0, start]) for q, start, _ in runs]
    if not parts:
        return None
    joined = np.concatenate(parts)
    array = ti.ndarray(ti.i64, shape=joined.shape)
    array.from_numpy(joined)
    return array


class SlabRefresh:
    """refresh(): this rank's copies' cells that its kernels read, from their owners (a
    HaloSlabs' lists): one pack launch of every cell the other ranks read into one buffer (a
    slice per rank), the messages through `staging`, one unpack launch (U and W); or in two
    halves, start() and finish(), with work on the own leaves between. The same code serves
    every staging: only where the buffers live and how they travel differ."""

    def __init__(self, comm, staging, slabs, pack, unpack, n_conserved: int):
        self.comm, self.staging, self.pack, self.unpack = comm, staging, pack, unpack
        self.send_runs, self.receive_runs = _runs(slabs.sends), _runs(slabs.receives)
        self.n_sent = self.send_runs[-1][2] if self.send_runs else 0
        self.n_received = self.receive_runs[-1][2] if self.receive_runs else 0
        self._send_rows = _row_array(slabs.sends, self.send_runs)
        self._receive_rows = _row_array(slabs.receives, self.receive_runs)
        self._counts = (sum(len(slabs.sends[q]) for q, _, _ in self.send_runs),
                        sum(len(slabs.receives[q]) for q, _, _ in self.receive_runs))
        self._sent = staging.slab((max(self.n_sent, 1), n_conserved))
        self._received = staging.slab((max(self.n_received, 1), n_conserved))
        self.bytes_sent = self.n_sent * n_conserved * np.dtype(staging.numpy_dtype).itemsize  # (each refresh)
        self._posted = None  # (what start posted, until finish)

    def __call__(self) -> None:
        self.start()
        self.finish()

    def start(self) -> None:
        """The own cells packed and the messages posted: kernels launched before `finish` run
        while they travel (with NCCL on the GPU's side too: its stream waits for the pack,
        Taichi's for the messages only at finish), so they must not read the copies."""
        self._posted = None
        if not self.send_runs and not self.receive_runs:
            return
        if self.n_sent:
            self.pack(self._send_rows, self._sent.kernel, self._counts[0])
        self.staging.after_pack([self._sent])
        sends = [(self._sent.mpi[a:b], q, TAG) for q, a, b in self.send_runs]
        receives = [(self._received.mpi[a:b], q, TAG) for q, a, b in self.receive_runs]
        self._posted = self.staging.post(self.comm, sends, receives)

    def finish(self) -> None:
        """The messages of `start` arrived and the copies' cells unpacked (U and W)."""
        if self._posted is None:
            return
        self.staging.wait(self._posted)
        self._posted = None
        self.staging.before_unpack([self._received])
        if self.n_received:
            self.unpack(self._receive_rows, self._received.kernel, self._counts[1])
