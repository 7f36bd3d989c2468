"""Random velocity fields for decaying turbulence, drawn once on the host (numpy only).

The `turbulence` perturbation adds a Gaussian random velocity field with a power-law
spectrum to the state, as Athena++'s one-shot turbulence driver (src/fft/turbulence.cpp,
turb_flag = 1) does for the decaying supersonic turbulence of Mac Low et al. (1998) and
Stone, Ostriker & Gammie (1998): complex Gaussian amplitudes on the integer wave vectors n
of a band n_min <= |n| <= n_max, scaled by |k|^-(slope + D - 1)/2 (so that the energy per
shell goes as k^-slope in D dimensions), projected with the weighted Helmholtz projection
zeta P_perp + (1 - zeta) P_par (Federrath et al. 2010; Athena++'s f_shear), and scaled to a
root mean square velocity.

The driver draws a number per cell of the FFT grid, so its field depends on the grid. Here
the modes are drawn in a fixed order over the band's integer lattice, so the field depends
only on the seed, the band, the box and the dimension: the same point gets the same
velocity on any grid, in any block, at any quadrature node. The device sums the modes at
each point (kernels/initial.py); the host evaluates them at cell centres with one inverse FFT
(an independent reference for tests). The rms is analytic: the box average of |v|^2 is the
sum of the modes' energies, which the grid's point values reproduce to rounding when every
|n_d| is below half the cells along its axis.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Modes", "band_lattice", "draw_modes", "velocity_at_cell_centres"]


@dataclass(frozen=True)
class Modes:
    """A real velocity field v(x) = sum_m 2 Re(c_m exp(i k_m . x)) over half a lattice (n and -n
    are one mode): n (M, 3) integer wave numbers, k (M, 3) wave vectors k_d = 2 pi n_d / L_d,
    c (M, 3) complex amplitudes (zero along the axes the grid lacks)."""
    n: np.ndarray
    k: np.ndarray
    c: np.ndarray

    def table(self) -> np.ndarray:
        """(M, 9) float64 rows (k, a, b) with v(x) = sum_m a_m cos(k_m . x) + b_m sin(k_m . x):
        what the device reads."""
        return np.ascontiguousarray(np.hstack([self.k, 2.0 * self.c.real, -2.0 * self.c.imag]))

    def mean_square(self) -> float:
        """The box average of |v|^2: each mode's 2 |c_m|^2 (distinct modes are orthogonal)."""
        return float(2.0 * np.sum(np.abs(self.c) ** 2))


def band_lattice(n_min: int, n_max: int, dim: int) -> np.ndarray:
    """The integer vectors n (as (M, 3), zeros beyond dim) with n_min <= |n| <= n_max whose first
    nonzero component is positive, in a fixed order (lexicographic, x slowest)."""
    span = range(-n_max, n_max + 1)
    rows = []
    for n in np.ndindex(*([len(span)] * dim)):
        vector = [i - n_max for i in n]
        square = sum(i * i for i in vector)
        leading = next((i for i in vector if i), 0)
        if n_min * n_min <= square <= n_max * n_max and leading > 0:
            rows.append(vector + [0] * (3 - dim))
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def draw_modes(p: dict, dim: int, lower, upper, where: str) -> Modes:
    """The modes of a `turbulence` perturbation p (seed, n_min, n_max, slope,
    solenoidal_fraction, rms_velocity) in a box lower..upper of dimension dim; ValueError,
    prefixed with `where`, for a field that would be zero."""
    n = band_lattice(int(p["n_min"]), int(p["n_max"]), dim)
    length = np.array([float(upper[d]) - float(lower[d]) for d in range(dim)] + [1.0] * (3 - dim))
    k = 2.0 * math.pi * n / length
    gauss = np.random.default_rng(int(p["seed"])).standard_normal((len(n), dim, 2))
    c = np.zeros((len(n), 3), dtype=complex)
    c[:, :dim] = gauss[..., 0] + 1j * gauss[..., 1]
    magnitude = np.sqrt(np.sum(k * k, axis=1))
    khat = k / magnitude[:, None]
    along = khat * np.sum(khat * c, axis=1)[:, None]
    zeta = float(p["solenoidal_fraction"])
    c = zeta * (c - along) + (1.0 - zeta) * along
    c *= (magnitude ** (-(float(p["slope"]) + dim - 1) / 2.0))[:, None]
    energy = 2.0 * np.sum(np.abs(c) ** 2)
    if not energy > 0.0:
        raise ValueError(f"{where}: solenoidal_fraction = 1 leaves no velocity on a 1D grid (a field along x "
                         f"alone is compressive); choose solenoidal_fraction < 1")
    c *= float(p["rms_velocity"]) / math.sqrt(energy)
    return Modes(n, k, c)


def velocity_at_cell_centres(modes: Modes, cells, lower, upper) -> np.ndarray:
    """v at the cell centres lower + L (i + 1/2) / N of a grid, shape cells + (3,), by one
    inverse FFT per component: the modes' coefficients, shifted to the first centre, are
    added into the bins n mod N (aliased modes add up, as their point values do)."""
    cells = tuple(int(c) for c in cells)
    dim = len(cells)
    shift = sum(modes.k[:, d] * float(lower[d]) + math.pi * modes.n[:, d] / cells[d] for d in range(dim))
    coefficients = modes.c * np.exp(1j * shift)[:, None]
    bins = tuple(modes.n[:, d] % cells[d] for d in range(dim))
    v = np.zeros(cells + (3,))
    for component in range(3):
        spectrum = np.zeros(cells, dtype=complex)
        np.add.at(spectrum, bins, coefficients[:, component])
        v[..., component] = 2.0 * np.real(np.fft.ifftn(spectrum)) * math.prod(cells)
    return v
