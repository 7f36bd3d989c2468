"""The MPI halo's pieces that run without MPI: the bad cell's index in the whole grid computed
on the device (the step's reduction then needs no read back), the choice of the path the
ghost layers take ([parallel] exchange), and the order in which a step posts and waits for
each axis's layers."""
import numpy as np
import pytest
import taichi as ti

from taichiflow.errors import CaseError
from taichiflow.kernels.exchange import BlockExchange, _negated_global_bad_kernel
from taichiflow.kernels.ordered import NO_BAD_CELL
from taichiflow.parallel.comm import Serial
from taichiflow.parallel.decomposition import Decomposition
from taichiflow.parallel.staging import HostStaging, choose_staging


@pytest.mark.parametrize("grid, dims", [((12, 4, 20), (2, 1, 3)), ((30, 7), (3, 2)), ((40,), (4,))])
def test_a_blocks_bad_cell_becomes_minus_its_index_in_the_grid(arch, grid, dims):
    """Every block of a split, every one of its cells and no cell at all: the kernel gives
    -(the cell's linear index in the whole grid), the host's numpy unravel/ravel negated."""
    ti.init(arch=ti.cuda if arch == "cuda" else ti.cpu, log_level=ti.WARN)
    decomposition = Decomposition(grid, dims)
    for block in decomposition.blocks():
        kernel = _negated_global_bad_kernel(block.cells, block.offset, grid)
        n = int(np.prod(block.cells))
        for local in [*range(0, n, max(1, n // 7)), n - 1, NO_BAD_CELL]:
            values = np.array([1, 5, local, 7], dtype=np.int64)
            kernel(values)
            if local == NO_BAD_CELL:
                expected = -NO_BAD_CELL
            else:
                cell = np.unravel_index(local, block.cells)
                expected = -np.ravel_multi_index([c + o for c, o in zip(cell, block.offset)], grid)
            assert values[2] == expected and list(values[[0, 1, 3]]) == [1, 5, 7]


def test_the_cpu_backend_stages_through_numpy_and_refuses_the_gpu_paths_by_name():
    assert isinstance(choose_staging("auto", "cpu", False, ti.f64, Serial()), HostStaging)
    assert isinstance(choose_staging("host", "cpu", False, ti.f32, Serial()), HostStaging)
    for path in ("pinned", "device", "nccl"):
        with pytest.raises(CaseError, match=f'exchange = "{path}" needs the CUDA backend'):
            choose_staging(path, "cpu", False, ti.f32, Serial())



def _torch_stand_in():
    """What the stagings use of torch, standing in (CI has neither a GPU nor PyTorch): a view
    by address is the interface it was given."""
    from types import SimpleNamespace
    return SimpleNamespace(float32="float32", float64="float64", int64="int64", empty=_FakeTensor,
                           as_tensor=lambda memory, device: _View(memory.__cuda_array_interface__, device))


class _View:
    def __init__(self, interface, device):
        self.interface, self.device = interface, device


def _memory_at(view):
    """numpy over the memory a view's interface names (on the CPU backend, host memory)."""
    import ctypes
    interface = view.interface
    dtype = np.dtype(interface["typestr"])
    count = int(np.prod(interface["shape"]))
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(interface["data"][0])
    return np.frombuffer(raw, dtype=dtype).reshape(interface["shape"])


def test_a_device_buffer_is_a_taichi_ndarray_that_the_transport_views_in_place():
    """parallel.staging.device_buffer: the kernels take a Taichi ndarray (its launches skip the
    external-array path), the transport a tensor on the same memory. On the CPU backend the
    address is host memory, so numpy reads what a kernel wrote there: the address, the shape
    with the vector's length last and the element type of the view are the ndarray's."""
    from taichiflow.parallel.staging import device_buffer
    ti.init(arch=ti.cpu, log_level=ti.WARN)
    torch = _torch_stand_in()
    for dtype, kind in (("float32", ti.f32), ("float64", ti.f64)):
        slab, view = device_buffer(torch, (3, 4, 5, 7), dtype)
        assert view.device == "cuda" and view.interface["shape"] == (3, 4, 5, 7)
        values = np.arange(3 * 4 * 5 * 7, dtype=dtype).reshape(3, 4, 5, 7) / 7.0
        slab.from_numpy(values)
        assert np.array_equal(_memory_at(view), values)
        assert slab.dtype == kind and slab.n == 7 and slab.shape == (3, 4, 5)
    counts, view = device_buffer(torch, (5,), "int64")
    counts.from_numpy(np.array([3, -1, 2**40, 0, 7], dtype=np.int64))
    assert list(_memory_at(view)) == [3, -1, 2**40, 0, 7]


def test_nccl_keeps_the_steps_values_on_the_gpu_and_reduces_them_there():
    """With NCCL the step's values are a device array all-reduced by NCCL, never a numpy array
    reduced through MPI (a read back per step: 90% against 85% weak efficiency on 4 H200s).
    torch and torch.distributed are stand-ins here: CI has neither a GPU nor PyTorch."""
    from types import SimpleNamespace
    from taichiflow.parallel.staging import NcclStaging
    ti.init(arch=ti.cpu, log_level=ti.WARN)
    calls = []
    staging = object.__new__(NcclStaging)  # (without __init__, which starts NCCL)
    staging.torch = _torch_stand_in()
    staging.dist = SimpleNamespace(ReduceOp=SimpleNamespace(MAX="max"),
                                   all_reduce=lambda values, op: calls.append((values, op)))
    values = staging.array(5, "int64")
    assert values.kernel.shape == (5,) and values.mpi.interface["typestr"] == "<i8"

    class NoMpi(Serial):
        def allreduce_max(self, values):
            raise AssertionError("the step's values went through MPI")

    staging.all_reduce_max(NoMpi(), values)
    assert calls == [(values.mpi, "max")]


def test_a_step_waits_for_the_ghost_layers_only_before_the_first_sweep_that_reads_a_shared_axis():
    """CUDA f32's sweeps: the walk along x reads x and z (shuffles), the walk along y reads y.
    Split along y only (1x2x1, periodic: both y faces shared), the exchange is packed and posted
    as one batch, and completing it for the first sweep does nothing: the layers travel while
    that sweep runs, and are waited for and unpacked before the walk along y. Split along x
    too (2x2x1), the first sweep waits for them."""
    events = []

    class Recording(HostStaging):
        def post(self, comm, sends, receives):
            events.append(("post", sorted(tag for _, _, tag in sends), sorted(tag for _, _, tag in receives)))
            return len(events)

        def wait(self, handle):
            events.append(("wait", handle))

    def block_exchange(dims):
        class Ranks(Serial):
            size = int(np.prod(dims))

        decomposition = Decomposition((8, 8, 8), dims)
        exchange = BlockExchange(Ranks(), decomposition, decomposition.block(0), (True, True, True), 3, 5, ti.f32,
                                 Recording(ti.f32))
        exchange._packs = [lambda W, slab, face=face: events.append(("pack", face[:2])) for face in exchange.faces]
        exchange._unpacks = [lambda W, slab, face=face: events.append(("unpack", face[:2])) for face in exchange.faces]
        return exchange

    sweep_axes = [(0, 2), (1,)]
    along_y = block_exchange((1, 2, 1))
    along_y.begin_exchange(None)
    assert events == [("pack", (1, 0)), ("pack", (1, 1)), ("post", [2, 3], [2, 3])]
    assert along_y.complete_exchange(None, sweep_axes[0]) is False and len(events) == 3  # (in flight)
    assert along_y.complete_exchange(None, sweep_axes[1]) is True
    assert events[3:] == [("wait", 3), ("unpack", (1, 0)), ("unpack", (1, 1))]
    assert along_y.complete_exchange(None) is False  # (nothing left)
    del events[:]
    along_x_and_y = block_exchange((2, 2, 1))
    along_x_and_y.begin_exchange(None)
    assert along_x_and_y.complete_exchange(None, sweep_axes[0]) is True
    assert events == [("pack", (0, 0)), ("pack", (0, 1)), ("pack", (1, 0)), ("pack", (1, 1)),
                      ("post", [0, 1, 2, 3], [0, 1, 2, 3]), ("wait", 5), ("unpack", (0, 0)), ("unpack", (0, 1)),
                      ("unpack", (1, 0)), ("unpack", (1, 1))]


class _FakeTensor:
    """A stand-in for a torch tensor: where it lives, and its host memory as numpy."""

    def __init__(self, shape, dtype, device=None, pin_memory=False):
        self.shape, self.dtype, self.device, self.pinned = tuple(shape), dtype, device, pin_memory

    def numpy(self):
        return np.zeros(self.shape, dtype=np.float32 if self.dtype == "float32" else np.float64)


def test_on_cuda_auto_takes_nccl_then_a_cuda_aware_mpi_then_page_locked_buffers(monkeypatch):
    """choose_staging on the CUDA backend (stand-ins for PyTorch: CI has neither a GPU nor
    PyTorch, and no machine here has a CUDA-aware MPI): NCCL where every rank has its GPU;
    else, with an MPI that reports CUDA support, `device`, whose slabs MPI moves as the very
    tensors the kernels write (no host copy); else `pinned`, whose MPI side is page-locked
    host memory; `device` asked of an MPI that is not CUDA-aware is refused by name. run.log
    says which path and whether the MPI is CUDA-aware."""
    import sys
    from taichiflow.parallel import staging
    ti.init(arch=ti.cpu, log_level=ti.WARN)
    monkeypatch.setitem(sys.modules, "torch", _torch_stand_in())
    monkeypatch.setattr(staging, "torch_cuda_available", lambda: True)
    monkeypatch.setattr(staging, "own_gpu_each", lambda comm: True)
    monkeypatch.setattr(staging.NcclStaging, "__init__", lambda self, dtype, comm: None)  # (no NCCL start)
    for has_nccl, cuda_aware, chosen in ((True, False, staging.NcclStaging), (True, True, staging.NcclStaging),
                                         (False, True, staging.DeviceStaging), (False, False, staging.PinnedStaging)):
        monkeypatch.setattr(staging, "nccl_available", lambda: has_nccl)
        assert type(choose_staging("auto", "cuda", cuda_aware, ti.f32, Serial())) is chosen
    device = choose_staging("device", "cuda", True, ti.f32, Serial()).slab((3, 8, 5))
    assert device.kernel.shape == (3, 8) and device.mpi.device == "cuda"  # (MPI moves the kernels' memory)
    assert device.mpi.interface["typestr"] == "<f4" and device.mpi.interface["shape"] == (3, 8, 5)
    pinned = choose_staging("pinned", "cuda", False, ti.f64, Serial()).slab((3, 8, 5))
    assert pinned.kernel.shape == (3, 8) and pinned.device.interface["typestr"] == "<f8"
    assert pinned.host_tensor.pinned and isinstance(pinned.mpi, np.ndarray)  # (MPI sees host memory)
    with pytest.raises(CaseError, match='exchange = "device" needs a CUDA-aware MPI'):
        choose_staging("device", "cuda", False, ti.f32, Serial())

    class AwareRanks(Serial):
        size = 2

        def cuda_aware(self):
            return True

        def library(self):
            return "Some MPI 1.0"

    decomposition = Decomposition((8, 8, 8), (1, 2, 1))
    exchange = BlockExchange(AwareRanks(), decomposition, decomposition.block(0), (False, False, False), 3, 5,
                             ti.f32, staging.DeviceStaging(ti.f32))
    assert exchange.describe("cuda") == (
        "MPI: 2 ranks, 1x2x1 blocks (rank 0's [8, 4, 8] cells); Some MPI 1.0, CUDA-aware; ghost layers exchanged "
        "through device buffers (torch CUDA tensors handed to the CUDA-aware MPI), every face at once, awaited by "
        "the first sweep that reads a shared axis")
