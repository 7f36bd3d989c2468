"""Checks of the numpy MHD reference (tests/mhd_reference.py) against the equations
themselves and against published numbers."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mhd_reference as ref  # noqa: E402
from mhd_reference import RHO, MX, MY, MZ, EN, BX, BY, BZ  # noqa: E402

FREE = [RHO, MX, MY, MZ, EN, BY, BZ]  # the 1D system's variables (B_x is fixed)
R2, R5 = np.sqrt(2.0), np.sqrt(5.0)


def random_states(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rho = 10.0 ** rng.uniform(-1, 1)
        p = 10.0 ** rng.uniform(-1.5, 1)
        vel = rng.uniform(-2, 2, 3)
        B = rng.uniform(-3, 3, 3)
        out.append((rho, vel, p, B, float(rng.choice([5.0 / 3.0, 1.4, 2.0]))))
    return out


GS_STATES = [(*ref.gs_background(w), ref.GS_GAMMA) for w in ("fast", "entropy")]
CHOLLA_STATE = (1.0, np.zeros(3), 0.6, np.array([1.0, 1.5, 0.0]), 5.0 / 3.0)
DEGENERATE = [
    (1.0, np.array([0.3, 0, 0]), 0.6, np.array([2.0, 0.0, 0.0]), 5.0 / 3.0),   # B_t = 0, ca > a
    (1.0, np.array([0.3, 0, 0]), 0.6, np.array([0.5, 0.0, 0.0]), 5.0 / 3.0),   # B_t = 0, ca < a
    (1.3, np.array([0.1, -0.2, 0.4]), 0.8, np.array([0.0, 1.0, -0.5]), 1.4),  # B_x = 0
    (0.7, np.array([-0.5, 1.0, 0.2]), 1.2, np.zeros(3), 5.0 / 3.0),            # B = 0
    (1.0, np.zeros(3), 0.6, np.array([-1.0, 1.5, 0.0]), 5.0 / 3.0),            # B_x < 0
]
ALL_STATES = random_states(24, 1) + GS_STATES + [CHOLLA_STATE] + DEGENERATE


def jacobian(rho, vel, p, B, gamma):
    """Conserved flux Jacobian (8x8) by central differences, B_x held fixed (column 0)."""
    U = ref.prim_to_cons(np.r_[rho, vel, p, B], gamma)
    A = np.zeros((8, 8))
    for j in FREE:
        h = 1e-5 * max(1.0, abs(U[j]))
        up, um = U.copy(), U.copy()
        up[j] += h
        um[j] -= h
        A[:, j] = (ref.flux_x(up, gamma) - ref.flux_x(um, gamma)) / (2.0 * h)
    return A


def primitive_matrix(rho, vel, p, B, gamma):
    """A_W of W_t + A_W W_x = 0, written out by hand (independent of dW_dU)."""
    vx = vel[0]
    bx, by, bz = B
    A = np.diag([vx] * 8)
    A[BX, BX] = 0.0
    A[RHO, MX] = rho
    A[MX, EN], A[MX, BY], A[MX, BZ] = 1 / rho, by / rho, bz / rho
    A[MY, BY] = A[MZ, BZ] = -bx / rho
    A[EN, MX] = gamma * p
    A[BY, MX], A[BY, MY] = by, -bx
    A[BZ, MX], A[BZ, MZ] = bz, -bx
    return A


def state_id(s):
    return "rho%.3g_p%.3g_B%s" % (s[0], s[2], "_".join("%.2g" % b for b in s[3]))


# ------------------------------------------------------------------------ eigensystem

def test_prim_cons_round_trip():
    W = np.array([1.3, 0.2, -0.4, 0.9, 0.7, 0.5, -1.2, 0.3])
    U = ref.prim_to_cons(W, 1.4)
    assert U[EN] == pytest.approx(0.7 / 0.4 + 0.5 * 1.3 * (0.04 + 0.16 + 0.81) + 0.5 * (0.25 + 1.44 + 0.09))
    assert np.allclose(ref.cons_to_prim(U, 1.4), W, rtol=0, atol=1e-14)


@pytest.mark.parametrize("state", ALL_STATES, ids=state_id)
def test_right_eigenvectors_of_flux_jacobian(state):
    lam, R = ref.eigensystem(*state)
    A = jacobian(*state)
    scale = np.abs(A).max() * np.abs(R).max()
    assert np.all(R[BX] == 0.0)
    for k in range(7):
        assert np.allclose(A @ R[:, k], lam[k] * R[:, k], rtol=0, atol=1e-8 * scale), k
        assert np.abs(R[:, k]).max() > 0.1  # not a vanishing column


@pytest.mark.parametrize("state", ALL_STATES, ids=state_id)
def test_eigenvalues_sorted_and_speed_formulas(state):
    rho, vel, p, B, gamma = state
    lam, _ = ref.eigensystem(*state)
    cf, ca, cs = ref.wave_speeds(rho, p, B, gamma)
    a2 = gamma * p / rho
    assert np.all(np.diff(lam) >= 0.0)
    assert np.allclose(lam, vel[0] + np.array([-cf, -ca, -cs, 0, cs, ca, cf]), rtol=0, atol=1e-14)
    assert ca == pytest.approx(abs(B[0]) / np.sqrt(rho), rel=1e-14)
    for c in (cf, cs):  # both magnetosonic speeds solve the dispersion relation
        quartic = c**4 - (a2 + B @ B / rho) * c**2 + a2 * B[0] ** 2 / rho
        assert abs(quartic) <= 1e-12 * (a2 + B @ B / rho) ** 2
    assert cs <= min(ca, np.sqrt(a2)) + 1e-14 and cf >= max(ca, np.sqrt(a2)) - 1e-14


@pytest.mark.parametrize("state", random_states(24, 1) + GS_STATES, ids=state_id)
def test_eigenvalues_equal_those_of_the_jacobian(state):
    """Generic states: numpy's eigenvalues of the 7x7 Jacobian, and R is a basis."""
    lam, R = ref.eigensystem(*state)
    A7 = jacobian(*state)[np.ix_(FREE, FREE)]
    ev = np.sort(np.linalg.eigvals(A7).real)
    gap = np.diff(lam).min()
    tol = 1e-6 * max(1.0, np.abs(lam).max()) / max(gap, 1e-3)
    assert np.allclose(ev, lam, rtol=0, atol=tol)
    assert np.linalg.cond(R[FREE]) < 1e8


@pytest.mark.parametrize("state", ALL_STATES, ids=state_id)
def test_primitive_eigenvectors(state):
    lam, Rc = ref.eigensystem(*state)
    Rw = ref.primitive_eigenvectors(*state)
    Aw = primitive_matrix(*state)
    for k in range(7):
        assert np.allclose(Aw @ Rw[:, k], lam[k] * Rw[:, k], rtol=0, atol=1e-12 * max(1, np.abs(Aw).max()))
    # dW/dU inverts dU/dW (central differences of prim_to_cons)
    rho, vel, p, B, gamma = state
    W = np.r_[rho, vel, p, B]
    dUdW = np.empty((8, 8))
    for j in range(8):
        h = 1e-6 * max(1.0, abs(W[j]))
        wp, wm = W.copy(), W.copy()
        wp[j] += h
        wm[j] -= h
        dUdW[:, j] = (ref.prim_to_cons(wp, gamma) - ref.prim_to_cons(wm, gamma)) / (2 * h)
    assert np.allclose(ref.dW_dU(*state) @ dUdW, np.eye(8), atol=1e-8)
    assert np.allclose(Rw[:, 3], [1, 0, 0, 0, 0, 0, 0, 0], atol=1e-14)  # entropy: rho only


@pytest.mark.parametrize("state", random_states(12, 2) + GS_STATES + [CHOLLA_STATE], ids=state_id)
def test_athena_normalisation(state):
    """Athena++'s scaling: rho entries alpha_f, alpha_s, 1; |tangential momentum| = 1 (Alfven)."""
    rho, vel, p, B, gamma = state
    _, R = ref.eigensystem(*state)
    cf, _, cs = ref.wave_speeds(rho, p, B, gamma)
    a2 = gamma * p / rho
    af = np.sqrt((a2 - cs**2) / (cf**2 - cs**2))
    as_ = np.sqrt((cf**2 - a2) / (cf**2 - cs**2))
    assert np.allclose(R[RHO], [af, 0, as_, 1, as_, 0, af], atol=1e-12)
    bt = np.hypot(B[1], B[2])
    for k, sig in ((1, -1.0), (5, 1.0)):  # momentum sig * (B_z, -B_y)/|B_t|
        assert R[MY, k] * bt == pytest.approx(sig * B[2], abs=1e-12)
        assert R[MZ, k] * bt == pytest.approx(-sig * B[1], abs=1e-12)


def test_linear_wave_picks_right_moving_columns():
    st = ref.gs_background("fast") + (ref.GS_GAMMA,)
    lam, R = ref.eigensystem(*st)
    for wave, k in (("fast", 6), ("alfven", 5), ("slow", 4), ("entropy", 3)):
        rc, rw, speed = ref.linear_wave(wave, *st)
        assert speed == lam[k] and speed >= 0.0
        assert np.array_equal(rc, R[:, k])
        assert np.allclose(rw, ref.dW_dU(*st) @ R[:, k])
    with pytest.raises(KeyError):
        ref.linear_wave("sound", *st)


# Gardiner & Stone background (rho 1, p 3/5, B = (1, sqrt 2, 1/2)): the normalised right
# eigenvectors quoted in Cholla's examples/3D/{fast_magnetosonic,alfven_wave,
# slow_magnetosonic,mhd_contact_wave}.txt (R. Caddy, after Athena++), there in the order
# (rho, M1, M2, M3, B1, B2, B3, E); upper signs for right-moving, lower for left-moving.
def _cholla_to_ours(v):
    v = np.asarray(v, float)
    return np.r_[v[0:4], v[7], v[4:7]]


GS_PUBLISHED = {  # Athena++ column -> vector in our order
    6: _cholla_to_ours(np.array([6, 12, -4 * R2, -2, 0, 8 * R2, 4, 27]) / (6 * R5)),
    0: _cholla_to_ours(np.array([6, -12, 4 * R2, 2, 0, 8 * R2, 4, 27]) / (6 * R5)),
    5: _cholla_to_ours(np.array([0, 0, 1, -2 * R2, 0, -1, 2 * R2, 0]) / 3),
    1: _cholla_to_ours(np.array([0, 0, -1, 2 * R2, 0, -1, 2 * R2, 0]) / 3),
    4: _cholla_to_ours(np.array([12, 6, 8 * R2, 4, 0, -4 * R2, -2, 9]) / (6 * R5)),
    2: _cholla_to_ours(np.array([12, -6, -8 * R2, -4, 0, -4 * R2, -2, 9]) / (6 * R5)),
}


@pytest.mark.parametrize("k", sorted(GS_PUBLISHED))
def test_gardiner_stone_eigenvectors_published(k):
    _, R = ref.eigensystem(*ref.gs_background("fast"), ref.GS_GAMMA)
    assert np.allclose(R[:, k], GS_PUBLISHED[k], rtol=0, atol=1e-14)


def test_gardiner_stone_entropy_eigenvector_with_flow():
    # Cholla mhd_contact_wave.txt: (1/2)(2, 2, 0, 0, 0, 0, 0, 1) with v_x = 1.
    rc, rw, speed = ref.linear_wave("entropy", *ref.gs_background("entropy"), ref.GS_GAMMA)
    assert np.allclose(rc, [1, 1, 0, 0, 0.5, 0, 0, 0], atol=1e-15) and speed == 1.0


def test_cholla_state_eigenvectors():
    """rho 1, p 0.6, B = (1, 1.5, 0): Cholla's examples/3D/fast_magnetosonic.txt and
    alfven_wave.txt parameter values, and R. Caddy's 'MHD Test Problems' post (1/(2 sqrt 5))
    (2, +-4, -+2, 0, 0, 4, 0, 9) for the fast wave, (4, +-2, +-4, 0, 0, -2, 0, 3) slow."""
    _, R = ref.eigensystem(*CHOLLA_STATE)
    fast = [0.4472135954999579, 0.8944271909999159, -0.4472135954999579, 0.0, 2.0124611797498106,
            0.0, 0.8944271909999159, 0.0]
    assert np.allclose(R[:, 6], fast, rtol=0, atol=1e-15)
    assert np.allclose(R[:, 5], [0, 0, 0, -1, 0, 0, 0, 1], atol=1e-15)
    assert np.allclose(R[:, 4], _cholla_to_ours([4, 2, 4, 0, 0, -2, 0, 3]) / (2 * R5), atol=1e-15)
    assert np.allclose(R[:, 2], _cholla_to_ours([4, -2, -4, 0, 0, -2, 0, 3]) / (2 * R5), atol=1e-15)


# ------------------------------------------------------------------- Gardiner & Stone

def test_gardiner_stone_geometry():
    a2, a3 = ref.athena_angles()
    assert np.sin(a2) == pytest.approx(2 / 3, abs=1e-15) and np.sin(a3) == pytest.approx(2 / R5, abs=1e-15)
    Rm = ref.wave_frame()
    assert np.allclose(Rm @ Rm.T, np.eye(3), atol=1e-15)
    assert np.allclose(np.cross(Rm[0], Rm[1]), Rm[2], atol=1e-15)  # right-handed
    assert np.allclose(Rm[0], [1 / 3, 2 / 3, 2 / 3], atol=1e-15)
    assert ref.wavelength() == pytest.approx(1.0, abs=1e-15)
    # One wavelength across each box edge: the wave is periodic on the box.
    assert np.allclose(Rm[0] * [3.0, 1.5, 1.5], 1.0, atol=1e-15)
    # Athena++'s written-out rotation (linear_wave.cpp, m1, m2, m3 from mx, my, mz).
    s2, c2, s3, c3 = np.sin(a2), np.cos(a2), np.sin(a3), np.cos(a3)
    mx, my, mz = 0.3, -0.7, 1.1
    grid = [mx * c2 * c3 - my * s3 - mz * s2 * c3, mx * c2 * s3 + my * c3 - mz * s2 * s3, mx * s2 + mz * c2]
    assert np.allclose(Rm.T @ [mx, my, mz], grid, atol=1e-15)


def test_gardiner_stone_speeds_and_periods():
    assert [ref.gs_speed(w) for w in ("fast", "alfven", "slow", "entropy")] == pytest.approx(
        [2.0, 1.0, 0.5, 1.0], abs=1e-14)
    assert [ref.gs_speed(w, left=True) for w in ("fast", "alfven", "slow")] == pytest.approx(
        [-2.0, -1.0, -0.5], abs=1e-14)
    assert [ref.gs_period(w) for w in ("fast", "alfven", "slow", "entropy")] == pytest.approx(
        [0.5, 1.0, 2.0, 1.0], abs=1e-14)
    assert ref.GS_P * ref.GS_GAMMA == pytest.approx(1.0)  # sound speed 1


@pytest.mark.parametrize("wave", ["fast", "alfven", "slow", "entropy"])
def test_gardiner_stone_solution(wave):
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 1, (3, 50)) * np.array([[3.0], [1.5], [1.5]])
    U0 = ref.gs_conserved(pts, 0.0, wave)
    T = ref.gs_period(wave)
    assert np.allclose(ref.gs_conserved(pts, T, wave), U0, rtol=0, atol=1e-18)
    # periodic on the box
    for axis, L in enumerate((3.0, 1.5, 1.5)):
        shifted = pts.copy()
        shifted[axis] += L
        assert np.allclose(ref.gs_conserved(shifted, 0.3, wave), ref.gs_conserved(pts, 0.3, wave),
                           rtol=0, atol=1e-18)
    # B . k is the constant B_x' = 1 (no perturbation along the wave vector)
    k_hat = ref.wave_frame()[0]
    assert np.allclose(k_hat @ U0[BX:BZ + 1], 1.0, rtol=0, atol=1e-15)
    # the state at phase 1/4 (sin = 1) is background + amplitude * R, rotated to the grid
    p_quarter = 0.25 * k_hat
    rc, _, _ = ref.linear_wave(wave, *ref.gs_background(wave), ref.GS_GAMMA)
    Rm = ref.wave_frame()
    rho, vel, p, B = ref.gs_background(wave)
    bg = ref.prim_to_cons(np.r_[rho, vel, p, B], ref.GS_GAMMA)
    want = bg + ref.GS_AMPLITUDE * rc
    want[MX:MZ + 1] = Rm.T @ want[MX:MZ + 1]
    want[BX:BZ + 1] = Rm.T @ want[BX:BZ + 1]
    assert np.allclose(ref.gs_conserved(p_quarter, 0.0, wave), want, rtol=0, atol=1e-15)
    drho = ref.gs_conserved(p_quarter, 0.0, wave)[RHO] - ref.GS_RHO
    assert drho == pytest.approx(ref.GS_AMPLITUDE * rc[RHO])


def test_athena_error_definitions():
    assert ref.athena_rms_l1([3e-8, 4e-8, 0, 0, 0, 0, 0, 0]) == pytest.approx(5e-8)
    assert ref.athena_rms_l1([1e-8] * 8) == pytest.approx(np.sqrt(8) * 1e-8)  # a sum, not a mean
    a = np.zeros((8, 2, 2))
    b = np.zeros((8, 2, 2))
    b[0] = [[1.0, 2.0], [3.0, 6.0]]
    assert ref.athena_l1_errors(a, b)[0] == pytest.approx(3.0)
    vols = np.array([[1.0, 1.0], [1.0, 5.0]])
    assert ref.athena_l1_errors(a, b, vols)[0] == pytest.approx((1 + 2 + 3 + 30) / 8.0)
    assert ref.ATHENA_LINWAVE_RMS_MAX == {"fast": 4.5e-8, "alfven": 4.0e-8, "slow": 5.0e-8,
                                          "entropy": 2.75e-8}


# ------------------------------------------------------------------------------ RJ2a

def _flux_jump(Wl, Wr, s, gamma=ref.RJ2A_GAMMA):
    Ul, Ur = ref.prim_to_cons(Wl, gamma), ref.prim_to_cons(Wr, gamma)
    return ref.flux_x(Ur, gamma) - ref.flux_x(Ul, gamma) - s * (Ur - Ul)


def test_rj2a_initial_states():
    s4pi = np.sqrt(4 * np.pi)
    gauss = np.array([1, 1, 1, 1, 1, s4pi, s4pi, s4pi])  # B back in the paper's units
    assert np.allclose(ref.RJ2A_LEFT * gauss, [1.08, 1.2, 0.01, 0.5, 0.95, 2, 3.6, 2])
    assert np.allclose(ref.RJ2A_RIGHT * gauss, [1, 0, 0, 0, 1, 2, 4, 2])
    assert ref.RJ2A_LEFT[BX] == pytest.approx(0.5641895835477562, abs=3e-16)  # athinput.rj2a bxl
    assert ref.RJ2A_RIGHT[BY] == pytest.approx(1.1283791670955125, abs=3e-16)  # athinput.rj2a byr


def test_rj2a_jump_conditions():
    s, W = ref.ryu_jones_2a_waves()
    assert W.shape == (8, 8) and s.shape == (7,)
    assert np.all(np.diff(s) > 0.05)
    assert np.array_equal(W[0], ref.RJ2A_LEFT) and np.array_equal(W[-1], ref.RJ2A_RIGHT)
    assert np.all(W[:, BX] == ref.RJ2A_LEFT[BX])
    for i in range(7):
        assert np.abs(_flux_jump(W[i], W[i + 1], s[i])).max() < 1e-10, ref.RJ2A_WAVES[i]
        assert np.abs(W[i + 1] - W[i]).max() > 1e-2  # every wave is really there


def test_rj2a_wave_types():
    """Rotational discontinuities, contact, and admissible (Lax, entropy) fast/slow shocks."""
    s, W = ref.ryu_jones_2a_waves()
    g = ref.RJ2A_GAMMA
    bx = ref.RJ2A_LEFT[BX]
    bt = np.hypot(W[:, BY], W[:, BZ])
    entropy = W[:, EN] / W[:, RHO] ** g
    for i, side in ((1, -1), (5, +1)):  # rot-, rot+: only v_t and the direction of B_t change
        for var in (RHO, MX, EN):
            assert W[i, var] == pytest.approx(W[i + 1, var], abs=1e-13)
        assert bt[i] == pytest.approx(bt[i + 1], abs=1e-13)
        assert s[i] == pytest.approx(W[i, MX] + side * bx / np.sqrt(W[i, RHO]), abs=1e-13)
    assert np.allclose(W[3, MX:], W[4, MX:], atol=1e-13) and W[3, RHO] - W[4, RHO] > 0.1  # contact
    assert s[3] == pytest.approx(W[3, MX], abs=1e-15)
    fam = {0: 0, 2: 2, 4: 4, 6: 6}  # wave i is family column fam[i]
    for i, k in fam.items():
        lam_l = ref.eigensystem(W[i, RHO], W[i, MX:MZ + 1], W[i, EN], W[i, BX:], g)[0]
        lam_r = ref.eigensystem(W[i + 1, RHO], W[i + 1, MX:MZ + 1], W[i + 1, EN], W[i + 1, BX:], g)[0]
        assert lam_l[k] > s[i] > lam_r[k]  # characteristics run into the shock
        # evolutionary (not intermediate): the neighbouring families stay on their sides
        if k > 0:
            assert lam_l[k - 1] < s[i]
        if k < 6:
            assert lam_r[k + 1] > s[i]
        # coplanar, no reversal of B_t
        assert W[i, BY] * W[i + 1, BZ] - W[i, BZ] * W[i + 1, BY] == pytest.approx(0.0, abs=1e-12)
        assert W[i, BY:BZ + 1] @ W[i + 1, BY:BZ + 1] > 0.0
        # entropy grows downstream (fluid crosses left-facing shocks left to right)
        up, down = (i, i + 1) if k < 3 else (i + 1, i)
        assert entropy[down] > entropy[up]


def _sig_digits_ok(mine, printed):
    """|mine - printed| within half a unit of the printed 5th significant digit."""
    unit = 10.0 ** (np.floor(np.log10(abs(printed))) - 4)
    return abs(mine - printed) <= 0.5 * unit * (1 + 1e-9)


def test_rj2a_published_plateaus():
    """Dai & Woodward (1994) Tables Ia, Ib as Athena++'s shock_tube.cpp quotes them."""
    s, W = ref.ryu_jones_2a_waves()
    s4pi = np.sqrt(4 * np.pi)
    for i, row in enumerate(ref.RJ2A_PUBLISHED):
        mine = [W[i + 1, RHO], W[i + 1, MX], W[i + 1, MY], W[i + 1, MZ], W[i + 1, EN],
                W[i + 1, BY] * s4pi, W[i + 1, BZ] * s4pi]
        for name, a, b in zip(("rho", "vx", "vy", "vz", "p", "By", "Bz"), mine, row):
            assert _sig_digits_ok(a, b), (i, name, a, b)
    L = ref.RJ2A_LEFT
    m = ref.RJ2A_PUBLISHED_MASS_FLUX
    assert _sig_digits_ok(L[RHO] * (L[MX] - s[0]), m["fast-"])
    assert _sig_digits_ok(W[2, RHO] * (W[2, MX] - s[2]), m["slow-"])
    assert _sig_digits_ok(W[5, RHO] * (s[4] - W[5, MX]), m["slow+"])
    assert _sig_digits_ok(s[6], ref.RJ2A_PUBLISHED_FAST_RIGHT_SPEED)
    # Athena++'s rotational-discontinuity positions: vx -+ 1/sqrt(pi rho) (B_x = 2/sqrt(4 pi))
    assert s[1] == pytest.approx(0.60588 - 1 / np.sqrt(np.pi * 1.4903), abs=5e-5)
    assert s[5] == pytest.approx(0.53432 + 1 / np.sqrt(np.pi * 1.309), abs=5e-5)


def test_rj2a_sampling():
    s, W = ref.ryu_jones_2a_waves()
    t = ref.RJ2A_T_END
    x_mid = 0.5 + t * np.r_[s[0] - 0.1, 0.5 * (s[:-1] + s[1:]), s[-1] + 0.1]
    rho, vel, p, B = ref.ryu_jones_2a(x_mid, t)
    assert vel.shape == (3, 8) and B.shape == (3, 8)
    Wx = np.vstack([rho, vel, p, B]).T
    assert np.array_equal(Wx, W)
    rho0, vel0, _, B0 = ref.ryu_jones_2a(np.array([0.2, 0.7]), 0.0)
    assert np.array_equal(rho0, [1.08, 1.0]) and np.array_equal(vel0[0], [1.2, 0.0])
    assert np.array_equal(B0[1], [ref.RJ2A_LEFT[BY], ref.RJ2A_RIGHT[BY]])
    # Athena++'s coordinates: interface at 0 on [-0.5, 0.5]
    assert np.array_equal(ref.ryu_jones_2a(x_mid - 0.5, t, x0=0.0)[0], rho)
    x = np.linspace(0, 1, 11).reshape(1, 11)
    assert ref.ryu_jones_2a(x, t)[1].shape == (3, 1, 11)


def test_rj2a_newton_start_independent():
    """From the published plateaus (to 3 digits) Newton reaches the same solution."""
    W0 = [np.r_[r[0:5], ref.RJ2A_LEFT[BX], np.array(r[5:7]) / np.sqrt(4 * np.pi)] for r in ref.RJ2A_PUBLISHED]
    W0 = [np.round(w, 2) for w in W0]
    free = [RHO, MX, MY, MZ, EN, BY, BZ]
    z0 = np.concatenate([W0[0][free], [-0.9, np.arctan2(W0[1][BZ], W0[1][BY])], W0[2][free],
                         [0.3, W0[3][RHO]], W0[4][free], [0.9, np.arctan2(W0[5][BZ], W0[5][BY]), 2.3]])
    W, s = ref.solve_riemann_discontinuities(ref.RJ2A_LEFT, ref.RJ2A_RIGHT, ref.RJ2A_GAMMA, z0=z0)
    s_ref, W_ref = ref.ryu_jones_2a_waves()
    assert np.allclose(W, W_ref, rtol=0, atol=1e-12) and np.allclose(s, s_ref, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ Orszag-Tang, Brio-Wu

def test_orszag_tang_constants():
    a = np.sqrt(ref.OT_GAMMA * ref.OT_P / ref.OT_RHO)
    assert a == pytest.approx(1.0)  # Mach 1 for v0 = 1
    assert 2 * ref.OT_P / ref.OT_B0**2 == pytest.approx(10.0 / 3.0)  # plasma beta 10/3
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-0.5, 0.5, (2, 40))
    va, Ba = ref.orszag_tang_athena(x, y)
    vu, Bu = ref.orszag_tang_unit_box(x + 0.5, y + 0.5)
    assert np.allclose(va, vu, atol=1e-14) and np.allclose(Ba, Bu, atol=1e-14)
    # Athena++'s vector potential A_z = B0/(4 pi)(cos 4 pi x - 2 cos 2 pi y): B = curl A
    h = 1e-6

    def Az(x, y):
        return ref.OT_B0 / (4 * np.pi) * (np.cos(4 * np.pi * x) - 2 * np.cos(2 * np.pi * y))

    assert np.allclose(Ba[0], (Az(x, y + h) - Az(x, y - h)) / (2 * h), atol=1e-8)
    assert np.allclose(Ba[1], -(Az(x + h, y) - Az(x - h, y)) / (2 * h), atol=1e-8)


def test_brio_wu_constants():
    assert ref.BW_GAMMA == 2.0 and ref.BW_T_END == 0.1 and ref.BW_BOX == (-0.5, 0.5)
    assert np.array_equal(ref.BW_LEFT[[RHO, EN, BX, BY]], [1, 1, 0.75, 1])
    assert np.array_equal(ref.BW_RIGHT[[RHO, EN, BX, BY]], [0.125, 0.1, 0.75, -1])
