"""One launch over the listed faces of every axis.

The ghost fills and the face register run over per-axis lists of block faces (where the
level jumps or the domain ends), each face a block of cells of a shape known at compile
time. A loop per axis made each such kernel three launches, each with a serial task for its
bounds: six tasks of a few microseconds, in every stage (on an H200, 16^3 blocks, 23% of
the device time of a Sedov blast with two levels went to the two fills and the register:
docs/amr.md). Here one flat index runs over the faces of every axis, axis after axis, and
each thread takes the axis its index falls in; within an axis the cells are in the order
`ti.grouped(ti.ndrange(count, *shape))` gives them, so neighbouring threads still write
neighbouring addresses.
"""
from math import prod

import taichi as ti


def listed_cells(dim: int, shape_of):
    """(total(counts), cell(n, counts, axis)): the number of cells of counts[axis] listed
    faces of shape shape_of(axis) on every axis, and flat cell n's J (listed face, then its
    indices in the face's shape) along `axis` with whether n falls on that axis."""
    shapes = [tuple(shape_of(axis)) for axis in range(dim)]
    sizes = [prod(shape) for shape in shapes]
    strides = [[prod(shape[d + 1:]) for d in range(len(shape))] for shape in shapes]

    @ti.func
    def total(counts):
        n = 0
        for axis in ti.static(range(dim)):
            n += counts[axis] * sizes[axis]
        return n

    @ti.func
    def cell(n, counts, axis: ti.template()):
        first = 0
        for a in ti.static(range(axis)):
            first += counts[a] * sizes[a]
        local = n - first
        here = (local >= 0) & (local < counts[axis] * sizes[axis])
        shape, stride = shapes[axis], strides[axis]
        return ti.Vector([local // sizes[axis]] + [(local // stride[d]) % shape[d] for d in range(len(shape))]), here

    return total, cell

