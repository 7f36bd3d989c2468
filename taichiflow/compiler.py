"""Turns (model physics, scheme, grid, boundaries, precision) into fields and kernels.

The only module that knows the kernel structure. One right-hand-side evaluation is

    primitives   W = prim(U) on interior cells (+ CFL rate, admissibility, globals at stage 1);
                 a cell beside a boundary also writes the ghost cells of W that copy it
    per axis d:  sweep[d]   each thread walks a segment of cells along d, computing the face
                            fluxes F = riemann(reconstruct(W stencil)) in order and, from the
                            two faces of each cell, R = a R + dt (-dF/dx); the last axis also
                            applies the integrator stage U = c0 U0 + c1 U + c2 R and at the
                            first stage keeps the step's start in U0 (StageFlags)

Walking along the axis keeps the flux of the shared face in registers, so no flux array
exists and each face is solved once (plus one per segment); the W stencil is re-read from
cache (a register window of it measured no faster and compiled 3x slower; docs/performance.md).
With [run] reconstruct = "cell" (where the reconstructed variables of a cell depend on that
cell alone: primitive, conserved) each cell is reconstructed once for both of its faces and its
upper face state is carried to the next face; "face" reconstructs both states of each face
from its own stencil. Both evaluate the same formulas (bit for bit on a CPU; CUDA fuses
multiply-adds differently in the two loops); which is faster depends on the machine and
precision (RECONSTRUCT_PER_FACE). With [run] shuffle (CUDA) the last axis, contiguous in
memory, is solved with one face per thread instead, the flux of the face above a cell taken
from the next lane of the warp: in a sweep of its own (true), or ("walk") inside the walk along
x, the first sweep of the stage (SHUFFLE_LAST_AXIS says where each is the default). With [run]
fuse a stage is one sweep: the walk along axis 0 also solves both faces of each cell along the
other axes, each from its own stencil, and applies the stage update (FUSE_MAX_GHOST says where
that is the default: narrow stencils, whose faces cost less than the R and W traffic it
saves); with shuffle = "walk" that walk solves the last axis through shuffles, each face once
(FUSED_SHUFFLE_MIN_GHOST: not for first-order faces).

Every structural choice (model, reconstruction, Riemann solver, dimension, axis, boundary
kind) is resolved in Python while compiling: kernels contain no scheme branches.
"""

from typing import NamedTuple

import numpy as np
import taichi as ti
from taichi.lang import impl

from . import taichi_patches  # noqa: F401  (before any field is made)
from .layout import component, permute
from .physics import Physics
from .state_arrays import StateArrays
from .clock import HALT, RUNNING, DeviceClock
from .numerics.reconstruction import make_reconstruction
from .numerics.riemann import RIEMANN_SOLVERS
from .numerics.variables import make_variables

NO_BAD_CELL = np.iinfo(np.int64).max
HIGHEST_KEY = np.iinfo(np.int64).max
LOWEST_KEY = np.iinfo(np.int64).min
REDUCTION_CHUNK = 64
SLAB_BYTES = 1 << 28    # largest host array sent to or read from the device at once
REDUCTION_SLOTS = 1024  # addresses the chunks' atomics are spread over (chunk index mod slots)
# [run] reconstruct = "auto": per cell except where measured slower (docs/performance.md): on an
# H100 at 256^3 (v8), WENO5 + HLLC per cell ran 18% faster in f64 (fewer FP64 flop) but 1% slower
# in f32 (the carried face state costs registers; FP32 flop do not bind); 5-9% faster on a CPU.
# Narrower stencils gain per cell in f32 too (v22: PLM + HLL +2 to +4.5%, WENO3 + HLLC +2.5 to
# +8%). (arch, precision): the least stencil reach (cells a side) reconstructed per face.
RECONSTRUCT_PER_FACE = {("cuda", "f32"): 3}
# Cells one thread walks along the sweep axis ([run] segment), for the strided axes and for
# the last axis, contiguous in memory, where a warp's threads read addresses a segment apart.
# (arch, precision) -> the strided axes' length where it is not 16: f64 on CUDA walks 32 (fewer
# faces solved twice at segment ends; its registers, not its threads, limit occupancy): +1 to
# +4% against 16 in each of four calls on an H100 at 256^3 (docs/performance.md).
SEGMENT_STRIDED = {("cuda", "f64"): 32}
SEGMENT_CONTIGUOUS = 2
# Where the walking sweeps load a cell's U, R, U0 one cell ahead (see load_cell): a GPU thread
# waits for its loads, a CPU core's out-of-order window hides them, and there the early loads
# measured slower (PLM + HLL, 32^3, 2 cores: 1.8e6 against 2.5e6 cell-updates/s).
PREFETCH_ARCHS = {"cuda"}
WARP = 32                   # CUDA threads that exchange values through shuffles
ALL_LANES = 0xFFFFFFFF
# [run] shuffle = "auto": where measured faster (docs/performance.md), on an H100 at 256^3 with
# WENO5 + HLLC: the shuffle sweep of the last axis (true) 11% faster than walking it in f64, 5%
# slower in f32; the shuffles inside a walk ("walk") 2-4% faster than walking in f32 (Euler and
# two-phase; inside the walk along x 1-1.5% more than along y), 12% slower than the shuffle
# sweep in f64.
SHUFFLE_LAST_AXIS = {("cuda", "f64"): True, ("cuda", "f32"): "walk"}
# [run] fuse = "auto": one sweep per stage where the reconstruction reaches at most this many
# cells on each side of a face. Solving the faces across the walk twice costs little there: on
# an H100 at 256^3 (f32) first order +54%, PLM + HLL + SSP-RK2 +9 to +19%, WENO3 +4%,
# MUSCL-Hancock +1%, PLM f64 +2%; WENO5 (3 cells) 18% slower (docs/performance.md).
FUSE_MAX_GHOST = 2
# [run] shuffle = "walk" in a fused stage: the walk along x solves the last axis through
# shuffles (each face once) where the reconstruction reaches at least this many cells a side;
# first-order faces are cheaper solved twice. H100, 256^3, f32: PLM + HLL + SSP-RK2 +3 to +8%,
# WENO3 + HLLC + LSRK3 +7%, first order + HLL + SSP-RK2 -8% (docs/performance.md).
FUSED_SHUFFLE_MIN_GHOST = 2


def _toml(value) -> str:
    """A case value as the case file writes it (true, "walk")."""
    return str(value).lower() if isinstance(value, bool) else f'"{value}"'


def uses_shuffle(shuffle, arch: str, precision: str, block_dim: int):
    """How the last axis uses warp shuffles ([run] shuffle): False (walked like the others),
    True (its own sweep, one face per thread, the flux of the face above taken from the next
    lane) or "walk" (the same, inside the walk along x). CUDA only; a thread's
    lane is its loop index mod 32, so blocks must be whole warps."""
    if shuffle == "auto":  # (only where blocks are whole warps)
        shuffle = SHUFFLE_LAST_AXIS.get((arch, precision), False) if block_dim % WARP == 0 else False
    if shuffle and arch != "cuda":
        raise ValueError(f"[run] shuffle = {_toml(shuffle)} needs arch = 'cuda' (warp shuffles are GPU instructions)")
    if shuffle and block_dim % WARP:
        raise ValueError(f"[run] shuffle needs block_dim a multiple of {WARP}, not {block_dim}")
    return shuffle


def fuse_choice(fuse, shuffle):
    """[run] fuse as the Solver takes it ("auto" or a boolean): the shuffle sweep asked for
    explicitly (shuffle = true, a sweep of the last axis) keeps auto from fusing and
    contradicts fuse = true (the fused stage solves the last axis inside the walk along x);
    "walk" fuses: the walk along x then solves the last axis through shuffles."""
    asked = shuffle is True
    if fuse is True and asked:
        raise ValueError("[run] shuffle = true solves the last axis in a warp-shuffle sweep of its own; fuse = true "
                         "solves it inside the sweep along x")
    return False if fuse == "auto" and asked else fuse


class StageFlags(NamedTuple):
    """What a sweep reads and writes besides W and R. Per stage they pass to the kernel as
    run-time switches (bit k for field k); as a template the kernel takes their union over the
    integrator's stages, so one kernel serves every stage (a kernel per stage and flag value
    made the first step of a two-phase run compile eight sweeps instead of four). The first
    stage's last sweep keeps the state of the step's start in U0 (instead of a copy kernel: one
    pass over memory less). W cannot be written there for the next stage: the sweep's other
    threads still read their stencils from it."""
    read_r: bool    # R = keep R + ...; a stage that starts the register (keep = 0) skips the read
    use_u0: bool    # U = c0 U0 + ... (SSP stages)
    save_u0: bool   # U0 = U before the first stage's update (the last good state)
    store_r: bool   # R stored: by every sweep but the last, and there only when the next stage reads it

    def switches(self) -> int:
        return sum(1 << k for k, on in enumerate(self) if on)


READ_R, USE_U0, SAVE_U0, STORE_R = (1 << k for k in range(len(StageFlags._fields)))


def reconstructs_per_cell(reconstruct: str, variables: str, arch: str, precision: str, reach: int) -> bool:
    """Whether the sweeps reconstruct per cell ([run] reconstruct; see the module docstring),
    for a reconstruction reading `reach` cells on each side of a face."""
    if reconstruct == "face" or not make_variables(variables, None).per_cell:
        if reconstruct == "cell":
            raise ValueError(f"[run] reconstruct = 'cell' needs variables whose transform is local to a cell "
                             f"(primitive or conserved), not '{variables}'")
        return False
    return reconstruct == "cell" or reach < RECONSTRUCT_PER_FACE.get((arch, precision), reach + 1)


def sweep_segments(segment, dim: int, arch: str = "cpu", precision: str = "f32") -> list[int]:
    """Per-axis segment lengths from the [run] segment key (int, per-axis list or [])."""
    if segment == []:
        return [SEGMENT_STRIDED.get((arch, precision), 16)] * (dim - 1) + [SEGMENT_CONTIGUOUS]
    if isinstance(segment, int):
        return [segment] * dim
    if len(segment) != dim:
        raise ValueError(f"[run] segment has {len(segment)} values for a {dim}D grid")
    return list(segment)


def _shift(I, axis: int, k: int, dim: int):
    """Index vector I moved by k cells along axis (compile time)."""
    if k == 0:
        return I
    return I + ti.Vector([k if d == axis else 0 for d in range(dim)])


def _cell_center(I, lower, dx):
    """Coordinates (x, y, z) of the centre of cell I; zeros beyond the grid's dimension."""
    coords = [lower[d] + (component(I, d) + 0.5) * dx[d] for d in range(len(dx))]
    return ti.Vector(coords + [0.0] * (3 - len(dx)))


def _with_axis0(C, i, dim: int):
    """The cell index of chunk-index vector C with its first component replaced by i."""
    return _with_axis(C, 0, i, dim)


def _with_axis(C, axis: int, i, dim: int):
    """Index vector C with its component along axis replaced by i."""
    return ti.Vector([i if d == axis else component(C, d) for d in range(dim)])


@ti.func
def _int64_min():
    return ti.cast(1, ti.i64) << 63


@ti.func
def _int64_max():
    return ~_int64_min()


def _linear_index(I, cells):
    """Row-major linear index of a cell, in 64 bits (grids may exceed 2^31 cells)."""
    index = ti.cast(component(I, 0), ti.i64)
    for d in range(1, len(cells)):
        index = index * cells[d] + ti.cast(component(I, d), ti.i64)
    return index


@ti.func
def _shuffle_i32(x, up: ti.template()):
    """x of the previous lane (up = True) or of the next one (up = False)."""
    moved = x
    if ti.static(up):
        moved = ti.simt.warp.shfl_up_i32(ti.u32(ALL_LANES), x, 1)
    else:
        moved = ti.simt.warp.shfl_down_i32(ti.u32(ALL_LANES), x, 1)
    return moved


@ti.func
def _shuffle_f32(x, up: ti.template()):
    return ti.bit_cast(_shuffle_i32(ti.bit_cast(x, ti.i32), up), ti.f32)


@ti.func
def _shuffle_f64(x, up: ti.template()):
    """A 64-bit value moves as two 32-bit halves (the shuffles are 32-bit)."""
    bits = ti.bit_cast(x, ti.i64)
    low = _shuffle_i32(ti.cast(bits, ti.i32), up)
    high = _shuffle_i32(ti.cast(bits >> 32, ti.i32), up)
    return ti.bit_cast((ti.cast(high, ti.i64) << 32) | ti.cast(ti.cast(low, ti.u32), ti.i64), ti.f64)


def _shuffled(vector, n: int, dtype, up: bool):
    """Every component of a vector of n values taken from the neighbouring lane."""
    move = _shuffle_f32 if dtype == ti.f32 else _shuffle_f64
    return ti.Vector([move(component(vector, k), up) for k in range(n)])


@ti.func
def _magnitude_mask(bits):
    """All bits but the sign where bits < 0, else 0 (no 64-bit literal: Taichi's are i32)."""
    return ti.cast(ti.cast(bits >> 63, ti.u64) >> 1, ti.i64)


@ti.func
def ordered_bits(x):
    """An i64 whose signed order is the order of the float x (any sign), for atomics."""
    bits = ti.bit_cast(ti.cast(x, ti.f64), ti.i64)
    return bits ^ _magnitude_mask(bits)


@ti.func
def ordered_value(key):
    """Inverse of ordered_bits, as f64."""
    return ti.bit_cast(key ^ _magnitude_mask(key), ti.f64)


def from_ordered_bits(keys) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    bits = keys ^ ((keys >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    return bits.view(np.float64)


def _array_vector(array, J, dim: int, n: int):
    """The n trailing values of an ndarray at index vector J, as a Taichi vector."""
    index = [component(J, d) for d in range(dim)]
    return ti.Vector([impl.subscript(None, array, *index, c) for c in range(n)])


def _numpy_dtype(dtype):
    return np.float32 if dtype == ti.f32 else np.float64


def _fill_keys(field, value: int):
    """field.fill for 64-bit integers (Taichi's fill takes them as i32)."""
    field.from_numpy(np.full(field.shape + ((field.n,) if hasattr(field, "n") else ()), value, dtype=np.int64))


class Solver:
    """Fields and compiled kernels for one (model, params, scheme, grid, precision)."""

    def __init__(self, model, params, scheme, cells, lower, upper, boundaries, inflow_states, dtype,
                 keep_last_good=True, segment=(), block_dim=0, per_cell=(False, False), shuffle=False,
                 fuse=False):
        self.dim = len(cells)
        self.cells = tuple(int(n) for n in cells)
        self.lower = tuple(float(x) for x in lower)
        self.dx = tuple((float(b) - float(a)) / n for a, b, n in zip(lower, upper, cells))
        self.dtype = dtype
        self.model = model
        n_globals = max(len(model.globals), 1)
        self.globals = ti.Vector.field(n_globals, ti.f64, shape=())      # values the model reads
        self.global_keys = ti.Vector.field(n_globals, ti.i64, shape=())  # their max reduction
        self.phys = Physics(model, params, dtype, self.globals)
        self.recon, self.riemann, self.variables = self._face_scheme(scheme)
        # [scheme] retry: the more robust scheme a step is redone with when it left a bad cell.
        retry = scheme.get("retry") or {}
        self.retry_scheme = self._face_scheme({**scheme, **retry}) if retry else None
        self.fallback = bool(scheme.get("positivity_fallback", True))
        self.boundaries = boundaries          # per axis: (lower kind, upper kind)
        nU, nW = self.phys.U.n, self.phys.W.n
        g = max(self.recon.ghost, self.retry_scheme[0].ghost if retry else 0)
        self.ghost = g
        for axis, n in enumerate(self.cells):
            if n < g and "wall" in boundaries[axis]:  # its mirror image would reach past the far side
                raise ValueError(f"[grid] cells: {n} cells along {'xyz'[axis]}, fewer than the {g} ghost layers "
                                 f"the scheme's stencils reach; a wall's mirror image needs at least {g}")

        # Structure of arrays: each component is its own array, so neighbouring threads read
        # neighbouring addresses (AoS measured 1.9x slower on an H200, docs/performance.md).
        # Aligned on lines and sectors (state_arrays), in a tree of their own.
        state = StateArrays(dtype)
        self.U = state.vector(nU, self.cells)
        # U0 (the state at the start of the step) serves SSP stages, retries and the last good
        # state written when a run fails; without them it is not allocated (nU values per cell).
        self.keep_last_good = bool(keep_last_good)
        self.U0 = state.vector(nU, self.cells) if keep_last_good else None
        self.R = state.vector(nU, self.cells)
        self.W = state.vector(nW, self.cells, ghosts=g)
        state.place()
        self._state_arrays = state
        self.segments = sweep_segments(list(segment) if isinstance(segment, tuple) else segment, self.dim)
        self.block_dim = int(block_dim)
        # Whether the sweeps of the scheme and of its retry scheme reconstruct per cell
        # (reconstructs_per_cell decides).
        self.per_cell = list(per_cell)
        # one sweep per stage ([run] fuse; fuse_choice); the scheme's stencil decides "auto"
        self.fused = (self.recon.ghost <= FUSE_MAX_GHOST if fuse == "auto" else bool(fuse)) and self.dim > 1
        # The last axis through warp shuffles (uses_shuffle): in the walk along x ("walk"; in 1D
        # the last axis is x, and it is walked), or in a sweep of its own (True).
        # A fused stage's walk along x takes "walk" too (the faces along the axes between
        # still solved twice each) where its faces are not first order (FUSED_SHUFFLE_MIN_GHOST);
        # the shuffle sweep of the last axis is a sweep of its own.
        self.shuffle_walk = shuffle == "walk" and self.dim > 1 and not (
            self.fused and self.recon.ghost < FUSED_SHUFFLE_MIN_GHOST)
        self.shuffle = shuffle is True and not self.fused
        # The axes walked by sweeps of their own; with shuffle_walk the first (x) also solves
        # the last axis. Fused, the one walk along x solves the faces across it.
        self.walked = [0] if self.fused else list(range(self.dim - 1 if self.shuffle_walk else self.dim))
        self.inflow = ti.Vector.field(nW, dtype, shape=(max(self.dim, 1), 2))
        self.R.fill(0.0)
        for (axis, side), state in inflow_states.items():
            self.inflow[axis, side] = ti.Vector(list(state))

        # Reductions go through integer atomics on order-preserving bit patterns: native on
        # GPUs, where float atomic min/max are compare-and-swap loops (measured 50x slower).
        self.max_rate = ti.field(ti.i64, shape=())
        self.bad_cell = ti.field(ti.i64, shape=())  # NO_BAD_CELL between checks (combine_check)
        # The check's per-chunk maxima go to REDUCTION_SLOTS addresses first: 262,144 atomics
        # on the one address of max_rate took 0.8 ms per step at 256^3 on an H100.
        self.rate_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)
        self.key_slots = ti.Vector.field(n_globals, ti.i64, shape=REDUCTION_SLOTS)
        self.rate_slots.fill(0)
        self.bad_cell[None] = NO_BAD_CELL
        _fill_keys(self.key_slots, LOWEST_KEY)
        # Rare events (a bad cell, a repaired one) go to slots as well, though their atomics
        # seldom run: Taichi turns an atomic on a 0-D field inside a parallel loop into a
        # thread-local value that every thread adds to the field when it ends, taken or not.
        # That was 1.08M atomics on one address per primitives launch of a model with repair()
        # (1.12 ms of it at 256^3 on an H200) and 262,144 per check.
        self.bad_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)
        _fill_keys(self.bad_slots, NO_BAD_CELL)
        self.repair_slots = ti.field(ti.i64, shape=REDUCTION_SLOTS)  # cells the model's repair() changed
        self.clock = DeviceClock(dtype)  # t and dt of the sweeps (run_steps)
        # Fallbacks are counted per sweep thread (per warp with shuffles), not on one address:
        # an atomic counter in the face kernel made it 2-5x slower on an H200 even where it never
        # fired. The counters serve every sweep (axes run one after the other); the sum is
        # taken on demand.
        self.fallbacks = ti.field(ti.i32, shape=max(self._fallback_counters(d) for d in range(self.dim))
                                  if self.fallback else ())
        self.fallback_total = ti.field(ti.i64, shape=())
        # Diagnostics reduce like the check: per chunk in registers, then into REDUCTION_SLOTS
        # addresses (the [None] fields below hold the combined result; the slots start over).
        self.totals = ti.Vector.field(nU, ti.f64, shape=())
        self.w_min = ti.Vector.field(nW, ti.i64, shape=())
        self.w_max = ti.Vector.field(nW, ti.i64, shape=())
        self.total_slots = ti.Vector.field(nU, ti.f64, shape=REDUCTION_SLOTS)
        self.low_slots = ti.Vector.field(nW, ti.i64, shape=REDUCTION_SLOTS)
        self.high_slots = ti.Vector.field(nW, ti.i64, shape=REDUCTION_SLOTS)
        # The model's reduced derived fields (diagnostics columns): max/min as ordered keys, sums in f64.
        self.reduced = list(model.reductions.items())
        self.reduced_keys = ti.Vector.field(max(len(self.reduced), 1), ti.i64, shape=())
        self.reduced_sums = ti.Vector.field(max(len(self.reduced), 1), ti.f64, shape=())
        self.reduced_key_slots = ti.Vector.field(max(len(self.reduced), 1), ti.i64, shape=REDUCTION_SLOTS)
        self.reduced_sum_slots = ti.Vector.field(max(len(self.reduced), 1), ti.f64, shape=REDUCTION_SLOTS)
        _fill_keys(self.low_slots, HIGHEST_KEY)
        _fill_keys(self.high_slots, LOWEST_KEY)
        identities = [HIGHEST_KEY if how == "min" else LOWEST_KEY for _, how in self.reduced] or [0]
        self.reduced_key_slots.from_numpy(np.tile(np.array(identities, dtype=np.int64), (REDUCTION_SLOTS, 1)))
        self._derive = {}   # name: kernel writing a slab of that derived field
        self._plans = {}    # integrator stages: their _launch_plan
        self._build()
        if self._fill_inflow:  # constant ghost faces: filled once
            self._fill_inflow()

    def _sweep_ranges(self, axis):
        """Thread grid of the sweep along axis: segments along it, cells across."""
        n = self.cells[axis]
        L = self.segments[axis]
        return [(0, (n + L - 1) // L) if d == axis else (0, self.cells[d])
                for d in range(self.dim)]

    def _walk_shuffle_layout(self, axis, lead: int):
        """(row shape, slots per row, slots per warp, slots, threads) of the walk along axis
        (x) that also solves the last axis through shuffles: a row is a walking segment of axis
        at one index of the other axes before the last; its n + lead slots f = 1 - lead .. n (the
        face below cell f; with per-cell reconstruction, lead 2, the lane of f = -1 only
        reconstructs cell -1) follow row after row, 32 to a warp, each warp overlapping the
        next by lead lanes, as in _shuffle_layout."""
        row_shape = [b for _, b in self._sweep_ranges(axis)][:-1]
        slots_per_row = self.cells[-1] + lead
        stride = WARP - lead
        total = int(np.prod(row_shape)) * slots_per_row
        return row_shape, slots_per_row, stride, total, self._warp_threads(total, stride)

    def _fallback_counters(self, axis) -> int:
        """Counters the sweep along axis uses: one per walking thread, or one per warp."""
        if self.shuffle_walk and axis == 0:  # (the walk along x solves the last axis)
            return max(self._walk_shuffle_layout(axis, lead)[4] // WARP for lead in (1, 2))
        if self.shuffle and axis == self.dim - 1:
            return max(self._shuffle_layout(lead)[3] // WARP for lead in (1, 2))
        return int(np.prod([b - a for a, b in self._sweep_ranges(axis)]))

    def _shuffle_layout(self, lead: int):
        """(slots per row, slots per warp, slots, threads) of the warp-shuffle sweep along the
        last axis. Each row of it is n + lead face slots (f = 1 - lead .. n; slot f is the face
        below cell f, and with per-cell reconstruction (lead 2) the lane of f = -1 only
        reconstructs cell -1), laid out row after row; a warp takes 32 consecutive slots,
        overlapping the next warp by lead: the lanes before its first owned face and its last
        lane, whose face only serves the cell below it."""
        n = self.cells[-1]
        slots_per_row = n + lead
        stride = WARP - lead
        total = int(np.prod(self.cells[:-1])) * slots_per_row
        return slots_per_row, stride, total, self._warp_threads(total, stride)

    def _warp_threads(self, slots: int, stride: int) -> int:
        """Threads for `slots` face slots, `stride` new ones per warp; indices stay 32-bit."""
        threads = (slots + stride - 1) // stride * WARP
        if threads >= 2 ** 31:
            raise ValueError(f"the grid {self.cells} needs {threads} sweep threads; 32-bit indices end at 2^31")
        return threads

    def _face_scheme(self, scheme):
        """(reconstruction, Riemann solver, reconstructed variables) of a [scheme] table."""
        recon = make_reconstruction(scheme, self.phys)
        # FORCE-type fluxes scale dt/dx by the dimension (seed 000's alpha): the grid's property.
        riemann = RIEMANN_SOLVERS[scheme["riemann"]](self.phys, {**scheme, "dimension": self.dim})
        return recon, riemann, make_variables(scheme.get("variables", "primitive"), self.phys)

    # ------------------------------------------------------------------------------------
    def _build(self):
        phys, dim, cells, dx = self.phys, self.dim, self.cells, self.dx
        U, U0, R, W = self.U, self.U0, self.R, self.W
        # Element loops are range-fors over the cells (ti.ndrange), not struct-fors over a field.
        fallback = self.fallback
        fallbacks = self.fallbacks
        nU = phys.U.n
        to_normal_W = [phys.W.rotation(d, True) for d in range(dim)]
        to_global_F = [phys.U.rotation(d, False) + list(range(nU, phys.n_flux)) for d in range(dim)]
        inv_dx = [1.0 / h for h in dx]
        model_globals = list(self.model.globals)
        global_keys, global_values = self.global_keys, self.globals
        lower = self.lower

        copy_to_ghosts, self._fill_inflow = self._build_boundaries()

        @ti.func
        def max_rate(w):
            rate = 0.0
            for d in ti.static(range(dim)):
                smin, smax = phys.signal_speeds(permute(w, to_normal_W[d]))
                rate = ti.max(rate, ti.max(ti.abs(smin), ti.abs(smax)) * inv_dx[d])
            return rate

        repairs = "repair" in self.model.functions
        repair_slots, bad_slots, slots = self.repair_slots, self.bad_slots, REDUCTION_SLOTS
        clock = self.clock

        @ti.func
        def repaired_primitive(I):
            """W of cell I, after the model's repair() of U where W is inadmissible."""
            w = phys.prim(U[I])
            if ti.static(repairs):
                if not phys.admissible(w):
                    u = phys.repair(U[I], w)
                    U[I] = u
                    w = phys.prim(u)
                    ti.atomic_add(repair_slots[ti.cast(_linear_index(I, cells) % slots, ti.i32)], ti.cast(1, ti.i64))
            return w

        @ti.kernel
        def primitives():
            for I in ti.grouped(ti.ndrange(*cells)):
                w = repaired_primitive(I)
                W[I] = w
                copy_to_ghosts(I, w)

        # The checking variant reduces in registers along chunks of x before one atomic per
        # chunk: one atomic per cell on a single address serialised the GPU (14 ms at 256^3).
        chunk = REDUCTION_CHUNK
        outer = [(0, (cells[0] + chunk - 1) // chunk)] + [(0, cells[d]) for d in range(1, dim)]
        outer_shape = [b for _, b in outer]
        rate_slots, key_slots = self.rate_slots, self.key_slots

        @ti.kernel
        def check_and_primitives(always: ti.i32):
            """always = 0: only while the device clock runs (after a halted step U is unchanged,
            and a cell that repair() cannot mend would be counted again)."""
            checking = always != 0 or clock.counts[HALT] == RUNNING
            for C in ti.grouped(ti.ndrange(*outer)):
                if not checking:
                    continue
                rate = 0.0
                bad = _int64_max()
                keys = ti.Vector([_int64_min() for _ in ti.static(model_globals)] or [0], ti.i64)
                for i in range(component(C, 0) * chunk, ti.min(component(C, 0) * chunk + chunk, cells[0])):
                    I = _with_axis0(C, i, dim)
                    w = repaired_primitive(I)
                    W[I] = w
                    copy_to_ghosts(I, w)
                    rate = ti.max(rate, max_rate(w))
                    if not phys.admissible(w):
                        bad = ti.min(bad, _linear_index(I, cells))
                    for k in ti.static(range(len(model_globals))):
                        keys[k] = ti.max(keys[k], ordered_bits(phys.global_value(model_globals[k], w)))
                slot = ti.cast(_linear_index(C, outer_shape) % slots, ti.i32)
                ti.atomic_max(rate_slots[slot], ordered_bits(rate))
                if bad != _int64_max():  # rare
                    ti.atomic_min(bad_slots[slot], bad)
                for k in ti.static(range(len(model_globals))):
                    ti.atomic_max(key_slots[slot][k], keys[k])

        @ti.func
        def merge_slot(s):
            """Slot s into max_rate, bad_cell and the model's globals; the slot starts over."""
            ti.atomic_max(self.max_rate[None], rate_slots[s])
            rate_slots[s] = 0
            ti.atomic_min(self.bad_cell[None], bad_slots[s])
            bad_slots[s] = _int64_max()
            for k in ti.static(range(len(model_globals))):
                ti.atomic_max(global_keys[None][k], key_slots[s][k])
                key_slots[s][k] = _int64_min()

        @ti.func
        def start_merge():
            self.max_rate[None] = 0
            for k in ti.static(range(len(model_globals))):
                global_keys[None][k] = _int64_min()

        @ti.func
        def publish_globals():
            for k in ti.static(range(len(model_globals))):
                global_values[None][k] = ordered_value(global_keys[None][k])

        @ti.kernel
        def combine_check() -> ti.types.vector(2, ti.i64):
            """Slots into max_rate and the model's globals; the slots start over. Returns (max
            rate as ordered bits, bad cell) and resets the bad cell: one read back per check."""
            start_merge()
            for s in range(slots):
                merge_slot(s)
            publish_globals()
            found = ti.Vector([self.max_rate[None], self.bad_cell[None]], ti.i64)
            self.bad_cell[None] = _int64_max()
            return found

        @ti.kernel
        def finish_step():
            """combine_check's merge, then the device clock finishes the step (no read back).
            Once the clock has halted the check is skipped and the combined values stay."""
            running = clock.counts[HALT] == RUNNING
            if running:
                start_merge()
            for s in range(slots):
                merge_slot(s)
            if running:
                publish_globals()
            clock.finish(ordered_value(self.max_rate[None]), self.bad_cell[None], _int64_max())
            self.bad_cell[None] = _int64_max()

        self._primitives = primitives
        self._check_and_primitives = check_and_primitives
        self._combine_check = combine_check
        self._finish_step = finish_step

        block_dim = self.block_dim or None  # None: Taichi's default
        prefetch = impl.current_cfg().arch.name in PREFETCH_ARCHS
        advected, unit = phys.advected_indices, phys.n_flux - 1
        has_source = "source" in self.model.functions

        def face_functions(axis, recon, riemann, variables):
            """The face fluxes along axis: (cells_at, solve, face_flux, cell_faces)."""
            g = recon.ghost  # the stencil is 2 g cells wide; W may have more ghost layers
            normal = to_normal_W[axis]

            def cells_at(S, start, count):
                return [permute(impl.subscript(None, W, _with_axis(S, axis, start + k, dim)), normal)
                        for k in range(count)]

            @ti.func
            def solve(wL, wR, S, i, dt_dx):
                """Flux (global frame) through the face between cells i and i + 1 from its
                reconstructed states, and the number of them replaced by the first-order
                values of those cells (loaded only then: no registers held for them)."""
                left, right = wL, wR
                replaced = 0
                if ti.static(fallback):
                    if not phys.admissible(left):
                        left = permute(W[_with_axis(S, axis, i, dim)], normal)
                        replaced += 1
                    if not phys.admissible(right):
                        right = permute(W[_with_axis(S, axis, i + 1, dim)], normal)
                        replaced += 1
                return permute(riemann(left, right, dt_dx), to_global_F[axis]), replaced

            @ti.func
            def face_flux(stencil: ti.template(), S, i, dt_dx):
                """Flux through face i + 1/2, in the middle of a 2g-cell stencil."""
                transformed, context = variables.forward(stencil, g)
                wL, wR = variables.backward(*recon.face_states(transformed, dt_dx), context)
                return solve(wL, wR, S, i, dt_dx)

            @ti.func
            def cell_faces(stencil: ti.template(), dt_dx):
                """States on the lower and upper face of the middle cell of 2g - 1 cells."""
                transformed, context = variables.forward(stencil, g)
                return variables.backward(*recon.cell_states(transformed, dt_dx), context)

            return cells_at, solve, face_flux, cell_faces

        def walk_stencil(cells_at, g, S, i, count, newest):
            """The `count` cells ending at i + g along a walk (cells_at's axis). Where
            prefetching, the last is `newest`, loaded a step ahead (see newest_cell)."""
            if prefetch:
                return cells_at(S, i + g + 1 - count, count - 1) + [newest]
            return cells_at(S, i + g + 1 - count, count)

        def newest_cell(cells_at, g, S, i):
            """W of cell i + g, the one a walk's stencil at cell i reads first: it comes from
            DRAM, the others from L1. Loaded one step ahead on a GPU (zeros elsewhere), its
            latency hides behind the step's faces instead of stalling them."""
            if prefetch:
                return cells_at(S, i + g, 1)[0]
            return ti.Vector.zero(self.dtype, phys.W.n)

        @ti.func
        def flux_divergence(f_lo, f_hi, u, axis: ti.template()):
            """-dF/dx along axis from the fluxes through a cell's two faces (and u div v for
            the model's advected variables)."""
            rhs = ti.Vector([component(f_lo, k) - component(f_hi, k) for k in range(nU)]) * inv_dx[axis]
            for k in ti.static(advected):
                rhs[k] += u[k] * (f_hi[unit] - f_lo[unit]) * inv_dx[axis]
            return rhs

        def make_shuffle_walk(axis, recon, riemann, variables, per_cell, lead, load_cell, update,
                              cells_at, solve, face_flux, cell_faces, across, across_divergence):
            """The sweep that walks axis (x) and also solves the last axis, a thread per cell
            of it: each lane solves the face below its cell there and takes the face above from
            the next lane (a warp shuffle), then stores R or, as the stage's last sweep (fused,
            with the faces along the `across` axes between), applies the stage update.
            Lanes run the same number of walk steps (a shuffle needs the whole warp)."""
            last_axis = dim - 1
            at_last, solve_last, flux_last, cell_faces_last = face_functions(last_axis, recon, riemann, variables)
            g = recon.ghost
            L, n, n_last = self.segments[axis], cells[axis], cells[last_axis]
            row_shape, slots_per_row, stride, total_slots, threads = self._walk_shuffle_layout(axis, lead)
            dtype = self.dtype

            def slot_index(row, c):
                """The walking thread's S (segment index along axis) of row `row`, at cell c of the last axis."""
                index, rest = [], row
                for d in reversed(range(dim - 1)):
                    index.insert(0, rest % row_shape[d])
                    rest = rest // row_shape[d]
                return ti.Vector(index + [c])

            @ti.kernel
            def shuffle_walk(time_fraction: ti.f64, keep: float, c0: float, c1: float, c2: float, switches: ti.i32,
                             flags: ti.template()):
                dt, t, running = clock.stage(time_fraction)
                dt_dx = dt * inv_dx[axis]
                dt_dx_last = dt * inv_dx[last_axis]
                ti.loop_config(block_dim=block_dim)
                for thread in range(threads):
                    if not running:  # the device clock has halted (taichiflow/clock.py)
                        continue
                    lane = thread % WARP
                    slot = (thread // WARP) * stride + lane
                    clamped = ti.min(slot, total_slots - 1)  # lanes past the end compute, write nothing
                    f = clamped % slots_per_row - (lead - 1)  # this lane's face along the last axis: f - 1/2
                    S = slot_index(clamped // slots_per_row, ti.min(ti.max(f, 0), n_last - 1))
                    # Lanes with a face: those after the warp's lead-in (per cell: the lane
                    # before them gives them the upper state of the cell below) but the last,
                    # whose face only serves the previous lane; owners also have the cell f.
                    solver = slot < total_slots and lane >= lead - 1 and lane < WARP - 1 and f >= 0
                    owner = solver and f < n_last
                    first = component(S, axis) * L
                    end = ti.min(first + L, n)
                    f_lo = ti.Vector.zero(dtype, phys.n_flux)
                    upper = ti.Vector.zero(dtype, phys.W.n)
                    replaced = 0
                    zero = ti.Vector.zero(dtype, nU)
                    u, r_old, u0 = zero, zero, zero  # the values of the next cell updated
                    if ti.static(prefetch):
                        u, r_old, u0 = load_cell(_with_axis(S, axis, first, dim), switches, flags)
                    newest = newest_cell(cells_at, g, S, first - lead)
                    for step in range(lead + L):
                        i = first - lead + step
                        walking = i < end  # past the axis's end a lane repeats its last cell
                        ahead = ti.min(i + 1, n - 1)
                        i = ti.min(i, n - 1)
                        I = _with_axis(S, axis, i, dim)
                        f_hi, more = ti.Vector.zero(dtype, phys.n_flux), 0
                        if ti.static(per_cell):
                            stencil = walk_stencil(cells_at, g, S, i, 2 * g - 1, newest)
                            newest = newest_cell(cells_at, g, S, ahead)
                            lower, next_upper = cell_faces(stencil, dt_dx)
                            if i >= first - 1:
                                f_hi, more = solve(upper, lower, S, i, dt_dx)
                            upper = next_upper
                        else:
                            stencil = walk_stencil(cells_at, g, S, i, 2 * g, newest)
                            newest = newest_cell(cells_at, g, S, ahead)
                            f_hi, more = face_flux(stencil, S, i, dt_dx)
                        # The lead-in steps (i below the segment, maybe below the grid) only
                        # prepare the walked face below the first cell; the step count is the
                        # same in every lane, so the branch is too.
                        f_below, more_below = ti.Vector.zero(dtype, phys.n_flux), 0
                        lower_last, upper_last = ti.Vector.zero(dtype, phys.W.n), ti.Vector.zero(dtype, phys.W.n)
                        if step >= lead:
                            if ti.static(not prefetch):
                                u, r_old, u0 = load_cell(I, switches, flags)
                            if ti.static(per_cell):  # cell f (f = -1: a ghost cell), centred stencil
                                lower_last, upper_last = cell_faces_last(at_last(I, f + 1 - g, 2 * g - 1),
                                                                         dt_dx_last)
                            else:
                                f_below, more_below = flux_last(at_last(I, f - g, 2 * g), I, f - 1, dt_dx_last)
                        if ti.static(per_cell):  # the upper state of cell f - 1 from the previous lane
                            left = _shuffled(upper_last, phys.W.n, dtype, True)  # (every lane)
                            if step >= lead:
                                f_below, more_below = solve_last(left, lower_last, I, ti.max(f, 0) - 1, dt_dx_last)
                        f_above = _shuffled(f_below, phys.n_flux, dtype, False)  # every lane: the next one's face
                        live = walking and solver
                        if live and owner and (step >= lead or first == 0):
                            replaced += more
                        if live and step >= lead:
                            replaced += more_below  # (the face above the last cell: f = n_last)
                            if owner:
                                rhs = flux_divergence(f_lo, f_hi, u, axis) + flux_divergence(
                                    f_below, f_above, u, last_axis)
                                if ti.static(across):
                                    rhs_across, replaced_across = across_divergence(I, u, dt)
                                    rhs += rhs_across
                                    replaced += replaced_across
                                update(I, rhs, u, r_old, u0, dt, keep, c0, c1, c2, t, switches, flags)
                            if ti.static(prefetch):
                                u, r_old, u0 = load_cell(_with_axis(S, axis, ti.min(ahead, end - 1), dim),
                                                         switches, flags)
                        f_lo = f_hi
                    if ti.static(fallback):
                        if replaced != 0:
                            fallbacks[thread // WARP] += replaced

            return shuffle_walk

        def make_sweep(axis, last, recon, riemann, variables, per_cell, shuffle, across=(), shuffled_last=False):
            """The fused flux-and-update kernel of one axis (see the module docstring); shuffle:
            the warp-shuffle variant (last axis, CUDA); across: axes whose two faces each cell
            also solves, each from its own stencil (the fused stage kernel, [run] fuse)."""
            ranges = self._sweep_ranges(axis)
            seg_shape = [b for _, b in ranges]
            L, n = self.segments[axis], cells[axis]
            g = recon.ghost
            nW = phys.W.n
            dtype = self.dtype
            # Cells walked before the first owned one: the face below it, and with per-cell
            # reconstruction also the cell below that face. Starting there, one code path (bit
            # for bit the same in every thread) computes every face, whatever the segment length.
            lead = 2 if per_cell else 1
            cells_at, solve, face_flux, cell_faces = face_functions(axis, recon, riemann, variables)
            across_faces = [face_functions(d, recon, riemann, variables) for d in across]

            @ti.func
            def across_divergence(I, u, dt):
                """-dF/dx along the axes across the walk and the face states replaced there; a
                face's replacements count in the cell below it (the lowest face's in cell 0).
                The two faces of an axis go through one run-time loop: one copy of the face code
                per axis in the kernel (the compile time of unrolled faces: docs/performance.md)."""
                rhs, replaced = ti.Vector.zero(dtype, nU), 0
                for a in ti.static(range(len(across))):
                    i = component(I, across[a])
                    dt_dx = dt * inv_dx[across[a]]
                    f_lo = ti.Vector.zero(dtype, phys.n_flux)
                    for side in range(2):  # the face below the cell, then the one above it
                        f, more = across_faces[a][2](across_faces[a][0](I, i - g + side, 2 * g), I, i - 1 + side,
                                                     dt_dx)
                        if side == 0:
                            f_lo = f
                        else:  # as a walk does: the same rounding whichever axis a flow goes along
                            rhs += flux_divergence(f_lo, f, u, across[a])
                        if side == 1 or i == 0:
                            replaced += more
                return rhs, replaced

            reads_u = last or len(advected) > 0  # (sources are added on the last axis)

            @ti.func
            def load_cell(I, switches, flags: ti.template()):
                """The values of cell I that its update reads (U, R, U0; zeros for those the
                stage does not read), loaded early: their latency then hides behind the flux
                computation (the R read after it kept the sweeps waiting: 0.69 against 0.47 ms
                per axis without it, H100, 256^3)."""
                u, r, u0 = ti.Vector.zero(dtype, nU), ti.Vector.zero(dtype, nU), ti.Vector.zero(dtype, nU)
                if ti.static(reads_u):
                    u = U[I]
                if ti.static(flags.read_r):
                    if switches & READ_R:
                        r = R[I]
                if ti.static(last and flags.use_u0):
                    if switches & USE_U0:
                        u0 = U0[I]
                return u, r, u0

            @ti.func
            def update(I, rhs, u, r_old, u0, dt, keep, c0, c1, c2, t, switches, flags: ti.template()):
                """R (and in the last sweep U) of cell I from its -dF/dx and its values from
                load_cell; switches (StageFlags of the stage) say which the stage uses and writes."""
                r = dt * rhs
                if ti.static(flags.read_r):  # a stage that starts the register (keep = 0) never
                    if switches & READ_R:     # reads it: no traffic, and no NaN of a failed step kept as 0 * NaN
                        r += keep * r_old
                if ti.static(last):
                    if ti.static(has_source):
                        r += dt * phys.source(u, W[I], _cell_center(I, lower, dx), t)
                    u_new = c1 * u + c2 * r
                    if ti.static(flags.use_u0):  # low-storage schemes never read U0
                        if switches & USE_U0:
                            u_new += c0 * u0
                    if ti.static(flags.save_u0):
                        if switches & SAVE_U0:
                            U0[I] = u
                    U[I] = u_new
                    if ti.static(flags.store_r):
                        if switches & STORE_R:  # R the next stage never reads stays unwritten
                            R[I] = r
                else:
                    R[I] = r

            @ti.kernel
            def sweep(time_fraction: ti.f64, keep: float, c0: float, c1: float, c2: float, switches: ti.i32,
                      flags: ti.template()):
                dt, t, running = clock.stage(time_fraction)
                dt_dx = dt * inv_dx[axis]
                ti.loop_config(block_dim=block_dim)
                for S in ti.grouped(ti.ndrange(*ranges)):
                    if not running:  # the device clock has halted (taichiflow/clock.py)
                        continue
                    first = component(S, axis) * L
                    f_lo = ti.Vector.zero(dtype, phys.n_flux)
                    upper = ti.Vector.zero(dtype, nW)  # per cell: the last cell's upper face state
                    replaced = 0
                    end = ti.min(first + L, n)
                    # the values of the cell updated next, loaded one iteration ahead on a GPU
                    zero = ti.Vector.zero(dtype, nU)
                    u, r_old, u0 = zero, zero, zero
                    if ti.static(prefetch):
                        u, r_old, u0 = load_cell(_with_axis(S, axis, first, dim), switches, flags)
                    newest = newest_cell(cells_at, g, S, first - lead)
                    for i in range(first - lead, end):
                        # f_hi: the flux through face i + 1/2, once i >= first - 1
                        f_hi, more = ti.Vector.zero(dtype, phys.n_flux), 0
                        if ti.static(per_cell):  # centred on cell i + 1
                            stencil = walk_stencil(cells_at, g, S, i, 2 * g - 1, newest)
                            newest = newest_cell(cells_at, g, S, ti.min(i + 1, n - 1))
                            lower, next_upper = cell_faces(stencil, dt_dx)
                            if i >= first - 1:
                                f_hi, more = solve(upper, lower, S, i, dt_dx)
                            upper = next_upper
                        else:
                            stencil = walk_stencil(cells_at, g, S, i, 2 * g, newest)
                            newest = newest_cell(cells_at, g, S, ti.min(i + 1, n - 1))
                            f_hi, more = face_flux(stencil, S, i, dt_dx)
                        if i >= first or first == 0:  # count each face once: the upper faces it owns
                            replaced += more
                        if i >= first:
                            I = _with_axis(S, axis, i, dim)
                            if ti.static(not prefetch):
                                u, r_old, u0 = load_cell(I, switches, flags)
                            rhs = flux_divergence(f_lo, f_hi, u, axis)
                            if ti.static(across):
                                rhs_across, replaced_across = across_divergence(I, u, dt)
                                rhs += rhs_across
                                replaced += replaced_across
                            update(I, rhs, u, r_old, u0, dt, keep, c0, c1, c2, t, switches, flags)
                            if ti.static(prefetch):
                                ahead = _with_axis(S, axis, ti.min(i + 1, end - 1), dim)
                                u, r_old, u0 = load_cell(ahead, switches, flags)
                        f_lo = f_hi
                    if ti.static(fallback):
                        if replaced != 0:
                            fallbacks[ti.cast(_linear_index(S, seg_shape), ti.i32)] += replaced

            if shuffled_last:
                return make_shuffle_walk(axis, recon, riemann, variables, per_cell, lead, load_cell, update,
                                         cells_at, solve, face_flux, cell_faces, across, across_divergence)
            if not shuffle:
                return sweep

            # The last axis with warp shuffles: a thread per face slot (see _shuffle_layout).
            slots_per_row, stride, total_slots, threads = self._shuffle_layout(lead)
            rows = cells[:axis]

            def row_start(row):
                """Index vector of cell 0 along the axis in row `row` of the axes before it."""
                index, rest = [], row
                for d in reversed(range(axis)):
                    index.insert(0, rest % rows[d])
                    rest = rest // rows[d]
                return ti.Vector(index + [0])

            @ti.kernel
            def shuffle_sweep(time_fraction: ti.f64, keep: float, c0: float, c1: float, c2: float, switches: ti.i32,
                              flags: ti.template()):
                dt, t, running = clock.stage(time_fraction)
                dt_dx = dt * inv_dx[axis]
                ti.loop_config(block_dim=block_dim)
                for thread in range(threads):
                    if not running:  # the device clock has halted (taichiflow/clock.py)
                        continue
                    lane = thread % WARP
                    slot = (thread // WARP) * stride + lane
                    clamped = ti.min(slot, total_slots - 1)  # lanes past the end compute, write nothing
                    f = clamped % slots_per_row - (lead - 1)  # this lane's face is f - 1/2 (cells f-1 | f)
                    row = clamped // slots_per_row
                    S = row_start(row)
                    cell = _with_axis(S, axis, ti.min(ti.max(f, 0), n - 1), dim)
                    u, r_old, u0 = load_cell(cell, switches, flags)  # first: their latency hides behind the flux
                    f_lo, more = ti.Vector.zero(dtype, phys.n_flux), 0
                    if ti.static(per_cell):  # the cell above the face, its upper state to the next lane
                        lower, upper = cell_faces(cells_at(S, f + 1 - g, 2 * g - 1), dt_dx)
                        left = _shuffled(upper, nW, dtype, True)  # lane 0: its own, never used
                        f_lo, more = solve(left, lower, S, ti.max(f, 0) - 1, dt_dx)
                    else:
                        f_lo, more = face_flux(cells_at(S, f - g, 2 * g), S, f - 1, dt_dx)
                    f_hi = _shuffled(f_lo, phys.n_flux, dtype, False)  # face f + 1/2, the next lane's
                    # A face belongs to the lanes after the warp's lead-in and before its last,
                    # whose face the next warp solves again.
                    owner = slot < total_slots and lane >= lead - 1 and lane < WARP - 1 and f >= 0
                    if ti.static(fallback):
                        if owner and more != 0:
                            fallbacks[thread // WARP] += more
                    if owner and f < n:
                        update(cell, flux_divergence(f_lo, f_hi, u, axis), u, r_old, u0, dt, keep, c0, c1, c2, t,
                               switches, flags)

            return shuffle_sweep

        # A sweep per walked axis: every axis; with [run] fuse only axis 0, solving both faces
        # of each cell along the others; with shuffle = "walk" all but the last, whose faces
        # the walk along x solves through shuffles (measured 1-1.5% faster than in the walk
        # along y, the stage's last sweep, whose update keeps more registers live).
        walked = self.walked
        across = tuple(range(1, dim - 1 if self.shuffle_walk else dim)) if self.fused else ()

        def sweeps(recon, riemann, variables, per_cell):
            return [make_sweep(d, k == len(walked) - 1, recon, riemann, variables, per_cell,
                               self.shuffle and d == dim - 1, across if k == 0 else (),
                               self.shuffle_walk and k == 0)
                    for k, d in enumerate(walked)]

        self._sweep = sweeps(self.recon, self.riemann, self.variables, self.per_cell[0])
        if self.retry_scheme:
            self._retry_sweep = sweeps(*self.retry_scheme, self.per_cell[1])

        @ti.kernel
        def restore_state():
            for I in ti.grouped(ti.ndrange(*cells)):
                U[I] = U0[I]

        if U0 is None:
            restore_state = None

        nW = phys.W.n
        reduced = self.reduced
        reduced_keys, reduced_sums = self.reduced_keys, self.reduced_sums

        total_slots, low_slots, high_slots = self.total_slots, self.low_slots, self.high_slots
        key_slots_r, sum_slots_r = self.reduced_key_slots, self.reduced_sum_slots

        @ti.func
        def key_identities():
            """Start values of the derived keys: the largest for a min, the smallest for a max."""
            return ti.Vector([_int64_max() if how == "min" else _int64_min() for _, how in reduced] or [0], ti.i64)

        @ti.func
        def merge_keys(into: ti.template(), keys):
            """Atomic min or max, as each derived key asks, of keys into the vector `into` (a
            field element, by reference)."""
            for r in ti.static(range(len(reduced))):
                if ti.static(reduced[r][1] == "max"):
                    ti.atomic_max(into[r], keys[r])
                elif ti.static(reduced[r][1] == "min"):
                    ti.atomic_min(into[r], keys[r])

        @ti.kernel
        def diagnostics():
            """f64 totals of U and min/max of prim(U), reduced in registers per x-chunk, then
            into the slots (one address per quantity serialised the chunks' atomics)."""
            for C in ti.grouped(ti.ndrange(*outer)):
                total = ti.Vector([0.0] * nU, ti.f64)
                low = ti.Vector([_int64_max()] * nW, ti.i64)
                high = ti.Vector([_int64_min()] * nW, ti.i64)
                keys = key_identities()
                sums = ti.Vector([0.0] * max(len(reduced), 1), ti.f64)
                for i in range(component(C, 0) * chunk, ti.min(component(C, 0) * chunk + chunk, cells[0])):
                    u = U[_with_axis0(C, i, dim)]
                    total += ti.cast(u, ti.f64)
                    w = phys.prim(u)
                    for k in ti.static(range(nW)):
                        key = ordered_bits(w[k])
                        low[k] = ti.min(low[k], key)
                        high[k] = ti.max(high[k], key)
                    for r in ti.static(range(len(reduced))):
                        value = phys.derived(reduced[r][0], w)
                        if ti.static(reduced[r][1] == "sum"):
                            sums[r] += ti.cast(value, ti.f64)
                        elif ti.static(reduced[r][1] == "max"):
                            keys[r] = ti.max(keys[r], ordered_bits(value))
                        else:
                            keys[r] = ti.min(keys[r], ordered_bits(value))
                slot = ti.cast(_linear_index(C, outer_shape) % slots, ti.i32)
                for k in ti.static(range(nU)):
                    ti.atomic_add(total_slots[slot][k], total[k])
                for k in ti.static(range(nW)):
                    ti.atomic_min(low_slots[slot][k], low[k])
                    ti.atomic_max(high_slots[slot][k], high[k])
                for r in ti.static(range(len(reduced))):
                    if ti.static(reduced[r][1] == "sum"):
                        ti.atomic_add(sum_slots_r[slot][r], sums[r])
                merge_keys(key_slots_r[slot], keys)

        @ti.kernel
        def combine_diagnostics():
            """Slots into the results (which start over here); the slots start over too."""
            self.totals[None] = ti.Vector([0.0] * nU, ti.f64)
            self.w_min[None] = ti.Vector([_int64_max()] * nW, ti.i64)
            self.w_max[None] = ti.Vector([_int64_min()] * nW, ti.i64)
            reduced_keys[None] = key_identities()
            reduced_sums[None] = ti.Vector([0.0] * max(len(reduced), 1), ti.f64)
            for s in range(slots):
                for k in ti.static(range(nU)):
                    ti.atomic_add(self.totals[None][k], total_slots[s][k])
                for k in ti.static(range(nW)):
                    ti.atomic_min(self.w_min[None][k], low_slots[s][k])
                    ti.atomic_max(self.w_max[None][k], high_slots[s][k])
                for r in ti.static(range(len(reduced))):
                    if ti.static(reduced[r][1] == "sum"):
                        ti.atomic_add(reduced_sums[None][r], sum_slots_r[s][r])
                merge_keys(reduced_keys[None], key_slots_r[s])
                total_slots[s] = ti.Vector([0.0] * nU, ti.f64)
                low_slots[s] = ti.Vector([_int64_max()] * nW, ti.i64)
                high_slots[s] = ti.Vector([_int64_min()] * nW, ti.i64)
                key_slots_r[s] = key_identities()
                sum_slots_r[s] = ti.Vector([0.0] * max(len(reduced), 1), ti.f64)

        self._combine_diagnostics = combine_diagnostics

        @ti.kernel
        def sum_fallbacks():
            for I in ti.grouped(fallbacks):
                if fallbacks[I] != 0:
                    ti.atomic_add(self.fallback_total[None], ti.cast(fallbacks[I], ti.i64))

        self._sum_fallbacks = sum_fallbacks

        # Host <-> device copies go in slabs along x (rows of x planes): Taichi stages a whole
        # array on the device, which a 1024^3 grid has no room for.
        def slab_reader(field, n):
            """Kernel copying x planes start .. start + len(rows) of field (interior cells)."""
            @ti.kernel
            def read(rows: ti.types.ndarray(dtype=ti.types.vector(n, self.dtype), ndim=dim), start: int):
                for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                    rows[J] = field[_with_axis0(J, component(J, 0) + start, dim)]

            return read

        def slab_writer(field, n):
            """Kernel setting x planes start .. start + len(rows) of field (interior cells)."""
            @ti.kernel
            def write(rows: ti.types.ndarray(dtype=self.dtype, ndim=dim + 1), start: int):
                for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                    field[_with_axis0(J, component(J, 0) + start, dim)] = _array_vector(rows, J, dim, n)

            return write

        self._write_slab, self._write_conserved_slab = slab_writer(W, phys.W.n), slab_writer(U, nU)
        self._read_primitive_slab, self._read_conserved_slab = slab_reader(W, phys.W.n), slab_reader(U, nU)

        @ti.kernel
        def conserve():
            for I in ti.grouped(ti.ndrange(*cells)):
                U[I] = phys.cons(W[I])

        self._restore_state, self._diagnostics = restore_state, diagnostics
        self._conserve = conserve

    def _build_boundaries(self):
        """The ghost layers of W: (a ti.func that copies a cell's new W into the ghost cells
        that mirror it, called where W is computed; a kernel filling the constant inflow
        faces, or None). Copying from the primitives kernels replaces a separate ghost kernel
        of one task per face: 18 launches per LSRK3 step fewer; at 256^3 on an H100 the time
        it took (0.41 ms per step) went into the primitives' stores, measured neutral."""
        phys, dim, cells, g, W, inflow = self.phys, self.dim, self.cells, self.ghost, self.W, self.inflow
        faces = [(axis, side, self.boundaries[axis][side]) for axis in range(dim) for side in (0, 1)]
        # (axis, side, kind, cells along the axis, periods its ghost layers span)
        copied = [(axis, side, kind, cells[axis], -(-g // cells[axis])) for axis, side, kind in faces
                  if kind != "inflow"]
        constant = [face for face in faces if face[2] == "inflow"]
        vel = phys.W.index(self.model.velocity) if self.model.velocity else None

        @ti.func
        def copy_to_ghosts(I, w):
            """Ghost cells copying interior cell I (the inverse of each face's source map):
            periodic, the cells whole periods away; zero gradient (outflow, absorbing), every layer
            beside the boundary cell; wall, the mirror image with the normal velocity negated."""
            for axis, side, kind, n, periods in ti.static(copied):
                i = component(I, axis)
                if ti.static(kind == "periodic"):  # every ghost j = i -+ m n (more than one if n < g)
                    for m in ti.static(range(1, periods + 1)):
                        if ti.static(side == 0):
                            if i - m * n >= -g:
                                W[_with_axis(I, axis, i - m * n, dim)] = w
                        elif i + m * n < n + g:
                            W[_with_axis(I, axis, i + m * n, dim)] = w
                elif ti.static(kind in ("outflow", "absorbing")):
                    if i == (0 if side == 0 else n - 1):
                        for k in ti.static(range(g)):
                            W[_with_axis(I, axis, -1 - k if side == 0 else n + k, dim)] = w
                else:  # wall
                    mirrored = ti.Vector([-component(w, k) if k == vel + axis else component(w, k)
                                          for k in range(phys.W.n)])
                    if ti.static(side == 0):
                        if i < g:
                            W[_with_axis(I, axis, -1 - i, dim)] = mirrored
                    elif i >= n - g:
                        W[_with_axis(I, axis, 2 * n - 1 - i, dim)] = mirrored

        def slab(axis, side):
            return [((-g, 0) if side == 0 else (cells[d], cells[d] + g)) if d == axis else (0, cells[d])
                    for d in range(dim)]

        @ti.kernel
        def fill_inflow():
            for axis, side, _ in ti.static(constant):
                for J in ti.grouped(ti.ndrange(*slab(axis, side))):
                    W[J] = inflow[axis, side]

        return copy_to_ghosts, (fill_inflow if constant else None)

    # --- host-side driver API -------------------------------------------------------------
    def check_state(self):
        """Compute W, the CFL rate and admissibility of U; returns (max rate, bad cell or None)."""
        self._check_and_primitives(1)
        found = self._combine_check()
        rate, bad = float(from_ordered_bits(int(found[0]))), int(found[1])
        return rate, (None if bad == NO_BAD_CELL else bad)

    def step(self, dt: float, t: float, stages, retry: bool = False):
        """One time step of dt from t; `check_state` must have run on the current U. retry: with
        the [scheme] retry fluxes, after `restore_last_good` of a step that left a bad cell."""
        self.clock.set(t, dt)
        self._launch_stages(stages, retry)

    def run_steps(self, count: int, stages):
        """Up to `count` steps with the time step on the device (taichiflow/clock.py), each
        checked, without a read back: after clock.start, or after the last of these."""
        for _ in range(count):
            self._launch_stages(stages)
            self._check_and_primitives(0)
            self._finish_step()

    def _launch_stages(self, stages, retry: bool = False):
        sweep = self._retry_sweep if retry else self._sweep
        plan = self._launch_plan(stages)
        for s, stage in enumerate(stages):
            if s > 0:
                self._primitives()  # (also the ghost layers: _build_boundaries)
            for k, kernel in enumerate(sweep):
                keep = stage.a if k == 0 else 1.0
                switches, flags = plan[s][k]
                kernel(stage.time, keep, stage.c0, stage.c1, stage.c2, switches, flags)

    def _launch_plan(self, stages):
        """Per stage and sweep (run-time switches, kernel flags), worked out once per integrator:
        doing it at every launch took 150 us of Python per step (2-core CPU), against 0.6-0.9 ms
        for a whole 64^3 step on an H100."""
        if stages not in self._plans:
            self._plans[stages] = [[(self.stage_flags(stages, s, k).switches(), self.kernel_flags(stages, k))
                                    for k in range(len(self._sweep))] for s in range(len(stages))]
        return self._plans[stages]

    def stage_flags(self, stages, s: int, k: int) -> StageFlags:
        """What the k-th sweep of stage s reads and writes besides W and R. R after a stage's
        last sweep is read only by a next stage that keeps it (a != 0; the next step starts with
        stages[0]): never in SSP schemes, not after LSRK3's last stage."""
        last = k == len(self._sweep) - 1
        stage = stages[s]
        return StageFlags(read_r=k > 0 or stage.a != 0.0, use_u0=last and stage.c0 != 0.0,
                          save_u0=last and s == 0 and self.keep_last_good,
                          store_r=not last or stages[(s + 1) % len(stages)].a != 0.0)

    def kernel_flags(self, stages, k: int) -> StageFlags:
        """The union of the k-th sweep's flags over the stages: what its one kernel compiles in."""
        per_stage = [self.stage_flags(stages, s, k) for s in range(len(stages))]
        return StageFlags(*(any(flags[f] for flags in per_stage) for f in range(len(StageFlags._fields))))

    def modelled_bytes_per_cell_step(self, stages) -> int:
        """Bytes per cell and step if each kernel touched its data once (ideal caches): per
        stage the primitives (U in, W out), then per sweep the W stencil and what the sweep's
        flags read and write (U where it updates or advects, R, U0)."""
        nU, nW = self.phys.U.n, self.phys.W.n
        reads_u_across = len(self.phys.advected_indices) > 0
        values = 0
        for s in range(len(stages)):
            values += nU + nW
            for k in range(len(self._sweep)):
                f, last = self.stage_flags(stages, s, k), k == len(self._sweep) - 1
                values += nW + nU * (f.read_r + f.store_r + f.use_u0 + f.save_u0)
                values += 2 * nU if last else nU * reads_u_across
        return values * (4 if self.dtype == ti.f32 else 8)

    def restore_last_good(self) -> bool:
        """U back to the state at the start of the last step; False where it was not kept."""
        if not self.keep_last_good:
            return False
        self._restore_state()
        return True

    def refresh_primitives(self):
        self._primitives()

    def primitive_array(self) -> np.ndarray:
        """Interior primitive state as a numpy array (refresh_primitives first)."""
        return self._read_slabs(self._read_primitive_slab, self.phys.W.n)

    def conserved_array(self) -> np.ndarray:
        """The conserved state U as a numpy array (cells + (nU,))."""
        return self._read_slabs(self._read_conserved_slab, self.phys.U.n)

    def set_primitive(self, w: np.ndarray):
        """U from interior primitive values (cells + (nW,)), through the model's to_conserved."""
        self._write_slabs(self._write_slab, w)
        self._conserve()

    def set_conserved(self, u: np.ndarray):
        """U from conserved values (cells + (nU,)), e.g. a checkpoint's."""
        self._write_slabs(self._write_conserved_slab, u)

    def _slab_rows(self, components: int) -> int:
        """x planes per slab: SLAB_BYTES of them, at least one."""
        plane = int(np.prod(self.cells[1:])) * components * np.dtype(_numpy_dtype(self.dtype)).itemsize
        return max(1, SLAB_BYTES // max(1, plane))

    def _write_slabs(self, write, values: np.ndarray):
        rows = self._slab_rows(values.shape[-1])
        for start in range(0, self.cells[0], rows):
            write(np.ascontiguousarray(values[start:start + rows], dtype=_numpy_dtype(self.dtype)), start)

    def _read_slabs(self, read, components: int) -> np.ndarray:
        """cells + (components,) values on the host, filled slab by slab by read(rows, start)."""
        out = np.empty(self.cells + (components,), dtype=_numpy_dtype(self.dtype))
        rows = self._slab_rows(components)
        for start in range(0, self.cells[0], rows):
            read(out[start:start + rows], start)  # x planes of a C-ordered array: contiguous
        return out

    def reductions(self):
        """f64 totals of U (times cell volume) and min/max of prim(U) over the interior."""
        self._diagnostics()
        self._combine_diagnostics()
        volume = float(np.prod(self.dx))
        keys, sums = from_ordered_bits(self.reduced_keys.to_numpy()), self.reduced_sums.to_numpy()
        derived = {f"{how}_{name}": float(sums[r] * volume if how == "sum" else keys[r])
                   for r, (name, how) in enumerate(self.reduced)}
        return (self.totals.to_numpy() * volume, from_ordered_bits(self.w_min.to_numpy()),
                from_ordered_bits(self.w_max.to_numpy()), derived)

    def take_repair_count(self) -> int:
        """Cells changed by the model's repair() since the last call."""
        count = int(self.repair_slots.to_numpy().sum())
        self.repair_slots.fill(0)
        return count

    def take_fallback_count(self) -> int:
        """Face states replaced by first-order values since the last call."""
        if not self.fallback:
            return 0
        self.fallback_total[None] = 0
        self._sum_fallbacks()
        self.fallbacks.fill(0)
        return int(self.fallback_total[None])

    def cell(self, linear_index: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(linear_index, self.cells))

    def derived_array(self, name: str) -> np.ndarray:
        """A model-derived field (e.g. Mach number) on the interior, from the current W."""
        if name not in self._derive:
            phys, W, cells, dim = self.phys, self.W, self.cells, self.dim

            @ti.kernel
            def derive(rows: ti.types.ndarray(dtype=ti.types.vector(1, self.dtype), ndim=dim), start: int):
                for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                    rows[J] = ti.Vector([phys.derived(name, W[_with_axis0(J, component(J, 0) + start, dim)])])

            self._derive[name] = derive
        return self._read_slabs(self._derive[name], 1)[..., 0]
