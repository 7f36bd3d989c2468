"""A model bound to its parameter values, seen by the numerics as flat-vector functions.

The numerics call these from Taichi scope; each method is plain Python that runs while the
kernel compiles and inlines the model's Taichi function with its parameters as constants.
States here are in the normal frame: the caller rotates before and after.
"""
from __future__ import annotations

import taichi as ti
from taichi.lang import impl

from .layout import component, extend
from .errors import ModelError


class BoundModel:
    """A model with its parameter values, its precision and its global values (a field the
    step check fills each step: see Model(globals=...)), as the numerics call it."""

    def __init__(self, model, params: dict, dtype, globals_field=None):
        self.model = model
        self.dtype = dtype
        self.params = params
        if globals_field is None:
            globals_field = ti.Vector.field(max(len(model.globals), 1), ti.f64, shape=())
        self.globals_field = globals_field
        self.U = model.conserved
        self.W = model.primitive
        self.augmented = bool(model.advected)
        # The face flux carries one extra component when advected variables need div(u):
        # the numerical flux of a passive unit scalar, i.e. the face velocity.
        self.n_transport = self.U.n + (1 if self.augmented else 0)
        # A model with face balance terms (hydrostatic reconstruction) hands each face's two
        # cells `balance` values more, the lower cell's first: face_balance, cell_balance.
        self.n_balance = model.balance
        self.n_flux = self.n_transport + 2 * self.n_balance
        self.advected_indices = [self.U.offsets[n] for n in model.advected]
        self.static_indices = [self.U.offsets[n] for n in model.static]

    def _where(self, function: str) -> str:
        """The model file and function, the prefix of a layout error (see Layout.flatten)."""
        return f"{self.model.source_file}: {function}()"

    def _call(self, role, *states):
        return self.model.functions[role](*states, *self._extra_args(role))

    def _extra_args(self, role) -> list:
        """The values of the parameters (constants) and globals (read from the field the step
        check fills) that the function of `role` takes after its states."""
        extra = []
        for name in self.model.extra_args(role):
            if name in self.params:
                extra.append(self.params[name])
            else:
                index = list(self.model.globals).index(name)
                values = impl.subscript(None, self.globals_field, None)  # globals_field[None]
                extra.append(ti.cast(component(values, index), self.dtype))
        return extra

    def prim(self, u):
        return self.W.flatten(self._call("to_primitive", self.U.view(u)), self._where("to_primitive"))

    def cons(self, w):
        return self.U.flatten(self._call("to_conserved", self.W.view(w)), self._where("to_conserved"))

    def flux(self, w, u):
        return self.U.flatten(self._call("flux", self.W.view(w), self.U.view(u)), self._where("flux"))

    def normal_velocity(self, w):
        return component(w, self.W.index(self.model.velocity, 0))

    def signal_speeds(self, w):
        """(smin, smax) along the normal, from wave_speeds or u_n -/+ c."""
        if "wave_speeds" in self.model.functions:
            speeds = self._call("wave_speeds", self.W.view(w))
            return component(speeds, 0), component(speeds, 1)
        c = self._call("sound_speed", self.W.view(w))
        un = self.normal_velocity(w)
        return un - c, un + c

    def state_and_flux(self, w):
        """Conserved state and physical flux, with the unit scalar appended if augmented."""
        u = self.cons(w)
        f = self.flux(w, u)
        if self.augmented:
            return extend(u, self.U.n, 1.0), extend(f, self.U.n, self.normal_velocity(w))
        return u, f

    def flux_of_state(self, u):
        """Physical flux of a conserved state the numerics built (e.g. a Lax-Wendroff or MUSTA
        state), through prim; augmented like state_and_flux, the unit scalar's flux being its
        value times u_n so that it stays the passive scalar the advected terms rely on."""
        core = ti.Vector([component(u, k) for k in range(self.U.n)]) if self.augmented else u
        w = self.prim(core)
        f = self.flux(w, core)
        if self.augmented:
            return extend(f, self.U.n, component(u, self.U.n) * self.normal_velocity(w))
        return f

    def flux_of_state_checked(self, u):
        """flux_of_state(u) and whether u's primitive state is admissible (FORCE's fallback)."""
        core = ti.Vector([component(u, k) for k in range(self.U.n)]) if self.augmented else u
        w = self.prim(core)
        f = self.flux(w, core)
        if self.augmented:
            f = extend(f, self.U.n, component(u, self.U.n) * self.normal_velocity(w))
        return f, self.admissible(w)

    def roe_speeds(self, wl, wr):
        """(smin, smax) of the model's Roe-averaged state between wl and wr (Einfeldt speeds)."""
        speeds = self._call("roe_speeds", self.W.view(wl), self.W.view(wr))
        return component(speeds, 0), component(speeds, 1)

    def eigenvectors(self, w):
        """(L, R): left and right eigenvectors of the primitive-variable Jacobian along the
        normal, nW x nW matrices in the flat order of W, with L R = I."""
        result = self._call("eigenvectors", self.W.view(w))
        n = self.W.n
        ok = isinstance(result, (tuple, list)) and len(result) == 2 and all(
            (getattr(M, "n", None), getattr(M, "m", None)) == (n, n) for M in result)
        if not ok:
            raise ModelError(f"{self.model.source_file}: eigenvectors(): must return a tuple (L, R) "
                             f"of two {n} x {n} ti.Matrix (W has {n} components)")
        return result[0], result[1]

    def jacobians(self, w):
        """(dU/dW, dW/dU) at w, flat orders: with `eigenvectors`, the conserved system's."""
        result = self._call("jacobians", self.W.view(w))
        nu, nw = self.U.n, self.W.n
        ok = isinstance(result, (tuple, list)) and len(result) == 2 and all(
            (getattr(M, "n", None), getattr(M, "m", None)) == shape for M, shape in zip(result, [(nu, nw), (nw, nu)]))
        if not ok:
            raise ModelError(f"{self.model.source_file}: jacobians(): must return a tuple (dU/dW, dW/dU) "
                             f"of ti.Matrix, {nu} x {nw} and {nw} x {nu}")
        return result[0], result[1]

    def eigenvalues(self, w):
        """The characteristic speeds along the normal, in the order of eigenvectors' columns."""
        return self._call("eigenvalues", self.W.view(w))

    def density(self, w):
        return component(w, self.W.index(self.model.density))

    def pressure(self, w):
        return component(w, self.W.index(self.model.pressure))

    def star_state(self, w, u, s, s_star):
        """HLLC star state on the side of wave speed s (augmented like state_and_flux)."""
        star = self.U.flatten(self._call("hllc_star", self.W.view(w), self.U.view(u), s, s_star),
                              self._where("hllc_star"))
        if self.augmented:
            chi = (s - self.normal_velocity(w)) / (s - s_star)
            return extend(star, self.U.n, chi)
        return star

    def repair(self, u, w):
        """The model's repaired conserved state for an inadmissible (u, w)."""
        return self.U.flatten(self._call("repair", self.U.view(u), self.W.view(w)), self._where("repair"))

    def source(self, u, w, x, t):
        return self.U.flatten(self._call("source", self.U.view(u), self.W.view(w), x, t), self._where("source"))

    def derived(self, name, w, grad=None, h=None):
        """A derived field of W: it may read parameters and the model's globals alike. A field
        of gradients also takes grad (Layout.gradient_view of the centred differences of W
        along each axis: grad.rho a 3-vector, grad.B the 3 x 3 matrix dB_i/dx_j) and h (the
        least cell width)."""
        args = (self.W.view(w),)
        if name in self.model.gradient_fields:
            args += (self.W.gradient_view(grad), h)
        return self.model.derived[name](*args, *self._extra_args(f"derived:{name}"))

    def face_states(self, wl, wr):
        """The model's face pair (e.g. GLM's B_n and psi from their own 2x2 problem) that every
        Riemann solver then takes; (wl, wr) where the model has no face_states."""
        if "face_states" not in self.model.functions:
            return wl, wr
        pair = self._call("face_states", self.W.view(wl), self.W.view(wr))
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ModelError(f"{self._where('face_states')}: must return a tuple (WL, WR) of model.W(...)")
        return self.W.flatten(pair[0], self._where("face_states")), self.W.flatten(pair[1], self._where("face_states"))

    def to_reconstructed(self, w):
        """The variables the model is reconstructed in, W-shaped (w itself without the hook)."""
        if "to_reconstructed" not in self.model.functions:
            return w
        return self.W.flatten(self._call("to_reconstructed", self.W.view(w)), self._where("to_reconstructed"))

    def from_reconstructed(self, v):
        if "from_reconstructed" not in self.model.functions:
            return v
        return self.W.flatten(self._call("from_reconstructed", self.W.view(v)), self._where("from_reconstructed"))

    def face_balance(self, w, w_solved):
        """The model's `balance` values of one side of a face: its reconstructed state w and
        the state the Riemann solver saw there (face_states' output)."""
        values = self._call("face_balance", self.W.view(w), self.W.view(w_solved))
        if getattr(values, "n", None) != self.n_balance:
            raise ModelError(f"{self._where('face_balance')}: must return a ti.Vector of Model(balance="
                             f"{self.n_balance}) values")
        return values

    def cell_balance(self, lower, upper):
        """A cell's balance term times its width (normal frame) from the face_balance values of
        its lower face's upper side and its upper face's lower side."""
        return self.U.flatten(self._call("cell_balance", lower, upper), self._where("cell_balance"))

    def idle(self, u):
        """The model's promise that a step leaves u as it is where its neighbours are idle too."""
        return self._call("idle", self.U.view(u))

    def refinement(self, w):
        """The model's own refinement indicator of a cell, on Löhner's scale ([amr] refine_above)."""
        return self._call("refinement", self.W.view(w))

    def after_step(self, u, dt, h):
        """U after a step of dt: the model's split source (e.g. GLM's damping of psi)."""
        return self.U.flatten(self._call("after_step", self.U.view(u), dt, h), self._where("after_step"))

    def splitting_speeds(self, w):
        """Per conserved component, the speed with which flux splitting separates it."""
        return self.U.flatten(self._call("splitting_speeds", self.W.view(w)), self._where("splitting_speeds"))

    def solver_flux(self, name, wl, wr):
        """The flux of the Riemann solver `name` the model provides (normal frame)."""
        role = f"solver:{name}"
        flux = self.model.solvers[name](self.W.view(wl), self.W.view(wr), *self._extra_args(role))
        return self.U.flatten(flux, self._where(name))

    def global_value(self, name, w):
        return self._call(f"global:{name}", self.W.view(w))

    def admissible(self, w):
        """1 where every component is finite, the declared positives are > 0 and the
        model's own admissible() (if any) holds, else 0."""
        ok = is_finite(component(w, 0), self.dtype)
        for k in range(1, self.W.n):
            ok = ok & is_finite(component(w, k), self.dtype)
        for name in self.model.positive:
            ok = ok & (component(w, self.W.index(name)) > 0.0)
        if "admissible" in self.model.functions:
            ok = ok & self._call("admissible", self.W.view(w))
        return ok


def is_finite(x, dtype):
    """Finite test on the bit pattern, immune to fast-math assumptions of no NaN/Inf."""
    if dtype == ti.f64:
        return ((ti.bit_cast(x, ti.i64) >> 52) & 0x7FF) != 0x7FF
    return ((ti.bit_cast(x, ti.i32) >> 23) & 0xFF) != 0xFF
