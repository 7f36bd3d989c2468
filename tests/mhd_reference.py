"""Reference physics for ideal-MHD test problems (numpy only, no taichi).

Independent of the solver, so that tests of an MHD model compare it with something it
did not compute itself. Units are Heaviside-Lorentz (no 4 pi): magnetic pressure |B|^2/2,
E = p/(gamma-1) + rho|v|^2/2 + |B|^2/2. Our layouts (x = the wave normal):

    U = (rho, mom_x, mom_y, mom_z, E, B_x, B_y, B_z)    conserved
    W = (rho, v_x,   v_y,   v_z,   p, B_x, B_y, B_z)    primitive

Contents
  a. flux_x, eigensystem, primitive_eigenvectors, linear_wave: the 1D flux, its
     eigenvalues and Athena++'s right eigenvectors (normalised as Athena++ does).
  b. Gardiner & Stone (2008) 3D linear-wave test as Athena++ runs it: athena_angles,
     wave_frame, wavelength, GS_* constants, gs_period, gs_conserved, athena_l1_errors,
     athena_rms_l1, ATHENA_LINWAVE_RMS_MAX.
  c. Ryu & Jones (1995) test 2a: ryu_jones_2a (exact solution), ryu_jones_2a_waves
     (speeds and plateaus, from a Newton solve of the Rankine-Hugoniot conditions),
     RJ2A_PUBLISHED (Dai & Woodward 1994 tables as Athena++ quotes them).
  d. Orszag-Tang and Brio-Wu constants as Athena++ runs them.

Athena++ below means github.com/PrincetonUniversity/athena (snapshot of 2026-05,
commit ed4d1e3e3a3b): src/pgen/linear_wave.cpp, src/pgen/shock_tube.cpp,
src/pgen/orszag_tang.cpp, inputs/mhd/athinput.*, tst/regression/scripts/tests/mhd/*.py.
The code here is written from the formulas, not copied.
"""
from functools import lru_cache

import numpy as np

RHO, MX, MY, MZ, EN, BX, BY, BZ = range(8)  # rows of U; W uses the same rows for v, p
VX, VY, VZ, PR = MX, MY, MZ, EN
# Wave families in Athena++'s column order (its wave_flag): speeds vx-cf, vx-ca, vx-cs,
# vx, vx+cs, vx+ca, vx+cf. linear_wave uses the right-moving column of each family.
WAVE_COLUMNS = {"fast": 6, "alfven": 5, "slow": 4, "entropy": 3}
WAVE_COLUMNS_LEFT = {"fast": 0, "alfven": 1, "slow": 2, "entropy": 3}


# --------------------------------------------------------------------------------------
# a. Flux, speeds, eigenvectors
# --------------------------------------------------------------------------------------

def _state(rho, vel, p, B):
    return float(rho), np.asarray(vel, float).reshape(3), float(p), np.asarray(B, float).reshape(3)


def prim_to_cons(W, gamma):
    """U from W (first axis of length 8, any trailing shape)."""
    W = np.asarray(W, float)
    U = W.copy()
    U[MX:MZ + 1] = W[RHO] * W[VX:VZ + 1]
    U[EN] = (W[PR] / (gamma - 1.0) + 0.5 * W[RHO] * np.sum(W[VX:VZ + 1] ** 2, axis=0)
             + 0.5 * np.sum(W[BX:BZ + 1] ** 2, axis=0))
    return U


def cons_to_prim(U, gamma):
    """W from U (first axis of length 8)."""
    U = np.asarray(U, float)
    W = U.copy()
    W[VX:VZ + 1] = U[MX:MZ + 1] / U[RHO]
    W[PR] = (gamma - 1.0) * (U[EN] - 0.5 * np.sum(U[MX:MZ + 1] ** 2, axis=0) / U[RHO]
                             - 0.5 * np.sum(U[BX:BZ + 1] ** 2, axis=0))
    return W


def flux_x(U, gamma):
    """Ideal-MHD flux along x of conserved U (Heaviside-Lorentz); its B_x row is 0."""
    U = np.asarray(U, float)
    W = cons_to_prim(U, gamma)
    v, B = W[VX:VZ + 1], W[BX:BZ + 1]
    pt = W[PR] + 0.5 * np.sum(B ** 2, axis=0)
    vB = np.sum(v * B, axis=0)
    F = np.empty_like(U)
    F[RHO] = U[MX]
    F[MX:MZ + 1] = U[MX:MZ + 1] * v[0] - B * B[0]
    F[MX] += pt
    F[EN] = (U[EN] + pt) * v[0] - B[0] * vB
    F[BX:BZ + 1] = B * v[0] - v * B[0]  # B_x row: B_x v_x - v_x B_x = 0
    return F


def wave_speeds(rho, p, B, gamma):
    """(c_f, c_a, c_s) along x: roots of c^4 - (a^2 + |B|^2/rho) c^2 + a^2 B_x^2/rho = 0.

    c_s^2 = a^2 c_a^2 / c_f^2 (product of the roots) as in Athena++, which keeps c_s
    accurate when it is small.
    """
    B = np.asarray(B, float)
    a2 = gamma * p / rho
    ca2 = B[0] ** 2 / rho
    ct2 = (B[1] ** 2 + B[2] ** 2) / rho
    d = ca2 + ct2 - a2
    cf2 = 0.5 * (a2 + ca2 + ct2 + np.sqrt(d * d + 4.0 * a2 * ct2))
    cs2 = a2 * ca2 / cf2
    return np.sqrt(cf2), np.sqrt(ca2), np.sqrt(cs2)


def eigensystem(rho, vel, p, B, gamma):
    """Eigenvalues (7,) and right eigenvectors (8, 7) in conserved variables U.

    Columns k = 0..6 are Athena++'s wave_flag order, speeds vx - cf, vx - ca, vx - cs, vx,
    vx + cs, vx + ca, vx + cf (ascending, since cs <= ca <= cf). Row B_x is 0: B_x is
    not a variable of the 1D system. Normalisation is Athena++'s (linear_wave.cpp,
    Eigensystem, adiabatic MHD with its arguments x = 0, y = 1), which is Stone et al.
    2008 ApJS 178, 137, eq. B21: rho entries alpha_f, alpha_s, 1 for the fast, slow and
    entropy waves, unit tangential momentum for the Alfven wave.

    Degenerate states follow Athena++: B_t = 0 -> beta = (1, 0); sgn(B_x) = +1 when
    B_x = 0; alpha_f = 1, alpha_s = 0 when cf = cs or cf <= a; alpha_f = 0, alpha_s = 1
    when a <= cs.
    """
    rho, v, p, B = _state(rho, vel, p, B)
    cf, ca, cs = wave_speeds(rho, p, B, gamma)
    a2 = gamma * p / rho
    a = np.sqrt(a2)
    cf2, cs2 = cf * cf, cs * cs
    bt = np.hypot(B[1], B[2])
    by_hat, bz_hat = (1.0, 0.0) if bt == 0.0 else (B[1] / bt, B[2] / bt)
    if cf2 - cs2 == 0.0:
        af, as_ = 1.0, 0.0
    elif a2 - cs2 <= 0.0:
        af, as_ = 0.0, 1.0
    elif cf2 - a2 <= 0.0:
        af, as_ = 1.0, 0.0
    else:
        af = np.sqrt((a2 - cs2) / (cf2 - cs2))
        as_ = np.sqrt((cf2 - a2) / (cf2 - cs2))
    sgn = -1.0 if B[0] < 0.0 else 1.0
    sq = np.sqrt(rho)
    vx, vy, vz = v
    v2 = float(v @ v)
    hp = 0.5 * v2 + a2 / (gamma - 1.0)  # enthalpy without the magnetic part
    qf, qs = cf * af * sgn, cs * as_ * sgn
    af_p, as_p = a * af / sq, a * as_ / sq
    v_beta = vy * by_hat + vz * bz_hat

    lam = np.array([vx - cf, vx - ca, vx - cs, vx, vx + cs, vx + ca, vx + cf])
    R = np.zeros((8, 7))
    for k, sig in ((0, -1.0), (6, 1.0)):  # fast
        R[:, k] = [af, af * (vx + sig * cf), af * vy - sig * qs * by_hat, af * vz - sig * qs * bz_hat,
                   af * (hp + sig * vx * cf) - sig * qs * v_beta + as_p * bt,
                   0.0, as_p * by_hat, as_p * bz_hat]
    for k, sig in ((2, -1.0), (4, 1.0)):  # slow
        R[:, k] = [as_, as_ * (vx + sig * cs), as_ * vy + sig * qf * by_hat, as_ * vz + sig * qf * bz_hat,
                   as_ * (hp + sig * vx * cs) + sig * qf * v_beta - af_p * bt,
                   0.0, -af_p * by_hat, -af_p * bz_hat]
    for k, sig in ((1, -1.0), (5, 1.0)):  # Alfven
        R[:, k] = [0.0, 0.0, sig * bz_hat, -sig * by_hat, sig * (vy * bz_hat - vz * by_hat),
                   0.0, -sgn * bz_hat / sq, sgn * by_hat / sq]
    R[:, 3] = [1.0, vx, vy, vz, 0.5 * v2, 0.0, 0.0, 0.0]  # entropy
    return lam, R


def dW_dU(rho, vel, p, B, gamma):
    """Jacobian dW/dU (8, 8) at the state: maps conserved perturbations to primitive ones."""
    rho, v, p, B = _state(rho, vel, p, B)
    g1 = gamma - 1.0
    M = np.zeros((8, 8))
    M[RHO, RHO] = 1.0
    for i in range(3):
        M[VX + i, RHO] = -v[i] / rho
        M[VX + i, MX + i] = 1.0 / rho
        M[BX + i, BX + i] = 1.0
    M[PR, RHO] = 0.5 * g1 * float(v @ v)
    M[PR, MX:MZ + 1] = -g1 * v
    M[PR, EN] = g1
    M[PR, BX:BZ + 1] = -g1 * B
    return M


def primitive_eigenvectors(rho, vel, p, B, gamma):
    """Right eigenvectors (8, 7) in primitive variables W: dW/dU times eigensystem's R."""
    return dW_dU(rho, vel, p, B, gamma) @ eigensystem(rho, vel, p, B, gamma)[1]


def linear_wave(wave, rho, vel, p, B, gamma):
    """(conserved eigenvector (8,), primitive eigenvector (8,), speed) of a right-moving wave.

    wave in {"fast", "alfven", "slow", "entropy"}: the family's column of largest speed,
    Athena++ wave_flag 6, 5, 4, 3 (speeds vx + cf, vx + ca, vx + cs, vx). Athena++'s MHD
    regression test (tst/regression/scripts/tests/mhd/mhd_linwave.py) runs the LEFT-moving
    columns 0, 1, 2 (WAVE_COLUMNS_LEFT; take them from eigensystem) and checks that wave_flag 6
    gives the same error as 0.
    """
    k = WAVE_COLUMNS[wave]
    lam, R = eigensystem(rho, vel, p, B, gamma)
    return R[:, k].copy(), (dW_dU(rho, vel, p, B, gamma) @ R[:, k]), float(lam[k])


# --------------------------------------------------------------------------------------
# b. Gardiner & Stone (2008) linear waves as Athena++ runs them
# --------------------------------------------------------------------------------------
# inputs/mhd/athinput.linear_wave3d: mesh x1 in [0, 3], x2, x3 in [0, 1.5] (64x32x32),
# gamma = 1.666666666666667, amp = 1.0e-6, vflow = 0.0 (the regression test overrides it).
GS_BOX = ((0.0, 3.0), (0.0, 1.5), (0.0, 1.5))
GS_GAMMA = 5.0 / 3.0
GS_AMPLITUDE = 1.0e-6
# linear_wave.cpp InitUserMeshData: d0 = 1, p0 = 1/gamma, u0 = vflow, v0 = w0 = 0,
# (bx0, by0, bz0) = (1, sqrt 2, 1/2) in the wave frame (x' along the wave vector).
GS_RHO = 1.0
GS_P = 1.0 / GS_GAMMA
GS_B_WAVE = (1.0, np.sqrt(2.0), 0.5)
# Background flow along x': 0 for fast/Alfven/slow; mhd_linwave.py runs the entropy wave with
# problem/vflow=1.0 (else it would not move). Athena++ computes the eigenvectors with
# u0 = vflow, so vflow also enters every eigenvector and speed.
GS_VFLOW = {"fast": 0.0, "alfven": 0.0, "slow": 0.0, "entropy": 1.0}
# mhd_linwave.py: at 64x32x32 (with static refinement, meshblocks of nx/4) the RMS of the L1
# errors must stay below these (HLLD and Roe, vl2, xorder 2, cfl 0.3, the L-going fast,
# Alfven, slow waves at tlim = 0.5, 1, 2 and the entropy wave with vflow 1 at tlim 1, i.e.
# one period each); also rms(64)/rms(32) <= 0.4 and max/L1 <= 8 (fast, slow).
ATHENA_LINWAVE_RMS_MAX = {"fast": 4.5e-8, "alfven": 4.0e-8, "slow": 5.0e-8, "entropy": 2.75e-8}
ATHENA_LINWAVE_CONVERGENCE_MAX = 0.4


def athena_angles(box=GS_BOX):
    """(ang_2, ang_3) as linear_wave.cpp chooses them when the input gives none.

    ang_3 = atan(Lx/Ly) (rotation about z), ang_2 = atan((Lx cos ang_3 + Ly sin ang_3)/(2 Lz))
    (about y'). For [0,3]x[0,1.5]x[0,1.5]: sin ang_2 = 2/3, sin ang_3 = 2/sqrt 5.
    """
    lx, ly, lz = (b[1] - b[0] for b in box)
    a3 = np.arctan(lx / ly)
    a2 = np.arctan(0.5 * (lx * np.cos(a3) + ly * np.sin(a3)) / lz)
    return float(a2), float(a3)


def wave_frame(box=GS_BOX):
    """3x3 rotation whose rows are x', y', z' (wave frame) in grid coordinates.

    linear_wave.cpp: x' = (cos a2 cos a3, cos a2 sin a3, sin a2) (the wave vector),
    y' = (-sin a3, cos a3, 0), z' = (-sin a2 cos a3, -sin a2 sin a3, cos a2); a wave-frame
    vector q maps to the grid as frame.T @ q (its m1, m2, m3 and b1, b2, b3), a grid point r
    has phase coordinate x' . r.
    """
    a2, a3 = athena_angles(box)
    s2, c2, s3, c3 = np.sin(a2), np.cos(a2), np.sin(a3), np.cos(a3)
    return np.array([[c2 * c3, c2 * s3, s2],
                     [-s3, c3, 0.0],
                     [-s2 * c3, -s2 * s3, c2]])


def wavelength(box=GS_BOX):
    """linear_wave.cpp: the smallest of Lx cos a2 cos a3, Ly cos a2 sin a3, Lz sin a2 (3D).

    1 for the G&S box: exactly one wavelength along each grid direction, so the wave is
    periodic on the box.
    """
    a2, a3 = athena_angles(box)
    lx, ly, lz = (b[1] - b[0] for b in box)
    return float(min(lx * np.cos(a2) * np.cos(a3), ly * np.cos(a2) * np.sin(a3), lz * np.sin(a2)))


def gs_background(wave):
    """(rho, vel, p, B) in the wave frame for the G&S test of that wave family."""
    return GS_RHO, np.array([GS_VFLOW[wave], 0.0, 0.0]), GS_P, np.array(GS_B_WAVE)


def gs_speed(wave, left=False):
    """Phase speed along x' (Athena++'s ev[wave_flag]); right-moving unless left."""
    k = (WAVE_COLUMNS_LEFT if left else WAVE_COLUMNS)[wave]
    return float(eigensystem(*gs_background(wave), GS_GAMMA)[0][k])


def gs_period(wave, box=GS_BOX):
    """lambda/|speed|: fast 0.5, Alfven 1, slow 2, entropy (vflow 1) 1.

    Athena++'s problem/test option sets tlim = lambda/|ev[wave_flag]| * tlim; the
    regression test uses tlim = 0.5, 1, 2, 1, i.e. one period of each.
    """
    return wavelength(box) / abs(gs_speed(wave))


def gs_conserved(points, t, wave, left=False, box=GS_BOX, amplitude=GS_AMPLITUDE):
    """Linear solution U (8, ...) at grid points (3, ...) and time t, grid-frame components.

    linear_wave.cpp: U = U0 + amp sin(k (x' . r - ev t)) R (sin, k = 2 pi/lambda; Athena++
    writes the t = 0 state, the same after whole periods), with R rotated to the grid by
    wave_frame and the background momentum rho vflow along x'. Athena++ sets rho, momentum
    and E at cell centres (point values) and B from a vector potential (face averages);
    its error compares with these point values at cell centres (plus a Laplacian
    correction h^2/24 for its fourth-order scheme).
    """
    rho, vel, p, B = gs_background(wave)
    k = (WAVE_COLUMNS_LEFT if left else WAVE_COLUMNS)[wave]
    lam, R = eigensystem(rho, vel, p, B, GS_GAMMA)
    rot = wave_frame(box)
    points = np.asarray(points, float)
    xp = np.tensordot(rot[0], points, axes=1)
    sn = np.sin(2.0 * np.pi / wavelength(box) * (xp - lam[k] * t))
    U0 = prim_to_cons(np.r_[rho, vel, p, B], GS_GAMMA)
    Uw = U0.reshape((8,) + (1,) * sn.ndim) + amplitude * R[:, k].reshape((8,) + (1,) * sn.ndim) * sn
    U = Uw.copy()
    U[MX:MZ + 1] = np.tensordot(rot.T, Uw[MX:MZ + 1], axes=1)
    U[BX:BZ + 1] = np.tensordot(rot.T, Uw[BX:BZ + 1], axes=1)
    return U


def athena_l1_errors(U_num, U_exact, cell_volumes=None):
    """L1 error of each of the 8 variables, as linear_wave.cpp's UserWorkAfterLoop.

    sum over cells |U_num - U_exact| * cell volume / box volume (the mean over cells on a
    uniform grid), for d, M1, M2, M3, E, B1c, B2c, B3c in GRID components (our row order
    is Athena++'s IDN, IM1, IM2, IM3, IEN then NHYDRO + IB1..IB3), B cell-centred.
    """
    d = np.abs(np.asarray(U_num, float) - np.asarray(U_exact, float)).reshape(8, -1)
    if cell_volumes is None:
        return d.mean(axis=1)
    vol = np.asarray(cell_volumes, float).reshape(-1)
    return (d * vol).sum(axis=1) / vol.sum()


def athena_rms_l1(l1_errors):
    """Athena++'s "RMS-L1-Error": sqrt of the SUM of the squared L1 errors (not the mean).

    linear_wave.cpp: rms_err += SQR(l1_err[i]) over i < NHYDRO + NFIELD (8 for adiabatic
    MHD), rms_err = sqrt(rms_err); column 5 of linearwave-errors.dat, the number
    ATHENA_LINWAVE_RMS_MAX bounds. shock_tube.cpp computes its RJ2a error the same way
    (there the L1 is the plain mean over cells).
    """
    e = np.asarray(l1_errors, float)
    return float(np.sqrt(np.sum(e * e)))


# --------------------------------------------------------------------------------------
# c. Ryu & Jones (1995) test 2a, exact solution
# --------------------------------------------------------------------------------------
# Ryu & Jones 1995, ApJ 442, 228, Fig. 2a; inputs/mhd/athinput.rj2a (Athena++ puts the
# interface at x = 0 of [-0.5, 0.5]; [0, 1] with x0 = 0.5 is the same problem).
# Gaussian B of the paper divided by sqrt(4 pi): B_x = 2/sqrt(4 pi) = 0.5641895835477562.
RJ2A_GAMMA = 5.0 / 3.0
RJ2A_T_END = 0.2
_S4PI = np.sqrt(4.0 * np.pi)
RJ2A_LEFT = np.array([1.08, 1.2, 0.01, 0.5, 0.95, 2.0 / _S4PI, 3.6 / _S4PI, 2.0 / _S4PI])
RJ2A_RIGHT = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 2.0 / _S4PI, 4.0 / _S4PI, 2.0 / _S4PI])

# Published plateaus (Dai & Woodward 1994, Tables Ia and Ib, as Athena++'s
# src/pgen/shock_tube.cpp writes them for its RJ2a error), left to right between the
# waves: (rho, vx, vy, vz, p, By*sqrt(4 pi), Bz*sqrt(4 pi)), B in the paper's Gaussian units.
RJ2A_PUBLISHED = [
    (1.4903, 0.60588, 0.11235, 0.55686, 1.6558, 5.0987, 2.8326),    # fast-  | rot-
    (1.4903, 0.60588, 0.22157, 0.30125, 1.6558, 5.5713, 1.7264),    # rot-   | slow-
    (1.6343, 0.57538, 0.047601, 0.24734, 1.9317, 5.0074, 1.5517),   # slow-  | contact
    (1.4735, 0.57538, 0.047601, 0.24734, 1.9317, 5.0074, 1.5517),   # contact| slow+
    (1.3090, 0.53432, -0.18411, 0.17554, 1.5844, 5.7083, 1.7689),   # slow+  | rot+
    (1.3090, 0.53432, -0.094572, -0.047286, 1.5844, 5.3452, 2.6726),  # rot+ | fast+
]
# shock_tube.cpp's wave positions/tlim, from the same tables: fast- speed 1.2 - 2.3305/1.08
# (2.3305 = mass flux rho_L (vx_L - s)), rot- 0.60588 - 1/sqrt(pi 1.4903) (an Alfven speed,
# B_x = 2/sqrt(4 pi)), slow- 0.60588 - 0.51594/1.4903, contact 0.57538,
# slow+ 0.53432 + 0.48144/1.309, rot+ 0.53432 + 1/sqrt(pi 1.309), fast+ 2.2638.
RJ2A_PUBLISHED_MASS_FLUX = {"fast-": 2.3305, "slow-": 0.51594, "slow+": 0.48144}
RJ2A_PUBLISHED_FAST_RIGHT_SPEED = 2.2638
RJ2A_WAVES = ("fast-", "rot-", "slow-", "contact", "slow+", "rot+", "fast+")

_FREE = [RHO, VX, VY, VZ, PR, BY, BZ]  # the 7 variables of the 1D system (B_x fixed)


def _full(w7, bx):
    W = np.empty(8)
    W[_FREE] = w7
    W[BX] = bx
    return W


def _rh(Wl, Wr, s, gamma):
    """Rankine-Hugoniot residual F(Ur) - F(Ul) - s (Ur - Ul), the 7 free rows."""
    Ul, Ur = prim_to_cons(Wl, gamma), prim_to_cons(Wr, gamma)
    return (flux_x(Ur, gamma) - flux_x(Ul, gamma) - s * (Ur - Ul))[_FREE]


def _rotate(W, psi, side):
    """Rotational discontinuity: B_t turned to angle psi, |B_t|, rho, vx, p unchanged.

    Jump conditions with mass flux m = rho (vx - s) = -side sqrt(rho) |B_x| give
    [v_t] = -side sgn(B_x) [B_t]/sqrt(rho) and s = vx + side |B_x|/sqrt(rho)
    (side -1: the left-facing wave, +1: right-facing).
    """
    Wr = W.copy()
    bt = np.hypot(W[BY], W[BZ])
    Wr[BY], Wr[BZ] = bt * np.cos(psi), bt * np.sin(psi)
    sgn = -1.0 if W[BX] < 0.0 else 1.0
    Wr[VY:VZ + 1] += -side * sgn * (Wr[BY:BZ + 1] - W[BY:BZ + 1]) / np.sqrt(W[RHO])
    return Wr, W[VX] + side * abs(W[BX]) / np.sqrt(W[RHO])


def _unpack(z, WL, WR):
    """Unknowns -> the 8 states (L, 6 plateaus, R) and 7 speeds.

    z = (W1[7], s1, psi_L, W3[7], s3, rho4, W5[7], s5, psi_R, s7): fast- shock L -> W1,
    rotation W1 -> W2 (B_t angle psi_L), slow- shock W2 -> W3, contact W3 -> W4 (only rho
    jumps), slow+ shock W4 -> W5, rotation W5 -> W6 (angle psi_R), fast+ shock W6 -> R.
    """
    bx = WL[BX]
    W1, s1, psiL = _full(z[0:7], bx), z[7], z[8]
    W3, s3, rho4 = _full(z[9:16], bx), z[16], z[17]
    W5, s5, psiR, s7 = _full(z[18:25], bx), z[25], z[26], z[27]
    W2, s2 = _rotate(W1, psiL, -1.0)
    W4 = W3.copy()
    W4[RHO] = rho4
    W6, s6 = _rotate(W5, psiR, +1.0)
    return [WL, W1, W2, W3, W4, W5, W6, WR], np.array([s1, s2, s3, W3[VX], s5, s6, s7])


def _residual(z, WL, WR, gamma):
    W, s = _unpack(z, WL, WR)
    return np.concatenate([_rh(W[0], W[1], s[0], gamma), _rh(W[2], W[3], s[2], gamma),
                           _rh(W[4], W[5], s[4], gamma), _rh(W[6], W[7], s[6], gamma)])


def _linear_guess(WL, WR, gamma):
    """Start for Newton: the linearised Riemann problem about the mean state.

    W_R - W_L split along the primitive eigenvectors; each plateau is W_L plus the waves to
    its left, each speed the mean state's eigenvalue.
    """
    Wm = 0.5 * (WL + WR)
    rho, vel, p, B = Wm[RHO], Wm[VX:VZ + 1], Wm[PR], Wm[BX:BZ + 1]
    lam = eigensystem(rho, vel, p, B, gamma)[0]
    Rw = primitive_eigenvectors(rho, vel, p, B, gamma)[_FREE]
    alpha = np.linalg.solve(Rw, (WR - WL)[_FREE])
    W = [WL.copy()]
    for k in range(7):
        W.append(W[-1] + _full(alpha[k] * Rw[:, k], 0.0))
    ang = [np.arctan2(w[BZ], w[BY]) for w in W]
    return np.concatenate([W[1][_FREE], [lam[0], ang[2]], W[3][_FREE], [lam[2], W[4][RHO]],
                           W[5][_FREE], [lam[4], ang[6], lam[6]]])


def solve_riemann_discontinuities(WL, WR, gamma, z0=None, tol=1e-14, max_iter=60):
    """Newton on the Rankine-Hugoniot conditions of the 7-wave all-discontinuity solution.

    Valid when the exact solution has fast shocks, rotational discontinuities, slow shocks
    and a contact only (no rarefaction), as RJ2a. Jacobian by central differences.
    Returns (states (8, 8) primitive rows L, 6 plateaus, R; speeds (7,)).
    """
    WL, WR = np.asarray(WL, float), np.asarray(WR, float)
    z = _linear_guess(WL, WR, gamma) if z0 is None else np.asarray(z0, float).copy()
    for _ in range(max_iter):
        r = _residual(z, WL, WR, gamma)
        if np.max(np.abs(r)) < tol:
            break
        J = np.empty((r.size, z.size))
        for j in range(z.size):
            h = 1e-7 * max(1.0, abs(z[j]))
            zp, zm = z.copy(), z.copy()
            zp[j] += h
            zm[j] -= h
            J[:, j] = (_residual(zp, WL, WR, gamma) - _residual(zm, WL, WR, gamma)) / (2.0 * h)
        dz = np.linalg.solve(J, r)
        # Backtracking on |r|: the linearised start puts slow+ and rot+ nearly together
        # (cs ~ ca at the mean state), and full steps from there leave for another branch
        # of the jump conditions (an intermediate shock with B_t reversed).
        t, norm = 1.0, np.linalg.norm(r)
        while t > 1e-6 and np.linalg.norm(_residual(z - t * dz, WL, WR, gamma)) > (1.0 - 0.5 * t) * norm:
            t *= 0.5
        z = z - t * dz
    else:
        raise RuntimeError("Rankine-Hugoniot Newton did not converge: |r| = %g" % np.max(np.abs(r)))
    W, s = _unpack(z, WL, WR)
    return np.array(W), s


@lru_cache(maxsize=1)
def _rj2a():
    W, s = solve_riemann_discontinuities(RJ2A_LEFT, RJ2A_RIGHT, RJ2A_GAMMA)
    W.setflags(write=False)
    s.setflags(write=False)
    return W, s


def ryu_jones_2a_waves():
    """(speeds (7,), states (8, 8)) of RJ2a, exact to round-off.

    speeds: fast-, rot-, slow-, contact, slow+, rot+, fast+ (RJ2A_WAVES); states: primitive
    W rows (rho, vx, vy, vz, p, Bx, By, Bz), Heaviside-Lorentz B: left state, the 6
    plateaus between the waves, right state (7 waves, so 6 plateaus plus the 2 initial
    states). Computed (not tabulated) by Newton on the Rankine-Hugoniot conditions.
    """
    W, s = _rj2a()
    return s.copy(), W.copy()


def ryu_jones_2a(x, t, x0=0.5):
    """Exact RJ2a solution at positions x and time t: (rho, vel (3, ...), p, B (3, ...)).

    Interface at x0 at t = 0 (0.5 on [0, 1]; Athena++ uses 0 on [-0.5, 0.5]); the usual
    end time is RJ2A_T_END = 0.2. A point exactly on a wave gets the state to its right.
    """
    x = np.asarray(x, float)
    s, W = ryu_jones_2a_waves()
    if t <= 0.0:
        idx = np.where(x < x0, 0, 7)
    else:
        idx = np.searchsorted(s, (x - x0) / t, side="right")
    Wx = np.moveaxis(W[idx], -1, 0)
    return Wx[RHO], Wx[VX:VZ + 1], Wx[PR], Wx[BX:BZ + 1]


# --------------------------------------------------------------------------------------
# d. Orszag-Tang and Brio-Wu, as Athena++ runs them
# --------------------------------------------------------------------------------------
# src/pgen/orszag_tang.cpp + inputs/mhd/athinput.orszag-tang: box [-0.5, 0.5]^2, periodic,
# gamma = 1.666666667, tlim = 1.0 (500^2 cells).
OT_BOX = ((-0.5, 0.5), (-0.5, 0.5))
OT_GAMMA = 5.0 / 3.0
OT_B0 = 1.0 / np.sqrt(4.0 * np.pi)        # orszag_tang.cpp: B0 = 1/sqrt(4 pi)
OT_RHO = 25.0 / (36.0 * np.pi)             # d0 = 25/(36 pi)
OT_P = 5.0 / (12.0 * np.pi)                # p0 = 5/(12 pi)
OT_V0 = 1.0                                # v0 = 1
OT_T_END = 1.0                             # athinput.orszag-tang tlim


def orszag_tang_athena(x, y):
    """Athena++'s Orszag-Tang on [-0.5, 0.5]^2: (vx, vy), (Bx, By) at points.

    orszag_tang.cpp: M1 = d0 v0 sin(2 pi y), M2 = -d0 v0 sin(2 pi x); B from
    A_z = B0/(4 pi) (cos 4 pi x - 2 cos 2 pi y), i.e. Bx = B0 sin 2 pi y, By = B0 sin 4 pi x.
    This is the usual [0, 1]^2 set-up v = (-sin 2 pi y, sin 2 pi x),
    B = B0 (-sin 2 pi y, sin 4 pi x) moved by -(1/2, 1/2); the [0, 1]^2 formulas used
    unchanged on [-0.5, 0.5]^2 give the same periodic flow shifted by half a box.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    v = (OT_V0 * np.sin(2 * np.pi * y), -OT_V0 * np.sin(2 * np.pi * x))
    B = (OT_B0 * np.sin(2 * np.pi * y), OT_B0 * np.sin(4 * np.pi * x))
    return v, B


def orszag_tang_unit_box(x, y):
    """The same flow in its usual form on [0, 1]^2: v = (-sin 2 pi y, sin 2 pi x),
    B = B0 (-sin 2 pi y, sin 4 pi x); equals orszag_tang_athena(x - 1/2, y - 1/2)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    v = (-OT_V0 * np.sin(2 * np.pi * y), OT_V0 * np.sin(2 * np.pi * x))
    B = (-OT_B0 * np.sin(2 * np.pi * y), OT_B0 * np.sin(4 * np.pi * x))
    return v, B


# inputs/mhd/athinput.bw (Brio & Wu 1988, JCP 75, 400): gamma = 2, x in [-0.5, 0.5],
# interface at 0, tlim = 0.1; (rho, vx, vy, vz, p, Bx, By, Bz), B as given (no 4 pi).
BW_GAMMA = 2.0
BW_BOX = (-0.5, 0.5)
BW_X0 = 0.0
BW_T_END = 0.1
BW_LEFT = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.75, 1.0, 0.0])
BW_RIGHT = np.array([0.125, 0.0, 0.0, 0.0, 0.1, 0.75, -1.0, 0.0])
