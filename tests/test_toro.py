"""Toro's Riemann problems against the exact solution, for four scheme families.

Bounds are the measured L1 errors at 400 cells plus about 20% (see docs/numerics.md for
the table); errors must also fall from 200 to 400 cells. Problems from Toro, "Riemann Solvers
and Numerical Methods for Fluid Dynamics", 3rd ed., table 10.1 (tests 1 to 5; test 2 is the
123 problem, 3 the left blast, 4 the collision) and Sod.

One run of 400 cells gives both grids (a Simulation and a compile of each scheme's kernels
less): at t/2 the window of 200 of its cells holds the run on 200 cells to t
(helpers.self_similar_window; the relative L1 errors measured equal to 7e-5, most of them
exactly), then it goes on to t. Its step is shortened to land on t/2, which moves its errors
at t by up to 6% from a run straight to t (the table's: MUSCL-Hancock on the collision;
under 0.5% for most), the largest now 0.865 of its bound.
"""
import numpy as np
import pytest

from exact_riemann import exact_riemann
from helpers import CASES, self_similar_window, simulate
from taichiflow.case import load_case

PROBLEMS = {  # case file: (left, right, x0, t)
    "sod.toml": ((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), 0.5, 0.2),
    "toro_123.toml": ((1.0, -2.0, 0.4), (1.0, 2.0, 0.4), 0.5, 0.15),
    "toro_blast.toml": ((1.0, 0.0, 1000.0), (1.0, 0.0, 0.01), 0.5, 0.012),
    "toro_collision.toml": ((5.99924, 19.5975, 460.894), (5.99242, -6.19633, 46.0950), 0.4, 0.035),
    # Toro's table 10.1 tests 1 (Sod with a sonic point in the rarefaction) and 5 (a left blast
    # moving left: the contact almost at rest), as sod.toml with other states.
    "toro_1": ((1.0, 0.75, 1.0), (0.125, 0.0, 0.1), 0.3, 0.2),
    "toro_5": ((1.0, -19.59745, 1000.0), (1.0, -19.59745, 0.01), 0.8, 0.012),
}

SCHEMES = {
    "weno5-hllc-lsrk3": ["scheme.reconstruction='weno5'", "scheme.riemann='hllc'", "scheme.integrator='lsrk3'"],
    "plm_minmod-hll-ssprk2": ["scheme.reconstruction='plm'", "scheme.limiter='minmod'", "scheme.riemann='hll'",
                              "scheme.integrator='ssprk2'"],
    "fd_weno5z_characteristic-lsrk3": ["scheme.method='finite_difference'", "scheme.reconstruction='weno5z'",
                                       "scheme.variables='characteristic'", "scheme.riemann='rusanov'",
                                       "scheme.integrator='lsrk3'"],
    "muscl_hancock-musta-euler": ["scheme.reconstruction='muscl_hancock'", "scheme.limiter='van_leer'",
                                  "scheme.riemann='musta'", "scheme.integrator='euler'", "scheme.cfl=0.4"],
}

# (scheme, problem) -> relative L1 bounds of (rho, u, p) at 400 cells
BOUNDS = {
    ('weno5-hllc-lsrk3', 'sod.toml'): [0.0016, 0.0033, 0.0012],
    ('weno5-hllc-lsrk3', 'toro_123.toml'): [0.0024, 0.0082, 0.0026],
    ('weno5-hllc-lsrk3', 'toro_blast.toml'): [0.0066, 0.0061, 0.0024],
    ('weno5-hllc-lsrk3', 'toro_collision.toml'): [0.0045, 0.0019, 0.003],
    ('plm_minmod-hll-ssprk2', 'sod.toml'): [0.003, 0.0053, 0.002],
    ('plm_minmod-hll-ssprk2', 'toro_123.toml'): [0.0055, 0.0097, 0.0066],
    ('plm_minmod-hll-ssprk2', 'toro_blast.toml'): [0.013, 0.0081, 0.0033],
    ('plm_minmod-hll-ssprk2', 'toro_collision.toml'): [0.008, 0.0024, 0.0036],
    ('fd_weno5z_characteristic-lsrk3', 'sod.toml'): [0.0017, 0.0037, 0.0014],
    ('fd_weno5z_characteristic-lsrk3', 'toro_123.toml'): [0.0034, 0.0106, 0.0037],
    ('fd_weno5z_characteristic-lsrk3', 'toro_blast.toml'): [0.0056, 0.0059, 0.0022],
    ('fd_weno5z_characteristic-lsrk3', 'toro_collision.toml'): [0.0039, 0.002, 0.0027],
    ('muscl_hancock-musta-euler', 'sod.toml'): [0.0013, 0.0021, 0.00054],
    ('muscl_hancock-musta-euler', 'toro_123.toml'): [0.002, 0.005, 0.0012],
    ('muscl_hancock-musta-euler', 'toro_blast.toml'): [0.007, 0.0044, 0.0016],
    ('muscl_hancock-musta-euler', 'toro_collision.toml'): [0.0047, 0.0013, 0.0021],
    ('weno5-hllc-lsrk3', 'toro_1'): [0.0019, 0.0029, 0.0012],
    ('plm_minmod-hll-ssprk2', 'toro_1'): [0.0035, 0.0041, 0.0018],
    ('fd_weno5z_characteristic-lsrk3', 'toro_1'): [0.0021, 0.0032, 0.0015],
    ('muscl_hancock-musta-euler', 'toro_1'): [0.0021, 0.0025, 0.0011],
    ('weno5-hllc-lsrk3', 'toro_5'): [0.0043, 0.0098, 0.0045],
    ('plm_minmod-hll-ssprk2', 'toro_5'): [0.0095, 0.0056, 0.0026],
    ('fd_weno5z_characteristic-lsrk3', 'toro_5'): [0.0041, 0.0044, 0.0017],
    ('muscl_hancock-musta-euler', 'toro_5'): [0.0077, 0.0052, 0.002],
}
# MUSCL-Hancock + MUSTA-FORCE + Euler makes p < 0 in the first step of test 5 at cfl 0.4 (the
# cell update, not a face state: the fallback cannot help); at cfl 0.2 it runs.
PROBLEM_SCHEME = {('muscl_hancock-musta-euler', 'toro_5'): ["scheme.cfl=0.2"]}


def problem_case(name: str, overrides):
    """The case of a problem: its file, or sod.toml with the problem's states."""
    if name.endswith(".toml"):
        return load_case(CASES / name, overrides)
    (rho_l, u_l, p_l), (rho_r, u_r, p_r), x0, t = PROBLEMS[name]
    states = [f"initial.background={{rho = {rho_l}, vel = [{u_l}, 0.0, 0.0], p = {p_l}}}",
              f"initial.regions.0.state={{rho = {rho_r}, vel = [{u_r}, 0.0, 0.0], p = {p_r}}}",
              f"initial.regions.0.point=[{x0}]", f"time.end={t}"]
    return load_case(CASES / "sod.toml", states + list(overrides))


def l1_errors(case_file, scheme, cells, arch="cpu"):
    left, right, x0, t = PROBLEMS[case_file]
    case = problem_case(case_file, [f"grid.cells=[{cells}]", *SCHEMES[scheme],
                                    *PROBLEM_SCHEME.get((scheme, case_file), [])])
    fields = simulate(case, arch).fields()
    x = (np.arange(cells) + 0.5) / cells
    exact = exact_riemann(left, right, x, t, x0=x0, gamma=1.4)
    computed = (fields["rho"], fields["vel"][:, 0], fields["p"])
    # relative L1 errors: each variable scaled by the largest |value| of its exact solution
    return np.array([np.abs(c - e).mean() / np.abs(e).max() for c, e in zip(computed, exact)])


def errors_at(fields, case_file, cells, window=slice(None)):
    """Relative L1 errors of (rho, u, p) of `cells` cells: fields[window] against the exact
    solution at the problem's end time."""
    left, right, x0, t = PROBLEMS[case_file]
    x = (np.arange(cells) + 0.5) / cells
    exact = exact_riemann(left, right, x, t, x0=x0, gamma=1.4)
    computed = (fields["rho"][window], fields["vel"][window, 0], fields["p"][window])
    return np.array([np.abs(c - e).mean() / np.abs(e).max() for c, e in zip(computed, exact)])


def coarse_and_fine_errors(case_file, scheme, arch="cpu"):
    """The errors of 200 and 400 cells from one run of 400 (this module's docstring)."""
    x0, t = PROBLEMS[case_file][2:]
    case = problem_case(case_file, ["grid.cells=[400]", *SCHEMES[scheme], *PROBLEM_SCHEME.get((scheme, case_file), [])])
    sim = simulate(case, arch, until=t / 2)
    coarse = errors_at(sim.fields(), case_file, 200, self_similar_window(400, 2, x0))
    sim.advance(t)
    return coarse, errors_at(sim.fields(), case_file, 400)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("case_file", sorted(PROBLEMS))
def test_toro_problem_l1_errors(case_file, scheme, arch):
    coarse, fine = coarse_and_fine_errors(case_file, scheme, arch)
    assert np.all(fine < coarse), (coarse, fine)
    assert np.all(fine < BOUNDS[(scheme, case_file)]), fine


def test_stationary_contact_stays_sharp_with_hllc_and_smears_with_hll(arch):
    rho = {}
    for riemann in ("hllc", "hll"):
        case = load_case(CASES / "stationary_contact.toml", [f"scheme.riemann='{riemann}'"])
        rho[riemann] = simulate(case, arch).fields()["rho"]
    assert np.abs(rho["hllc"][:50] - 1.4).max() < 1e-12 and np.abs(rho["hllc"][50:] - 1.0).max() < 1e-12
    assert np.sum((rho["hll"] > 1.01) & (rho["hll"] < 1.39)) >= 4


if __name__ == "__main__":  # print the error table for docs/numerics.md
    for scheme in SCHEMES:
        for case_file in PROBLEMS:
            errors = {n: l1_errors(case_file, scheme, n) for n in (100, 200, 400)}
            print(scheme, case_file, {n: np.round(e, 6).tolist() for n, e in errors.items()}, flush=True)
