"""MUSCL-Hancock on 2D and 3D grids (CPU, f64): the predictor of Cygert et al.'s eq. 9, whose
half-step change sums the flux differences of every axis, is second order in time on smooth
nonlinear flow; the stable limit of each scheme that has one is refused above it, by name."""
import numpy as np
import pytest

from helpers import CASES, simulate
from smooth_problems import observed_order, run_wave, wave_error
from taichiflow.case import CaseError, load_case

MUSCL_HANCOCK = ["scheme.method='finite_volume'", "scheme.reconstruction='muscl_hancock'", "scheme.limiter='mc'",
                 "scheme.riemann='hllc'", "scheme.integrator='euler'"]


def vortex_density(cells: int, until=None) -> np.ndarray:
    """rho of Shu's vortex (cases/isentropic_vortex.toml) with MUSCL-Hancock at the default
    cfl 0.4, after one period (or at `until`)."""
    case = load_case(CASES / "isentropic_vortex.toml",
                     [f"grid.cells=[{cells}, {cells}]", "output.interval=0", *MUSCL_HANCOCK])
    sim = simulate(case, until=until, max_steps=1 if until == 0.0 else 0)
    sim.solver.refresh_primitives()
    return sim.solver.primitive_array()[..., 0]


def test_the_vortex_is_second_order_and_stable_at_the_default_cfl():
    """One period along the diagonal, 32^2 -> 64^2: order 2.49 (64^2 -> 128^2: 2.37; with the
    normal flux alone in the predictor it was 0.96, and max rho grew past 1.1 at 128^2)."""
    errors = []
    for cells in (32, 64):
        initial, final = vortex_density(cells, until=0.0), vortex_density(cells)
        errors.append(float(np.abs(final - initial).mean()))
        assert final.max() < 1.0 + 1e-3  # (the vortex only lowers the density: 1 is its maximum)
    assert observed_order(errors)[0] >= 1.8, errors
    assert errors[1] < 1.2e-3, errors  # measured 1.09e-3


def test_a_nonlinear_wave_along_the_diagonal_of_a_cube_is_second_order(tmp_path):
    """The isentropic wave of smooth_problems.py along (1, 1, 1), 16^3 -> 32^3 at cfl 0.3:
    order 2.96 (errors 1.67e-3, 2.14e-4)."""
    settings = [*MUSCL_HANCOCK, "scheme.cfl=0.3"]
    errors = [wave_error(run_wave(tmp_path, (n,) * 3, (1.0, 1.0, 1.0), settings), (n,) * 3, (1.0, 1.0, 1.0), False)
              for n in (16, 32)]
    assert observed_order(errors)[0] >= 1.8, errors
    assert errors[1] < 2.5e-4, errors


@pytest.mark.parametrize("case,overrides,message", [
    ("sr_blast_3d.toml", ["scheme.cfl=0.4"],
     r"\[scheme\] cfl: 0.4 is above 1/3, the stable limit of reconstruction = 'muscl_hancock' on a 3D grid: "
     r"it is stable while the Courant numbers of the three axes add up to at most 1; set \[scheme\] cfl <= 0.333"),
    ("riemann2d.toml", ["scheme.riemann='force'", "scheme.cfl=0.6"], "above 1/2, the stable limit of riemann = 'force'"),
    ("riemann2d.toml", ["scheme.retry={riemann='musta'}", "scheme.cfl=0.55"],
     r"riemann = 'musta' \(the retry scheme\) on a 2D grid"),
    ("sedov3d.toml", ["scheme.integrator='euler'", "scheme.reconstruction='first_order'"],
     "0.4 is above 1/3, the stable limit of integrator = 'euler'"),
])
def test_a_cfl_above_a_schemes_stable_limit_is_refused_by_name(case, overrides, message):
    with pytest.raises(CaseError, match=message):
        load_case(CASES / case, overrides)


def test_the_limits_follow_the_axes_a_step_crosses_together():
    """A split step crosses one axis at a time: MUSCL-Hancock's and forward Euler's limit is then
    1; FORCE's alpha is the dimension whatever the split, so its limit stays 1/d. 1D grids: 1."""
    split = ["scheme.dimensional_splitting=true", *MUSCL_HANCOCK, "scheme.cfl=0.8"]
    assert load_case(CASES / "riemann2d.toml", split)["scheme"]["cfl"] == 0.8
    with pytest.raises(CaseError, match="riemann = 'force'"):
        load_case(CASES / "riemann2d.toml", [*split, "scheme.riemann='force'"])
    assert load_case(CASES / "sod.toml", [*MUSCL_HANCOCK, "scheme.cfl=0.9"])["scheme"]["cfl"] == 0.9
    assert load_case(CASES / "riemann2d.toml", [*MUSCL_HANCOCK, "scheme.cfl=0.5"])["scheme"]["cfl"] == 0.5


def test_amr_refuses_the_unsplit_predictor_by_name(tmp_path, capsys):
    from taichiflow.cli import main
    code = main(["run", str(CASES / "shock_bubble_amr.toml"), "--out", str(tmp_path / "out"),
                 "--set", "scheme.reconstruction='muscl_hancock'", "--set", "scheme.integrator='euler'"])
    assert code == 1
    assert "reconstruction = 'muscl_hancock' is not supported with [amr] on 2D and 3D grids yet" in capsys.readouterr().err
