"""Positivity limiters: the density limiter of a cell's reconstructed face states ([scheme]
density_limiter) and the flux limiter of the cell means' update ([scheme] positivity_limiter,
make_flux_positivity_limiter).

Zhang & Shu (2010, J. Comput. Phys. 229, 8918): a cell's mean density is the three-point
Gauss-Lobatto average of its lower face value, an interior value and its upper face value,
with weights 1/6, 2/3, 1/6. A finite-volume step keeps the density positive (under a CFL
bound) when all three points are positive. A high-order reconstruction can break this in a
cell of a few cells' width beside far denser ones (an evacuated gas pocket beside water): its
face values take up the neighbours' density, their mean exceeds three times the cell's, and
the faces carry away more mass than the cell holds. The limiter moves both face values
towards the mean, by the least amount that keeps the three points at or above a small share
of the mean. It conserves the mean, leaves the cells that need nothing untouched (bit for
bit), and works on the density alone.
"""
import taichi as ti

from ..bound_model import is_finite
from ..layout import component, with_component
from .riemann import _hll_flux

# The least share of the mean density each of the three points may keep.
FLOOR_SHARE = 1e-3


def make_density_limiter(density_index: int):
    """A ti.func (mean W, lower face W, upper face W) -> the two face states, density limited."""

    @ti.func
    def limited(mean_state, lower, upper):
        mean = component(mean_state, density_index)
        low, high = component(lower, density_index), component(upper, density_index)
        interior = 1.5 * mean - 0.25 * (low + high)  # (mean - (low + high) / 6) / (2 / 3)
        least = ti.min(ti.min(low, high), interior)
        floor = FLOOR_SHARE * mean
        if least < floor:  # (mean > floor > least for a positive mean; else first order)
            theta = ti.select(mean > 0.0, (mean - floor) / ti.max(mean - least, 1e-30), 0.0)
            low, high = mean + theta * (low - mean), mean + theta * (high - mean)
        return (with_component(lower, density_index, low, lower.n),
                with_component(upper, density_index, high, upper.n))

    return limited



# --- the flux limiter of the cell means' update ([scheme] positivity_limiter) -------------------
# A limited face's theta is found to 1/2^FLUX_BISECTIONS below the largest that passes.
FLUX_BISECTIONS = 6


def make_flux_positivity_limiter(phys, axes: int):
    """A ti.func (W of the 4 cells around a face, the face's flux, dt/dx; normal frame) ->
    (the flux, limited as far as the updates of the two cells beside the face need; 1 where
    it was limited, else 0). `axes`: the axes whose fluxes one update sums (1 where split).

    Hu, Adams & Shu (2013, J. Comput. Phys. 242, 169), split by axes. A forward Euler step of
    a cell is the mean over the d axes of U - d lam (F_up - F_low) (lam = dt/dx), and each of
    those is the mean of the halves Q - 2 d lam theta_up (F_up - G_up) and
    Q + 2 d lam theta_low (F_low - G_low), where Q = U - d lam (G_up - G_low) is the update
    with first-order fluxes G of the cell means and each face's flux is G + theta (F - G). A
    half depends on one face's theta alone, so a face takes the largest theta that keeps the
    half of the cell below it and the half of the cell above it admissible; where every face
    does, every cell's update is a mean of admissible states, admissible for a convex
    admissible set. G is HLL (Davis' speeds), the least diffusive: it limits fewer faces
    (seed 000's 3D blast with MINBEE moved by 1.0% in L1 of rho, against 2.3% with Rusanov,
    docs/numerics.md). Where HLL's own Q is not admissible (its fan argument needs
    2 d lam s <= 1), the face takes Rusanov's (local Lax-Friedrichs, alpha the larger fastest
    speed of the pair): its Q is a convex combination of U and the neighbours' U -/+ F(U)/alpha
    while d lam alpha <= 1, the Courant limit the case check sets for unsplit MUSCL-Hancock
    and FORCE-type fluxes. The MUSTA limiter (numerics/riemann.py) bounds a face's one-sided
    updates around its reconstructed states; this one bounds the cell means' update, which a
    compressive slope limiter empties past the admissible set where a rarefaction nearly
    empties a cell. Only the model's maps between W and U, its flux, signal speeds and
    admissible() are used: any model in conservation form. A face that passes keeps its flux
    bit for bit."""
    n, static, dtype = phys.U.n, list(phys.static_indices), phys.dtype
    if phys.augmented or phys.n_balance:
        raise ValueError(f"[scheme] positivity_limiter bounds the update of conserved cell means: model "
                         f"'{phys.model.name}' has non-conservative terms (advected variables or balance terms)")

    def moving(v):
        """v with the static components zeroed (plain Python: no first-order diffusion of them)."""
        if not static:
            return v
        return ti.Vector([0.0 if k in static else component(v, k) for k in range(n)])

    @ti.func
    def admissible(u):
        return phys.admissible(phys.prim(u))

    def hll(a, b):
        """HLL of two cells, each (U, F, slowest, fastest signal speed) (plain Python, inlined)."""
        sl, sr = ti.min(a[2], b[2]), ti.max(a[3], b[3])
        return moving(_hll_flux(a[0], a[1], b[0], b[1], sl, sr, is_finite(sl, dtype) & is_finite(sr, dtype)))

    def rusanov(a, b):
        """Rusanov (local Lax-Friedrichs) of two cells, as hll."""
        alpha = ti.max(ti.max(ti.abs(a[2]), ti.abs(a[3])), ti.max(ti.abs(b[2]), ti.abs(b[3])))
        return moving(0.5 * (a[1] + b[1]) - (0.5 * alpha) * (b[0] - a[0]))

    def first_order(stencil, mu, flux_of):
        """(the face's first-order flux G, the Q of the cell below and of the cell above it)
        with flux_of (hll or rusanov) of the 4 cell means (plain Python, inlined)."""
        cells = [(*phys.state_and_flux(w), *phys.signal_speeds(w)) for w in stencil]
        safe = flux_of(cells[1], cells[2])
        below = cells[1][0] - mu * (safe - flux_of(cells[0], cells[1]))
        above = cells[2][0] - mu * (flux_of(cells[2], cells[3]) - safe)
        return safe, below, above

    @ti.func
    def blend(below, above, flux, safe, mu):
        """(safe + theta (flux - safe), theta): theta = 1 where the two halves of the flux pass
        (the flux bit for bit), else the largest found that passes, 0 if none does."""
        step = 2.0 * mu * (flux - safe)
        out, theta = flux, 1.0
        if not (admissible(below - step) & admissible(above + step)):
            lo, hi = 0.0, 1.0  # the halves are affine in theta: admissible on [0, theta*]
            for _ in range(FLUX_BISECTIONS):
                mid = 0.5 * (lo + hi)
                if admissible(below - mid * step) & admissible(above + mid * step):
                    lo = mid
                else:
                    hi = mid
            out, theta = safe + lo * (flux - safe), lo
        return out, theta

    @ti.func
    def limit(stencil: ti.template(), flux, dt_dx):
        mu = axes * dt_dx
        safe, below, above = first_order(stencil, mu, hll)
        out, theta = blend(below, above, flux, safe, mu)
        if theta == 0.0:
            if not (admissible(below) & admissible(above)):  # (HLL's Q: Rusanov's, admissible)
                safe, below, above = first_order(stencil, mu, rusanov)
                out, theta = blend(below, above, flux, safe, mu)
        return out, ti.select(theta < 1.0, 1, 0)

    return limit
