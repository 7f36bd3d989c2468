"""Where a ghost slab waits between the kernels and the transport: four paths, one chosen at start-up.

- host: numpy arrays, which the pack and unpack kernels read and write. On the CPU backend
  that is in place; on CUDA Taichi copies a numpy argument to the device and back around each
  kernel (pageable memory, both ways, synchronously): correct everywhere, slow on a GPU.
- pinned: (CUDA, PyTorch importable) the kernels write and read Taichi ndarrays on the GPU,
  which torch CUDA tensors view in place (device_buffer), one DMA copy moves each slab to
  page-locked host memory and one brings it back; MPI sees only host memory.
- device: (CUDA, PyTorch, an MPI that says it is CUDA-aware) MPI reads and writes those torch
  CUDA tensors itself (mpi4py takes them through __cuda_array_interface__).
- nccl: (CUDA, PyTorch with NCCL, one GPU per rank) those torch CUDA tensors go GPU to GPU
  through NCCL (PyTorch's torch.distributed), over NVLink inside a node, and the step's
  reduction runs on NCCL too; MPI still launches the ranks, starts NCCL (rank 0's address
  through a broadcast) and does the host's reductions (checks read back, diagnostics).
  NCCL is the library that moves GPU buffers between the GPUs of deep-learning frameworks;
  an MPI that is not CUDA-aware (the usual PyPI and distribution builds) can only stage
  through host memory, whose shared-memory copies measured 2.5 GB/s on an H200 node
  (docs/scaling.md).

"auto" takes nccl where every rank has a GPU of its own (by UUID) and PyTorch has NCCL, else device
where the MPI is CUDA-aware, else pinned on CUDA where PyTorch is there, else host. PyTorch is
the established way to move CUDA memory between GPUs (NCCL) and to hold page-locked memory
from Python; here it views the memory of Taichi's ndarrays (device_buffer) and holds the
page-locked copies. Only these paths import it.
"""
from __future__ import annotations

import atexit
import datetime
import socket

import numpy as np
import taichi as ti

from ..errors import CaseError, SimulationError

class Slab:
    """One buffer: `kernel` is what the kernels take, `mpi` what MPI or NCCL moves; a pinned
    slab's device side as a torch tensor (`device`) and its page-locked host copy."""

    __slots__ = ("kernel", "mpi", "device", "host_tensor")

    def __init__(self, kernel, mpi, device=None, host_tensor=None):
        self.kernel, self.mpi, self.device, self.host_tensor = kernel, mpi, device, host_tensor


_TYPESTR = {"float32": "<f4", "float64": "<f8", "int64": "<i8"}


class _CudaMemory:
    """An address as torch.as_tensor takes it (__cuda_array_interface__, C order). It holds the
    array that owns the memory: torch keeps this object alive with the tensor, so the memory
    outlives every tensor viewing it (Taichi frees an ndarray's memory when it is collected)."""

    def __init__(self, owner, address: int, shape, dtype: str):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": tuple(int(n) for n in shape), "typestr": _TYPESTR[dtype],
                                         "data": (int(address), False), "strides": None, "version": 2}


def device_buffer(torch, shape, dtype: str):
    """A Taichi ndarray on the device and a torch tensor on the same memory, no copy: the
    kernels take the ndarray, the transport the tensor. A torch tensor passed to a kernel goes
    through Taichi's external-array path, which took 90 us of the host's time per launch on an
    H200 node (most of a many-rank step's host time: docs/scaling.md); an ndarray's takes a
    few. Taichi 1.7 has no DLPack export: its program gives an ndarray's device address (on
    the LLVM backends the allocation's own pointer), and torch takes memory by address through
    __cuda_array_interface__. `shape` ends with the vector's length for a slab of vectors."""
    element = {"float32": ti.f32, "float64": ti.f64, "int64": ti.i64}[dtype]
    if len(shape) > 1:
        array = ti.Vector.ndarray(int(shape[-1]), element, shape=tuple(int(n) for n in shape[:-1]))
    else:
        array = ti.ndarray(element, shape=(int(shape[0]),))
    address = ti.lang.impl.get_runtime().prog.get_ndarray_data_ptr_as_int(array.arr)
    return array, torch.as_tensor(_CudaMemory(array, address, shape, dtype), device="cuda")


class HostStaging:
    name = "host"
    describe = "host buffers (numpy)"

    def __init__(self, dtype):
        self.numpy_dtype = np.float32 if dtype == ti.f32 else np.float64

    def slab(self, shape) -> Slab:
        array = np.empty(shape, dtype=self.numpy_dtype)
        return Slab(array, array)

    def array(self, length: int, dtype: str) -> Slab:
        """A small array for kernels and all_reduce_max (the step's reduced values)."""
        array = np.zeros(length, dtype=dtype)
        return Slab(array, array)

    def all_reduce_max(self, comm, values: Slab) -> None:
        """values <- their elementwise maximum over the ranks."""
        values.mpi[:] = comm.allreduce_max(values.mpi)

    def after_pack(self, slabs) -> None:
        """Make the packed slabs' `mpi` side hold what the kernels wrote."""

    def before_unpack(self, slabs) -> None:
        """Make the received slabs' `kernel` side hold what MPI wrote."""

    def post(self, comm, sends, receives):
        """Every (buffer, rank, tag) of `sends` sent, of `receives` received (the `mpi` sides),
        started; returns what `wait` takes to finish them."""
        return comm, comm.post_exchange(sends, receives)

    def wait(self, handle) -> None:
        """The messages of one `post` arrived (here the host waits for them)."""
        comm, requests = handle
        comm.wait_all(requests)


class PinnedStaging(HostStaging):
    name = "pinned"
    describe = "page-locked host buffers (packed on the device, one DMA copy each way)"

    def __init__(self, dtype):
        super().__init__(dtype)
        import torch
        self.torch = torch
        self.torch_dtype = torch.float32 if dtype == ti.f32 else torch.float64
        self.dtype_name = "float32" if dtype == ti.f32 else "float64"

    def slab(self, shape) -> Slab:
        array, device = device_buffer(self.torch, shape, self.dtype_name)
        host = self.torch.empty(shape, dtype=self.torch_dtype, pin_memory=True)
        return Slab(array, host.numpy(), device, host)

    def after_pack(self, slabs) -> None:
        ti.sync()  # (the host must see the packed slabs: it waits for Taichi's stream first)
        for slab in slabs:
            slab.host_tensor.copy_(slab.device, non_blocking=True)
        self.torch.cuda.synchronize()

    def before_unpack(self, slabs) -> None:
        for slab in slabs:
            slab.device.copy_(slab.host_tensor, non_blocking=True)
        self.torch.cuda.synchronize()


class DeviceStaging(PinnedStaging):
    name = "device"
    describe = "device buffers (torch CUDA tensors handed to the CUDA-aware MPI)"

    def slab(self, shape) -> Slab:
        return Slab(*device_buffer(self.torch, shape, self.dtype_name))

    def after_pack(self, slabs) -> None:
        ti.sync()

    def before_unpack(self, slabs) -> None:
        """(MPI's receive has completed into device memory before Waitall returns.)"""


class NcclStaging(DeviceStaging):
    name = "nccl"
    describe = "device buffers, GPU to GPU through NCCL (torch.distributed)"  # (test_mpi looks for "through NCCL")

    def __init__(self, dtype, comm):
        super().__init__(dtype)
        import torch.distributed as dist
        self.dist = dist
        if not dist.is_initialized():
            try:
                self._start(comm)
            except Exception as err:  # noqa: BLE001  (any failure of the store or of NCCL's start)
                raise SimulationError(f"NCCL could not start on rank {comm.rank} ({type(err).__name__}: {err}); "
                                      "set [parallel] exchange = \"pinned\" to stage the ghost layers through "
                                      "host memory instead") from None

    def _start(self, comm):
        dist = self.dist
        hosts = comm.bcast(comm.gather(socket.gethostname()))
        address = "127.0.0.1" if len(set(hosts)) == 1 else hosts[0]
        store = dist.TCPStore(address, 0, comm.size, is_master=True, wait_for_workers=False) if comm.rank == 0 else None
        port = comm.bcast(store.port if store is not None else None)
        if store is None:
            store = dist.TCPStore(address, port, comm.size, is_master=False)
        self.torch.cuda.set_device(0)  # (each rank sees only its own GPU: parallel/comm.py)
        # (the host runs ahead of the GPUs, and ranks compile their own boundary kernels at
        # their first step: NCCL's watchdog must not take that for a hang)
        dist.init_process_group("nccl", store=store, rank=comm.rank, world_size=comm.size,
                                device_id=self.torch.device("cuda", 0), timeout=datetime.timedelta(hours=2))
        atexit.register(dist.destroy_process_group)  # (else NCCL warns at exit)

    def array(self, length: int, dtype: str) -> Slab:
        """On the GPU: the step's reduction never leaves it (a batch of steps reads nothing back)."""
        return Slab(*device_buffer(self.torch, (length,), dtype))

    def all_reduce_max(self, comm, values: Slab) -> None:
        """In place on the GPU, ordered on the stream like the exchange (no wait)."""
        self.dist.all_reduce(values.mpi, op=self.dist.ReduceOp.MAX)

    def after_pack(self, slabs) -> None:
        """No wait: Taichi launches its kernels on CUDA's legacy default stream, which is also
        torch's current stream, and torch.distributed makes NCCL's stream wait for that stream's
        work before it sends. The host never waits for the exchange (the GPU stays fed)."""

    def post(self, comm, sends, receives):
        """NCCL has no tags: messages between two ranks pair up in the order they are posted.
        A tag here is the sender's face (2 axis + side), so sends and receives both sorted by
        tag post each pair's messages in the same order on both ranks (and every rank posts
        the axes in the same order). Nothing waits here: NCCL's stream takes them up."""
        dist = self.dist
        operations = [dist.P2POp(dist.irecv, buffer, rank) for buffer, rank, _ in sorted(receives, key=_tag)]
        operations += [dist.P2POp(dist.isend, buffer, rank) for buffer, rank, _ in sorted(sends, key=_tag)]
        return dist.batch_isend_irecv(operations)

    def wait(self, handle) -> None:
        """The current (legacy default) stream, where the unpack kernels and the sweeps after
        them run, waits for NCCL's work; the host does not."""
        for work in handle:
            work.wait()

    def before_unpack(self, slabs) -> None:
        """(Ordered by the stream: see wait.)"""


def _tag(message):
    return message[2]


def own_gpu_each(comm) -> bool:
    """Whether no two ranks share a GPU (NCCL refuses a communicator with one GPU twice), by
    the GPUs' UUIDs: under a scheduler that isolates GPUs every rank may see its own as "0"."""
    import torch
    try:
        mine = str(torch.cuda.get_device_properties(0).uuid)
    except Exception:  # noqa: BLE001  (a torch without it: the node and the visible devices)
        import os
        mine = f"{socket.gethostname()}:{os.environ.get('CUDA_VISIBLE_DEVICES', '')}"
    every = comm.bcast(comm.gather(mine))
    return len(set(every)) == len(every)


def nccl_available() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return bool(dist.is_available() and dist.is_nccl_available())


def torch_cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def choose_staging(asked: str, arch: str, cuda_aware, dtype, comm, where: str = "[parallel] exchange"):
    """The staging for `asked` ("auto" or a path) on this backend; a path that cannot work here
    is refused with what it needs. Every rank decides alike: what each finds (PyTorch, CUDA,
    NCCL) is combined over the ranks before any branch."""
    has_torch_cuda, has_nccl = (bool(flag) for flag in comm.allreduce_min(
        np.array([arch == "cuda" and torch_cuda_available(), arch == "cuda" and nccl_available()], dtype=np.int64)))
    if asked == "auto":
        if arch != "cuda" or not has_torch_cuda:
            asked = "host"
        elif has_nccl and own_gpu_each(comm):
            asked = "nccl"
        else:
            asked = "device" if cuda_aware else "pinned"
    if asked == "host":
        return HostStaging(dtype)
    if arch != "cuda":
        raise CaseError(f"{where} = \"{asked}\" needs the CUDA backend (this run is on {arch}); use \"host\" or \"auto\"")
    if not has_torch_cuda:
        raise CaseError(f"{where} = \"{asked}\" needs PyTorch with CUDA (pip install torch); use \"host\" or \"auto\"")
    if asked == "device" and not cuda_aware:
        raise CaseError(f"{where} = \"device\" needs a CUDA-aware MPI, and this one does not report being one "
                        "(MPIX_Query_cuda_support); use \"pinned\", \"host\" or \"auto\"")
    if asked == "nccl":
        if not has_nccl:
            raise CaseError(f"{where} = \"nccl\": this PyTorch has no NCCL; use \"pinned\", \"host\" or \"auto\"")
        if not own_gpu_each(comm):
            raise CaseError(f"{where} = \"nccl\" needs a GPU per rank (NCCL refuses two ranks on one GPU); "
                            "use \"pinned\" or \"auto\"")
        return NcclStaging(dtype, comm)
    return DeviceStaging(dtype) if asked == "device" else PinnedStaging(dtype)
