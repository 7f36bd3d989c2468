"""Exact Riemann solver for 1D special-relativistic hydrodynamics (c = 1).

    D_t + (D vx)_x = 0,  Sx_t + (Sx vx + p)_x = 0,  St_t + (St vx)_x = 0,
    tau_t + ((tau + p) vx)_x = 0,
    D = rho W,  S = rho h W^2 v,  tau = rho h W^2 - p - D,  W = 1 / sqrt(1 - vx^2 - vt^2),

ideal gas p = (Gamma - 1) rho eps, h = 1 + Gamma / (Gamma - 1) p / rho, with one
tangential velocity vt (vy in the 2D tests). Reference solution for the solver
tests, pure numpy (no scipy, no taichi).

The star pressure p* is the root of vx*_L(p) - vx*_R(p) (Marti & Mueller,
J. Fluid Mech. 258 (1994) 317; Living Rev. Relativ. 6 (2003) 7, sec. 9.1).
Tangential velocities couple to the normal flow only through W; across shocks
and rarefactions h W vt is invariant (Pons, Marti & Mueller, J. Fluid Mech. 422
(2000) 125). Shocks follow the Taub adiabat and Pons et al.'s jump in vx; a
rarefaction is the quadrature
    d atanh(vx) / dp = -+ sqrt(h^2 + A^2 (1 - cs^2)) / ((h^2 + A^2) rho cs),  A = h W vt
(Rezzolla, Zanotti & Pons, J. Fluid Mech. 479 (2003) 199), done here with
composite Gauss-Legendre in ln p. The right wave is the left one seen in a
mirror (x -> -x, vx -> -vx), so every wave formula is written once.
"""
from collections import namedtuple

import numpy as np

_TOL = 1e-13        # relative tolerance on p*
_MAX_ITER = 200
_PANEL = 0.5        # width in ln p of one quadrature panel
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)   # 16 points on [-1, 1] per panel
_P_FLOOR = 1e-200   # relative to min(pL, pR): below it the waves open a vacuum

Wave = namedtuple("Wave", "kind head tail")
Wave.__doc__ = """One nonlinear wave: kind 'shock' or 'rarefaction'; head is the
speed of its front facing the initial state, tail that of its back facing the star
state (a shock has head == tail == its speed)."""


def _lambda_minus(vx, vt, cs):
    """Slowest characteristic speed lambda_- with tangential flow (Marti & Mueller 2003)."""
    v2, c2 = vx * vx + vt * vt, cs * cs
    root = np.sqrt((1.0 - v2) * (1.0 - vx * vx - vt * vt * c2))
    return (vx * (1.0 - c2) - cs * root) / (1.0 - v2 * c2)


def _vt_from_invariant(A, vx, h):
    """vt from A = h W vt and vx: A^2 (1 - vx^2 - vt^2) = h^2 vt^2."""
    return A * np.sqrt((1.0 - vx * vx) / (h * h + A * A))


class _Side:
    """One initial state, seen as the state ahead of a left-facing wave."""

    def __init__(self, state, gamma):
        self.rho, self.vx, self.vt, self.p = (float(v) for v in state)
        self.g = g = float(gamma)
        if not (self.rho > 0.0 and self.p > 0.0 and g > 1.0):
            raise ValueError("need rho > 0, p > 0, gamma > 1, got %r" % (state,))
        if not self.vx**2 + self.vt**2 < 1.0:
            raise ValueError("need |v| < 1, got %r" % (state,))
        self.y = g / (g - 1.0) * self.p / self.rho   # h - 1, kept apart for precision
        self.h = 1.0 + self.y
        self.W = 1.0 / np.sqrt(1.0 - self.vx**2 - self.vt**2)
        self.A = self.h * self.W * self.vt
        self.K = self.p / self.rho**g                # isentrope p = K rho^Gamma
        self.cs = np.sqrt(g * self.p / (self.rho * self.h))

    def mirrored(self):
        return _Side((self.rho, -self.vx, self.vt, self.p), self.g)

    def isentrope(self, p):
        """(rho, h, cs) at pressure p on this state's isentrope (rarefactions)."""
        g = self.g
        rho = (p / self.K) ** (1.0 / g)
        h = 1.0 + g / (g - 1.0) * p / rho
        return rho, h, np.sqrt(g * p / (rho * h))

    def fan_integral(self, s):
        """int_{ln p_a}^{s} p |d atanh(vx)/dp| d(ln p), vectorised over s = ln p.

        Composite 16-point Gauss-Legendre on panels at most _PANEL wide in ln p:
        the integrand is analytic there (powers of p), so the quadrature error
        is far below round-off.
        """
        s = np.asarray(s, dtype=float)
        s0 = np.log(self.p)
        n = max(1, int(np.ceil(np.max(np.abs(s - s0), initial=0.0) / _PANEL)))
        frac = (np.arange(n)[:, None] + 0.5 * (_GL_X[None, :] + 1.0)) / n  # (n, 16)
        nodes = s0 + (s - s0)[..., None, None] * frac
        p = np.exp(nodes)
        rho, h, cs = self.isentrope(p)
        A2 = self.A * self.A
        f = p * np.sqrt(h * h + A2 * (1.0 - cs * cs)) / ((h * h + A2) * rho * cs)
        return (s - s0) * np.sum(f * _GL_W, axis=(-2, -1)) / (2.0 * n)

    def rarefaction(self, p):
        """(vx, rho, vt) behind a left-facing rarefaction down to pressure p <= p_a."""
        vx = np.tanh(np.arctanh(self.vx) - self.fan_integral(np.log(p)))
        rho, h, _ = self.isentrope(p)
        return vx, rho, _vt_from_invariant(self.A, vx, h)

    def shock(self, p):
        """(vx, rho, vt, V_s) behind a left-facing shock to pressure p > p_a.

        Taub adiabat [h^2] = (h_a/rho_a + h_b/rho_b)[p] solved for y = h_b - 1
        (a quadratic, in the cancellation-free form); mass flux j^2 =
        -[p]/[h/rho]; shock speed and vx behind it from Pons et al. (2000),
        with the full Lorentz factor of the state ahead.
        """
        g, dp, ya, ha = self.g, p - self.p, self.y, self.h
        a2 = 1.0 - (g - 1.0) * dp / (g * p)
        b = 2.0 * a2 + (g - 1.0) * dp / (g * p)
        c = ya * (ya + 2.0) + ha * dp / self.rho          # minus the constant term
        yb = 2.0 * c / (b + np.sqrt(b * b + 4.0 * a2 * c))
        rho_b = g * p / ((g - 1.0) * yb)
        hr_a, hr_b = ha / self.rho, (1.0 + yb) / rho_b
        if not hr_a > hr_b:   # p within round-off of p_a: the acoustic limit
            return self.vx, self.rho, self.vt, _lambda_minus(self.vx, self.vt, self.cs)
        j2 = dp / (hr_a - hr_b)
        D2 = (self.rho * self.W) ** 2
        Vs = (D2 * self.vx - np.sqrt(j2 * (j2 + D2 * (1.0 - self.vx**2)))) / (D2 + j2)
        Ws, j = 1.0 / np.sqrt(1.0 - Vs * Vs), -np.sqrt(j2)   # j < 0: left-facing
        hW = ha * self.W
        vx = (hW * self.vx + Ws * dp / j) / (hW + dp * (Ws * self.vx / j + 1.0 / (self.rho * self.W)))
        return vx, rho_b, _vt_from_invariant(self.A, vx, 1.0 + yb), Vs

    def star_vx(self, p):
        """Normal velocity behind this side's wave when the star pressure is p."""
        return self.shock(p)[0] if p > self.p else self.rarefaction(p)[0]

    def wave(self, p, v_star):
        """(Wave, rho*, vt*) of the left-facing wave to the star pressure p."""
        if p > self.p:
            _, rho, vt, Vs = self.shock(p)
            return Wave("shock", Vs, Vs), rho, vt
        rho, h, cs = self.isentrope(p)
        vt = _vt_from_invariant(self.A, v_star, h)
        head = _lambda_minus(self.vx, self.vt, self.cs)
        return Wave("rarefaction", head, _lambda_minus(v_star, vt, cs)), rho, vt


# ------------------------------------------------------------- star state

def _bracket(F, L, R):
    """Pressures (lo, hi) in ln p with F(lo) >= 0 >= F(hi); F decreases in p.

    F -> -2 as p -> inf, so the upper end always exists; if F stays < 0 down to
    _P_FLOOR the two rarefactions separate and leave a vacuum.
    """
    lo, hi = np.log(min(L.p, R.p)), np.log(max(L.p, R.p))
    f_lo, f_hi = F(lo), F(hi)
    floor, step = lo + np.log(_P_FLOOR), 2.0
    while f_lo < 0.0:   # steps double: a deep rarefaction costs few tries
        if lo < floor:
            raise ValueError("initial data generate a vacuum")
        hi, f_hi, lo, step = lo, f_lo, lo - step, 2.0 * step
        f_lo = F(lo)
    step = 2.0
    while f_hi > 0.0:
        lo, f_lo, hi, step = hi, f_hi, hi + step, 2.0 * step
        f_hi = F(hi)
    return lo, f_lo, hi, f_hi


def _star_pressure(L, Rm):
    """Root of vx*_L(p) - vx*_R(p) by regula falsi (Illinois) in ln p.

    The bracket always shrinks, and the Illinois halving keeps both of its ends
    moving, so convergence is superlinear and never leaves the bracket.
    """
    def F(s):
        p = np.exp(s)
        return L.star_vx(p) + Rm.star_vx(p)   # vx*_R = -(mirrored side's vx*)

    a, fa, b, fb = _bracket(F, L, Rm)
    if fa == 0.0 or fb == 0.0:
        return float(np.exp(a if fa == 0.0 else b))
    side = 0
    for _ in range(_MAX_ITER):
        s = (a * fb - b * fa) / (fb - fa)
        if not a < s < b:
            s = 0.5 * (a + b)
        fs = F(s)
        if fs == 0.0:
            return float(np.exp(s))
        if fs > 0.0:
            a, fa = s, fs
            if side == 1:
                fb *= 0.5
            side = 1
        else:
            b, fb = s, fs
            if side == -1:
                fa *= 0.5
            side = -1
        if b - a <= _TOL:
            return float(np.exp(0.5 * (a + b)))
    raise RuntimeError("iteration for p* did not converge")


# -------------------------------------------------------------- the fans

class _Fan:
    """A left-facing rarefaction as a function of xi, for sampling.

    ln p -> atanh-integral is tabulated at Chebyshev points and interpolated
    (barycentric); the degree doubles until the interpolant matches the
    quadrature between the nodes to round-off. xi(ln p) is monotone across the
    fan, so points are located by vectorised bisection.
    """

    def __init__(self, side, p_star):
        self.side, self.s0, self.s1 = side, np.log(side.p), np.log(p_star)
        for n in (16, 32, 64, 128, 256, 512):
            j = np.arange(n + 1)
            self.nodes = self._s(np.cos(np.pi * j / n))
            self.values = side.fan_integral(self.nodes)
            self.weights = np.where(j % 2 == 0, 1.0, -1.0) * np.where((j == 0) | (j == n), 0.5, 1.0)
            mid = self._s(np.cos(np.pi * (j[:-1] + 0.5) / n))
            err = np.max(np.abs(self.integral(mid) - side.fan_integral(mid)))
            if err <= 1e-14 * (1.0 + np.max(np.abs(self.values))):
                return
        raise RuntimeError("rarefaction fan interpolation did not converge")

    def _s(self, u):
        return 0.5 * (self.s0 + self.s1) + 0.5 * (self.s0 - self.s1) * u

    def integral(self, s):
        """The barycentric interpolant of fan_integral at the 1D array s."""
        d = s[..., None] - self.nodes
        exact = d == 0.0
        d[exact] = 1.0
        q = self.weights / d
        out = (q @ self.values) / q.sum(axis=-1)
        hit = exact.any(axis=-1)
        out[hit] = self.values[np.argmax(exact[hit], axis=-1)]
        return out

    def state(self, s):
        """(rho, vx, vt, p, xi) on the fan at ln p = s."""
        side = self.side
        p = np.exp(s)
        vx = np.tanh(np.arctanh(side.vx) - self.integral(s))
        rho, h, cs = side.isentrope(p)
        vt = _vt_from_invariant(side.A, vx, h)
        return rho, vx, vt, p, _lambda_minus(vx, vt, cs)

    def sample(self, xi):
        """(rho, vx, vt, p) at similarity coordinates xi inside the fan."""
        lo = np.full(np.shape(xi), self.s1)   # tail: largest xi
        hi = np.full(np.shape(xi), self.s0)   # head: smallest xi
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            ahead = self.state(mid)[4] > xi   # xi decreases with ln p
            lo, hi = np.where(ahead, mid, lo), np.where(ahead, hi, mid)
            if np.all(hi - lo <= 4e-16 * np.maximum(1.0, np.abs(hi))):
                break
        return self.state(0.5 * (lo + hi))[:4]


# ------------------------------------------------------------ the solution

class Solution:
    """The self-similar solution of one Riemann problem.

    Attributes: gamma; left, right (the initial (rho, vx, vt, p)); p_star,
    v_star (pressure and normal velocity between the waves, the contact speed);
    rho_star_left, rho_star_right, vt_star_left, vt_star_right (either side of
    the contact); left_wave, right_wave (Wave tuples, speeds in the lab frame).
    """

    def __init__(self, left, right, gamma):
        self.gamma = float(gamma)
        L, Rm = _Side(left, gamma), _Side(right, gamma).mirrored()
        self.left, self.right = tuple(map(float, left)), tuple(map(float, right))
        self.p_star = p = _star_pressure(L, Rm)
        self.v_star = v = 0.5 * (L.star_vx(p) - Rm.star_vx(p))
        wl, self.rho_star_left, self.vt_star_left = L.wave(p, v)
        wr, self.rho_star_right, self.vt_star_right = Rm.wave(p, -v)
        self.left_wave = wl
        self.right_wave = Wave(wr.kind, -wr.head, -wr.tail)
        # Fans in the left-wave frame of each side (None for shocks, empty fans).
        self._sides = (L, Rm)
        self._fans = tuple(_Fan(K, p) if w.kind == "rarefaction" and p < K.p else None
                           for K, w in ((L, wl), (Rm, wr)))

    def __repr__(self):
        return ("Solution(p*=%.15g, v*=%.15g, rho*=(%.15g, %.15g), %s %s)"
                % (self.p_star, self.v_star, self.rho_star_left, self.rho_star_right,
                   self.left_wave.kind, self.right_wave.kind))

    def _pieces(self):
        """[(xi_lo, xi_hi, kind, data)] from left to right; kind 'const' (data: a
        state) or 'fan' (data: (fan, mirror sign))."""
        (L, Rm), (fl, fr) = self._sides, self._fans
        wl, wr, v = self.left_wave, self.right_wave, self.v_star
        out = [(-np.inf, wl.head, "const", (L.rho, L.vx, L.vt, L.p))]
        if fl is not None:
            out.append((wl.head, wl.tail, "fan", (fl, 1.0)))
        out.append((wl.tail, v, "const", (self.rho_star_left, v, self.vt_star_left, self.p_star)))
        out.append((v, wr.tail, "const", (self.rho_star_right, v, self.vt_star_right, self.p_star)))
        if fr is not None:
            out.append((wr.tail, wr.head, "fan", (fr, -1.0)))
        out.append((wr.head, np.inf, "const", (Rm.rho, -Rm.vx, Rm.vt, Rm.p)))
        return out


def solve(left, right, gamma):
    """Solve the Riemann problem; left/right = (rho, vx, vt, p). Returns a Solution."""
    return Solution(left, right, gamma)


def _fan_state(data, xi):
    """(rho, vx, vt, p) inside a fan; a right fan is sampled in its mirror frame."""
    fan, sign = data
    rho, vx, vt, p = fan.sample(sign * xi)
    return rho, sign * vx, vt, p


def sample(solution, xi):
    """(rho, vx, vt, p) at similarity coordinates xi = (x - x0) / t (array-like).

    A point exactly on a discontinuity takes the value on its left.
    """
    xi = np.asarray(xi, dtype=float)
    flat = xi.ravel()
    out = [np.empty_like(flat) for _ in range(4)]
    for lo, hi, kind, data in solution._pieces():
        m = (flat > lo) & (flat <= hi) if lo != -np.inf else flat <= hi
        if not m.any():
            continue
        vals = _fan_state(data, flat[m]) if kind == "fan" else data
        for o, v in zip(out, vals):
            o[m] = v
    return tuple(o.reshape(xi.shape) for o in out)


def conserved(rho, vx, vt, p, gamma):
    """(D, Sx, St, tau) from primitives; tau without the cancellation of rho h W^2 - D."""
    v2 = vx * vx + vt * vt
    W = 1.0 / np.sqrt(1.0 - v2)
    y = gamma / (gamma - 1.0) * p / rho          # h - 1
    rhW2 = rho * (1.0 + y) * W * W
    tau = rho * y * W * W - p + rho * W**3 * v2 / (W + 1.0)   # W - 1 = W^2 v^2 / (W + 1)
    return rho * W, rhW2 * vx, rhW2 * vt, tau


def fluxes(rho, vx, vt, p, gamma):
    """x-fluxes of (D, Sx, St, tau)."""
    D, Sx, St, tau = conserved(rho, vx, vt, p, gamma)
    return D * vx, Sx * vx + p, St * vx, (tau + p) * vx


def _split_fans(pieces, step):
    """Cut each fan at equal steps in ln p: near |xi| = 1 a fan squeezes a large
    change of state into a sliver of xi, smooth in ln p but not in x."""
    for lo, hi, kind, data in pieces:
        if kind != "fan":
            yield lo, hi, kind, data
            continue
        fan, sign = data
        n = max(1, int(np.ceil((fan.s0 - fan.s1) / step)))
        cuts = np.sort(sign * fan.state(np.linspace(fan.s1, fan.s0, n + 1))[4])
        cuts[0], cuts[-1] = lo, hi
        for a, b in zip(cuts[:-1], cuts[1:]):
            yield a, b, kind, data


def cell_averages(solution, edges, t, x0=0.0, points=8, conserved_vars=False, fan_step=0.25):
    """Exact averages over cells [e_i, e_i+1] at time t: (rho, vx, p), or
    (D, Sx, St, tau) if conserved_vars.

    Each cell is cut at the wave breakpoints: constant pieces are integrated
    exactly, fans piecewise (cut every fan_step in ln p) with `points`-point
    Gauss-Legendre, which leaves round-off. At t == 0 the initial step (x < x0
    left) is averaged.
    """
    e = np.asarray(edges, dtype=float)
    if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0.0):
        raise ValueError("edges must be strictly increasing, at least 2")
    if t < 0:
        raise ValueError("t must be >= 0")
    g = solution.gamma
    pick = ((lambda r, u, w, p: conserved(r, u, w, p, g)) if conserved_vars
            else (lambda r, u, w, p: (r, u, p)))
    if t == 0:
        pieces = [(-np.inf, 0.0, "const", solution.left),
                  (0.0, np.inf, "const", solution.right)]
        t_eff = 1.0
    else:
        pieces, t_eff = _split_fans(solution._pieces(), fan_step), float(t)
    gx, gw = np.polynomial.legendre.leggauss(int(points))
    a, b = e[:-1], e[1:]
    sums = [np.zeros_like(a) for _ in range(4 if conserved_vars else 3)]
    fans = {}   # all Gauss points of one fan go to one (vectorised) sample
    for lo, hi, kind, data in pieces:
        xl, xh = x0 + t_eff * lo, x0 + t_eff * hi
        cells = np.arange(np.searchsorted(b, xl, side="right"), np.searchsorted(a, xh, side="left"))
        lo_x = np.maximum(a[cells], xl)
        width = np.clip(np.minimum(b[cells], xh) - lo_x, 0.0, None)
        if kind == "const":
            for s, q in zip(sums, pick(*map(np.float64, data))):
                s[cells] += q * width
        elif cells.size:
            fans.setdefault(id(data[0]), (data, []))[1].append((cells, lo_x, width))
    for data, parts in fans.values():
        cells, lo_x, width = (np.concatenate(c) for c in zip(*parts))
        xs = lo_x[:, None] + 0.5 * width[:, None] * (gx + 1.0)
        for s, q in zip(sums, pick(*_fan_state(data, ((xs - x0) / t_eff).ravel()))):
            np.add.at(s, cells, 0.5 * width * (q.reshape(xs.shape) @ gw))
    return tuple(s / (b - a) for s in sums)
