"""Exact solutions of the frictionless shallow-water equations, for solver tests.

    h_t + (h u)_x = 0,   (h u)_t + (h u^2 + g h^2 / 2)_x = -g h z_x   (and 2D).

Dam breaks on a flat bottom (Stoker 1957, wet bed; Ritter 1892, dry bed) and
Thacker's (1981) oscillations in parabolic basins, with the parameters of the
SWASHES compilation: Delestre et al., "SWASHES: a compilation of shallow water
analytic solutions for hydraulic and environmental studies", Int. J. Numer.
Meth. Fluids 72 (2013) 269-300, sections 4.1.1-4.1.2 and 4.2.1-4.2.2.
Pure numpy, no taichi, no scipy.
"""
import numpy as np

_TOL = 1e-14
_MAX_ITER = 200
# 3-point Gauss-Legendre on [0, 1]: exact for cubics, and every dam-break state
# (h, h u) is a polynomial of degree <= 3 in x on each piece of the wave fan.
_GL_X = 0.5 + 0.5 * np.array([-np.sqrt(0.6), 0.0, np.sqrt(0.6)])
_GL_W = np.array([5.0, 8.0, 5.0]) / 18.0


# ---------------------------------------------------------------- dam break

def _shock_du(h, h_ahead, g):
    """Velocity jump across a shock from depth h_ahead (at rest) to h.

    Rankine-Hugoniot for mass and momentum, eliminating the shock speed.
    """
    return (h - h_ahead) * np.sqrt(0.5 * g * (h + h_ahead) / (h * h_ahead))


def stoker_middle_state(h_left, h_right, g=9.81):
    """(h_m, u_m, s) of a wet-bed dam break h_left > h_right > 0, at rest.

    h_m solves F(h) = 2 (c_L - c) - (u jump of the shock) = 0, i.e. the left
    rarefaction's invariant u + 2 c = 2 c_L meets the right shock's
    Rankine-Hugoniot curve. F decreases on [h_right, h_left] from F > 0 to
    F < 0, so Newton safeguarded by bisection on that bracket converges.
    s is the shock speed, from the mass jump condition.
    """
    hl, hr, g = float(h_left), float(h_right), float(g)
    if not hl > hr > 0.0:
        raise ValueError("need h_left > h_right > 0, got %r, %r" % (hl, hr))
    cl = np.sqrt(g * hl)

    def F(h):
        return 2.0 * (cl - np.sqrt(g * h)) - _shock_du(h, hr, g)

    def dF(h):
        q = 0.5 * g * (h + hr) / (h * hr)
        dq = -0.5 * g / h**2
        return (-np.sqrt(g / h) - np.sqrt(q)
                - (h - hr) * dq / (2.0 * np.sqrt(q)))

    lo, hi = hr, hl
    h = 0.5 * (lo + hi)
    for _ in range(_MAX_ITER):
        f = F(h)
        if f > 0.0:
            lo = h
        else:
            hi = h
        if f == 0.0:
            break
        step = f / dF(h)
        h_new = h - step
        if not lo < h_new < hi:  # Newton left the bracket: bisect instead
            h_new = 0.5 * (lo + hi)
        done = abs(h_new - h) <= _TOL * h_new or hi - lo <= _TOL * h_new
        h = h_new
        if done:
            break
    else:
        raise RuntimeError("Newton iteration for the Stoker middle depth failed")
    u = 2.0 * (cl - np.sqrt(g * h))  # on the rarefaction invariant
    s = h * u / (h - hr)             # mass across the shock
    return float(h), float(u), float(s)


def _fan_pieces(h_left, h_right, g):
    """Pieces of the self-similar solution for h_left > h_right >= 0.

    A list of (xi_lo, xi_hi, h_of_xi, u_of_xi), xi = (x - x_dam) / t; inside
    the rarefaction (u + 2 c = 2 c_L, u - c = xi) c = (2 c_L - xi) / 3.
    """
    cl = np.sqrt(g * h_left)

    def const(v):
        return lambda xi: np.full_like(xi, v)

    fan_h = lambda xi: (2.0 * cl - xi) ** 2 / (9.0 * g)  # noqa: E731
    fan_u = lambda xi: 2.0 / 3.0 * (xi + cl)            # noqa: E731
    pieces = [(-np.inf, -cl, const(h_left), const(0.0))]
    if h_right == 0.0:  # Ritter: the fan reaches the dry front at xi = 2 c_L
        pieces += [(-cl, 2.0 * cl, fan_h, fan_u),
                   (2.0 * cl, np.inf, const(0.0), const(0.0))]
        return pieces
    hm, um, s = stoker_middle_state(h_left, h_right, g)
    tail = um - np.sqrt(g * hm)
    pieces += [(-cl, tail, fan_h, fan_u),
               (tail, s, const(hm), const(um)),
               (s, np.inf, const(h_right), const(0.0))]
    return pieces


def _oriented(h_left, h_right):
    """Deeper side on the left: returns (h_deep, h_shallow, mirrored)."""
    hl, hr = float(h_left), float(h_right)
    if hl < 0.0 or hr < 0.0:
        raise ValueError("depths must be >= 0, got %r, %r" % (hl, hr))
    return (hr, hl, True) if hr > hl else (hl, hr, False)


def dam_break(x, t, h_left, h_right, x_dam, g=9.81):
    """Exact (h, u) at positions x and time t of a dam break at rest, flat bed.

    h_right > 0: Stoker's solution (rarefaction, middle state, shock);
    h_right == 0: Ritter's (rarefaction into the dry bed, u = 0 where dry).
    h_left < h_right is the mirror image. At t == 0 the initial step (x < x_dam
    left) is returned; a point exactly on the shock takes the shallow state.
    """
    x = np.asarray(x, dtype=float)
    if t < 0:
        raise ValueError("t must be >= 0")
    hd, hs, mirrored = _oriented(h_left, h_right)
    if t == 0 or hd == hs:
        h = np.where(x < x_dam, float(h_left), float(h_right))
        return h, np.zeros_like(h)
    xi = np.atleast_1d((x - x_dam) / t)
    if mirrored:
        xi = -xi
    h, u = np.empty_like(xi), np.empty_like(xi)
    for lo, hi, fh, fu in _fan_pieces(hd, hs, float(g)):
        m = (xi >= lo) & (xi < hi)
        h[m], u[m] = fh(xi[m]), fu(xi[m])
    if mirrored:
        u = -u
    return h.reshape(x.shape), u.reshape(x.shape)


def dam_break_cell_averages(edges, t, h_left, h_right, x_dam, g=9.81,
                            momentum=False):
    """Exact averages of h (and of h u if momentum) over cells [e_i, e_i+1].

    Each cell is cut at the wave-fan breakpoints; on every piece h and h u are
    polynomials of degree <= 3 in x, which 3-point Gauss-Legendre integrates
    exactly, so the only error is round-off (no cancellation of big
    primitives). Returns len(edges) - 1 averages.
    """
    e = np.asarray(edges, dtype=float)
    if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0.0):
        raise ValueError("edges must be strictly increasing, at least 2")
    if t < 0:
        raise ValueError("t must be >= 0")
    hd, hs, mirrored = _oriented(h_left, h_right)
    if mirrored:  # x -> 2 x_dam - x: cells reverse, h u changes sign
        out = dam_break_cell_averages(2.0 * x_dam - e[::-1], t, hd, hs, x_dam,
                                      g, momentum)
        if momentum:
            return out[0][::-1], -out[1][::-1]
        return out[::-1]
    a, b = e[:-1], e[1:]
    mass, mom = np.zeros_like(a), np.zeros_like(a)
    if t == 0 or hd == hs:
        pieces = [(-np.inf, 0.0, hd), (0.0, np.inf, hs)]
        for lo, hi, hv in pieces:
            width = np.clip(np.minimum(b, x_dam + hi) - np.maximum(a, x_dam + lo), 0.0, None)
            mass += hv * width
    else:
        for lo, hi, fh, fu in _fan_pieces(hd, hs, float(g)):
            p = np.maximum(a, x_dam + t * lo)
            q = np.minimum(b, x_dam + t * hi)
            width = np.clip(q - p, 0.0, None)
            xs = p[:, None] + width[:, None] * _GL_X[None, :]
            xi = (xs - x_dam) / t
            hv = fh(xi)
            mass += width * (hv @ _GL_W)
            mom += width * ((hv * fu(xi)) @ _GL_W)
    dx = b - a
    return (mass / dx, mom / dx) if momentum else mass / dx


# ------------------------------------------------------------ Thacker 1D

def thacker_1d_omega(h0=0.5, a=1.0, g=9.81):
    """Angular frequency sqrt(2 g h0) / a of the planar oscillation."""
    return np.sqrt(2.0 * g * h0) / a


def thacker_1d_period(h0=0.5, a=1.0, g=9.81):
    """Period 2 pi / omega (SWASHES: T = 2.0061 for the defaults)."""
    return 2.0 * np.pi / thacker_1d_omega(h0, a, g)


def thacker_1d(x, t, h0=0.5, a=1.0, L=4.0, B=None, g=9.81):
    """Thacker's planar surface oscillating in a parabola, SWASHES 4.2.1.

    z = h0 ((x - L/2)^2 / a^2 - 1); with xi = x - L/2 and omega = sqrt(2 g h0)/a
        u   = B sin(omega t)                                (uniform where wet)
        eta = -(B omega / g) cos(omega t) xi - B^2 cos^2(omega t) / (2 g)
        h   = max(0, eta - z) = max(0, h0 (1 - (xi/a + B cos(omega t)/(a omega))^2)).
    Derivation: with u uniform, u_t = -g eta_x and h_t + u h_x = 0 close for a
    planar eta, giving u'' = -omega^2 u. So B is the velocity amplitude and
    B / omega the shoreline excursion; at t = 0 the water is at rest, piled
    up on the left (x < L/2), and then flows in +x. Default B = sqrt(2 g h0) /
    (2 a), SWASHES's value: excursion 1/2 (a/2 for a = 1), shorelines at
    L/2 - (1/2) cos(omega t) -+ a. Returns (h, u, z); u = 0 where dry.
    """
    if B is None:
        B = np.sqrt(2.0 * g * h0) / (2.0 * a)
    x = np.asarray(x, dtype=float)
    w = thacker_1d_omega(h0, a, g)
    xi = x - 0.5 * L
    z = h0 * (xi**2 / a**2 - 1.0)
    h = np.maximum(0.0, h0 * (1.0 - (xi / a + B * np.cos(w * t) / (a * w)) ** 2))
    u = np.where(h > 0.0, B * np.sin(w * t), 0.0)
    return h, u, z


# ------------------------------------------------------------ Thacker 2D

def thacker_2d_omega(h0=0.1, a=1.0, g=9.81):
    """Angular frequency sqrt(8 g h0) / a of the radial oscillation."""
    return np.sqrt(8.0 * g * h0) / a


def thacker_2d_period(h0=0.1, a=1.0, g=9.81):
    """Period 2 pi / omega (2.2429 for the defaults)."""
    return 2.0 * np.pi / thacker_2d_omega(h0, a, g)


def thacker_2d(x, y, t, h0=0.1, a=1.0, r0=0.8, L=4.0, g=9.81):
    """Thacker's axisymmetric paraboloid with a curved surface, SWASHES 4.2.2.

    z = -h0 (1 - r^2 / a^2), r the distance to (L/2, L/2); with
    A = (a^2 - r0^2) / (a^2 + r0^2), omega = sqrt(8 g h0) / a and
    D = 1 - A cos(omega t):
        h = max(0, h0 (sqrt(1 - A^2) / D - (1 - A^2) r^2 / (a^2 D^2)))
        (u, v) = (A omega sin(omega t) / (2 D)) (x - L/2, y - L/2)   where wet.
    At t = 0 the water is at rest with the wet radius sqrt(a r0), smallest
    (A > 0): it then spreads out. Volume pi h0 a^2 / 2 at all times.
    Returns (h, u, v, z).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    A = (a**2 - r0**2) / (a**2 + r0**2)
    w = thacker_2d_omega(h0, a, g)
    D = 1.0 - A * np.cos(w * t)
    X, Y = x - 0.5 * L, y - 0.5 * L
    r2 = X**2 + Y**2
    z = -h0 * (1.0 - r2 / a**2)
    h = np.maximum(0.0, h0 * (np.sqrt(1.0 - A**2) / D - (1.0 - A**2) * r2 / (a**2 * D**2)))
    k = np.where(h > 0.0, A * w * np.sin(w * t) / (2.0 * D), 0.0)
    return h, k * X, k * Y, z
