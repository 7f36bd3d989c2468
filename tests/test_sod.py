"""Sod's shock tube against the exact solution (Toro, ch. 4)."""
import numpy as np
import pytest

from exact_riemann import exact_riemann
from helpers import CASES, l1, simulate
from taichiflow.case import load_case


def sod_density_error(cells: int, arch="cpu", scheme=()) -> float:
    case = load_case(CASES / "sod.toml", [f"grid.cells=[{cells}]", *scheme])
    sim = simulate(case, arch)
    x = (np.arange(cells) + 0.5) / cells
    rho, _, _ = exact_riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), x, 0.2, x0=0.5, gamma=1.4)
    return l1(sim.fields()["rho"], rho, 1.0 / cells)


def test_sod_weno5_hllc_l1_error_small_and_decreasing(arch):
    errors = {n: sod_density_error(n, arch) for n in (100, 200, 400)}
    # Discontinuities limit L1 convergence to first order: the error is dominated by the
    # few cells smearing the shock and contact, about (jump) x (3 cells) x dx each. At 400
    # cells that is ~ (0.15 + 0.14) * 3 / 400 ~ 2e-3; WENO5+HLLC measures 1.3e-3.
    assert errors[400] < 2.0e-3
    assert errors[100] > errors[200] > errors[400]
    assert errors[100] / errors[400] > 2.5  # close to first order between 100 and 400 cells


@pytest.mark.parametrize("scheme,bound", [
    (("scheme.reconstruction='first_order'", "scheme.riemann='rusanov'", "scheme.integrator='euler'"), 1.3e-2),
    (("scheme.reconstruction='plm'", "scheme.limiter='minmod'", "scheme.riemann='hll'",
      "scheme.integrator='ssprk2'"), 3.0e-3),
    (("scheme.reconstruction='plm'", "scheme.limiter='mc'", "scheme.riemann='hllc'",
      "scheme.integrator='ssprk3'"), 1.7e-3),
])
def test_sod_other_schemes_converge(scheme, bound, arch):
    """Bounds are the measured 400-cell errors (2.5e-3, 1.4e-3, 1.1e-2) plus ~20%."""
    coarse, fine = sod_density_error(200, arch, scheme), sod_density_error(400, arch, scheme)
    assert fine < coarse
    assert fine < bound
