"""Checks of the exact shallow-water solutions: jump conditions, conservation, PDE."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shallow_water_exact import (  # noqa: E402
    dam_break, dam_break_cell_averages, stoker_middle_state, thacker_1d,
    thacker_1d_period, thacker_2d, thacker_2d_period)

G = 9.81
HL, HR = 0.005, 0.001  # SWASHES 4.1.1 wet dam break
X0, T = 5.0, 6.0       # dam in the middle of [0, 10], SWASHES's final time


# ---------------------------------------------------------------- dam break

def test_stoker_middle_state_satisfies_jump_conditions():
    hm, um, s = stoker_middle_state(HL, HR, G)
    assert HR < hm < HL and um > 0.0
    # left rarefaction: Riemann invariant u + 2 c carried from the still left state
    assert um + 2.0 * np.sqrt(G * hm) == pytest.approx(2.0 * np.sqrt(G * HL), rel=1e-12, abs=0)
    # right shock into still water: mass and momentum Rankine-Hugoniot
    mass = s * (hm - HR) - hm * um
    mom = s * hm * um - (hm * um**2 + 0.5 * G * (hm**2 - HR**2))
    assert abs(mass) <= 1e-12 * hm * um
    assert abs(mom) <= 1e-12 * hm * um**2
    # the shock speed in closed form, and its reference digits
    assert s == pytest.approx(np.sqrt(0.5 * G * hm * (hm + HR) / HR), rel=1e-12)
    # SWASHES 4.1.1 prints c_m = sqrt(g h_m) = 0.1578 for this case
    assert np.sqrt(G * hm) == pytest.approx(0.1578, abs=5e-5)
    # independently: bisect on the shock speed, the depth behind it from the
    # hydraulic-jump relation h_m / h_R = (sqrt(1 + 8 Fr^2) - 1) / 2
    def gap(sp):
        h = 0.5 * HR * (np.sqrt(1.0 + 8.0 * sp**2 / (G * HR)) - 1.0)
        return sp * (1.0 - HR / h) + 2.0 * np.sqrt(G * h) - 2.0 * np.sqrt(G * HL)
    lo, hi = np.sqrt(G * HR), 10.0 * np.sqrt(G * HL)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if gap(mid) > 0.0 else (mid, hi)
    assert s == pytest.approx(0.5 * (lo + hi), rel=1e-12)
    assert s == pytest.approx(0.209963, abs=1e-6)


def test_stoker_limits():
    # weak dam: middle state tends to the mean depth, shock speed to sqrt(g h)
    hm, um, s = stoker_middle_state(1.0 + 1e-6, 1.0, G)
    assert hm == pytest.approx(1.0 + 0.5e-6, rel=1e-11)
    assert s == pytest.approx(np.sqrt(G), rel=1e-6)
    with pytest.raises(ValueError):
        stoker_middle_state(HR, HL, G)


def test_dam_break_structure():
    hm, um, s = stoker_middle_state(HL, HR, G)
    cl, cm = np.sqrt(G * HL), np.sqrt(G * hm)
    x = X0 + T * np.array([-cl - 1e-3, -0.5 * cl, um - cm + 1e-3, s - 1e-3, s + 1e-3])
    h, u = dam_break(x, T, HL, HR, X0, G)
    xi = -0.5 * cl
    np.testing.assert_allclose(h, [HL, (2 * cl - xi) ** 2 / (9 * G), hm, hm, HR], rtol=1e-14)
    np.testing.assert_allclose(u, [0.0, 2.0 / 3.0 * (xi + cl), um, um, 0.0], rtol=1e-14)
    # continuity at the fan's head and tail, a jump at the shock
    xs = X0 + T * np.array([-cl, um - cm])
    hl_, _ = dam_break(xs - 1e-9, T, HL, HR, X0, G)
    hr_, _ = dam_break(xs + 1e-9, T, HL, HR, X0, G)
    np.testing.assert_allclose(hl_, hr_, rtol=1e-8)
    # mirror image: deep water on the right
    hmir, umir = dam_break(2 * X0 - x, T, HR, HL, X0, G)
    np.testing.assert_allclose(hmir[:-1], h[:-1], rtol=1e-14)
    np.testing.assert_allclose(umir[:-1], -u[:-1], rtol=1e-14, atol=0)


def test_ritter_dry_bed():
    cl = np.sqrt(G * HL)
    x = X0 + T * np.array([-1.01 * cl, -cl, 0.0, cl, 1.99 * cl, 2.01 * cl])
    h, u = dam_break(x, T, HL, 0.0, X0, G)
    np.testing.assert_allclose(h[:2], HL, rtol=1e-14)
    assert h[2] == pytest.approx(4.0 / 9.0 * HL, rel=1e-14)  # the critical depth at the dam
    assert u[2] == pytest.approx(2.0 / 3.0 * cl, rel=1e-14)
    assert h[3] == pytest.approx(HL / 9.0, rel=1e-14)
    assert 0.0 < h[4] < 1e-4 * HL and h[5] == 0.0 and u[5] == 0.0


@pytest.mark.parametrize("hr", [HR, 0.0], ids=["stoker", "ritter"])
def test_dam_break_conserves_mass_and_momentum(hr):
    # all waves stay inside [0, 10] up to t = 6 (front at 5 + 2 c_L t < 10)
    edges = np.linspace(0.0, 10.0, 101)
    m0 = (X0 - 0.0) * HL + (10.0 - X0) * hr
    for t in (0.0, 1.0, 3.3, T):
        h, hu = dam_break_cell_averages(edges, t, HL, hr, X0, G, momentum=True)
        assert np.sum(h * np.diff(edges)) == pytest.approx(m0, rel=1e-12, abs=0)
        # momentum grows by the net pressure force g (h_L^2 - h_R^2) / 2
        p = 0.5 * G * (HL**2 - hr**2) * t
        assert np.sum(hu * np.diff(edges)) == pytest.approx(p, rel=1e-12, abs=1e-18)
    # one cell over the whole domain, and a mirrored dam, give the same
    h1 = dam_break_cell_averages([0.0, 10.0], T, HL, hr, X0, G)
    assert h1[0] * 10.0 == pytest.approx(m0, rel=1e-12)
    hmir = dam_break_cell_averages(edges, T, hr, HL, 10.0 - X0, G)
    np.testing.assert_allclose(hmir[::-1], h, rtol=1e-12)


def test_dam_break_cell_averages_converge_to_point_values():
    hm, um, s = stoker_middle_state(HL, HR, G)
    cl = np.sqrt(G * HL)
    # smooth cells inside the fan: average - centre value = h'' dx^2 / 24 exactly
    centres = X0 + T * np.array([-0.8, -0.5, -0.3]) * cl
    errs = []
    for dx in (0.1, 0.05, 0.025):
        edges = np.sort(np.concatenate([centres - 0.5 * dx, centres + 0.5 * dx]))
        avg = dam_break_cell_averages(edges, T, HL, HR, X0, G)[::2]
        err = avg - dam_break(centres, T, HL, HR, X0, G)[0]
        np.testing.assert_allclose(err, 2.0 / (9.0 * G * T**2) * dx**2 / 24.0, rtol=1e-9)
        errs.append(np.max(np.abs(err)))
    assert errs[0] / errs[1] == pytest.approx(4.0, rel=1e-6)
    # across the whole fan, midpoint sums of point values converge to the averages
    edges = np.linspace(0.0, 10.0, 41)
    exact = dam_break_cell_averages(edges, T, HL, HR, X0, G)
    prev = None
    for n in (100, 1000):
        sub = edges[:-1, None] + (np.arange(n) + 0.5)[None, :] / n * np.diff(edges)[:, None]
        err = np.max(np.abs(dam_break(sub, T, HL, HR, X0, G)[0].mean(axis=1) - exact))
        assert err < 0.6 * (HL - HR) / n  # at worst a jump cut by a sub-cell
        if prev is not None:
            assert err < 0.2 * prev
        prev = err


# ------------------------------------------------------------ Thacker 1D

def _residual_1d(x, t, d, **kw):
    """Central-difference residuals of mass and momentum, steps d in x and t."""
    def q(xx, tt):
        h, u, z = thacker_1d(xx, tt, **kw)
        return h, h * u, h * u * u + 0.5 * G * h * h, z
    hp, mp, _, _ = q(x, t + d)
    hm, mm, _, _ = q(x, t - d)
    _, mxp, fxp, zp = q(x + d, t)
    _, mxm, fxm, zm = q(x - d, t)
    h, _, _, _ = q(x, t)
    r_mass = (hp - hm) / (2 * d) + (mxp - mxm) / (2 * d)
    r_mom = (mp - mm) / (2 * d) + (fxp - fxm) / (2 * d) + G * h * (zp - zm) / (2 * d)
    return r_mass, r_mom


def test_thacker_1d_satisfies_pde_at_second_order():
    x = np.linspace(1.6, 2.4, 9)  # wet at all times: shorelines move within 1/2 of 1 and 3
    errs = []
    for d in (4e-3, 2e-3, 1e-3):
        r = [np.max(np.abs(_residual_1d(x, t, d)[k])) for t in (0.3, 0.9, 1.7) for k in (0, 1)]
        errs.append(np.array(r))
    # terms are O(1) (h_t ~ h0 omega, momentum terms ~ g h h_x): residuals O(d^2)
    assert np.max(errs[-1]) < 1e-4
    ratios = errs[0] / errs[1], errs[1] / errs[2]
    for ratio in ratios:
        np.testing.assert_allclose(ratio, 4.0, rtol=0.02)
    # the opposite velocity sign is not a solution
    h, u, z = thacker_1d(x, 0.3)
    hp, _, _ = thacker_1d(x, 0.3 + 1e-3)
    hm, _, _ = thacker_1d(x, 0.3 - 1e-3)
    h_x = np.gradient(h, x)
    assert np.max(np.abs((hp - hm) / 2e-3 - u * h_x)) > 0.1  # h_t + (-u) h_x != 0


def test_thacker_1d_period_mass_and_shoreline():
    T1 = thacker_1d_period()
    assert T1 == pytest.approx(2.0 * np.pi / np.sqrt(2.0 * G * 0.5), rel=1e-15)
    assert T1 == pytest.approx(2.0061, abs=1e-4)
    x = np.linspace(0.0, 4.0, 400001)
    dx = x[1] - x[0]
    ref = thacker_1d(x, 0.37)
    for t in (0.37 + T1, 0.37 + 3 * T1):
        for a, b in zip(ref, thacker_1d(x, t)):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    half = thacker_1d(x, 0.37 + 0.5 * T1)[0]
    assert np.max(np.abs(half - ref[0])) > 0.1
    for t in np.linspace(0.0, T1, 7):
        h, u, z = thacker_1d(x, t)
        mass = dx * (np.sum(h) - 0.5 * (h[0] + h[-1]))
        assert mass == pytest.approx(4.0 / 3.0 * 0.5 * 1.0, rel=1e-9)
        wet = x[h > 0]
        shift = -0.5 * np.cos(np.sqrt(2 * G * 0.5) * t)  # SWASHES shorelines
        assert wet[0] == pytest.approx(1.0 + shift, abs=2 * dx)
        assert wet[-1] == pytest.approx(3.0 + shift, abs=2 * dx)
        assert np.all(u[h == 0] == 0.0)
    # at rest at t = 0, piled up on the left; moving right a quarter period later
    h, u, _ = thacker_1d(np.array([1.5, 2.5]), 0.0)
    assert h[0] > h[1] and np.all(u == 0.0)
    _, u, _ = thacker_1d(2.0, 0.25 * T1)
    assert u == pytest.approx(np.sqrt(2 * G * 0.5) / 2.0, rel=1e-12)


# ------------------------------------------------------------ Thacker 2D

def _residual_2d(x, y, t, d):
    def q(xx, yy, tt):
        h, u, v, z = thacker_2d(xx, yy, tt)
        return h, h * u, h * v, z, u, v
    r = []
    hp, mup, mvp, *_ = q(x, y, t + d)
    hm, mum, mvm, *_ = q(x, y, t - d)
    h = q(x, y, t)[0]
    xp, xm = q(x + d, y, t), q(x - d, y, t)
    yp, ym = q(x, y + d, t), q(x, y - d, t)

    def dx(f):
        return (f(xp) - f(xm)) / (2 * d)

    def dy(f):
        return (f(yp) - f(ym)) / (2 * d)
    p = lambda s: 0.5 * G * s[0] ** 2  # noqa: E731
    r.append((hp - hm) / (2 * d) + dx(lambda s: s[1]) + dy(lambda s: s[2]))
    r.append((mup - mum) / (2 * d) + dx(lambda s: s[1] * s[4] + p(s))
             + dy(lambda s: s[1] * s[5]) + G * h * dx(lambda s: s[3]))
    r.append((mvp - mvm) / (2 * d) + dx(lambda s: s[2] * s[4])
             + dy(lambda s: s[2] * s[5] + p(s)) + G * h * dy(lambda s: s[3]))
    return r


def test_thacker_2d_satisfies_pde_at_second_order():
    # points well inside the smallest wet disc (radius sqrt(a r0) = 0.894)
    ang = np.linspace(0.0, 2 * np.pi, 7, endpoint=False)
    rad = np.array([0.1, 0.35, 0.6])
    x = (2.0 + rad[:, None] * np.cos(ang)).ravel()
    y = (2.0 + rad[:, None] * np.sin(ang)).ravel()
    errs = []
    for d in (4e-3, 2e-3, 1e-3):
        errs.append(np.array([np.max(np.abs(r)) for t in (0.3, 1.0, 1.9)
                              for r in _residual_2d(x, y, t, d)]))
    assert np.max(errs[-1]) < 1e-4
    for ratio in (errs[0] / errs[1], errs[1] / errs[2]):
        np.testing.assert_allclose(ratio, 4.0, rtol=0.02)


def test_thacker_2d_period_and_volume():
    T2 = thacker_2d_period()
    assert T2 == pytest.approx(2.0 * np.pi / np.sqrt(8.0 * G * 0.1), rel=1e-15)
    assert T2 == pytest.approx(2.2429, abs=1e-4)
    n = 2000
    c = (np.arange(n) + 0.5) * 4.0 / n
    X, Y = np.meshgrid(c, c, indexing="ij")
    ref = thacker_2d(X, Y, 0.4)
    for a, b in zip(ref, thacker_2d(X, Y, 0.4 + 2 * T2)):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-13)
    vols = []
    for t in np.linspace(0.0, T2, 5):
        h, u, v, z = thacker_2d(X, Y, t)
        vols.append(np.sum(h) * (4.0 / n) ** 2)
        assert np.all(u[h == 0] == 0.0) and np.all(v[h == 0] == 0.0)
    np.testing.assert_allclose(vols, np.pi * 0.1 * 1.0 / 2.0, rtol=1e-6)
    # at rest at t = 0 with wet radius sqrt(a r0); widest at half a period
    h, u, v, _ = thacker_2d(2.0 + np.array([0.89, 0.90]), 2.0, 0.0)
    assert h[0] > 0.0 and h[1] == 0.0 and np.all(u == 0.0)
    A = (1 - 0.64) / (1 + 0.64)
    r_half = np.sqrt(0.8 * (1 + A) / (1 - A))  # a^2 D / sqrt(1 - A^2) with D = 1 + A
    h, _, _, _ = thacker_2d(2.0 + r_half * np.array([0.999, 1.001]), 2.0, 0.5 * T2)
    assert h[0] > 0.0 and h[1] == 0.0
