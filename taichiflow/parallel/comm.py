"""The ranks of a run: MPI's (mpi4py) when `mpirun -n K` started K > 1 processes, else one.

mpi4py is imported only then, so that a one-process run needs no MPI installed. A launch is
recognised by the environment the common launchers give each process (MPICH's and Intel's
PMI_SIZE, Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_SIZE, Slurm's SLURM_NTASKS under srun).
The CUDA backend of Taichi always uses device 0, so a rank's GPU is chosen before Taichi starts,
by making only the GPU of its local rank visible (local_gpu).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ..errors import SimulationError

SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS")
LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID")


def launched_size() -> int:
    """Processes the launcher started (1 where none did)."""
    for name in SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


class Serial:
    """One process: every collective is the identity."""

    rank, size, local_rank = 0, 1, 0

    def allreduce_max(self, values):
        return np.asarray(values)

    def allreduce_min(self, values):
        return np.asarray(values)

    def allreduce_sum(self, values):
        return np.asarray(values)

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def bcast(self, value, root: int = 0):
        return value

    def barrier(self):
        pass

    def gather(self, value, root: int = 0):
        """[every rank's value] on root (None elsewhere)."""
        return [value]

    def post_exchange(self, sends, receives):
        raise RuntimeError("one process has no neighbour to exchange with")

    def wait_all(self, requests) -> None:
        raise RuntimeError("one process has no neighbour to exchange with")

    def abort(self, code: int):
        sys.exit(code)


class Mpi(Serial):
    """The processes of an MPI launch (mpi4py's COMM_WORLD)."""

    def __init__(self):
        try:
            from mpi4py import MPI
        except ImportError as err:
            raise SimulationError(f"started as one of {launched_size()} MPI processes, but mpi4py is not importable "
                                  f"({err}); install it with: pip install -e \".[mpi]\"") from None
        self.MPI = MPI
        self.world = MPI.COMM_WORLD
        self.rank, self.size = self.world.Get_rank(), self.world.Get_size()
        self.local_rank = _local_rank(self.world)

    def _allreduce(self, values, op):
        values = np.ascontiguousarray(values)
        out = np.empty_like(values)
        self.world.Allreduce(values, out, op=op)
        return out

    def allreduce_max(self, values):
        return self._allreduce(values, self.MPI.MAX)

    def allreduce_min(self, values):
        return self._allreduce(values, self.MPI.MIN)

    def allreduce_sum(self, values):
        return self._allreduce(values, self.MPI.SUM)

    def any(self, flag: bool) -> bool:
        return bool(self.world.allreduce(int(bool(flag)), op=self.MPI.MAX))

    def bcast(self, value, root: int = 0):
        return self.world.bcast(value, root=root)

    def barrier(self):
        self.world.Barrier()

    def gather(self, value, root: int = 0):
        return self.world.gather(value, root=root)

    def library(self) -> str:
        """The MPI library's name and version, its first line (for run.log)."""
        return " ".join(self.MPI.Get_library_version().strip().splitlines()[0].split())

    def cuda_aware(self):
        """Whether this MPI moves CUDA device memory itself (MPIX_Query_cuda_support, which Open
        MPI and MPICH both export; mpi4py does not wrap it): True, False, or None where the
        library has no such query."""
        import ctypes
        with open("/proc/self/maps") as maps:
            libraries = sorted({line.split()[-1] for line in maps if "/libmpi" in line and ".so" in line})
        for path in libraries:
            query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
            if query is not None:
                return bool(query())
        return None

    def post_exchange(self, sends, receives):
        """Every (buffer, rank, tag) of `sends` sent while every one of `receives` is received,
        started at once (non-blocking; wait_all finishes them): contiguous buffers, host or (a
        CUDA-aware MPI) device memory."""
        world = self.world
        requests = [world.Irecv(buffer, source=rank, tag=tag) for buffer, rank, tag in receives]
        return requests + [world.Isend(buffer, dest=rank, tag=tag) for buffer, rank, tag in sends]

    def wait_all(self, requests) -> None:
        self.MPI.Request.Waitall(requests)

    def abort(self, code: int):
        """End every rank (a failure on one rank must never leave the others waiting)."""
        sys.stdout.flush()
        sys.stderr.flush()
        self.world.Abort(code)


def _local_rank(world) -> int:
    for name in LOCAL_RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    from mpi4py import MPI
    return world.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()  # (the ranks sharing this node's memory)


_WORLD = None


def world():
    """The run's ranks (created once per process)."""
    global _WORLD
    if _WORLD is None:
        _WORLD = Mpi() if launched_size() > 1 else Serial()
    return _WORLD


def local_gpu(local_rank: int) -> str | None:
    """The GPU a rank uses, as CUDA_VISIBLE_DEVICES will name it: the local rank's among those
    visible (CUDA_VISIBLE_DEVICES, else nvidia-smi's list), shared round robin where there are
    fewer GPUs than ranks on the node; None where no GPU is listed."""
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not visible:
        try:
            listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        visible = [str(i) for i, line in enumerate(listing.splitlines()) if line.startswith("GPU ")]
    return visible[local_rank % len(visible)] if visible else None


def on_root(comm, action):
    """`action()` on rank 0 alone (what a run does once: its folder, its log); its error raised
    on every rank, so that no rank waits in a collective for one that gave up."""
    if comm.size == 1:
        return action()
    error = None
    if comm.rank == 0:
        try:
            action()
        except Exception as err:  # noqa: BLE001  (raised below, on every rank)
            error = err
    error = comm.bcast(error, root=0)
    if error is not None:
        raise error
    return None
