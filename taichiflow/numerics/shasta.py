"""The relativistic SHASTA of Rischke, Bernard & Maruhn (1995) as one conservative face flux.

Boris & Book's (1973) SHASTA in the form heavy-ion codes use (Rischke et al. 1995; the FORTRAN
code UrQMD couples to; Gerhard, Lindenstruth & Bleicher 2013, eqs. 15-22, on GPUs). Each
conserved component obeys dU/dt + d(U v)/dx = -df/dx, with v the model's normal velocity and
f = F(U) - v U the rest of its flux (the pressure terms of a fluid; f = F without a velocity
role). With lam = dt/dx and eps_j = v_j lam, one step of the cell averages u_j is:

    transport and diffusion (Boris & Book's moving-grid interpolation, centred source):
        Q+_j = (1/2 - eps_j) / (1 + eps_{j+1} - eps_j),  Q-_j = (1/2 + eps_j) / (1 - eps_{j-1} + eps_j)
        ~u_j = Q+^2/2 (u_{j+1} - u_j) - Q-^2/2 (u_j - u_{j-1}) + (Q+ + Q-) u_j
               - lam/2 (f_{j+1} - f_{j-1}) + (eta - 1/8) (u_{j+1} - 2 u_j + u_{j-1})
    phoenical anti-diffusion, eps-dependent:
        A_{j+1/2} = mu_{j+1/2} [~D_{j+1/2} - eta (D_{j+3/2} - 2 D_{j+1/2} + D_{j-1/2})],
        mu_{j+1/2} = max(0, a - eps_{j+1/2}^2 / 2),  eps_{j+1/2} = (eps_j + eps_{j+1}) / 2,
        ~D = differences of ~u, D = differences of u
    strong limiter (sigma = sign A, as Rischke's code and Gerhard et al. eq. 20):
        f_{j+1/2} = sigma max(0, min(sigma ~D_{j-1/2}, |A_{j+1/2}|, sigma ~D_{j+3/2}))
    correction:
        u_j <- ~u_j - f_{j+1/2} + f_{j-1/2}

For constant eps the transport is centred fluxes plus the diffusion 1/8 + eps^2/2 (eta = 1/8):
at rest the anti-diffusion (a = 1/8) gives every unlimited value back exactly, in motion it
leaves eps^2 (the Lax-Wendroff eps^2/2 twice). v and f are those of the half step t + dt/2
(time centring): a first SHASTA step of dt/2 with v, f at t (the "half step" of Rischke's
code), its states mapped to W by the model; a predicted state the model rejects keeps the
cell's W at t.

Admissibility check: a cell whose corrected state could be one the model rejects (a cold gas
whose energy the limiter, component by component, took from under its momentum), with both,
either or none of its faces' anti-diffusive fluxes, has the anti-diffusion of its two faces
dropped; then every cell whose transported value ~u_j is admissible ends admissible, whatever
its neighbours' faces do. It is a generic form of the "consistency check" of Rischke's code,
which rescales the momentum of such a cell, and changes nothing where all those states are
admissible (Sod's and Toro's 123 problem never use it, Marti & Mueller's problem 1 with a cold
right state and Toro's blast do). It bounds one axis' step: in 2D and 3D the axes' steps add up
(unsplit), which it does not bound, unless they run one after the other ([scheme]
dimensional_splitting).

Positivity fallback ([scheme] positivity_fallback, on by default): a cell whose transported
value ~u_j the model rejects (beside a hot region one or two cells wide the centred pressure
term gives a cold cell more momentum than energy, before any anti-diffusion) takes
Lax-Friedrichs (Rusanov) fluxes of the states at t on both its faces instead, counted as face
fallbacks; the step stays conservative.

The step is one conservative flux through face j + 1/2,

    G_{j+1/2} = (T_{j+1/2} + f_{j+1/2}) / lam,
    T_{j+1/2} = (1/2 - Q+_j) u_j - Q+_j^2/2 (u_{j+1} - u_j) + lam/2 (f_j + f_{j+1}) - (eta - 1/8) (u_{j+1} - u_j),

so that u_j - lam (G_{j+1/2} - G_{j-1/2}) is the step above (T is the amount the moving-grid
interpolation carries across the face). A face recomputes all it needs from the 14 cells
j-6 .. j+7: the predictor's states of cells j-3 .. j+4, the transported values of j-2 .. j+3,
the corrected fluxes of its face and its two neighbours, and the states of j, j+1 with
and without them (for the admissibility check). Forward Euler (integrator = "euler") is the
classical step. In several dimensions each axis adds its own flux with the same dt (unsplit), or, with
[scheme] dimensional_splitting, takes a whole step of its own after the other (as Rischke's
code does). No Riemann solver, no reconstruction: the model's flux, velocity role and map between
W and U. Everything is resolved while the kernels compile; nothing here names a model.
"""

import taichi as ti

from .riemann import make_rusanov

REACH = 7        # cells the face flux reads on each side of its face (the ghost layers)
N = 2 * REACH    # the stencil: cells j - 6 .. j + 7 of face j + 1/2
DIFFUSION = 0.125       # eta: Boris & Book's 1/8 (the transport's diffusion at rest)
ANTIDIFFUSION = 0.125   # a: mu = a - eps^2/2; a = eta restores a fluid at rest exactly
# For the measurements of docs/numerics.md ("SHASTA") only: False leaves out the admissibility
# check (the published step alone), or takes mu = a at every eps (Rischke's code).
ADMISSIBILITY_GUARD = True
EPS_DEPENDENT_ANTIDIFFUSION = True


@ti.func
def _limited(below, raw, above):
    """The strong limiter of the anti-diffusive flux `raw` through a face whose neighbouring
    faces carry the differences below and above (vectors, component by component), with the
    sign of `raw` (Rischke's code; Gerhard et al. eq. 20)."""
    s = ti.select(raw < 0.0, -1.0, 1.0)
    return s * ti.max(0.0, ti.min(s * below, ti.abs(raw), s * above))


def _transport(u, eps, f, lam, eta):
    """T_{k+1/2} of faces k | k+1 (k = 0 .. len - 2) from the cells' u, eps and f."""
    faces = []
    for k in range(len(u) - 1):
        q = (0.5 - eps[k]) / (1.0 + eps[k + 1] - eps[k])  # Q+_k
        faces.append((0.5 - q) * u[k] - (0.5 * q * q + eta - 0.125) * (u[k + 1] - u[k])
                     + 0.5 * lam * (f[k] + f[k + 1]))
    return faces


def _transported(u, faces):
    """~u of cells 1 .. len - 2 (the cells between two of the faces)."""
    return [u[k] - (faces[k] - faces[k - 1]) for k in range(1, len(u) - 1)]


def _antidiffusion(smooth, u, eps, a, eta, eps_dependent=True):
    """Limited anti-diffusive fluxes of faces i | i+1, i = 1 .. len - 3, of cells whose
    transported values are `smooth` and whose values at the step's start are `u`."""
    fluxes = []
    for i in range(1, len(smooth) - 2):
        below, here, above = (smooth[k + 1] - smooth[k] for k in (i - 1, i, i + 1))
        d_below, d_here, d_above = (u[k + 1] - u[k] for k in (i - 1, i, i + 1))
        e = 0.5 * (eps[i] + eps[i + 1])
        mu = ti.max(a - 0.5 * e * e, 0.0) if eps_dependent else a
        fluxes.append(_limited(below, mu * (here - eta * (d_above - 2.0 * d_here + d_below)), above))
    return fluxes


def make_shasta_flux(phys, scheme: dict):
    """Taichi function (stencil of 2 REACH primitive states in the normal frame, dt_dx) -> the
    normal-frame SHASTA flux through the face in the stencil's middle (between cells REACH - 1
    and REACH)."""
    eta = float(scheme.get("shasta_diffusion", DIFFUSION))
    a = float(scheme.get("shasta_antidiffusion", ANTIDIFFUSION))
    moving = phys.model.velocity is not None  # (without a velocity role: v = 0, f = F)
    guard, eps_dependent = ADMISSIBILITY_GUARD, EPS_DEPENDENT_ANTIDIFFUSION
    fallback = bool(scheme.get("positivity_fallback", True))
    lax_friedrichs = make_rusanov(phys, scheme)

    def split(w):
        """u, v and f = F - v u of one primitive state."""
        u, flux = phys.state_and_flux(w)
        v = phys.normal_velocity(w) if moving else 0.0
        return u, v, flux - v * u

    def admissible(u):
        return phys.admissible(phys.prim(u))

    def keeps(smooth, upper, lower):
        """Whether a cell with the transported value `smooth` stays admissible whichever of its
        faces' anti-diffusive fluxes (upper, lower) it receives."""
        return admissible(smooth - upper + lower) & admissible(smooth - upper) & admissible(smooth + lower)

    def corrected(smooth, antidiffusion, i):
        """The corrected value of the cell smooth[i] (antidiffusion[j] is face j+1 | j+2 of smooth)."""
        return smooth[i] - antidiffusion[i - 1] + antidiffusion[i - 2]

    @ti.func
    def shasta_flux(stencil: ti.template(), dt_dx):
        cells = [split(w) for w in stencil]
        u = [c[0] for c in cells]
        # predictor: a SHASTA step of dt/2 with v and f at t, for cells 3 .. N - 4
        lam_half = 0.5 * dt_dx
        eps_t = [c[1] * lam_half for c in cells]
        smooth_t = _transported(u, _transport(u, eps_t, [c[2] for c in cells], lam_half, eta))  # cells 1 .. N-2
        half = _antidiffusion(smooth_t, u[1:N - 1], eps_t[1:N - 1], a, eta, eps_dependent)  # faces 2|3 .. N-4|N-3
        middle = []
        for i in ti.static(range(2, N - 4)):  # smooth_t[i] is cell i + 1: cells 3 .. N - 4
            predicted = phys.prim(corrected(smooth_t, half, i))
            middle.append(split(ti.select(phys.admissible(predicted), predicted, stencil[i + 1])))
        # the step: v and f of t + dt/2, u of t, on cells 3 .. N - 4
        u_mid = u[3:N - 3]
        eps = [m[1] * dt_dx for m in middle]
        faces = _transport(u_mid, eps, [m[2] for m in middle], dt_dx, eta)               # faces 3|4 .. N-5|N-4
        smooth = _transported(u_mid, faces)                                              # cells 4 .. N-5
        anti = _antidiffusion(smooth, u_mid[1:-1], eps[1:-1], a, eta, eps_dependent)     # faces 5|6 .. N-7|N-6
        here = anti[1]                                                                   # face REACH-1 | REACH
        if ti.static(guard):
            here = ti.select(keeps(smooth[2], anti[1], anti[0]) & keeps(smooth[3], anti[2], anti[1]),
                             here, 0.0 * here)
        flux = (faces[REACH - 4] + here) / dt_dx
        if ti.static(not fallback):
            return flux
        # a cell whose transported value the model rejects takes Lax-Friedrichs fluxes on both faces
        transported_ok = admissible(smooth[2]) & admissible(smooth[3])
        fell_back = 0
        if not transported_ok:
            flux = lax_friedrichs(stencil[REACH - 1], stencil[REACH], dt_dx)
            fell_back = 1
        return flux, fell_back

    shasta_flux.counts_fallbacks = fallback
    return shasta_flux
