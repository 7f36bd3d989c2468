"""Smooth nonlinear problems for observed orders (tests/test_high_order.py, tools/orders.py).

The isentropic wave: rho = 1 + 0.2 sin(2 pi s), u = 0, p = rho^gamma, periodic, with s the
distance along the wave's normal in wavelengths. Both acoustic families steepen it (a shock
forms near t = 0.35 for a unit wavelength), so nothing here is linear. Its solution at
t = 0.2 has no closed form: the reference is a 1D finite-difference run on REFERENCE_CELLS
(an error near 1e-13, far below the errors measured), read between its points through its
Fourier series (the solution is smooth and periodic, so that is spectrally accurate), as
point values or as exact cell averages.

Finite differences start from and are compared with point values at cell centres; finite
volumes with cell averages of U (Gauss quadrature of the exact initial state).
"""
from functools import lru_cache
from pathlib import Path

import numpy as np

from helpers import case_from_text

GAMMA = 1.4
END = 0.2
REFERENCE_CELLS = 1536
# The highest order path: finite differences, WENO5-Z, RK4 (its reference solution).
REFERENCE_SCHEME = ['scheme.method="finite_difference"', 'scheme.reconstruction="weno5z"',
                    'scheme.integrator="lsrk4"', "scheme.cfl=0.2"]
FINITE_DIFFERENCE = ['scheme.method="finite_difference"', 'scheme.integrator="lsrk4"']

_CASE = """
[model]
name = "euler"
params = {{ gamma = {gamma} }}
[grid]
cells = {cells}
upper = {upper}
[scheme]
riemann = "rusanov"
[time]
end = {end}
[boundary]
{boundary}
[initial]
background = {{ rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }}
"""


def wave_state(s) -> np.ndarray:
    """Primitive (rho, u_n, p) of the wave at phase s (wavelengths)."""
    rho = 1.0 + 0.2 * np.sin(2.0 * np.pi * s)
    return np.stack([rho, np.zeros_like(rho), rho ** GAMMA], axis=-1)


def wave_conserved(s) -> np.ndarray:
    """(rho, rho u_n, E) of the wave at rest."""
    w = wave_state(s)
    return np.stack([w[..., 0], w[..., 1], w[..., 2] / (GAMMA - 1.0)], axis=-1)


def is_finite_difference(overrides) -> bool:
    return any("finite_difference" in o for o in overrides)


def _axes(normal) -> int:
    return int(np.count_nonzero(normal))


def end_time(normal) -> float:
    """END in the time of a wave whose wavelength is 1/sqrt(axes) box lengths: the Euler
    equations are invariant under x, t -> x/L, t/L, so one reference serves every direction."""
    return END / np.sqrt(_axes(normal))


def wave_case(tmp_path, cells, overrides=()):
    """A periodic unit box of `cells`."""
    dim = len(cells)
    text = _CASE.format(gamma=GAMMA, cells=list(cells), upper=[1.0] * dim, end=END,
                        boundary="\n".join(f'{a} = "periodic"' for a in "xyz"[:dim]))
    return case_from_text(tmp_path, text, overrides)


def _phase(cells, normal, offsets=None):
    """The wave's phase sin(2 pi phase) at the cell centres (plus offsets, in cells):
    phase = sum of x_d over the axes the unit normal has a component on."""
    centres = np.meshgrid(*[(np.arange(n) + 0.5) / n for n in cells], indexing="ij")
    offsets = offsets or [0.0] * len(cells)
    return sum(np.sign(normal[d]) * (centres[d] + offsets[d] / cells[d])
               for d in range(len(cells)) if normal[d] != 0)


def initial_wave(cells, normal, finite_difference: bool) -> np.ndarray:
    """W of the wave on the unit box of `cells`: point values at centres or, for finite
    volumes, cell averages of U (Gauss-Legendre, 5 points per axis) converted to W."""
    dim = len(cells)
    nodes, weights = (np.zeros(1), np.full(1, 2.0)) if finite_difference else np.polynomial.legendre.leggauss(5)
    U = 0.0
    for index in np.ndindex(*([len(nodes)] * dim)):
        phase = _phase(cells, normal, [0.5 * nodes[k] for k in index])
        U = U + np.prod([weights[k] / 2.0 for k in index]) * wave_conserved(phase)
    rho, mom_n, E = U[..., 0], U[..., 1], U[..., 2]
    u_n = mom_n / rho
    W = np.zeros(tuple(cells) + (5,))
    W[..., 0] = rho
    for d in range(dim):
        W[..., 1 + d] = u_n * normal[d]
    W[..., 4] = (GAMMA - 1.0) * (E - 0.5 * rho * u_n ** 2)
    return W


def run_wave(tmp_path, cells, normal, overrides=(), precision="f64", arch="cpu") -> np.ndarray:
    """The density of the wave at end_time(normal) on the grid `cells` with the scheme `overrides`."""
    from helpers import precise
    from taichiflow.run import Simulation
    case = wave_case(tmp_path, cells, ["output.interval=0", *overrides])
    sim = Simulation(precise(case, arch, precision))
    sim.set_primitive(initial_wave(cells, normal, is_finite_difference(overrides)))
    sim.advance(end_time(normal))
    sim.solver.refresh_primitives()
    return sim.solver.primitive_array()[..., 0]


@lru_cache(maxsize=None)
def _reference_coefficients(arch: str) -> np.ndarray:
    """Fourier coefficients of the reference density over one wavelength at END."""
    import tempfile
    rho = run_wave(Path(tempfile.mkdtemp(prefix="taichiflow-reference-")), (REFERENCE_CELLS,), (1.0,),
                   REFERENCE_SCHEME, arch=arch)
    return np.fft.fft(rho) / REFERENCE_CELLS


def reference_density(phase, cell_widths=(), arch="cpu") -> np.ndarray:
    """The reference density at `phase`; with cell_widths (in phase units, one per axis the
    phase sums over) its average over such a cell centred there."""
    c = _reference_coefficients(arch)
    n = len(c)
    k = np.fft.fftfreq(n, 1.0 / n)
    keep = np.abs(k) < n // 2
    factor = np.prod([np.sinc(k * h) for h in cell_widths], axis=0) if cell_widths else np.ones_like(k)
    shifted = np.asarray(phase)[..., None] - 0.5 / n  # the reference's first point is at h/2
    return np.real(np.sum(c[keep] * factor[keep] * np.exp(2j * np.pi * k[keep] * shifted), axis=-1))


def wave_error(rho, cells, normal, finite_difference: bool, arch="cpu") -> float:
    """Mean |rho - reference| over the grid: point values, or cell averages."""
    widths = () if finite_difference else [1.0 / cells[d] for d in range(len(cells)) if normal[d] != 0]
    return float(np.mean(np.abs(rho - reference_density(_phase(cells, normal), widths, arch))))


def observed_order(errors: list) -> list:
    return [float(np.log2(a / b)) for a, b in zip(errors, errors[1:])]
