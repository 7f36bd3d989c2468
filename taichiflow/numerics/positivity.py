"""The density limiter of a cell's reconstructed face states ([scheme] density_limiter).

Zhang & Shu (2010, J. Comput. Phys. 229, 8918): a cell's mean density is the three-point
Gauss-Lobatto average of its lower face value, an interior value and its upper face value,
with weights 1/6, 2/3, 1/6. A finite-volume step keeps the density positive (under a CFL
bound) when all three points are positive. A high-order reconstruction can break this in a
cell of a few cells' width beside far denser ones (an evacuated gas pocket beside water): its
face values take up the neighbours' density, their mean exceeds three times the cell's, and
the faces carry away more mass than the cell holds. The limiter moves both face values
towards the mean, by the least amount that keeps the three points at or above a small share
of the mean. It conserves the mean, leaves the cells that need nothing untouched (bit for
bit), and works on the density alone.
"""
import taichi as ti

from ..layout import component, with_component

# The least share of the mean density each of the three points may keep.
FLOOR_SHARE = 1e-3


def make_density_limiter(density_index: int):
    """A ti.func (mean W, lower face W, upper face W) -> the two face states, density limited."""

    @ti.func
    def limited(mean_state, lower, upper):
        mean = component(mean_state, density_index)
        low, high = component(lower, density_index), component(upper, density_index)
        interior = 1.5 * mean - 0.25 * (low + high)  # (mean - (low + high) / 6) / (2 / 3)
        least = ti.min(ti.min(low, high), interior)
        floor = FLOOR_SHARE * mean
        if least < floor:  # (mean > floor > least for a positive mean; else first order)
            theta = ti.select(mean > 0.0, (mean - floor) / ti.max(mean - least, 1e-30), 0.0)
            low, high = mean + theta * (low - mean), mean + theta * (high - mean)
        return (with_component(lower, density_index, low, lower.n),
                with_component(upper, density_index, high, upper.n))

    return limited

