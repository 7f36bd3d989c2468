"""Sedov-Taylor blast: shock radius against the similarity solution, and symmetry.

R(t) = xi0 (E t^2 / rho)^(1/(nu + 2)), nu = 2 (cylindrical, E per unit length) or 3
(spherical). xi0 for gamma = 1.4: 1.0040 (cylindrical, alpha = 0.984) and 1.0328 (spherical,
alpha = 0.851; Taylor's 1.033), from J. R. Kamm & F. X. Timmes, "On efficient generation
of numerically robust Sedov solutions", LA-UR-07-2849 (2007): xi0 = alpha^(-1/(nu+2)).

The radius is read where the angle-averaged density outside its peak falls half way to the
ambient value; that estimate converges from above (2D: +2.3% at 64^2, +0.2% at 128^2;
3D: +4.5% at 48^3, +3.9% at 64^3), so the 3% check runs in 2D at 128^2 on the CPU and in
3D at 128^3 on a GPU.
"""
import numpy as np
import pytest

from helpers import CASES, simulate
from taichiflow.case import load_case

XI0 = {2: 1.0040, 3: 1.0328}


def shock_radius(rho: np.ndarray, centers) -> float:
    """Radius where the angle-averaged density, outside its peak, falls half way to ambient."""
    r = np.sqrt(sum(c * c for c in centers))
    edges = np.linspace(0.0, r.max(), int(rho.shape[0]))
    which = np.digitize(r.ravel(), edges)
    profile = np.array([rho.ravel()[which == k].mean() if np.any(which == k) else np.nan
                        for k in range(1, len(edges))])
    mid = 0.5 * (edges[1:] + edges[:-1])
    peak = np.nanargmax(profile)
    half = 0.5 * (profile[peak] + 1.0)
    outside = np.where(profile[peak:] < half)[0][0] + peak
    # linear interpolation between the last bin above and the first below the half level
    f = (profile[outside - 1] - half) / (profile[outside - 1] - profile[outside])
    return float(mid[outside - 1] + f * (mid[outside] - mid[outside - 1]))


def check_sedov(dim, cells, end, arch):
    case = load_case(CASES / f"sedov{dim}d.toml", [f"grid.cells={[cells] * dim}", f"time.end={end}"])
    sim = simulate(case, arch, until=0.0)
    sim.solver.refresh_primitives()
    energy = sim.solver.reductions()[0][-1]  # the deposited energy of the discrete sphere
    sim.advance(end)
    rho = sim.fields()["rho"]
    h = 1.0 / cells
    axes = [-0.5 + (np.arange(cells) + 0.5) * h] * dim
    centers = np.meshgrid(*axes, indexing="ij")
    expected = XI0[dim] * (energy * end ** 2 / 1.0) ** (1.0 / (dim + 2))
    measured = shock_radius(rho, centers)
    assert abs(measured / expected - 1.0) < 0.03, (measured, expected)
    # Symmetric under every mirror and axis exchange, to round-off.
    scale = rho.max()
    for axis in range(dim):
        assert np.abs(np.flip(rho, axis) - rho).max() <= 1e-12 * scale
    for a in range(dim):
        for b in range(a + 1, dim):
            assert np.abs(np.swapaxes(rho, a, b) - rho).max() <= 1e-12 * scale


def test_sedov_2d_shock_radius_and_symmetry(arch):
    check_sedov(2, 128, 0.1, arch)


@pytest.mark.cuda
def test_sedov_3d_shock_radius_and_symmetry_on_gpu():
    check_sedov(3, 128, 0.05, "cuda")
