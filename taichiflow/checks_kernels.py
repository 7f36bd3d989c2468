"""Point-wise checks of a model for `taichiflow check`: Taichi kernels over sampled states.

Each check is its own kernel, so a model function that fails to compile or misbehaves is
reported against that check alone. Kernels write raw results (fluxes, speeds, Jacobian
columns) to fields; the comparisons against tolerances are made on the host with numpy,
where the worst sample is easy to find. Most kernels work on states already turned into the
normal frame of each axis on the host, with the framework's own permutation
(`Layout.rotation`): one compiled body serves the three axes, which keeps compiling short.
"""

import numpy as np
import taichi as ti

from . import registry
from .layout import component, permute
from .numerics.riemann import RIEMANN_SOLVERS
from .bound_model import BoundModel
from .requirements import missing_hooks

AXES = "xyz"
# Relative step of the central differences for the flux Jacobian: truncation ~ h^2 and
# round-off ~ eps / h balance near 1e-5 (both ~1e-10 relative to the speeds).
JACOBIAN_STEP = 1e-5
CFL = 0.4   # dt/dx handed to the centred solvers: cfl over the state's fastest speed


def solver_variants() -> list[tuple[str, dict]]:
    """The Riemann solver variants the suite can check, (row label, [scheme] table): every
    solver in the registry, once per wave-speed estimate where it reads one ("hll" with the
    first estimate, "hll+einfeldt" with the others), as a 3D scheme (FORCE's alpha = 3)."""
    variants = []
    first_speeds = registry.wave_speeds.names()[0]
    for solver in registry.riemann_solvers.entries():
        scheme = {"riemann": solver.name, "dimension": 3}
        if "wave_speeds" not in solver.options:
            variants.append((solver.name, scheme))
            continue
        for speeds in registry.wave_speeds.names():
            label = solver.name if speeds == first_speeds else f"{solver.name}+{speeds}"
            variants.append((label, {**scheme, "wave_speeds": speeds}))
    return variants


def applicable_solvers(model) -> list[tuple[str, dict]]:
    """The solver variants whose hooks the model provides (`missing_hooks` empty)."""
    return [(label, scheme) for label, scheme in solver_variants() if not missing_hooks(model, scheme)]


def uses_hllc_star(scheme: dict) -> bool:
    """Whether the scheme's Riemann solver calls the model's hllc_star (its star states are
    then checked on their own)."""
    return "hllc_star" in registry.riemann_solvers.get(scheme["riemann"]).needs_hooks


def to_normal_frames(w: np.ndarray, layout) -> np.ndarray:
    """States (n, nW) -> (n * 3, nW): sample i in the normal frame of axis d at row 3 i + d,
    by the permutation the compiled solver applies before calling the model."""
    out = np.empty((w.shape[0], 3, w.shape[1]))
    for d in range(3):
        out[:, d] = w[:, layout.rotation(d, True)]
    return out.reshape(-1, w.shape[1])


def turn_about_normal(flat, layout, quarter_turns: int):
    """Every declared 3-vector of a flat state turned by quarter_turns x 90 degrees about the
    local x axis (a proper rotation that keeps the normal): (a, b, c) -> (a, -c, b) per turn.
    A flux that is rotationally invariant commutes with it."""
    parts = [component(flat, k) for k in range(layout.n)]
    for name in layout.vectors:
        o = layout.offsets[name]
        b, c = parts[o + 1], parts[o + 2]
        for _ in range(quarter_turns % 4):
            b, c = -c, b
        parts[o + 1], parts[o + 2] = b, c
    return ti.Vector(parts)


class KernelChecks:
    """Fields and kernels of the point-wise checks for one model and parameter set.

    `capacity` bounds how many states one call may test for admissibility (samples and the
    smooth grid state of the conservation check share the admissibility kernel)."""

    def __init__(self, model, params: dict, capacity: int):
        self.model = model
        self.globals = ti.Vector.field(max(len(model.globals), 1), ti.f64, shape=())
        self.phys = BoundModel(model, params, ti.f64, self.globals)
        self.capacity = capacity
        self.batch = ti.Vector.field(self.phys.W.n, ti.f64, shape=capacity)
        self.ok = ti.field(ti.i32, shape=capacity)
        phys, batch, ok = self.phys, self.batch, self.ok

        @ti.kernel
        def admissible(count: ti.i32):
            for q in range(count):
                ok[q] = 0
                if phys.admissible(batch[q]):
                    ok[q] = 1

        self._admissible = admissible

    def admissible(self, w: np.ndarray) -> np.ndarray:
        """Boolean per state (rows of w): the model's admissibility, computed in a kernel."""
        n = w.shape[0]
        if n > self.capacity:
            raise ValueError(f"{n} states exceed the batch capacity {self.capacity}")
        full = np.zeros((self.capacity, w.shape[1]))
        full[:n] = w
        self.batch.from_numpy(full)
        self._admissible(n)
        return self.ok.to_numpy()[:n].astype(bool)

    # --- the sampled states ---------------------------------------------------------------
    def load(self, samples: np.ndarray):
        """Allocate the per-sample fields for `samples` (global frame, (n, nW))."""
        phys = self.phys
        nW, nF = phys.W.n, phys.n_transport
        self.n = n = samples.shape[0]
        self.samples = samples
        self.W = ti.Vector.field(nW, ti.f64, shape=n)          # global frame
        self.Wn = ti.Vector.field(nW, ti.f64, shape=3 * n)     # normal frames, row 3 i + d
        self.W.from_numpy(samples)
        self.Wn.from_numpy(to_normal_frames(samples, phys.W))
        self.U = ti.Vector.field(nF, ti.f64, shape=3 * n)      # (augmented) conserved state
        self.F = ti.Vector.field(nF, ti.f64, shape=3 * n)      # (augmented) physical flux
        self.S = ti.Vector.field(2, ti.f64, shape=3 * n)       # signal speeds
        self.Fnum = ti.Vector.field(nF, ti.f64, shape=3 * n)   # a numerical flux
        if self.model.globals:
            self._set_globals()

    def _set_globals(self):
        """Global values (e.g. a cleaning speed) as their maximum over the samples."""
        phys, Wn, names, G = self.phys, self.Wn, list(self.model.globals), self.globals

        @ti.kernel
        def reduce_globals():
            for q in range(Wn.shape[0]):
                for k in ti.static(range(len(names))):
                    ti.atomic_max(G[None][k], ti.cast(phys.global_value(names[k], Wn[q]), ti.f64))

        G.fill(-np.inf)
        reduce_globals()

    # --- check kernels ----------------------------------------------------------------------
    def round_trip(self) -> np.ndarray:
        """prim(cons(W)) for every sample, (n, nW)."""
        phys, W = self.phys, self.W
        out = ti.Vector.field(phys.W.n, ti.f64, shape=self.n)

        @ti.kernel
        def round_trip():
            for i in range(W.shape[0]):
                out[i] = phys.prim(phys.cons(W[i]))

        round_trip()
        return out.to_numpy()

    def physical(self):
        """Conserved state, physical flux and signal speeds of every normal-frame sample
        (augmented with the passive unit scalar where the model has advected variables)."""
        phys, Wn, U, F, S = self.phys, self.Wn, self.U, self.F, self.S

        @ti.kernel
        def physical():
            for q in range(Wn.shape[0]):
                u, f = phys.state_and_flux(Wn[q])
                smin, smax = phys.signal_speeds(Wn[q])
                U[q], F[q], S[q] = u, f, ti.Vector([smin, smax])

        physical()
        return U.to_numpy(), F.to_numpy(), S.to_numpy()

    def numerical_flux(self, scheme: dict) -> np.ndarray:
        """The solver's flux for equal left and right states, (3 n, nF)."""
        phys, Wn, S, Fnum = self.phys, self.Wn, self.S, self.Fnum
        riemann = RIEMANN_SOLVERS[scheme["riemann"]](phys, scheme)

        @ti.kernel
        def consistency():
            for q in range(Wn.shape[0]):
                fastest = ti.max(ti.abs(S[q][0]), ti.abs(S[q][1]), 1e-300)
                Fnum[q] = riemann(Wn[q], Wn[q], CFL / fastest)

        consistency()
        return Fnum.to_numpy()

    def hllc_integral(self):
        """HLLC's integral condition on unequal pairs (sample i with sample i + 1, same
        axis): (s* - sL) U*L + (sR - s*) U*R = sR UR - sL UL - (FR - FL), which holds for
        star states consistent with Batten's contact speed s* whatever sL, sR. Equal states
        cannot test a star state (it reduces to U there); this can. Returns (residual, scale)."""
        phys, Wn, n3 = self.phys, self.Wn, 3 * self.n
        res = ti.Vector.field(phys.n_transport, ti.f64, shape=n3)
        scale = ti.field(ti.f64, shape=n3)

        @ti.kernel
        def hllc_star():
            for q in range(n3):
                wL, wR = Wn[q], Wn[(q + 3) % n3]
                uL, fL = phys.state_and_flux(wL)
                uR, fR = phys.state_and_flux(wR)
                minL, maxL = phys.signal_speeds(wL)
                minR, maxR = phys.signal_speeds(wR)
                sL, sR = ti.min(minL, minR), ti.max(maxL, maxR)
                rhoL, rhoR = phys.density(wL), phys.density(wR)
                unL, unR = phys.normal_velocity(wL), phys.normal_velocity(wR)
                # Batten et al. (1997), as numerics/riemann.py's HLLC computes it.
                s_star = (phys.pressure(wR) - phys.pressure(wL) + rhoL * unL * (sL - unL)
                          - rhoR * unR * (sR - unR)) / (rhoL * (sL - unL) - rhoR * (sR - unR))
                starL = phys.star_state(wL, uL, sL, s_star)
                starR = phys.star_state(wR, uR, sR, s_star)
                rhs = sR * uR - sL * uL - (fR - fL)
                res[q] = (s_star - sL) * starL + (sR - s_star) * starR - rhs
                big = 0.0
                for k in ti.static(range(phys.n_transport)):
                    big = ti.max(big, ti.abs(sR * uR[k]), ti.abs(sL * uL[k]), ti.abs(fR[k]), ti.abs(fL[k]))
                scale[q] = big

        hllc_star()
        return res.to_numpy(), scale.to_numpy()

    def rotation(self):
        """Flux and speeds along each axis two ways: the framework's (permute W into the
        axis's frame, flux, permute back) and through a further turn of the frame about the
        normal by 90, 180 and 270 degrees, undone afterwards. Returns (reference (n, 3, nU),
        turned (n, 3, 3, nU), speeds (n, 3, 2), turned speeds (n, 3, 3, 2))."""
        phys, W, n = self.phys, self.W, self.n
        nU = phys.U.n
        to_normal = [phys.W.rotation(d, True) for d in range(3)]
        to_global = [phys.U.rotation(d, False) for d in range(3)]
        ref = ti.Vector.field(nU, ti.f64, shape=(n, 3))
        turned = ti.Vector.field(nU, ti.f64, shape=(n, 3, 3))
        s_ref = ti.Vector.field(2, ti.f64, shape=(n, 3))
        s_turned = ti.Vector.field(2, ti.f64, shape=(n, 3, 3))

        @ti.kernel
        def rotation():
            for i in range(n):
                for d in ti.static(range(3)):
                    w = permute(W[i], to_normal[d])
                    ref[i, d] = permute(phys.flux(w, phys.cons(w)), to_global[d])
                    smin, smax = phys.signal_speeds(w)
                    s_ref[i, d] = ti.Vector([smin, smax])
                    for k in ti.static(range(1, 4)):
                        wk = turn_about_normal(w, phys.W, k)
                        fk = turn_about_normal(phys.flux(wk, phys.cons(wk)), phys.U, 4 - k)
                        turned[i, d, k - 1] = permute(fk, to_global[d])
                        tmin, tmax = phys.signal_speeds(wk)
                        s_turned[i, d, k - 1] = ti.Vector([tmin, tmax])

        rotation()
        return ref.to_numpy(), turned.to_numpy(), s_ref.to_numpy(), s_turned.to_numpy()

    def face_resolved(self) -> list[int]:
        """The conserved components that the model's face_states makes one value on both
        sides of a face (GLM: B_n and psi), for the first two distinct samples: the Riemann
        solvers never see their jumps, so the signal speeds need not bound their waves."""
        if "face_states" not in self.model.functions or self.n < 2:
            return []
        phys, Wn = self.phys, self.Wn
        sides = ti.Vector.field(phys.U.n, ti.f64, shape=2)

        @ti.kernel
        def pair():
            left, right = phys.face_states(Wn[0], Wn[3])  # (samples 0 and 1, normal frame of x)
            sides[0] = phys.cons(left)
            sides[1] = phys.cons(right)

        pair()
        u = sides.to_numpy()
        return [k for k in range(phys.U.n) if u[0, k] == u[1, k]]

    def changed_after_step(self) -> list[int]:
        """The conserved components the model's after_step changes (a split source such as
        GLM's damping of psi) for the samples, dt = 0.1 and h = 1: not conserved by a step."""
        if "after_step" not in self.model.functions:
            return []
        phys, W = self.phys, self.W
        change = ti.Vector.field(phys.U.n, ti.f64, shape=self.n)

        @ti.kernel
        def split():
            for i in range(W.shape[0]):
                u = phys.cons(W[i])
                change[i] = ti.abs(phys.after_step(u, 0.1, 1.0) - u)

        split()
        return [int(k) for k in np.flatnonzero(change.to_numpy().max(axis=0) > 0.0)]

    def typical_conserved(self) -> float:
        """The mean |U| component over the normal-frame samples (once physical() has filled
        U), 1 if that is 0: the size of the state where a sample's own size is 0."""
        typical = float(np.abs(self.U.to_numpy()).mean())
        return typical if np.isfinite(typical) and typical > 0.0 else 1.0

    def jacobian(self):
        """Central-difference Jacobian dF/dU of the quasi-linear system along the normal,
        for every normal-frame sample: F(U) = flux(prim(U), U). Rows of advected variables
        get - phi d(u_n)/dU, the term the framework adds (phi_t + u . grad phi = 0).
        The step is relative to the component, to a tenth of the state's largest and to a
        tenth of the samples' typical |U|, so that a state that is zero (Burgers at rest) still
        gets a finite step. Models without advected variables need no velocity role here.
        Returns (J (3 n, nU, nU), speeds (3 n, 2), Roe speeds of (W, W) or None)."""
        phys, Wn, n3 = self.phys, self.Wn, 3 * self.n
        nU = phys.U.n
        advected = phys.advected_indices
        floor = 0.1 * self.typical_conserved()
        cols = ti.Vector.field(nU, ti.f64, shape=(n3, nU))
        speeds = ti.Vector.field(2, ti.f64, shape=n3)
        has_roe = "roe_speeds" in self.model.functions
        roe = ti.Vector.field(2, ti.f64, shape=n3 if has_roe else 1)
        step = JACOBIAN_STEP

        @ti.kernel
        def jacobian():
            for q in range(n3):
                w = Wn[q]
                u = phys.cons(w)
                big = 0.0
                for k in ti.static(range(nU)):
                    big = ti.max(big, ti.abs(u[k]))
                for j in ti.static(range(nU)):
                    h = step * ti.max(ti.abs(u[j]), 0.1 * big, floor)
                    up = ti.Vector([u[k] + (h if k == j else 0.0) for k in ti.static(range(nU))])
                    um = ti.Vector([u[k] - (h if k == j else 0.0) for k in ti.static(range(nU))])
                    wp, wm = phys.prim(up), phys.prim(um)
                    col = (phys.flux(wp, up) - phys.flux(wm, um)) / (2.0 * h)
                    if ti.static(advected):
                        dun = (phys.normal_velocity(wp) - phys.normal_velocity(wm)) / (2.0 * h)
                        for k in ti.static(advected):
                            col[k] -= u[k] * dun
                    cols[q, j] = col
                smin, smax = phys.signal_speeds(w)
                speeds[q] = ti.Vector([smin, smax])
                if ti.static(has_roe):
                    rmin, rmax = phys.roe_speeds(w, w)
                    roe[q] = ti.Vector([rmin, rmax])

        jacobian()
        # cols[q, j] is column j: J[q] = cols[q].T
        J = np.transpose(cols.to_numpy(), (0, 2, 1))
        return J, speeds.to_numpy(), roe.to_numpy() if has_roe else None
