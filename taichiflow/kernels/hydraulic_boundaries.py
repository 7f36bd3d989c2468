"""Open boundaries of a depth-averaged model, by its characteristics: what a hydraulics user
imposes (the discharge at an inlet, the depth or stage at an outlet), the rest from the
Riemann invariant that leaves the domain.

Along the inward normal (un = +u at a lower face, -u at an upper one) the wave un - c runs
out of a subcritical face and carries R = un - 2c, c = sqrt(g h), from the boundary cell; the
ghost state keeps the cell's R and satisfies the imposed value:

- "discharge" q (entering): un_b = q / h_b with un_b - 2 c_b = R, i.e. c_b the positive root of
  2c^3 + R c^2 - g q = 0 (one root for q >= 0; Newton from above it converges monotonically);
- "depth" h_b: un_b = R + 2 sqrt(g h_b); "stage" s: the same with h_b = max(0, s - bed);
- "supercritical_inflow": both imposed, h_b and un_b = q / h_b (no wave leaves);
- a supercritical outlet imposes nothing: "outflow" (zero gradient) is that.

Every ghost layer of the face takes that state; the tangential velocity and the static fields
(bed, friction) are the boundary cell's. In a steady state the ghost equals the boundary cell,
so the face passes exactly the imposed discharge. Where the flow turns supercritical at a
subcritical face the Riemann solver upwinds and the imposed value no longer acts, as it must.

Each value is a time series ([time, value] pairs, linear between, held beyond the ends) in a
small device field, read at the start of each step (the clock's t: a value changes with at
most one step's lag). A ghost can be faster than every cell (water let into a dry bed: the
cells' CFL rate is 0), so the step check adds the ghosts' rate, with the values at their
extreme until the next breakpoint (from a ramp's foot the step already sees its top). The
kinds, and what they need of the model (registry.boundary_kinds): the depth, bed, velocity
and gravity by the registry's names.
"""
import numpy as np
import taichi as ti

from ..layout import component, with_component
from ..registry import BED, DEPTH, GRAVITY
from .clock import T
from .indexing import with_axis

NEWTON_STEPS = 60   # a cap: from the bound above the root, 5 to 10 steps reach rounding

HYDRAULIC_KINDS = ("discharge", "depth", "stage", "supercritical_inflow")  # (registry.boundary_kinds)


class ImposedValues:
    """The time series of the hydraulic faces in one device field (series k of a face's value:
    index[(axis, side, name)]). imposed: {(axis, side): {name: number or [[t, value], ...]}}."""

    def __init__(self, imposed: dict):
        self.index = {}
        series = []
        for face, values in sorted(imposed.items()):
            for name, value in sorted(values.items()):
                self.index[face + (name,)] = len(series)
                series.append(np.array([[0.0, value]] if np.isscalar(value) else value, dtype=np.float64))
        self.lengths = [len(s) for s in series]
        self.varying = any(n > 1 for n in self.lengths)
        longest = max(self.lengths, default=1)
        self.points = ti.Vector.field(2, ti.f64, shape=(max(len(series), 1), longest))
        table = np.zeros((max(len(series), 1), longest, 2))
        for k, s in enumerate(series):
            table[k, :len(s)] = s
            table[k, len(s):] = s[-1]
        self.points.from_numpy(table)

    def value_func(self):
        points, lengths = self.points, self.lengths

        @ti.func
        def value(k: ti.template(), t, extreme: ti.template()):
            """Series k at time t (f64); with extreme = +1 (-1) the larger (smaller) of that and
            the value at the next breakpoint, its extreme until then (a bound for the time step:
            from a ramp's foot the step must already see its top)."""
            last = ti.static(lengths[k] - 1)
            v = points[k, last][1]
            ahead = v
            if t < points[k, 0][0]:
                v = points[k, 0][1]
                ahead = v
            else:
                j = 1
                while j <= last:
                    if t < points[k, j][0]:
                        t0, v0 = points[k, j - 1][0], points[k, j - 1][1]
                        t1, ahead = points[k, j][0], points[k, j][1]
                        v = v0 + (ahead - v0) * (t - t0) / (t1 - t0)
                        j = last
                    j += 1
            if ti.static(extreme > 0):
                v = ti.max(v, ahead)
            elif ti.static(extreme < 0):
                v = ti.min(v, ahead)
            return v

        return value


@ti.func
def depth_for_discharge(q, R, gravity):
    """The depth whose discharge q (>= 0) keeps the invariant un - 2 sqrt(g h) = R: Newton on
    p(c) = 2c^3 + R c^2 - g q from c = max(-R, 0) + (g q / 2)^(1/3), where p >= 0 and p is
    increasing and convex down to the root."""
    c = ti.max(-R, 0.0) + ti.pow(0.5 * gravity * q, 1.0 / 3.0)
    steps = 0
    while steps < NEWTON_STEPS:
        slope = c * (6.0 * c + 2.0 * R)
        step = c * 0.0
        if slope > 0.0:  # (else c = 0: no water, nothing enters)
            step = (c * c * (2.0 * c + R) - gravity * q) / slope
            c -= step
        steps += 1
        if step <= 1e-15 * c:  # (the iterates fall monotonically: converged once they stop)
            steps = NEWTON_STEPS
    return c * c / gravity


def make_hydraulic_face(ctx, kind: str, values: ImposedValues, clock):
    """(the ghost copy of a hydraulic kind, which kernels/boundaries.py calls like the others;
    its rate: rate_of(the ghost state) at a boundary cell, the imposed values at their extreme
    until the next breakpoint, 0 elsewhere; the step check adds it to the CFL rate, since the
    ghost may be faster than every cell, e.g. water coming into a dry bed)."""
    W, g, dim, phys = ctx["W"], ctx["ghost"], ctx["dim"], ctx["phys"]
    depth, vel = phys.W.index(DEPTH), phys.W.index(phys.model.velocity)
    bed = phys.W.index(BED) if kind == "stage" else None
    gravity, dtype = phys.params[GRAVITY], phys.dtype
    value = values.value_func()
    timed = clock is not None

    @ti.func
    def now():
        t = ti.cast(0.0, ti.f64)
        if ti.static(timed):
            t = clock.times[T]
        return t

    def imposed(axis: int, side: int, name: str, extreme: int):
        """The face's value now, or its extreme until the next breakpoint (plain Python building
        the expression as the kernel compiles)."""
        return ti.cast(value(values.index[(axis, side, name)], now(), extreme), dtype)

    @ti.func
    def ghost_state(w, axis: ti.template(), side: ti.template(), fastest: ti.template()):
        """The ghost state from boundary cell w (see the module docstring), inward frame;
        fastest = 1: with the values that make it fastest until the next breakpoint."""
        inward = 1.0 if side == 0 else -1.0
        c = ti.sqrt(gravity * ti.max(component(w, depth), 0.0))
        R = inward * component(w, vel + axis) - 2.0 * c
        h_b, un_b = ti.cast(0.0, dtype), ti.cast(0.0, dtype)
        if ti.static(kind == "discharge"):
            q = imposed(axis, side, "discharge", fastest)
            h_b = depth_for_discharge(q, R, gravity)
            if h_b > 0.0:
                un_b = q / h_b
        elif ti.static(kind == "supercritical_inflow"):
            q = imposed(axis, side, "discharge", fastest)
            h_b = imposed(axis, side, "depth", -fastest)
            if h_b > 0.0:
                un_b = q / h_b
        else:  # depth or stage
            if ti.static(kind == "stage"):
                h_b = ti.max(imposed(axis, side, "stage", fastest) - component(w, bed), 0.0)
            else:
                h_b = imposed(axis, side, "depth", fastest)
            un_b = R + 2.0 * ti.sqrt(gravity * h_b)
        return with_component(with_component(w, depth, h_b, phys.W.n), vel + axis, inward * un_b, phys.W.n)

    @ti.func
    def copy(I: ti.template(), w: ti.template(), i: ti.template(), axis: ti.template(), side: ti.template(),
             n: ti.template(), periods: ti.template()):
        """Every layer beside the boundary cell takes the ghost state made from it."""
        if i == (0 if side == 0 else n - 1):
            state = ghost_state(w, axis, side, 0)
            for k in ti.static(range(g)):
                W[with_axis(I, axis, -1 - k if side == 0 else n + k, dim)] = state

    @ti.func
    def rate(w, i, axis: ti.template(), side: ti.template(), n: ti.template(), rate_of: ti.template()):
        """rate_of(the fastest ghost state until the next breakpoint) at the boundary cell, else 0."""
        found = ti.cast(0.0, dtype)
        if i == (0 if side == 0 else n - 1):
            found = rate_of(ghost_state(w, axis, side, 1))
        return found

    return copy, rate
