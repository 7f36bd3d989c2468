"""Placement of the solver's arrays: interior rows of W on sector boundaries, every ghost
layer the stencils read present, and values read back where they were written."""
import numpy as np
import pytest
import taichi as ti

from taichiflow.kernels.state_arrays import SECTOR_BYTES, StateArrays, ghosted_extent, itemsize


@pytest.mark.parametrize("cells, ghosts, dtype, shape, offset", [
    ((256, 256, 256), 3, ti.f32, (262, 262, 272), (-3, -3, -8)),
    ((256, 256, 256), 3, ti.f64, (262, 262, 264), (-3, -3, -4)),
    ((40, 100), 2, ti.f32, (44, 112), (-2, -8)),
    ((30,), 9, ti.f64, (52,), (-12,)),
])
def test_ghosted_extent(cells, ghosts, dtype, shape, offset):
    got_shape, got_offset = ghosted_extent(cells, ghosts, dtype)
    assert (got_shape, got_offset) == (shape, offset)
    size = itemsize(dtype)
    lower, row = -got_offset[-1], got_shape[-1]
    assert lower >= ghosts and row - lower - cells[-1] >= ghosts  # every ghost layer exists
    assert lower * size % SECTOR_BYTES == 0 and row * size % SECTOR_BYTES == 0  # rows on sectors


def test_arrays_without_ghosts_keep_their_shape():
    """U, U0 and R: exactly the cells (their rows are not widened)."""
    assert ghosted_extent((7, 5, 3), 0, ti.f32) == ((7, 5, 3), (0, 0, 0))


def test_arrays_hold_their_values(arch):
    """Two fields in one tree, one ghosted: each cell, ghosts included, keeps its own value
    (a wrong offset or overlapping placement would mix them)."""
    ti.init(arch=ti.cuda if arch == "cuda" else ti.cpu, log_level=ti.WARN)
    state = StateArrays(ti.f32)
    U = state.vector(2, (5, 6, 7))
    W = state.vector(3, (5, 6, 7), ghosts=2)
    state.place()

    @ti.kernel
    def fill():
        for I in ti.grouped(ti.ndrange((-2, 7), (-2, 8), (-2, 9))):
            code = (I[0] * 100 + I[1] * 10 + I[2]) * 1.0
            W[I] = ti.Vector([code, code + 0.25, code + 0.5])
        for I in ti.grouped(ti.ndrange(5, 6, 7)):
            U[I] = ti.Vector([-1.0, -2.0])

    fill()
    w = W.to_numpy()
    i, j, k = np.meshgrid(np.arange(-2, 7), np.arange(-2, 8), np.arange(-2, 9), indexing="ij")
    lower = 8  # ghosted_extent((5, 6, 7), 2, f32): 8 cells below the last axis
    block = w[:, :, lower - 2:lower + 9]
    code = (i * 100 + j * 10 + k).astype(np.float32)
    np.testing.assert_array_equal(block[..., 0], code)
    np.testing.assert_array_equal(block[..., 2], code + 0.5)
    np.testing.assert_array_equal(U.to_numpy(), np.broadcast_to([-1.0, -2.0], (5, 6, 7, 2)))
