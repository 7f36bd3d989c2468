"""KernelPlan: every decision about the shape of the kernels, made once, as a frozen value.

A run's kernels are fixed by its scheme (reconstruction, Riemann solver, integrator, retry
scheme), the machine (arch, precision, block size) and the grid. Which sweeps exist, how
they walk, whether a stage is fused into one sweep, how the last axis uses warp shuffles,
which fields a sweep reads and writes at each stage: all of it is decided here, from
measured rules (docs/performance.md), before any kernel is built, so that tests assert on
plans without compiling and run.log says in words what was built. Taichi-free: the names'
metadata (stencil reach, per-cell transforms, integrator tables) come from the registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from .. import registry
from ..resolved import RunTable, SchemeTable

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
# Threads a walk needs to keep the device busy: on a grid so small that the default segments
# leave a strided axis' walk fewer, its segments are halved down to MIN_SEGMENT. H200, seed
# 000's 3D blast (MUSCL-Hancock + MUSTA, one fused walk along x) at 64^3: f32 16 -> 4 cells
# 3.34e8 -> 5.30e8 cell-updates/s, f64 32 -> 4 6.22e7 -> 1.97e8 (8: 2.02e8); at 128^3 (65,536
# walking threads in f64) segments of 8, 16 and 32 within 1% (docs/performance.md).
FILL_THREADS = {"cuda": 65536}
MIN_SEGMENT = 4
# Where the walking sweeps load a cell's U, R, U0 one cell ahead (kernels/stage.py): a GPU
# thread waits for its loads, a CPU core's out-of-order window hides them, and there the early
# loads measured slower (PLM + HLL, 32^3, 2 cores: 1.8e6 against 2.5e6 cell-updates/s).
PREFETCH_ARCHS = {"cuda"}
WARP = 32                   # CUDA threads that exchange values through shuffles
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
# ... except with a costly Riemann solver (registry: MUSTA, a predictor and a FORCE flux a
# stage), whose faces solved twice outweigh the memory saved: H200, SRHD MUSCL-Hancock + MUSTA
# + Euler at 128^3, a sweep per axis against fused: f32 1.198e9 against 8.90e8, f64 4.98e8
# against 2.58e8 (docs/performance.md).
# [run] shuffle = "walk" in a fused stage: the walk along x solves the last axis through
# shuffles (each face once) where the reconstruction reaches at least this many cells a side;
# first-order faces are cheaper solved twice. H100, 256^3, f32: PLM + HLL + SSP-RK2 +3 to +8%,
# WENO3 + HLLC + LSRK3 +7%, first order + HLL + SSP-RK2 -8% (docs/performance.md).
FUSED_SHUFFLE_MIN_GHOST = 2
# Largest thread count of a sweep: Taichi's range-for indices are 32-bit.
MAX_THREADS = 2 ** 31
# Boundary kinds whose ghost cells are the mirror image of the cells inside (kernels/boundaries.py):
# the image of `ghost` layers needs at least `ghost` cells along the axis.
MIRRORED_KINDS = ("wall", "symmetry")


class LastAxis(Enum):
    """How the sweeps solve the faces of the last axis, the one contiguous in memory."""
    WALKED = "walked in segments like the other axes"
    SHUFFLE_SWEEP = "a warp-shuffle sweep of its own, one face per thread"
    SHUFFLE_IN_WALK = "warp shuffles inside the walk along x"


class StageFlags(NamedTuple):
    """What a sweep reads and writes besides W and R. Per stage they pass to the kernel as
    run-time bits (bit k for field k); as a template the kernel takes their union over the
    integrator's stages, so one kernel serves every stage (a kernel per stage and flag value
    made the first step of a two-phase run compile eight sweeps instead of four). The first
    stage's last sweep keeps the state of the step's start in U0 (instead of a copy kernel: one
    pass over memory less). W cannot be written there for the next stage: the sweep's other
    threads still read their stencils from it."""
    read_r: bool    # R = a R + ...; a stage that starts the register (a = 0) skips the read
    use_u0: bool    # U = c0 U0 + ... (SSP stages)
    save_u0: bool   # U0 = U before the first stage's update (the last good state)
    store_r: bool   # R stored: by every sweep but the last, and there only when the next stage reads it
    ends_step: bool  # the step's last update of U: the model's after_step (a split source) follows it

    def bits(self) -> int:
        return sum(1 << k for k, on in enumerate(self) if on)


READ_R, USE_U0, SAVE_U0, STORE_R, ENDS_STEP = (1 << k for k in range(len(StageFlags._fields)))


class SweepLaunch(NamedTuple):
    """What one sweep kernel is launched with in one stage: the stage's flags as run-time
    bits, and the union of its flags over the stages (a template: what the kernel compiles in)."""
    stage_bits: int
    compiled_flags: StageFlags


class ThreadLayout(NamedTuple):
    """Threads of a sweep that solves the last axis a face per lane (warp shuffles): each row
    of that axis is `slots_per_row` face slots, laid out row after row, a warp taking 32
    consecutive slots and overlapping the next warp by the lead-in, `stride` new ones each."""
    row_shape: tuple   # the rows: the walk's thread grid without the last axis (or the cells before it)
    slots_per_row: int
    stride: int
    slots: int
    threads: int


@dataclass(frozen=True)
class KernelPlan:
    """The shape of every kernel of a run (see the module docstring)."""
    arch: str                      # "cpu" or "cuda"
    precision: str                 # "f32" or "f64"
    cells: tuple                   # the block's cells per axis
    schemes: tuple                 # SchemeTable: the case's [scheme], then its retry scheme (if any)
    integrator: str
    stages: tuple                  # the integrator's stages (numerics/integrators.py: Stage)
    ghost: int                     # ghost layers of W: the widest stencil reach of the schemes
    segments: tuple                # cells one thread walks, per axis
    block_dim: int                 # threads per block (0: Taichi's default)
    per_cell: tuple                # per scheme: each cell reconstructed once for both faces
    fused: bool                    # one sweep per stage (the walk along x solves the axes across it)
    last_axis: LastAxis
    walked: tuple                  # the axes walked by sweeps of their own, in launch order
    across: tuple                  # fused: the axes whose faces the walk along x also solves
    prefetch: bool                 # walks load a cell's values one step ahead
    fallback: bool                 # inadmissible face states fall back to first order
    keep_last_good: bool           # U0 holds the state at the step's start
    skip_idle: bool = False        # the kernels skip tiles of idle cells (kernels/idle.py)
    split: bool = False            # dimensional splitting: each axis a whole sub-step of its own
    idle_tile: int = 16            # cells per axis of those tiles

    @property
    def dim(self) -> int:
        return len(self.cells)

    @property
    def has_retry(self) -> bool:
        return len(self.schemes) > 1

    @property
    def counts_faces(self) -> bool:
        """Whether the sweeps count the faces whose states or fluxes are replaced (the `fallbacks`
        column): the positivity fallback's, the positivity limiter's or FORCE's and MUSTA's
        Lax-Friedrichs fallback. Without any, no counter is compiled in (the kernels of such
        cases stay as they were)."""
        return self.fallback or any(scheme.positivity_limiter or scheme.force_fallback for scheme in self.schemes)

    @property
    def shuffle_in_walk(self) -> bool:
        return self.last_axis is LastAxis.SHUFFLE_IN_WALK

    @property
    def shuffle_sweep(self) -> bool:
        return self.last_axis is LastAxis.SHUFFLE_SWEEP

    def solved_axes(self, k: int) -> tuple:
        """The axes whose faces the stage's k-th sweep solves, so whose ghost layers it reads (a
        stencil runs along its face's axis only): its walked axis, and for the walk along x the
        axes across a fused stage and the last axis solved through shuffles."""
        axes = {self.walked[k]}
        if k == 0:  # (a dimensionally split plan neither fuses nor shuffles)
            axes.update(self.across)
            if self.shuffle_in_walk:
                axes.add(self.dim - 1)
        return tuple(sorted(axes))

    @property
    def axes_read_first(self) -> tuple:
        """The axes a step's first sweep may read: the first sweep's, or with dimensional
        splitting every axis (the first sub-step's axis alternates from step to step)."""
        return tuple(range(self.dim)) if self.split else self.solved_axes(0)

    @staticmethod
    def lead_in(per_cell: bool) -> int:
        """Cells a walk computes before its first owned one: the face below it, and with
        per-cell reconstruction also the cell below that face."""
        return 2 if per_cell else 1

    # --- what each sweep reads and writes, per stage ------------------------------------
    def stage_flags(self, s: int, k: int) -> StageFlags:
        """What the k-th sweep of stage s reads and writes besides W and R. R after a stage's
        last sweep is read only by a next stage that keeps it (a != 0; the next step starts with
        stages[0]): never in SSP schemes, not after LSRK3's last stage."""
        stages = self.stages
        last = k == len(self.walked) - 1
        stage = stages[s]
        return StageFlags(read_r=k > 0 or stage.a != 0.0, use_u0=last and stage.c0 != 0.0,
                          save_u0=last and s == 0 and self.keep_last_good,
                          store_r=not last or stages[(s + 1) % len(stages)].a != 0.0,
                          ends_step=last and s == len(stages) - 1)

    def compiled_flags(self, k: int) -> StageFlags:
        """The union of the k-th sweep's flags over the stages: what its one kernel compiles in."""
        if self.split:  # (any axis may come first or last in a step)
            return StageFlags(False, False, self.keep_last_good, False, True)
        per_stage = [self.stage_flags(s, k) for s in range(len(self.stages))]
        return StageFlags(*(any(flags[f] for flags in per_stage) for f in range(len(StageFlags._fields))))

    def launches(self) -> tuple:
        """Per stage and sweep, its SweepLaunch: worked out once (doing it at every launch took
        150 us of Python per step on a 2-core CPU, against 0.6-0.9 ms for a whole 64^3 step on
        an H100). Dimensionally split: per sub-step j (its place in the step) and sweep k."""
        if self.split:
            return tuple(tuple(SweepLaunch(StageFlags(False, False, j == 0 and self.keep_last_good, False,
                                                      j == self.dim - 1).bits(), self.compiled_flags(k))
                               for k in range(self.dim)) for j in range(self.dim))
        return tuple(tuple(SweepLaunch(self.stage_flags(s, k).bits(), self.compiled_flags(k))
                           for k in range(len(self.walked))) for s in range(len(self.stages)))

    def modelled_bytes_per_cell_step(self, n_conserved: int, n_primitive: int, advected: bool) -> int:
        """Bytes per cell and step if each kernel touched its data once (ideal caches): per
        stage the primitives (U in, W out), then per sweep the W stencil and what the sweep's
        flags read and write (U where it updates or advects, R, U0)."""
        if self.split:  # per axis: the primitives, then a sweep that updates U (U0 kept once)
            per_axis = n_conserved + n_primitive + n_primitive + 2 * n_conserved
            return (self.dim * per_axis + n_conserved * self.keep_last_good) * (4 if self.precision == "f32" else 8)
        values = 0
        for s in range(len(self.stages)):
            values += n_conserved + n_primitive
            for k in range(len(self.walked)):
                f, last = self.stage_flags(s, k), k == len(self.walked) - 1
                values += n_primitive + n_conserved * (f.read_r + f.store_r + f.use_u0 + f.save_u0)
                values += 2 * n_conserved if last else n_conserved * advected
        return values * (4 if self.precision == "f32" else 8)

    # --- thread grids ------------------------------------------------------------------------
    def sweep_ranges(self, axis: int) -> list:
        """Thread grid of the walk along axis: segments along it, cells across."""
        n, length = self.cells[axis], self.segments[axis]
        return [(0, (n + length - 1) // length) if d == axis else (0, self.cells[d]) for d in range(self.dim)]

    def shuffle_walk_layout(self, axis: int, lead_in: int) -> ThreadLayout:
        """The walk along axis (x) that also solves the last axis through shuffles: a row is a
        walking segment of axis at one index of the other axes before the last; its n + lead_in
        slots f = 1 - lead_in .. n are the faces below cells f (with per-cell reconstruction,
        lead-in 2, the lane of f = -1 only reconstructs cell -1)."""
        row_shape = tuple(b for _, b in self.sweep_ranges(axis))[:-1]
        return self._warp_layout(row_shape, lead_in)

    def shuffle_sweep_layout(self, lead_in: int) -> ThreadLayout:
        """The warp-shuffle sweep of the last axis: its rows are the cells before that axis;
        the lanes before a warp's first owned face and its last lane, whose face only serves
        the cell below it, overlap the neighbouring warps."""
        return self._warp_layout(tuple(self.cells[:-1]), lead_in)

    def _warp_layout(self, row_shape: tuple, lead_in: int) -> ThreadLayout:
        slots_per_row = self.cells[-1] + lead_in
        stride = WARP - lead_in
        slots = _product(row_shape) * slots_per_row
        threads = (slots + stride - 1) // stride * WARP
        if threads >= MAX_THREADS:
            raise ValueError(f"the grid {self.cells} needs {threads} sweep threads; 32-bit indices end at 2^31")
        return ThreadLayout(row_shape, slots_per_row, stride, slots, threads)

    def fallback_counters(self, axis: int) -> int:
        """Face counters (counts_faces) the sweep along axis uses: one per walking thread, or one
        per warp."""
        if self.shuffle_in_walk and axis == 0:  # (the walk along x solves the last axis)
            return max(self.shuffle_walk_layout(axis, lead).threads // WARP for lead in (1, 2))
        if self.shuffle_sweep and axis == self.dim - 1:
            return max(self.shuffle_sweep_layout(lead).threads // WARP for lead in (1, 2))
        return _product(b - a for a, b in self.sweep_ranges(axis))

    def describe(self) -> str:
        """The plan in words, for run.log."""
        names = [_scheme_words(scheme) for scheme in self.schemes]
        lines = [f"kernel plan: {self.arch} {self.precision}, {'x'.join(map(str, self.cells))} cells, "
                 f"{self.ghost} ghost layers, {self.integrator} ({len(self.stages)} stages)",
                 f"  scheme: {names[0]}, reconstructed per {'cell' if self.per_cell[0] else 'face'}"]
        if self.has_retry:
            lines.append(f"  retry scheme: {names[1]}, per {'cell' if self.per_cell[1] else 'face'}")
        sweeps = ", ".join("xyz"[d] for d in self.walked)
        lines.append(f"  sweeps per stage: {len(self.walked)} (walking {sweeps}"
                     + (f"; fused: the walk along x also solves {', '.join('xyz'[d] for d in self.across)}"
                        if self.fused and self.across else "") + ")")
        if self.split:
            lines.append(f"  dimensionally split: each step advances {', '.join('xyz'[d] for d in self.walked)} one "
                         f"after the other, each a whole step of its own (the reverse order every other step)")
        lines.append(f"  last axis: {self.last_axis.value}")
        lines.append(f"  segments {list(self.segments)}, block_dim {self.block_dim or 'default'}, "
                     f"loads a step ahead: {'yes' if self.prefetch else 'no'}, positivity fallback: "
                     f"{'yes' if self.fallback else 'no'}, last good state kept: {'yes' if self.keep_last_good else 'no'}")
        if self.skip_idle:
            lines.append(f"  idle tiles skipped: tiles of {self.idle_tile} cells per axis")
        return "\n".join(lines)


def _product(values) -> int:
    total = 1
    for v in values:
        total *= int(v)
    return total


def _scheme_words(scheme: SchemeTable) -> str:
    method = registry.methods.get(scheme.method)
    if method.own_flux:
        options = ", ".join(f"{key} {_or(getattr(scheme, key, None), default)}" for key, default in method.options)
        return f"{method.name} on conserved variables ({options}; reconstruction and riemann unused)"
    if scheme.method == registry.FINITE_DIFFERENCE:
        return (f"finite differences: {scheme.reconstruction} of the {scheme.riemann}-split flux on "
                f"{scheme.variables} variables")
    return f"{scheme.reconstruction} + {scheme.riemann} on {scheme.variables} variables"


def _or(value, default):
    """A scheme key the case may leave out (None): the method's default."""
    return default if value is None else value


def _toml(value) -> str:
    """A case value as the case file writes it (true, "walk")."""
    return str(value).lower() if isinstance(value, bool) else f'"{value}"'


# --- the rules, one function a decision ----------------------------------------------------
def uses_shuffle(shuffle, arch: str, precision: str, block_dim: int):
    """[run] shuffle resolved: False, True (a sweep of its own) or "walk" (in the walk along x).
    CUDA only; a thread's lane is its loop index mod 32, so blocks must be whole warps."""
    if shuffle == "auto":  # (only where blocks are whole warps)
        shuffle = SHUFFLE_LAST_AXIS.get((arch, precision), False) if block_dim % WARP == 0 else False
    if shuffle and arch != "cuda":
        raise ValueError(f"[run] shuffle = {_toml(shuffle)} needs arch = 'cuda' (warp shuffles are GPU instructions)")
    if shuffle and block_dim % WARP:
        raise ValueError(f"[run] shuffle needs block_dim a multiple of {WARP}, not {block_dim}")
    return shuffle


def skips_idle(run: RunTable, idle_model: bool, segments, reach: int) -> bool:
    """[run] skip_idle resolved: auto skips where the model declares idle(). Skipping walks
    segments no longer than a tile (a walk then touches one tile or two): the default segments
    are cut to a tile, longer ones asked for in [run] segment are refused. (Through warp
    shuffles a warp skips only where none of its lanes' segments is active.) A step carries
    values at most `reach` cells (the stencil's reach per stage times the stages): the
    neighbour tiles that are active around a busy one must be at least that wide."""
    skip = run.skip_idle
    if skip is True and not idle_model:
        raise ValueError("[run] skip_idle = true needs a model that declares idle() (which cells a step "
                         "cannot change)")
    skip = idle_model if skip == "auto" else bool(skip)
    tile = int(run.idle_tile)
    if skip and tile < reach:
        raise ValueError(f"[run] idle_tile = {tile}: a step of this scheme carries values up to {reach} cells "
                         f"(its stencil's reach times its stages), farther than the neighbouring tiles skip_idle "
                         f"keeps active; use idle_tile >= {reach}")
    if skip and max(segments) > tile and run.segment:
        raise ValueError(f"[run] segment: skip_idle needs segments of at most idle_tile = {tile} cells, "
                         f"not {max(segments)}")
    return skip


def fuse_choice(fuse, shuffle):
    """[run] fuse ("auto" or a boolean) given [run] shuffle: the shuffle sweep asked for
    explicitly (shuffle = true, a sweep of the last axis) keeps auto from fusing and
    contradicts fuse = true (the fused stage solves the last axis inside the walk along x);
    "walk" fuses: the walk along x then solves the last axis through shuffles."""
    asked = shuffle is True
    if fuse is True and asked:
        raise ValueError("[run] shuffle = true solves the last axis in a warp-shuffle sweep of its own; fuse = true "
                         "solves it inside the sweep along x")
    return False if fuse == "auto" and asked else fuse


def _fuses(scheme: SchemeTable, reach: int) -> bool:
    """[run] fuse = "auto": one sweep per stage for narrow stencils and solvers that are not costly."""
    method = registry.methods.get(scheme.method)
    costly = not method.own_flux and registry.riemann_solvers.get(scheme.riemann).costly
    return reach <= FUSE_MAX_GHOST and not costly


def reconstructs_per_cell(reconstruct: str, variables: str, arch: str, precision: str, reach: int) -> bool:
    """Whether the sweeps reconstruct each cell once for both of its faces ([run] reconstruct),
    for a reconstruction reading `reach` cells on each side of a face: only where the
    reconstructed variables of a cell depend on that cell alone (primitive, conserved)."""
    if reconstruct == "face" or not registry.reconstructed_variables.get(variables).per_cell:
        if reconstruct == "cell":
            raise ValueError(f"[run] reconstruct = 'cell' needs variables whose transform is local to a cell "
                             f"(primitive or conserved), not '{variables}'")
        return False
    return reconstruct == "cell" or reach < RECONSTRUCT_PER_FACE.get((arch, precision), reach + 1)


def density_limiter_unfit(scheme: SchemeTable, reconstruct: str = "auto") -> str | None:
    """Why [scheme] density_limiter cannot act with this scheme (it needs both face states of a
    cell at once, averaging to the cell's mean), or None where it can."""
    method, variables = registry.methods.get(scheme.method), scheme.variables
    if method.per_face or method.own_flux or reconstruct == "face" \
            or not registry.reconstructed_variables.get(variables).per_cell:
        return (f"[scheme] density_limiter needs both face states of a cell at once: finite volumes with variables "
                f"= 'primitive' or 'conserved' and [run] reconstruct 'auto' or 'cell' (here method = "
                f"'{method.name}', variables = '{variables}', reconstruct = '{reconstruct}')")
    if registry.reconstructions.get(scheme.reconstruction).needs_model:
        return (f"[scheme] density_limiter scales face states that average to the cell's mean; reconstruction = "
                f"'{scheme.reconstruction}' predicts them half a step ahead")
    return None


def _per_cell(reconstruct: str, scheme: SchemeTable, arch: str, precision: str, reach: int) -> bool:
    """reconstructs_per_cell, for a method whose face fluxes have face states; the others
    (finite differences) reconstruct per face. The density limiter needs both face states of
    a cell at once: per cell, whatever the measured rules say."""
    method = registry.methods.get(scheme.method)
    if scheme.density_limiter:
        unfit = density_limiter_unfit(scheme, reconstruct)
        if unfit:
            raise ValueError(unfit)
        return True
    if method.per_face:
        if reconstruct == "cell":
            raise ValueError(f"[run] reconstruct = 'cell' needs face states, which method = '{method.name}' "
                             f"does not make; use 'face' or 'auto'")
        return False
    return reconstructs_per_cell(reconstruct, scheme.variables, arch, precision, reach)


def stencil_reach(scheme: SchemeTable) -> int:
    """Cells a face flux of `scheme` reads on each side of its face: the reconstruction's reach,
    or that of a method with its own face flux."""
    method = registry.methods.get(scheme.method)
    return method.reach if method.own_flux else registry.reconstructions.get(scheme.reconstruction).reach


def sweep_segments(segment, dim: int, arch: str = "cpu", precision: str = "f32", cells=None) -> list:
    """Per-axis segment lengths from the [run] segment key (int, per-axis sequence, or empty:
    the measured defaults, shortened on a grid of `cells` too small to fill the device)."""
    if isinstance(segment, int):
        return [segment] * dim
    if not segment:
        lengths = [SEGMENT_STRIDED.get((arch, precision), 16)] * (dim - 1) + [SEGMENT_CONTIGUOUS]
        return _filling(lengths, cells, FILL_THREADS.get(arch)) if cells and arch in FILL_THREADS else lengths
    if len(segment) != dim:
        raise ValueError(f"[run] segment has {len(segment)} values for a {dim}D grid")
    return list(segment)


def _filling(lengths: list, cells, threads: int) -> list:
    """The strided axes' segments halved (down to MIN_SEGMENT) until each walk along them has
    `threads` threads: fewer idle SMs on small grids, for a face solved twice more per segment."""
    total = _product(cells)
    lengths = list(lengths)
    for axis in range(len(cells) - 1):
        while lengths[axis] > MIN_SEGMENT and total // cells[axis] * -(-cells[axis] // lengths[axis]) < threads:
            lengths[axis] = max(MIN_SEGMENT, lengths[axis] // 2)
    return lengths


def resolve(scheme: SchemeTable, run: RunTable, arch: str, precision: str, cells, boundaries,
            idle_model: bool = False) -> KernelPlan:
    """The plan of a case's [scheme] and [run] tables (a ResolvedCase's, or their mappings as
    case.load_case gives them) on a grid of `cells` (per axis) with `boundaries` (per axis: lower
    and upper kind), for a model that declares idle() or not; ValueError names the key at fault."""
    scheme, run = SchemeTable.of(scheme), RunTable.of(run)
    cells = tuple(int(n) for n in cells)
    dim = len(cells)
    stages = registry.integrators.get(scheme.integrator).load()
    if scheme.retry and not run.keep_last_good:
        raise ValueError("[scheme] retry needs [run] keep_last_good = true (a retried step starts again from the "
                         "kept state)")
    schemes = (scheme,) + ((scheme.retried(),) if scheme.retry else ())
    reaches = [stencil_reach(s) for s in schemes]
    ghost = max(reaches)
    for axis, n in enumerate(cells):
        mirrored = [kind for kind in boundaries[axis] if kind in MIRRORED_KINDS]
        if n < ghost and mirrored:  # its mirror image would reach past the far side
            raise ValueError(f"[grid] cells: {n} cells along {'xyz'[axis]}, fewer than the {ghost} ghost layers "
                             f"the scheme's stencils reach; a {mirrored[0]} face's mirror image needs at least "
                             f"{ghost}")
    segments = tuple(sweep_segments(run.segment, dim, arch, precision, cells))
    split = bool(scheme.dimensional_splitting) and dim > 1
    if split and len(stages) != 1:
        raise ValueError(f"[scheme] dimensional_splitting takes a one-stage integrator (integrator = 'euler'): "
                         f"each axis is a whole step of its own, not a stage of '{scheme.integrator}'")
    # (a step's sub-steps reach a stencil each, like stages)
    skip = skips_idle(run, idle_model, segments, reach=max(reaches) * (dim if split else len(stages)))
    if skip:  # (the measured defaults, shortened to a tile)
        segments = tuple(min(length, int(run.idle_tile)) for length in segments)
    per_cell = tuple(_per_cell(run.reconstruct, s, arch, precision, reach) for s, reach in zip(schemes, reaches))
    fuse = fuse_choice(run.fuse, run.shuffle)
    limited = any(s.density_limiter for s in schemes)
    if limited and fuse is True:
        raise ValueError("[scheme] density_limiter needs both face states of every cell, which the faces a fused "
                         "stage solves across its walk do not have; leave [run] fuse 'auto' (then not fused) or false")
    shuffle = uses_shuffle(run.shuffle, arch, precision, run.block_dim)
    fused = ((_fuses(schemes[0], reaches[0]) if fuse == "auto" else bool(fuse)) and dim > 1 and not split
             and not limited)
    if split:  # each axis' sweep updates U on its own (no fused walk, no shuffles across the walk)
        shuffle = False
    # In 1D the last axis is x, and it is walked. A fused stage's walk along x takes "walk" too
    # where its faces are not first order (FUSED_SHUFFLE_MIN_GHOST).
    if shuffle == "walk" and dim > 1 and not (fused and reaches[0] < FUSED_SHUFFLE_MIN_GHOST):
        last_axis = LastAxis.SHUFFLE_IN_WALK
    elif shuffle is True and not fused:
        last_axis = LastAxis.SHUFFLE_SWEEP
    else:
        last_axis = LastAxis.WALKED
    in_walk = last_axis is LastAxis.SHUFFLE_IN_WALK
    walked = (0,) if fused else tuple(range(dim - 1 if in_walk else dim))
    across = tuple(range(1, dim - 1 if in_walk else dim)) if fused else ()
    # SSP stages read U0 whatever keep_last_good says; then the last good state is kept anyway.
    keep = bool(run.keep_last_good) or any(stage.c0 != 0.0 for stage in stages)
    return KernelPlan(arch=arch, precision=precision, cells=cells, schemes=schemes,
                      integrator=scheme.integrator, stages=tuple(stages), ghost=ghost, segments=segments,
                      block_dim=int(run.block_dim), per_cell=per_cell, fused=fused, last_axis=last_axis,
                      walked=walked, across=across, prefetch=arch in PREFETCH_ARCHS,
                      fallback=bool(scheme.positivity_fallback), keep_last_good=keep,
                      skip_idle=skip, idle_tile=int(run.idle_tile), split=split)
