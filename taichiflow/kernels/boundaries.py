"""The ghost layers of W, face by face.

Each boundary kind is one entry of GHOST_COPIES: a Taichi function that, given an interior
cell's new W, writes the ghost cells of one face that copy it (the inverse of the face's
source map). The primitives kernels call them where W is computed: that replaces a separate
ghost kernel of one task per face (18 launches per LSRK3 step fewer; at 256^3 on an H100 the
time it took, 0.41 ms per step, went into the primitives' stores, measured neutral). Inflow
faces hold a constant state, filled once by a kernel of their own.

A face that borders another block of the grid (kind NEIGHBOUR, MPI) is neither copied nor
filled here: the halo exchange writes it (kernels/solver.py: exchange_ghosts). A kind with
no entry is an error, never a default. The kinds and what they need are the registry's
(registry.boundary_kinds): a new kind is one entry there and one here.

The open faces of a depth-averaged model (OPEN_COPIES: discharge, depth, stage,
supercritical inflow; kernels/hydraulic_boundaries.py) are copies too, but theirs bring
values from outside, the case's imposed time series read at the clock's time: they are not in
GHOST_COPIES, whose faces bring only what is inside (kernels/idle.py keeps the tiles along the
others active).
"""
import taichi as ti

from .. import registry
from ..layout import component
from .hydraulic_boundaries import HYDRAULIC_KINDS, ImposedValues, make_hydraulic_face
from .indexing import with_axis

NEIGHBOUR = "neighbour"   # a face between two blocks: its ghost layers come from the other block


def _copy_periodic(ctx):
    W, g, dim = ctx["W"], ctx["ghost"], ctx["dim"]

    @ti.func
    def copy(I: ti.template(), w: ti.template(), i: ti.template(), axis: ti.template(), side: ti.template(),
             n: ti.template(), periods: ti.template()):
        """Every ghost j = i -+ m n (more than one if n < g)."""
        for m in ti.static(range(1, periods + 1)):
            if ti.static(side == 0):
                if i - m * n >= -g:
                    W[with_axis(I, axis, i - m * n, dim)] = w
            elif i + m * n < n + g:
                W[with_axis(I, axis, i + m * n, dim)] = w

    return copy


def _copy_zero_gradient(ctx):
    W, g, dim = ctx["W"], ctx["ghost"], ctx["dim"]

    @ti.func
    def copy(I: ti.template(), w: ti.template(), i: ti.template(), axis: ti.template(), side: ti.template(),
             n: ti.template(), periods: ti.template()):
        """Every layer beside the boundary cell takes its value."""
        if i == (0 if side == 0 else n - 1):
            for k in ti.static(range(g)):
                W[with_axis(I, axis, -1 - k if side == 0 else n + k, dim)] = w

    return copy


def _copy_wall(ctx):
    W, g, dim, phys = ctx["W"], ctx["ghost"], ctx["dim"], ctx["phys"]
    vel = phys.W.index(phys.model.velocity) if phys.model.velocity else None

    @ti.func
    def copy(I: ti.template(), w: ti.template(), i: ti.template(), axis: ti.template(), side: ti.template(),
             n: ti.template(), periods: ti.template()):
        """The mirror image, with the normal velocity negated."""
        mirrored = ti.Vector([-component(w, k) if k == vel + axis else component(w, k) for k in range(phys.W.n)])
        if ti.static(side == 0):
            if i < g:
                W[with_axis(I, axis, -1 - i, dim)] = mirrored
        elif i >= n - g:
            W[with_axis(I, axis, 2 * n - 1 - i, dim)] = mirrored

    return copy


# kind -> factory of its ghost copy (see the module docstring)
GHOST_COPIES = {"periodic": _copy_periodic, "outflow": _copy_zero_gradient, "absorbing": _copy_zero_gradient,
                "wall": _copy_wall, "symmetry": _copy_wall}
# kind -> factory (ctx, kind, imposed values, clock) of the ghost copy of an open hydraulic face
# and of its ghosts' CFL rate
OPEN_COPIES = {kind: make_hydraulic_face for kind in HYDRAULIC_KINDS}


def is_constant(kind: str) -> bool:
    """A kind whose ghost layers hold a constant state of the case (an unknown kind raises,
    naming the kinds)."""
    return registry.boundary_kinds.get(kind).needs_state


def _open_copies(ctx, faces, imposed: dict, clock) -> dict:
    """{kind: (ghost copy, its ghosts' rate)} of the open hydraulic kinds among `faces`, over one
    field of their imposed values (made only where such a face exists)."""
    used = {kind for _, _, kind in faces if kind in OPEN_COPIES}
    if not used:
        return {}
    for axis, side, kind in faces:
        for name in registry.boundary_kinds.get(kind).imposes if kind in used else ():
            if name not in imposed.get((axis, side), {}):
                raise ValueError(f"boundary face {'xyz'[axis]}_{('lower', 'upper')[side]} is {kind!r} but no "
                                 f"{name} was handed to make_boundaries (imposed)")
    values = ImposedValues(imposed)
    if values.varying and clock is None:
        raise ValueError("imposed boundary time series need the solver's clock (make_boundaries(clock=...))")
    return {kind: OPEN_COPIES[kind](ctx, kind, values, clock) for kind in used}


def make_boundaries(phys, cells, ghost: int, W, inflow, boundaries, clock=None, imposed=None):
    """(a ti.func copying a cell's new W into the ghost cells that copy it, a kernel filling
    the constant faces or None); boundaries: per axis, the kinds of its lower and upper face;
    imposed: {(axis, side): {name: number or [[t, value], ...]}} of the open hydraulic faces,
    whose time series the clock's t reads (kernels/clock.py; None: t = 0)."""
    dim = len(cells)
    faces = [(axis, side, boundaries[axis][side]) for axis in range(dim) for side in (0, 1)]
    constant_kinds = {kind for _, _, kind in faces if kind != NEIGHBOUR and is_constant(kind)}
    for _, _, kind in faces:
        if kind != NEIGHBOUR and kind not in constant_kinds and kind not in {**GHOST_COPIES, **OPEN_COPIES}:
            raise ValueError(f"boundary kind {kind!r} has no ghost copy in kernels/boundaries.py")
    ctx = {"W": W, "ghost": ghost, "dim": dim, "phys": phys}
    copies = {kind: make(ctx) for kind, make in GHOST_COPIES.items()}
    open_faces = _open_copies(ctx, faces, imposed or {}, clock)
    copies.update({kind: copy for kind, (copy, _) in open_faces.items()})
    # (axis, side, copy, cells along the axis, periods its ghost layers span)
    copied = [(axis, side, copies[kind], cells[axis], -(-ghost // cells[axis])) for axis, side, kind in faces
              if kind in copies]
    rated = [(axis, side, open_faces[kind][1], cells[axis]) for axis, side, kind in faces if kind in open_faces]
    constant = [face for face in faces if face[2] in constant_kinds]

    @ti.func
    def copy_to_ghosts(I, w):
        """The ghost cells of every copied face that copy interior cell I."""
        for axis, side, copy, n, periods in ti.static(copied):
            i = component(I, axis)
            copy(I, w, i, axis, side, n, periods)

    @ti.func
    def ghost_rate(I, w, rate_of: ti.template()):
        """The largest rate_of(ghost state) of the open faces beside cell I (0 elsewhere)."""
        rate = ti.cast(0.0, phys.dtype)
        for axis, side, face_rate, n in ti.static(rated):
            rate = ti.max(rate, face_rate(w, component(I, axis), axis, side, n, rate_of))
        return rate

    # The step check adds ghost_rate to its CFL rate where faces bring values from outside
    # (kernels/reductions.py); None adds no instruction.
    copy_to_ghosts.ghost_rate = ghost_rate if rated else None

    def slab(axis, side):
        return [((-ghost, 0) if side == 0 else (cells[d], cells[d] + ghost)) if d == axis else (0, cells[d])
                for d in range(dim)]

    @ti.kernel
    def fill_inflow():
        for axis, side, _ in ti.static(constant):
            for J in ti.grouped(ti.ndrange(*slab(axis, side))):
                W[J] = inflow[axis, side]

    return copy_to_ghosts, (fill_inflow if constant else None)
