"""MUSTA-FORCE with several stages on Marti & Mueller's relativistic blast wave 2 (p 1000 | 0.01,
issue 42). With 2 or more stages the plain MUSTA flux at the jump gives the cold cell beside it
more momentum than energy (|S| > E) in the first step, at any CFL: the stages, run at the global
step's Courant number, mostly average the pair, and the flux tends to that of the averaged pair
(3 stages: momentum flux 537, energy flux 449; the exact Riemann flux 578 and 590). The MUSTA
flux is now limited toward Lax-Friedrichs just as far as the face's one-sided updates need to
stay admissible (numerics/riemann.py; docs/numerics.md, special-relativistic hydrodynamics);
every other face keeps the MUSTA flux bit for bit.
"""
from functools import lru_cache

import numpy as np
import pytest
import taichi as ti

from helpers import CASES, simulate
from srhd_exact import cell_averages, solve
from taichiflow.bound_model import BoundModel
from taichiflow.case import load_case
from taichiflow.model import load_model
from taichiflow.numerics.riemann import RIEMANN_SOLVERS
from taichiflow.run.backend import init_taichi

GAMMA = 5.0 / 3.0
BLAST_LEFT, BLAST_RIGHT = (1.0, 0.0, 0.0, 0.0, 1000.0), (1.0, 0.0, 0.0, 0.0, 0.01)  # (rho, vel, p)
EXACT_LEFT, EXACT_RIGHT = (1.0, 0.0, 0.0, 1000.0), (1.0, 0.0, 0.0, 0.01)  # srhd_exact's (rho, vx, vt, p)
# dt/dx of the case's first step: CFL 0.4 over the hot side's sound speed sqrt(gamma p / (rho h))
DT_DX = 0.4 / np.sqrt(GAMMA * 1000.0 / (1.0 + GAMMA / (GAMMA - 1.0) * 1000.0))


def srhd_physics(arch):
    """The SRHD model (gamma = 5/3) after a fresh f64 Taichi start."""
    init_taichi(arch, "f64", False)
    model = load_model(str(CASES.parent / "models" / "srhd.py"))
    return BoundModel(model, dict(model.params), ti.f64, ti.Vector.field(1, ti.f64, shape=()))


def musta_fluxes(phys, stages, left, right, dt_dx):
    """(the solver's flux, plain MUSTA-FORCE's flux, U_L, F_L, U_R, F_R) for each pair of rows of
    `left` and `right`. The plain flux is Cygert et al.'s eqs. 4-7 in 1D, written here again
    without the admissibility limiter: the reference the solver must equal where it does not limit."""
    solver = RIEMANN_SOLVERS["musta"](phys, {"riemann": "musta", "musta_stages": stages})
    n = len(left)
    w_in = ti.Vector.field(5, ti.f64, shape=(2, n))
    out = ti.Vector.field(5, ti.f64, shape=(6, n))
    w_in.from_numpy(np.stack([np.asarray(left, float), np.asarray(right, float)]))

    @ti.func
    def force(uL, fL, uR, fR, lam):
        u_half = 0.5 * (uL + uR) - 0.5 * lam * (fR - fL)
        f_lax_friedrichs = 0.5 * (fL + fR) - (0.5 / lam) * (uR - uL)
        return 0.5 * (phys.flux_of_state(u_half) + f_lax_friedrichs)

    @ti.kernel
    def fluxes(dt_dx: ti.f64):
        for i in range(n):
            uL0, fL0 = phys.state_and_flux(w_in[0, i])
            uR0, fR0 = phys.state_and_flux(w_in[1, i])
            uL, fL, uR, fR = uL0, fL0, uR0, fR0
            for _ in range(stages):
                f = force(uL, fL, uR, fR, dt_dx)
                uL = uL - dt_dx * (f - fL)
                uR = uR - dt_dx * (fR - f)
                fL = phys.flux_of_state(uL)
                fR = phys.flux_of_state(uR)
            out[0, i] = solver(w_in[0, i], w_in[1, i], dt_dx)
            out[1, i] = force(uL, fL, uR, fR, dt_dx)
            out[2, i], out[3, i], out[4, i], out[5, i] = uL0, fL0, uR0, fR0

    fluxes(dt_dx)
    return out.to_numpy()


def admissibility_margin(u):
    """(E^2 - |S|^2 - D^2) / E^2 of conserved (D, S, tau) rows, E = tau + D: > 0 for a fluid."""
    D, S, E = u[..., 0], u[..., 1:4], u[..., 4] + u[..., 0]
    return (E * E - np.sum(S * S, axis=-1) - D * D) / (E * E)


def test_plain_musta_gives_the_cold_side_more_momentum_than_energy(arch):
    """The root cause, at the jump of problem 2 with the case's first dt/dx: from 2 stages on,
    plain MUSTA's momentum flux exceeds its energy flux (F_D + F_tau), and the first-order update
    of the cold cell beside the jump, U_R + dt/dx (F - F_R), leaves the admissible set; with 1
    stage it does not. The solver's limited flux keeps both one-sided updates
    U_L - 2 dt/dx (F - F_L) and U_R + 2 dt/dx (F - F_R) admissible, and leaves 1 stage's alone."""
    phys = srhd_physics(arch)
    for stages in range(1, 7):
        rows = musta_fluxes(phys, stages, [BLAST_LEFT], [BLAST_RIGHT], DT_DX)
        limited, plain, uL, fL, uR, fR = (row[0] for row in rows)
        cold_cell = uR + DT_DX * (plain - fR)
        if stages == 1:
            assert admissibility_margin(cold_cell) > 0.1 and np.array_equal(limited, plain)
        else:
            assert plain[1] > plain[0] + plain[4], (stages, plain)  # momentum flux > energy flux
            assert admissibility_margin(cold_cell) < 0.0, stages
        assert admissibility_margin(uL - 2.0 * DT_DX * (limited - fL)) > 0.0, stages
        assert admissibility_margin(uR + 2.0 * DT_DX * (limited - fR)) > 0.0, stages
        assert uR[0] + 2.0 * DT_DX * (limited[0] - fR[0]) > 0.0


def one_sided_margins(flux, uL, fL, uR, fR, dt_dx):
    """The smaller admissibility margin of the face's one-sided updates U_L - 2 dt/dx (F - F_L) and
    U_R + 2 dt/dx (F - F_R), for rows of fluxes and pairs."""
    return np.minimum(admissibility_margin(uL - 2.0 * dt_dx * (flux - fL)),
                      admissibility_margin(uR + 2.0 * dt_dx * (flux - fR)))


def test_the_limiter_changes_only_faces_whose_one_sided_updates_leave_the_admissible_set(arch):
    """Random pairs (|v| up to 0.87, p from 0.1 to 10) at dt/dx = 0.4: where plain MUSTA's one-sided
    updates are admissible the flux is plain MUSTA's to the last bit; where they are not (5 of
    64 faces with 3 stages, all diverging flows: each side moving away, measured margins down to
    -0.72), the limited flux's are admissible. With 1 stage no face needs the limiter."""
    phys = srhd_physics(arch)
    rng = np.random.default_rng(42)
    n = 64

    def states():
        vel = rng.uniform(-0.5, 0.5, (n, 3))
        return np.column_stack([rng.uniform(0.5, 2.0, n), vel, rng.uniform(0.1, 10.0, n)])

    left, right = states(), states()
    for stages, expected_limited in ((1, 0), (3, 5)):
        limited, plain, uL, fL, uR, fR = musta_fluxes(phys, stages, left, right, 0.4)
        plain_margin = one_sided_margins(plain, uL, fL, uR, fR, 0.4)
        untouched = plain_margin > 1e-6
        if arch == "cpu":  # (CUDA contracts multiply-adds differently in the two kernels)
            assert np.array_equal(limited[untouched], plain[untouched]), stages
        else:
            np.testing.assert_allclose(limited[untouched], plain[untouched], rtol=1e-12, atol=1e-12)
        assert np.sum(~untouched) == expected_limited, plain_margin
        assert np.all(one_sided_margins(limited, uL, fL, uR, fR, 0.4)[~untouched] > -1e-6)


@lru_cache(maxsize=None)
def blast_2_density_error(stages, cells=100):
    """Relative L1 error of rho (sum |rho - exact| / sum |exact|, exact cell averages) of problem 2
    at t = 0.4 with PLM (MC) + MUSTA-FORCE + SSP-RK2 at the case's CFL 0.4, retries off: a step
    that leaves the admissible set ends the run."""
    case = load_case(CASES / "sr_marti_muller_2.toml", [f"grid.cells=[{cells}]", "scheme.riemann='musta'",
                                                          f"scheme.musta_stages={stages}", "scheme.retry={}"])
    sim = simulate(case)
    assert sim.t == pytest.approx(0.4)
    rho = sim.solver.primitive_array()[:, 0]
    exact = cell_averages(solve(EXACT_LEFT, EXACT_RIGHT, GAMMA), np.linspace(0.0, 1.0, cells + 1), 0.4, x0=0.5)[0]
    return float(np.abs(rho - exact).sum() / np.abs(exact).sum())


# measured at 100 cells (CPU f64): 1 stage 0.2592, 2 stages 0.2506, 3 stages 0.2492, 4 stages 0.2459;
# bounds about 2% above (docs/numerics.md has these and the 400-cell figures)
BOUNDS = {2: 0.2556, 3: 0.2542, 4: 0.2508}


@pytest.mark.parametrize("stages", sorted(BOUNDS))
def test_marti_mueller_2_runs_to_its_end_with_several_stages(stages):
    """2, 3 and 4 stages run problem 2 at CFL 0.4 to t = 0.4 with no step failed or retried,
    and each is at least as accurate as 1 stage. Before the limiter every one of them
    ended at step 1 (cell 49, p = -1)."""
    error = blast_2_density_error(stages)
    assert error < BOUNDS[stages], error
    assert error < blast_2_density_error(1), (error, blast_2_density_error(1))
