"""Ghost layers of W after the primitives kernels (which write them, _build_boundaries),
checked cell by cell against each boundary kind's definition, on a random interior."""
import numpy as np
import pytest

from helpers import case_from_text, precise
from taichiflow.run import Simulation
from taichiflow.kernels.state_arrays import ghosted_extent

CASE = """
[model]
name = "euler"
[grid]
cells = [5, 7, 6]
upper = [1.0, 1.4, 1.2]
[scheme]
reconstruction = "weno5"
riemann = "hllc"
[time]
end = 1.0
[boundary]
x = "periodic"
y = ["wall", "outflow"]
z = ["inflow", "wall"]
[boundary.inflow]
z_lower = { rho = 1.3, vel = [0.3, -0.45, 0.7], p = 2.1 }
[initial]
background = { rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }
"""


@pytest.mark.parametrize("cells", [[5, 7, 6], [2, 7, 6], [1, 7, 6]])  # periodic x shorter than the ghosts
def test_every_ghost_cell_holds_its_boundary_value(tmp_path, cells, arch):
    text = CASE.replace("cells = [5, 7, 6]", f"cells = {cells}")
    sim = Simulation(precise(case_from_text(tmp_path, text), arch))
    solver = sim.solver
    g, cells, n = solver.ghost, solver.cells, solver.phys.W.n
    rng = np.random.default_rng(7)
    w = np.empty(cells + (n,))
    w[..., 0] = rng.uniform(0.5, 2.0, cells)    # rho
    w[..., 1:4] = rng.uniform(-1.0, 1.0, cells + (3,))  # vel
    w[..., 4] = rng.uniform(0.5, 2.0, cells)    # p
    solver.set_primitive(w)
    solver.check_state()  # the stage-1 primitives (with the check)
    _, offset = ghosted_extent(cells, g, solver.dtype)
    stored = solver.W.to_numpy()
    lo = [-o for o in offset]
    w = stored[lo[0]:lo[0] + cells[0], lo[1]:lo[1] + cells[1], lo[2]:lo[2] + cells[2]]  # W = prim(U)

    def ghost(i, j, k):
        return stored[i + lo[0], j + lo[1], k + lo[2]]

    inflow = np.array([1.3, 0.3, -0.45, 0.7, 2.1])
    for j in range(cells[1]):
        for k in range(cells[2]):
            for layer in range(1, g + 1):  # x periodic
                np.testing.assert_array_equal(ghost(-layer, j, k), w[-layer % cells[0], j, k])
                np.testing.assert_array_equal(ghost(cells[0] - 1 + layer, j, k), w[(layer - 1) % cells[0], j, k])
    for i in range(cells[0]):
        for k in range(cells[2]):
            for layer in range(1, g + 1):
                mirror = w[i, layer - 1, k].copy()  # y lower wall: mirror, normal velocity negated
                mirror[2] = -mirror[2]
                np.testing.assert_array_equal(ghost(i, -layer, k), mirror)
                np.testing.assert_array_equal(ghost(i, cells[1] - 1 + layer, k), w[i, -1, k])  # outflow
        for j in range(cells[1]):
            for layer in range(1, g + 1):
                np.testing.assert_allclose(ghost(i, j, -layer), inflow, rtol=0, atol=1e-15)  # z inflow
                mirror = w[i, j, cells[2] - layer].copy()  # z upper wall
                mirror[3] = -mirror[3]
                np.testing.assert_array_equal(ghost(i, j, cells[2] - 1 + layer), mirror)


def test_a_wall_axis_shorter_than_the_stencil_is_refused(tmp_path, arch):
    text = CASE.replace("cells = [5, 7, 6]", "cells = [5, 2, 6]")
    with pytest.raises(ValueError, match=r"\[grid\] cells: 2 cells along y, fewer than the 3 ghost layers.*wall"):
        Simulation(precise(case_from_text(tmp_path, text), arch))


def test_every_boundary_kind_of_the_registry_has_a_ghost_fill_and_an_unknown_kind_is_an_error():
    from taichiflow import registry
    from taichiflow.kernels import boundaries

    copied = {**boundaries.GHOST_COPIES, **boundaries.OPEN_COPIES}
    for kind in registry.boundary_kinds.names():
        assert (kind in copied) != boundaries.is_constant(kind), kind
    assert set(copied) <= set(registry.boundary_kinds.names())
    assert not set(boundaries.GHOST_COPIES) & set(boundaries.OPEN_COPIES)  # (open faces keep their tiles active)
    with pytest.raises(ValueError, match="unknown .*'walll'.*did you mean 'wall'"):
        boundaries.make_boundaries(None, (8,), 2, None, None, [("walll", "outflow")])
