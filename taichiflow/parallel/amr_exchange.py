"""Whole blocks of U between the ranks of an adaptive run: the copies of other ranks' leaves
refreshed before every stage, and a regrid's new blocks sent where they are held. Host
buffers through MPI (numpy), the one-rank gather and scatter kernels at each end."""
from __future__ import annotations

import numpy as np

TAG = 7  # (one message per pair of ranks at a time: a fixed tag)


def swap(comm, outgoing: dict, incoming: dict, block_shape: tuple, dtype) -> dict:
    """{rank: array} sent to each rank of `outgoing` while {rank: (count, *block_shape) array}
    arrives from each rank of `incoming` ({rank: count}); empty messages are not sent."""
    received = {q: np.empty((count,) + tuple(block_shape), dtype) for q, count in incoming.items() if count}
    sends = [(np.ascontiguousarray(data), q, TAG) for q, data in outgoing.items() if len(data)]
    if sends or received:
        comm.wait_all(comm.post_exchange(sends, [(buffer, q, TAG) for q, buffer in received.items()]))
    return received


class HaloRefresh:
    """refresh(): U of this rank's copies from their owners (RankLayout's lists): one gather
    of the blocks other ranks copy, the messages, one scatter."""

    def __init__(self, comm, layout, gather, scatter, block_shape: tuple, dtype):
        self.comm, self.gather, self.scatter = comm, gather, scatter
        self.block_shape, self.dtype = block_shape, dtype
        self.sends = {q: s for q, s in layout.sends.items() if len(s)}
        self.receives = {q: s for q, s in layout.receives.items() if len(s)}
        self.send_slots = np.concatenate([np.zeros(0, np.int64), *self.sends.values()]).astype(np.int32)
        self.receive_slots = np.concatenate([np.zeros(0, np.int64), *self.receives.values()]).astype(np.int32)

    def __call__(self) -> None:
        if not self.sends and not self.receives:
            return
        outgoing = {}
        if len(self.send_slots):
            data, start = self.gather(self.send_slots), 0
            for q, slots in self.sends.items():
                outgoing[q], start = data[start:start + len(slots)], start + len(slots)
        received = swap(self.comm, outgoing, {q: len(s) for q, s in self.receives.items()}, self.block_shape,
                        self.dtype)
        if len(self.receive_slots):
            self.scatter(self.receive_slots, np.concatenate([received[q] for q in self.receives]))
