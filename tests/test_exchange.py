"""The MPI halo's pieces that run without MPI: the bad cell's index in the whole grid computed
on the device (the step's reduction then needs no read back), and the choice of the path the
ghost layers take ([parallel] exchange)."""
import numpy as np
import pytest
import taichi as ti

from taichiflow.errors import CaseError
from taichiflow.kernels.exchange import _negated_global_bad_kernel
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



def test_nccl_keeps_the_steps_values_on_the_gpu_and_reduces_them_there():
    """With NCCL the step's values are a CUDA tensor all-reduced by NCCL, never a numpy array
    reduced through MPI (a read back per step: 90% against 85% weak efficiency on 4 H200s).
    torch and torch.distributed are stand-ins here: CI has neither a GPU nor PyTorch."""
    from types import SimpleNamespace
    from taichiflow.parallel.staging import NcclStaging
    calls = []
    staging = object.__new__(NcclStaging)  # (without __init__, which starts NCCL)
    staging.torch = SimpleNamespace(int64="int64", zeros=lambda n, dtype, device: ("tensor", n, dtype, device))
    staging.dist = SimpleNamespace(ReduceOp=SimpleNamespace(MAX="max"),
                                   all_reduce=lambda values, op: calls.append((values, op)))
    values = staging.array(5, "int64")
    assert values == ("tensor", 5, "int64", "cuda")

    class NoMpi(Serial):
        def allreduce_max(self, values):
            raise AssertionError("the step's values went through MPI")

    staging.all_reduce_max(NoMpi(), values)
    assert calls == [(values, "max")]
