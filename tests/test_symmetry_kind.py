"""Boundary kind "symmetry": numerically exactly a wall (the mirror image with the normal
velocity negated), declared so that the viewer can show the whole domain."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise
from taichiflow import registry
from taichiflow.case import load_case
from taichiflow.run import Simulation

# A blast in the corner of the quarter domain: the shock runs into both lower faces at once.
QUARTER_BLAST = """
[model]
name = "euler"
[grid]
cells = [12, 10]
upper = [1.0, 0.8]
[scheme]
reconstruction = "{recon}"
riemann = "hllc"
[time]
end = 1.0
[boundary]
x = ["{kind}", "outflow"]
y = ["{kind}", "outflow"]
[initial]
background = {{ rho = 1.0, vel = [0.1, -0.2, 0.0], p = 0.1 }}
[[initial.regions]]
shape = "sphere"
center = [0.0, 0.0, 0.0]
radius = 0.3
smoothing = 0.02
state = {{ rho = 2.0, p = 10.0 }}
"""


def _advanced_fields(tmp_path, kind, recon, arch, precision):
    case = case_from_text(tmp_path, QUARTER_BLAST.format(kind=kind, recon=recon), name=f"{kind}.toml")
    sim = Simulation(precise(case, arch, precision))
    sim.advance(1.0, max_steps=25)
    return sim.fields()


@pytest.mark.parametrize("recon,precision", [("weno5", "f64"), ("plm", "f32")])
def test_a_symmetry_run_is_bit_for_bit_the_wall_run(tmp_path, arch, recon, precision):
    wall = _advanced_fields(tmp_path, "wall", recon, arch, precision)
    symmetry = _advanced_fields(tmp_path, "symmetry", recon, arch, precision)
    assert wall.keys() == symmetry.keys()
    assert np.abs(wall["vel"]).max() > 0.5            # the blast has reached the faces
    for name in wall:
        np.testing.assert_array_equal(symmetry[name], wall[name], err_msg=name)


def test_symmetry_needs_the_velocity_and_enough_cells_as_a_wall_does(tmp_path):
    entry = registry.boundary_kinds.get("symmetry")
    assert entry.needs_roles == registry.boundary_kinds.get("wall").needs_roles == ("velocity",)
    text = QUARTER_BLAST.format(kind="symmetry", recon="weno5").replace("cells = [12, 10]", "cells = [12, 2]")
    with pytest.raises(ValueError, match=r"2 cells along y, fewer than the 3 ghost layers.*a symmetry face's "
                                         r"mirror image needs at least 3"):
        Simulation(precise(case_from_text(tmp_path, text)))


def test_the_shipped_bubbles_declare_their_symmetry_planes():
    rayleigh = load_case(CASES / "rayleigh_collapse.toml")["boundary"]
    assert all(rayleigh[axis][0] == "symmetry" for axis in "xyz")
    bubble = load_case(CASES / "bubble_collapse.toml")["boundary"]
    assert [bubble[axis][0] for axis in "xyz"] == ["inflow", "symmetry", "symmetry"]
