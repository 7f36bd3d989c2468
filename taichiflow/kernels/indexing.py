"""Index arithmetic of the kernels, resolved while they compile: cells moved along an axis,
64-bit linear indices, cell centres, and 64-bit integer extremes."""
import numpy as np
import taichi as ti
from taichi.lang import impl

from ..layout import component, with_component


def cell_center(I, lower, dx, offset=()):
    """Coordinates (x, y, z) of the centre of cell I of a block whose first cell is `offset` in
    the whole grid (() for the whole grid); zeros beyond the grid's dimension."""
    if offset:
        coords = [lower[d] + (component(I, d) + offset[d] + 0.5) * dx[d] for d in range(len(dx))]
    else:
        coords = [lower[d] + (component(I, d) + 0.5) * dx[d] for d in range(len(dx))]
    return ti.Vector(coords + [0.0] * (3 - len(dx)))


def with_axis0(C, i, dim: int):
    """The cell index of chunk-index vector C with its first component replaced by i."""
    return with_axis(C, 0, i, dim)


def with_axis(C, axis: int, i, dim: int):
    """Index vector C with its component along axis replaced by i."""
    return with_component(C, axis, i, dim)


@ti.func
def int64_min():
    return ti.cast(1, ti.i64) << 63


@ti.func
def int64_max():
    return ~int64_min()


def linear_index(I, cells):
    """Row-major linear index of a cell, in 64 bits (grids may exceed 2^31 cells)."""
    index = ti.cast(component(I, 0), ti.i64)
    for d in range(1, len(cells)):
        index = index * cells[d] + ti.cast(component(I, d), ti.i64)
    return index


def array_vector(array, J, dim: int, n: int):
    """The n trailing values of an ndarray at index vector J, as a Taichi vector."""
    index = [component(J, d) for d in range(dim)]
    return ti.Vector([impl.subscript(None, array, *index, c) for c in range(n)])


def numpy_dtype(dtype):
    return np.float32 if dtype == ti.f32 else np.float64


def centred_gradients(W, I, dx, n: int, dtype):
    """Per axis of a 3D frame, (W[I + e_d] - W[I - e_d]) / (2 dx_d) (W with at least one ghost
    layer, current), zeros on the axes the grid lacks: the grad of derived fields."""
    dim = len(dx)
    grads = []
    for d in range(3):
        if d < dim:
            above = impl.subscript(None, W, with_axis(I, d, component(I, d) + 1, dim))
            below = impl.subscript(None, W, with_axis(I, d, component(I, d) - 1, dim))
            grads.append((above - below) * (0.5 / dx[d]))
        else:
            grads.append(ti.Vector.zero(dtype, n))
    return grads
