"""Checks of the exact Riemann solver against Toro's tables and conservation laws."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_riemann import exact_riemann, star_state  # noqa: E402

# Toro, Riemann Solvers and Numerical Methods for Fluid Dynamics, Tables 4.1-4.3:
# (left, right, p*, u*, rho*L, rho*R), gamma = 1.4.
TORO = [
    ((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), 0.30313, 0.92745, 0.42632, 0.26557),
    ((1.0, -2.0, 0.4), (1.0, 2.0, 0.4), 0.00189, 0.0, 0.02185, 0.02185),
    ((1.0, 0.0, 1000.0), (1.0, 0.0, 0.01), 460.894, 19.5975, 0.57506, 5.99924),
    ((1.0, 0.0, 0.01), (1.0, 0.0, 100.0), 46.0950, -6.19633, 5.99242, 0.57511),
    ((5.99924, 19.5975, 460.894), (5.99242, -6.19633, 46.0950),
     1691.64, 8.68975, 14.2823, 31.0426),
]
TORO_IDS = ["test%d" % (i + 1) for i in range(len(TORO))]

# Gas-water shock tube: high-pressure water (stiffened gas) | air (ideal gas).
WATER = (1000.0, 0.0, 1e9)
AIR = (50.0, 0.0, 1e5)
G_W, PC_W, G_A = 4.4, 6e8, 1.4
WA = dict(gamma=G_W, gamma_right=G_A, pc_left=PC_W, pc_right=0.0)
WA_X0, WA_T = 0.7, 2e-4


def table_approx(v):
    """Toro prints 5-6 significant digits (p* of test 2 only 3)."""
    return pytest.approx(v, rel=2e-5, abs=5e-6)


@pytest.mark.parametrize("case", TORO, ids=TORO_IDS)
def test_star_state_matches_toro(case):
    left, right, p_ref, u_ref, _, _ = case
    p_s, u_s = star_state(left, right)
    assert p_s == table_approx(p_ref)
    assert u_s == table_approx(u_ref)


@pytest.mark.parametrize("case", TORO, ids=TORO_IDS)
def test_star_densities_match_toro(case):
    """Sample just either side of the contact, x/t = u* -+ 1e-7."""
    left, right, p_ref, u_ref, rl_ref, rr_ref = case
    t = 0.01
    _, u_s = star_state(left, right)
    x = np.array([u_s - 1e-7, u_s + 1e-7]) * t
    rho, u, p = exact_riemann(left, right, x, t)
    assert rho[0] == table_approx(rl_ref)
    assert rho[1] == table_approx(rr_ref)
    assert np.allclose(p, p_ref, rtol=2e-5, atol=5e-6)
    assert np.allclose(u, u_ref, rtol=2e-5, atol=5e-6)


def test_sod_profile():
    x = np.array([0.1, 0.4, 0.6, 0.8, 0.95])
    rho, u, p = exact_riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), x, 0.2, x0=0.5)
    assert rho[[0, 2, 3, 4]] == table_approx([1.0, 0.42632, 0.26557, 0.125])
    assert u[[0, 2, 3, 4]] == table_approx([0.0, 0.92745, 0.92745, 0.0])
    assert p[[0, 2, 3, 4]] == table_approx([1.0, 0.30313, 0.30313, 0.1])
    # x = 0.4 is inside the left fan: Toro eq. (4.56) written out by hand.
    c_l, xi = np.sqrt(1.4), (0.4 - 0.5) / 0.2
    c = 2.0 / 2.4 * (c_l - 0.2 * xi)
    assert u[1] == pytest.approx(2.0 / 2.4 * (c_l + xi), rel=1e-12)
    assert rho[1] == pytest.approx((c / c_l) ** 5, rel=1e-12)
    assert p[1] == pytest.approx((c / c_l) ** 7, rel=1e-12)


def test_initial_data_at_t0():
    x = np.linspace(-1.0, 1.0, 11)
    rho, u, p = exact_riemann((1.0, 0.5, 1.0), (0.125, -0.5, 0.1), x, 0.0)
    assert np.array_equal(rho, np.where(x < 0, 1.0, 0.125))
    assert np.array_equal(u, np.where(x < 0, 0.5, -0.5))
    assert np.array_equal(p, np.where(x < 0, 1.0, 0.1))


def test_vacuum_raises():
    with pytest.raises(ValueError, match="vacuum"):
        star_state((1.0, -5.0, 0.4), (1.0, 5.0, 0.4))
    with pytest.raises(ValueError):
        exact_riemann((1.0, -5.0, 0.4), (1.0, 5.0, 0.4), np.zeros(3), 0.1)


@pytest.mark.parametrize("case", TORO, ids=TORO_IDS)
def test_mirror_symmetry(case):
    """Swapping sides and flipping x and u must mirror the solution."""
    left, right = case[0], case[1]
    x, t = np.linspace(-1.0, 1.0, 2001), 0.02
    rho, u, p = exact_riemann(left, right, x, t)
    flip = lambda s: (s[0], -s[1], s[2])  # noqa: E731
    rho_m, u_m, p_m = exact_riemann(flip(right), flip(left), -x, t)
    # Points on the contact itself take the left value, so skip it.
    _, u_s = star_state(left, right)
    keep = np.abs(x - u_s * t) > 1e-9
    assert np.allclose(rho[keep], rho_m[keep], rtol=1e-12)
    assert np.allclose(u[keep], -u_m[keep], rtol=1e-12, atol=1e-12)
    assert np.allclose(p[keep], p_m[keep], rtol=1e-12)


def conserved(rho, u, p, gamma, pc):
    return np.array([rho, rho * u, 0.5 * rho * u**2 + (p + gamma * pc) / (gamma - 1.0)])


def flux(rho, u, p, gamma, pc):
    mass, mom, energy = conserved(rho, u, p, gamma, pc)
    return np.array([mom, mom * u + p, u * (energy + p)])


def check_flux_balance(left, right, t, x0, a, b, gl, gr, pcl=0.0, pcr=0.0, n=2_000_000):
    """int_a^b U(t) dx = int_a^b U(0) dx + t (F(U_L) - F(U_R)) while waves stay inside.

    Returns (error, bound): the midpoint rule is off by at most |jump| dx / 2 at
    each discontinuity, so the total variation of U times dx / 2 bounds the error.
    """
    dx = (b - a) / n
    x = a + (np.arange(n) + 0.5) * dx
    rho, u, p = exact_riemann(left, right, x, t, x0=x0, gamma=gl, gamma_right=gr,
                              pc_left=pcl, pc_right=pcr)
    assert np.allclose([rho[0], u[0], p[0]], left) and np.allclose([rho[-1], u[-1], p[-1]], right)
    _, u_s = star_state(left, right, gl, gr, pcl, pcr)
    is_left = x <= x0 + u_s * t  # the material interface moves with the contact
    g, pc = np.where(is_left, gl, gr), np.where(is_left, pcl, pcr)
    U = conserved(rho, u, p, g, pc)
    u_l, u_r = conserved(*left, gl, pcl), conserved(*right, gr, pcr)
    expected = (x0 - a) * u_l + (b - x0) * u_r + t * (flux(*left, gl, pcl) - flux(*right, gr, pcr))
    bound = 0.5 * dx * np.abs(np.diff(U, axis=1)).sum(axis=1) + 1e-12 * np.abs(expected).max()
    return np.abs(U.sum(axis=1) * dx - expected), bound


def test_sod_mass_conserved_on_fine_grid():
    left, right = (1.0, 0.0, 1.0), (0.125, 0.0, 0.1)
    x = np.linspace(-1.0, 1.0, 2_000_001)
    rho, _, _ = exact_riemann(left, right, x, 0.2)
    dx = x[1] - x[0]
    mass = dx * (rho.sum() - 0.5 * (rho[0] + rho[-1]))
    assert abs(mass - 1.125) < 1e-6


@pytest.mark.parametrize("case", TORO + [((1.0, 0.75, 1.0), (0.125, 0.0, 0.1))],
                         ids=TORO_IDS + ["sonic_sod"])
def test_flux_balance_ideal_gas(case):
    err, bound = check_flux_balance(case[0], case[1], 0.02, 0.0, -1.0, 1.0, 1.4, 1.4)
    assert np.all(err <= bound), (err, bound)


def test_flux_balance_gas_water():
    err, bound = check_flux_balance(WATER, AIR, WA_T, WA_X0, 0.0, 1.0, G_W, G_A, PC_W, 0.0)
    assert np.all(err <= bound), (err, bound)


def test_gas_water_contact_continuous():
    p_s, u_s = star_state(WATER, AIR, **WA)
    xc = WA_X0 + u_s * WA_T
    rho, u, p = exact_riemann(WATER, AIR, np.array([xc - 1e-9, xc + 1e-9]), WA_T, x0=WA_X0, **WA)
    assert rho[0] > 2 * rho[1]  # a genuine density jump, water | compressed air
    assert u[0] == pytest.approx(u[1], rel=1e-12) and u[0] == pytest.approx(u_s, rel=1e-12)
    assert p[0] == pytest.approx(p[1], rel=1e-12) and p[0] == pytest.approx(p_s, rel=1e-12)


def test_gas_water_shock_rankine_hugoniot():
    p_s, u_s = star_state(WATER, AIR, **WA)
    assert p_s > AIR[2]  # the wave into the air is a shock
    # Post-shock state: just right of the contact; pre-shock state: the air.
    x2 = np.array([WA_X0 + (u_s + 1e-6) * WA_T])
    r2, u2, p2 = (v[0] for v in exact_riemann(WATER, AIR, x2, WA_T, x0=WA_X0, **WA))
    r1, u1, p1 = AIR
    S = (r2 * u2 - r1 * u1) / (r2 - r1)  # shock speed from the mass jump condition
    assert S > u2
    mom = [r2 * u2 * (u2 - S) + p2, r1 * u1 * (u1 - S) + p1]
    assert mom[0] == pytest.approx(mom[1], rel=1e-8)
    e2, e1 = (conserved(r, u, p, G_A, 0.0)[2] for r, u, p in ((r2, u2, p2), (r1, u1, p1)))
    energy = [u2 * (e2 + p2) - S * e2, u1 * (e1 + p1) - S * e1]
    assert energy[0] == pytest.approx(energy[1], rel=1e-8)
    # The sampled profile jumps exactly at x0 + S t.
    xs = WA_X0 + S * WA_T + np.array([-1e-9, 1e-9])
    rho, _, _ = exact_riemann(WATER, AIR, xs, WA_T, x0=WA_X0, **WA)
    assert rho == pytest.approx([r2, r1], rel=1e-12)


def test_gas_water_rarefaction_isentropic():
    p_s, u_s = star_state(WATER, AIR, **WA)
    assert p_s < WATER[2]  # the wave into the water is a rarefaction
    x_s = np.array([WA_X0 + (u_s - 1e-6) * WA_T])
    rho_s = exact_riemann(WATER, AIR, x_s, WA_T, x0=WA_X0, **WA)[0][0]
    c_l = np.sqrt(G_W * (WATER[2] + PC_W) / WATER[0])
    c_s = np.sqrt(G_W * (p_s + PC_W) / rho_s)
    head, tail = -c_l, u_s - c_s
    xi = np.linspace(head, tail, 1001)[1:-1]
    rho, u, p = exact_riemann(WATER, AIR, WA_X0 + xi * WA_T, WA_T, x0=WA_X0, **WA)
    assert np.all(np.diff(rho) < 0) and rho[0] < WATER[0] and rho[-1] > rho_s
    entropy = (p + PC_W) / rho**G_W
    assert np.allclose(entropy, (WATER[2] + PC_W) / WATER[0] ** G_W, rtol=1e-10, atol=0)
    c = np.sqrt(G_W * (p + PC_W) / rho)
    invariant = u + 2.0 * c / (G_W - 1.0)
    assert np.allclose(invariant, 2.0 * c_l / (G_W - 1.0), rtol=1e-10, atol=0)
    assert np.allclose(xi, u - c, rtol=1e-10, atol=1e-9 * c_l)  # characteristics fan out


def test_same_stiffened_gas_is_shifted_ideal_gas():
    """With one pc on both sides the problem is the ideal one in p + pc."""
    left, right, pc = (1000.0, 10.0, 1e9), (1100.0, -20.0, 2e8), 3e8
    p_s, u_s = star_state(left, right, gamma=4.4, pc_left=pc, pc_right=pc)
    shift = lambda s: (s[0], s[1], s[2] + pc)  # noqa: E731
    p_i, u_i = star_state(shift(left), shift(right), gamma=4.4)
    assert p_s + pc == pytest.approx(p_i, rel=1e-12)
    assert u_s == pytest.approx(u_i, rel=1e-12)


def wave_u_star(state, p_s, gamma, pc, side):
    """u* reached from one side: Riemann invariant or Rankine-Hugoniot (Toro 4.2)."""
    rho, u, p = state
    P, P_s = p + pc, p_s + pc
    if p_s > p:
        B = (gamma - 1.0) / (gamma + 1.0) * P
        jump = (p_s - p) * np.sqrt(2.0 / ((gamma + 1.0) * rho * (P_s + B)))
    else:
        c = np.sqrt(gamma * P / rho)
        jump = 2.0 * c / (gamma - 1.0) * ((P_s / P) ** ((gamma - 1.0) / (2.0 * gamma)) - 1.0)
    return u + side * jump


@pytest.mark.parametrize("du", [7.4, 7.48])
def test_near_vacuum_two_rarefactions(du):
    """Vacuum forms at du = 4 c / (gamma - 1) = 7.4833; p* has a closed form."""
    p_s, u_s = star_state((1.0, -0.5 * du, 0.4), (1.0, 0.5 * du, 0.4))
    c, z = np.sqrt(1.4 * 0.4), 0.4 / 2.8
    assert p_s == pytest.approx(0.4 * (1.0 - 0.1 * du / c) ** (1.0 / z), rel=1e-8)
    assert u_s == 0.0


@pytest.mark.parametrize("left, right, gl, gr, pcl, pcr", [
    # ideal gases with different gammas, 1.5 % short of the vacuum limit
    ((1.0, -3.05, 0.4), (1.0, 3.05, 0.4), 1.4, 5.0 / 3.0, 0.0, 0.0),
    # air nearly cavitates (p* ~ 1e-17) while a shock runs into a stretched liquid
    ((1.3730723488921794, -0.0023774887237931874, -171190071.22347558),
     (52.03834936947721, -0.008468777883759757, 82306445.9501203), 1.4, 1.4, 3e8, 0.0),
])
def test_near_vacuum_newton_converges(left, right, gl, gr, pcl, pcr):
    """Newton must neither overshoot into p + pc < 0 nor stall near a vacuum."""
    p_s, u_s = star_state(left, right, gl, gr, pcl, pcr)
    assert p_s + min(pcl, pcr) > 0.0
    scale = abs(left[1]) + abs(right[1]) + np.sqrt(gl * (left[2] + pcl) / left[0])
    assert wave_u_star(left, p_s, gl, pcl, -1.0) == pytest.approx(u_s, abs=1e-9 * scale)
    assert wave_u_star(right, p_s, gr, pcr, +1.0) == pytest.approx(u_s, abs=1e-9 * scale)
    rho, u, p = exact_riemann(left, right, np.linspace(-1e4, 1e4, 2001), 1.0, gamma=gl,
                              gamma_right=gr, pc_left=pcl, pc_right=pcr)
    assert np.all(np.isfinite(u)) and np.all(rho > 0.0) and np.all(p + min(pcl, pcr) > 0.0)
