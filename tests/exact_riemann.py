"""Exact Riemann solver for the 1D Euler equations (Toro, ch. 4), stiffened gas.

Reference solution for the solver tests. Each side has its own EOS
p = (gamma - 1) rho e - gamma pc; writing P = p + pc turns every formula of the
ideal-gas solver into the same formula in P, so the code below works with the
shifted pressure P and the ideal gas is simply pc = 0. Pure numpy, no taichi.
"""
import numpy as np

_TOL = 1e-12
_MAX_ITER = 100


class _Side:
    """One initial state with its EOS, the pieces Toro's f_K(p) needs."""

    def __init__(self, state, gamma, pc):
        self.rho, self.u, self.p = (float(v) for v in state)
        self.g, self.pc = float(gamma), float(pc)
        self.P = self.p + self.pc  # shifted pressure, must be positive
        if self.rho <= 0.0 or self.P <= 0.0:
            raise ValueError("need rho > 0 and p + pc > 0, got %r" % (state,))
        self.c = np.sqrt(self.g * self.P / self.rho)

    def f(self, p):
        """Velocity jump across this side's wave when the star pressure is p."""
        g, P = self.g, p + self.pc
        if p > self.p:  # shock: Rankine-Hugoniot
            A, B = 2.0 / ((g + 1.0) * self.rho), (g - 1.0) / (g + 1.0) * self.P
            return (p - self.p) * np.sqrt(A / (P + B))
        # rarefaction: isentropic relation and Riemann invariant
        return 2.0 * self.c / (g - 1.0) * ((P / self.P) ** ((g - 1.0) / (2.0 * g)) - 1.0)

    def df(self, p):
        """d f / d p, for Newton."""
        g, P = self.g, p + self.pc
        if p > self.p:
            A, B = 2.0 / ((g + 1.0) * self.rho), (g - 1.0) / (g + 1.0) * self.P
            return np.sqrt(A / (P + B)) * (1.0 - 0.5 * (p - self.p) / (P + B))
        return (P / self.P) ** (-(g + 1.0) / (2.0 * g)) / (self.rho * self.c)

    def mirrored(self):
        """The same state seen in x -> -x, so one sampler serves both sides."""
        return _Side((self.rho, -self.u, self.p), self.g, self.pc)


def _sides(left, right, gamma, gamma_right, pc_left, pc_right):
    g_r = gamma if gamma_right is None else gamma_right
    return _Side(left, gamma, pc_left), _Side(right, g_r, pc_right)


def _solve(L, R):
    """Newton on f(p) = f_L(p) + f_R(p) + (u_R - u_L) = 0; returns (p*, u*)."""
    du = R.u - L.u
    # f increases on (p_min, inf), p_min where the first P reaches 0. A root
    # exists iff f(p_min) < 0; otherwise the waves leave a vacuum.
    p_min = -min(L.pc, R.pc)
    if L.f(p_min) + R.f(p_min) + du >= 0.0:
        raise ValueError("initial data generate vacuum (or cavitation)")
    # Initial guess: two-rarefaction (exact if both waves are rarefactions) when
    # both sides share the EOS, otherwise the primitive-variable (PVRS) guess;
    # either one clipped so that every p + pc > 0.
    if L.g == R.g and L.pc == R.pc:
        z = (L.g - 1.0) / (2.0 * L.g)
        P0 = ((L.c + R.c - 0.5 * (L.g - 1.0) * du)
              / (L.c / L.P**z + R.c / R.P**z)) ** (1.0 / z)
        p = P0 - L.pc
    else:
        p = 0.5 * (L.p + R.p) - 0.125 * du * (L.rho + R.rho) * (L.c + R.c)
    q = max(p - p_min, 1e-8 * min(L.P, R.P))  # distance to cavitation, > 0
    # f is concave in p but convex in log q, so Newton in p from below the root
    # and Newton in log q from above it both approach the root monotonically:
    # no overshoot into p < p_min, even when p* is nearly a vacuum.
    for _ in range(_MAX_ITER):
        p = p_min + q
        fl, fr = L.f(p), R.f(p)
        F = fl + fr + du
        if abs(F) <= 1e-14 * (abs(fl) + abs(fr) + abs(du)):
            break  # residual at round-off: no step can do better
        dF = L.df(p) + R.df(p)
        q_new = q - F / dF if F < 0.0 else q * np.exp(-F / (dF * q))
        done = abs(q_new - q) <= max(_TOL * q_new, 4e-16 * abs(p_min + q_new))
        q = q_new
        if done:
            break
    else:
        raise RuntimeError("Newton iteration for p* did not converge")
    p = p_min + q
    return float(p), float(0.5 * (L.u + R.u) + 0.5 * (R.f(p) - L.f(p)))


def star_state(left, right, gamma=1.4, gamma_right=None, pc_left=0.0, pc_right=0.0):
    """Pressure and velocity (p*, u*) of the star region between the waves."""
    return _solve(*_sides(left, right, gamma, gamma_right, pc_left, pc_right))


def _sample_left(K, p_s, u_s, xi):
    """Solution at x/t = xi for points left of the contact (xi <= u*)."""
    g, P_s = K.g, p_s + K.pc
    ratio = P_s / K.P
    rho = np.full_like(xi, K.rho)
    u = np.full_like(xi, K.u)
    p = np.full_like(xi, K.p)
    if p_s > K.p:  # shock: initial state ahead of it, star state behind it
        gm = (g - 1.0) / (g + 1.0)
        S = K.u - K.c * np.sqrt((g + 1.0) / (2.0 * g) * ratio + (g - 1.0) / (2.0 * g))
        star = xi >= S
        rho[star] = K.rho * (ratio + gm) / (gm * ratio + 1.0)
    else:  # rarefaction: head K.u - c, tail u* - c*, self-similar fan between
        c_s = K.c * ratio ** ((g - 1.0) / (2.0 * g))
        star = xi >= u_s - c_s
        rho[star] = K.rho * ratio ** (1.0 / g)
        fan = (xi > K.u - K.c) & ~star
        c = 2.0 / (g + 1.0) * (K.c + 0.5 * (g - 1.0) * (K.u - xi[fan]))
        u[fan] = 2.0 / (g + 1.0) * (K.c + 0.5 * (g - 1.0) * K.u + xi[fan])
        rho[fan] = K.rho * (c / K.c) ** (2.0 / (g - 1.0))
        p[fan] = K.P * (c / K.c) ** (2.0 * g / (g - 1.0)) - K.pc
    u[star], p[star] = u_s, p_s
    return rho, u, p


def exact_riemann(left, right, x, t, x0=0.0, gamma=1.4, gamma_right=None,
                  pc_left=0.0, pc_right=0.0):
    """left/right = (rho, u, p). x: numpy array of positions. Returns (rho, u, p) numpy arrays at time t.

    gamma is the left gamma (and the right one unless gamma_right is given);
    pc_left/pc_right are the stiffened-gas constants. At t == 0 the initial
    discontinuity is returned (x < x0 left, else right); for t > 0 a point
    exactly on the contact takes the left value.
    """
    L, R = _sides(left, right, gamma, gamma_right, pc_left, pc_right)
    x = np.asarray(x, dtype=float)
    if t < 0:
        raise ValueError("t must be >= 0")
    if t == 0:
        is_left = x < x0
        return tuple(np.where(is_left, a, b) for a, b in
                     zip((L.rho, L.u, L.p), (R.rho, R.u, R.p)))
    p_s, u_s = _solve(L, R)
    xi = np.atleast_1d((x - x0) / t)
    on_left = xi <= u_s
    rho, u, p = np.empty_like(xi), np.empty_like(xi), np.empty_like(xi)
    rho[on_left], u[on_left], p[on_left] = _sample_left(L, p_s, u_s, xi[on_left])
    # The right side is the left problem seen in a mirror: x -> -x, u -> -u.
    r_rho, r_u, r_p = _sample_left(R.mirrored(), p_s, -u_s, -xi[~on_left])
    rho[~on_left], u[~on_left], p[~on_left] = r_rho, -r_u, r_p
    return rho.reshape(x.shape), u.reshape(x.shape), p.reshape(x.shape)
