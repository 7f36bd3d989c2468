"""The `turbulence` perturbation (taichiflow/turbulence.py, kernels/initial.py): a random velocity
field that depends on its seed and band but not on the grid or its blocks, with the rms asked
for, zero mean, the Helmholtz mix asked for, and the spectral slope asked for.

Fields come from the device fill as point values at cell centres (the fill finite differences
use), except the 64^3 spectra, which come from the host's inverse FFT (test_initial_device.py
checks the two agree to 1e-13)."""
import math

import numpy as np
import pytest
import taichi as ti

from taichiflow.case import CaseError
from taichiflow.initial import initial_primitive
from taichiflow.kernels.initial import make_initial_fill
from taichiflow.model import Model
from taichiflow.run.states import resolve_states
from taichiflow.turbulence import band_lattice

EULER = {"rho": 1, "vel": 3, "p": 1}
PARAMS = {"gamma": 1.4}


@pytest.fixture(scope="module", autouse=True)
def taichi_cpu_f64():
    ti.init(arch=ti.cpu, default_fp=ti.f64, fast_math=False, log_level=ti.WARN)
    yield


def turbulence(**keys):
    return {"kind": "turbulence", "rms_velocity": 5.0, "n_min": 1, "n_max": 4, "slope": 2.0,
            "solenoidal_fraction": 0.5, "seed": 1, "_velocity": "vel", **keys}


def case_initial(rho=1.0, **keys):
    return {"background": {"rho": rho, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [],
            "perturbations": [turbulence(**keys)]}


def device_velocity(cells, lower=None, upper=None, **keys):
    """The device fill's velocity at the cell centres, shape cells + (3,)."""
    lower = lower or [0.0] * len(cells)
    upper = upper or [1.0] * len(cells)
    fill = make_initial_fill(case_initial(**keys), EULER, cells, lower, upper, PARAMS, ti.f64)
    W = ti.Vector.field(5, ti.f64, shape=tuple(cells))
    fill(W)
    return W.to_numpy()[..., 1:4]


def host_velocity(cells, lower=None, upper=None, **keys):
    lower = lower or [0.0] * len(cells)
    upper = upper or [1.0] * len(cells)
    return initial_primitive(case_initial(**keys), EULER, cells, lower, upper, PARAMS)[..., 1:4]


def spectral(v, lower, upper):
    """(FFT of v over the grid's axes, the wave vectors k as an array cells + (3,))."""
    cells = v.shape[:-1]
    axes = tuple(range(len(cells)))
    n = np.meshgrid(*[np.fft.fftfreq(c, 1.0 / c) for c in cells], indexing="ij")
    k = np.zeros(cells + (3,))
    for d in axes:
        k[..., d] = 2 * np.pi * n[d] / (upper[d] - lower[d])
    return np.fft.fftn(v, axes=axes), k


# --- reproducible, independent of the grid ---------------------------------------------------

def test_the_seed_fixes_the_field():
    """The same seed gives the same bits; another seed an uncorrelated field (slope -1: every
    mode of the band 1..8 weighs the same in 2D, so ~100 modes enter the correlation)."""
    keys = {"n_max": 8, "slope": -1.0}
    one = device_velocity([24, 20], **keys)
    again = device_velocity([24, 20], **keys)
    other = device_velocity([24, 20], seed=2, **keys)
    np.testing.assert_array_equal(one, again)
    correlation = np.sum(one * other) / math.sqrt(np.sum(one * one) * np.sum(other * other))
    assert abs(correlation) < 0.2, correlation            # measured 0.03
    assert np.abs(one - other).max() > 10.0                # rms 5 each; measured 16.8


def test_the_same_point_gets_the_same_velocity_on_any_grid():
    """The cell centres of 16^3 are centres of 48^3 too (every third, from the second): there
    the two fields agree bit for bit, also for modes the coarse grid cannot resolve (|n| up to
    6 on 16 cells)."""
    lower, upper = [-1.0, 0.0, 0.5], [1.0, 2.0, 2.5]
    coarse = device_velocity([16] * 3, lower, upper, n_min=2, n_max=6)
    fine = device_velocity([48] * 3, lower, upper, n_min=2, n_max=6)
    np.testing.assert_array_equal(fine[1::3, 1::3, 1::3], coarse)
    assert np.abs(coarse).max() > 1.0


def test_the_band_is_half_the_integer_lattice_in_a_fixed_order():
    """One of n and -n, |n| in the band, lexicographic: the order the random numbers follow."""
    n = band_lattice(1, 1, 3)
    np.testing.assert_array_equal(n, [[0, 0, 1], [0, 1, 0], [1, 0, 0]])
    wide = band_lattice(2, 5, 3)
    norms = np.sqrt((wide ** 2).sum(1))
    assert norms.min() >= 2 and norms.max() <= 5
    full = {tuple(v) for v in wide} | {tuple(-v) for v in wide}
    assert len(full) == 2 * len(wide) == sum(1 for v in np.ndindex(11, 11, 11)
                                             if 4 <= sum((i - 5) ** 2 for i in v) <= 25)
    assert [tuple(v) for v in wide] == sorted(tuple(v) for v in wide)
    np.testing.assert_array_equal(band_lattice(1, 3, 1), [[1, 0, 0], [2, 0, 0], [3, 0, 0]])


# --- the rms, the mean, the Helmholtz mix --------------------------------------------------

@pytest.mark.parametrize("cells, keys", [([32] * 3, {}), ([64, 64], {"n_max": 6}),
                                         ([256], {"n_max": 8, "solenoidal_fraction": 0.0})])
def test_rms_is_the_target_and_the_mean_momentum_zero(cells, keys):
    """The rms over the grid is the analytic one (no mode above half the cells), the mean
    velocity and, with a uniform density, the mean momentum vanish to rounding."""
    rho = 1.3
    v = device_velocity(cells, **keys)
    rms = math.sqrt(np.mean(np.sum(v * v, axis=-1)))
    assert abs(rms / 5.0 - 1.0) < 1e-12, rms              # the brief: 1%; measured 1e-15
    assert np.abs(v.mean(axis=tuple(range(len(cells))))).max() < 1e-14 * 5.0
    momentum = rho * v
    assert np.abs(momentum.sum(axis=tuple(range(len(cells))))).max() / v[..., 0].size < 1e-14 * rho * 5.0
    assert np.all(v[..., len(cells):] == 0.0)              # no velocity along the axes the grid lacks


@pytest.mark.parametrize("cells, lower, upper", [([32] * 3, [0.0] * 3, [1.0] * 3),
                                                 ([48, 24], [0.0, 0.0], [2.0, 1.0])])
def test_solenoidal_fields_are_divergence_free_and_compressive_ones_curl_free(cells, lower, upper):
    """k . v_hat = 0 for fraction 1 and k x v_hat = 0 for fraction 0, to rounding relative to
    |k| |v_hat|; in the 2:1 box too (the projection uses the physical k = 2 pi n / L)."""
    for fraction, measure in ((1.0, "divergence"), (0.0, "curl")):
        v_hat, k = spectral(device_velocity(cells, lower, upper, n_max=6, solenoidal_fraction=fraction),
                            lower, upper)
        scale = np.max(np.linalg.norm(k, axis=-1) * np.linalg.norm(v_hat, axis=-1))
        divergence = np.abs(np.sum(k * v_hat, axis=-1)).max() / scale
        curl = np.linalg.norm(np.cross(k, v_hat), axis=-1).max() / scale
        small, large = (divergence, curl) if measure == "divergence" else (curl, divergence)
        assert small < 1e-13, (fraction, small)            # measured ~1e-16
        assert large > 0.5, (fraction, large)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.8])
def test_the_mix_has_the_solenoidal_share_of_the_weighted_projection(fraction):
    """zeta P_perp + (1 - zeta) P_par of Gaussian amplitudes: the solenoidal share of the energy
    is 2 zeta^2 / (2 zeta^2 + (1 - zeta)^2) in 3D in expectation (2/3 at 0.5, as an unprojected
    field); slope -2 gives every mode the same weight, so the ~2000 modes average it to 2%."""
    v_hat, k = spectral(host_velocity([32] * 3, n_min=1, n_max=10, slope=-2.0, solenoidal_fraction=fraction),
                        [0.0] * 3, [1.0] * 3)
    magnitude = np.linalg.norm(k, axis=-1)
    khat = k / np.where(magnitude > 0, magnitude, 1.0)[..., None]
    compressive = np.sum(np.abs(np.sum(khat * v_hat, axis=-1)) ** 2)
    share = 1.0 - compressive / np.sum(np.abs(v_hat) ** 2)
    expected = 2 * fraction ** 2 / (2 * fraction ** 2 + (1 - fraction) ** 2)
    assert abs(share - expected) < 0.02, (share, expected)  # measured 0.1816, 0.6663, 0.9696


# --- the spectrum ---------------------------------------------------------------------------

def shell_energy(v):
    """E(k) for k = 0, 1, ...: (1/2) |FFT(v) / N|^2 summed over the shells round(|n|) = k."""
    cells = v.shape[:-1]
    v_hat, _ = spectral(v, [0.0] * len(cells), [1.0] * len(cells))
    n = np.meshgrid(*[np.fft.fftfreq(c, 1.0 / c) for c in cells], indexing="ij")
    shell = np.rint(np.sqrt(sum(x * x for x in n))).astype(int)
    power = 0.5 * np.sum(np.abs(v_hat) ** 2, axis=-1) / v[..., 0].size ** 2
    return np.bincount(shell.ravel(), weights=power.ravel())


def fitted_slope(energy, first, last):
    k = np.arange(first, last + 1)
    return -np.polyfit(np.log(k), np.log(energy[first:last + 1]), 1)[0]


@pytest.mark.parametrize("slope", [2.0, 5.0 / 3.0, 3.0])
def test_the_shell_spectrum_follows_the_slope(slope):
    """On 64^3 with the band 2..24, a least-squares fit of log E against log k over the shells
    3..23 (the two edge shells are half in the band) gives the slope within 0.2; no energy
    outside the band."""
    energy = shell_energy(host_velocity([64] * 3, n_min=2, n_max=24, slope=slope))
    assert abs(fitted_slope(energy, 3, 23) - slope) < 0.2       # measured 1.92, 1.59, 2.92
    assert energy[:2].sum() < 1e-28 * energy.sum() and energy[26:].sum() < 1e-28 * energy.sum()
    assert energy.sum() == pytest.approx(0.5 * 5.0 ** 2, rel=1e-12)


def test_the_slope_holds_in_2d():
    energy = shell_energy(host_velocity([128, 128], n_min=2, n_max=40, slope=2.0))
    assert abs(fitted_slope(energy, 3, 39) - 2.0) < 0.2        # measured 1.999


# --- what is refused ------------------------------------------------------------------------

def write_case(tmp_path, perturbation: str, cells="[16, 16]"):
    upper = "[" + ", ".join(["1.0"] * (cells.count(",") + 1)) + "]"
    path = tmp_path / "case.toml"
    path.write_text(f"""
[model]
name = "euler"
[grid]
cells = {cells}
upper = {upper}
[time]
end = 0.1
[initial]
background = {{rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0}}
[[initial.perturbations]]
{perturbation}
""")
    return path


@pytest.mark.parametrize("perturbation, cells, message", [
    ('kind = "turbulence"\nrms_velocity = 1.0\nn_min = 4\nn_max = 2', "[16, 16]",
     "[initial] perturbations.0.n_max: must be >= n_min, got n_max = 2 < n_min = 4"),
    ('kind = "turbulence"\nrms_velocity = 1.0\nn_max = 2\nsolenoidal_fraction = 1.0', "[16]",
     "[initial] perturbations.0.solenoidal_fraction: 1 leaves no velocity on a 1D grid"),
    ('kind = "turbulence"\nrms_velocity = 0.0\nn_max = 2', "[16, 16]",
     "[initial] perturbations.0.rms_velocity: out of range: allowed rms_velocity > 0, got 0.0"),
    ('kind = "turbulence"\nrms_velocity = 1.0', "[16, 16]", "[initial] perturbations.0.n_max: missing required key"),
])
def test_bad_turbulence_keys_are_one_line_case_errors(tmp_path, perturbation, cells, message):
    from taichiflow.case import load_case
    with pytest.raises(CaseError) as info:
        load_case(write_case(tmp_path, perturbation, cells))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_model_without_a_velocity_is_refused(tmp_path):
    from taichiflow.case import load_case
    case = load_case(write_case(tmp_path, 'kind = "turbulence"\nrms_velocity = 1.0\nn_max = 2'))
    case["initial"]["background"] = {"q": 1.0}
    scalar = Model("scalar", conserved={"q": 1}, primitive={"q": 1})
    with pytest.raises(CaseError) as info:
        resolve_states(case, scalar, {})
    assert str(info.value).endswith("[initial] perturbations.0: turbulence needs a model with a velocity "
                                    "(Model(velocity=...)); model 'scalar' has none")
