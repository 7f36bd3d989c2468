"""`taichiflow bench`: throughput of the time step in cell-updates per second.

Builds a periodic box with a smooth 3D density/velocity wave (so limiters and WENO
weights do real work), compiles and warms up, then times `steps` steps with device
synchronization, `repeats` times, and reports the median. Under `mpirun -n K` each rank
steps its block of the same grid (the wave is the whole grid's), the ranks start and stop
each timing together, and rank 0 reports: the whole grid's rate and the rate per rank.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import taichi as ti

from .case import load_case
from .model import load_model
from .run import Simulation

CASE = """
[case]
name = "bench"
[model]
name = "{model}"
[run]
arch = "{arch}"
precision = "{precision}"
[grid]
cells = {cells}
upper = {upper}
[scheme]
reconstruction = "{reconstruction}"
limiter = "{limiter}"
riemann = "{riemann}"
integrator = "{integrator}"
cfl = 0.4
[time]
end = 1.0
[boundary]
{boundary}
[initial]
background = {background}
"""

# The workloads of the GPU-speed targets (docs/performance.md): `taichiflow bench --sweep`.
SWEEP = [
    {"model": "euler", "reconstruction": "weno5", "riemann": "hllc", "integrator": "lsrk3", "precision": "f32",
     "target": 3.0e9},
    {"model": "euler", "reconstruction": "weno5", "riemann": "hllc", "integrator": "lsrk3", "precision": "f64",
     "target": 1.2e9},
    {"model": "two_phase", "reconstruction": "weno5", "riemann": "hllc", "integrator": "lsrk3", "precision": "f32",
     "target": 2.0e9},
    {"model": "euler", "reconstruction": "plm", "riemann": "hll", "integrator": "ssprk2", "precision": "f32",
     "target": 5.0e9},
    {"model": "mhd", "reconstruction": "weno5", "riemann": "hll", "integrator": "lsrk3", "precision": "f32",
     "target": 1.5e9},
    {"model": "mhd", "reconstruction": "weno5z", "riemann": "hlld", "integrator": "lsrk3", "precision": "f32",
     "target": 1.5e9},
    # (cfl 0.3: the bench's waves run along the diagonal, where SSP-RK2 with PLM and HLL sums
    # three axes' Courant numbers; at 0.4 the MHD state lost its pressure in 23 steps, at 0.3 not)
    {"model": "mhd", "reconstruction": "plm", "riemann": "hll", "integrator": "ssprk2", "precision": "f64",
     "target": 9.0e8, "overrides": ["scheme.cfl=0.3"]},
]
# Shallow water in 2D on as many cells as the 3D rows (--cells 256: 4096^2), f32, all wet and 10%
# wet, skipping dry tiles and not: the speed-up of skipping at 10% wet (target 5x) is the ratio
# of the two 10% rows, the all-wet pair its overhead. Rates count every cell of the grid, dry
# ones included. (No absolute target.)
_SHALLOW = {"model": "shallow_water", "reconstruction": "plm", "riemann": "hll", "integrator": "ssprk2",
            "precision": "f32", "dim": 2, "target": None}
SWEEP += [{**_SHALLOW, "wet_fraction": wet, "overrides": [f"run.skip_idle={skip}"]}
          for wet in (1.0, 0.1) for skip in ("true", "false")]
# Special-relativistic hydrodynamics (f32; no absolute target yet): seed 000's MUSCL-Hancock +
# MUSTA-FORCE (MINBEE, one Euler stage, cfl 1/3 in 3D), WENO5 + HLL(E), and seed 002's SHASTA
# split by axes (its three axis kernels compile in about 110 s on an H200; unsplit, its one 3D
# kernel, every face recovering the primitives of 14 cells' half-step states, did not finish
# compiling in 70 s at 64^3, and a sweep waiting for it lost every row: docs/performance.md).
SWEEP += [
    {"model": "srhd", "reconstruction": "muscl_hancock", "limiter": "minbee", "riemann": "musta",
     "integrator": "euler", "precision": "f32", "target": None,
     "overrides": ["scheme.cfl=0.3", "scheme.force_fallback=true"]},
    {"model": "srhd", "reconstruction": "weno5", "riemann": "hll", "integrator": "lsrk3", "precision": "f32",
     "target": None},
    {"model": "srhd_ultra", "reconstruction": "weno5", "riemann": "rusanov", "integrator": "euler", "precision": "f32",
     "target": None, "overrides": ["scheme.method='shasta'", "scheme.dimensional_splitting=true"]},
]


# A 3-vector other than the velocity (a magnetic field): a uniform part plus a wave across the
# direction (1, 1, 1) the phase varies along, so that its divergence is zero, per component.
FIELD_UNIFORM, FIELD_WAVE = (1.0, 0.5, 0.25), (0.3, -0.3, 0.0)


def set_smooth_wave(solver, layout, velocity=None, whole=None):
    """A smooth periodic primitive state, density and velocity waves on every axis, set on
    the device (a 1024^3 state built with numpy would take tens of GB of host memory). Other
    3-vectors than the model's `velocity` get a divergence-free field (FIELD_UNIFORM,
    FIELD_WAVE): a magnetic field with div B != 0 drove the MHD state to p < 0 in 40 steps.
    `whole`: the whole grid's cells, where the solver holds one block of it (MPI)."""
    W, dim, cells = solver.W, solver.dim, solver.cells
    whole, first_cell = tuple(whole or cells), _first_cell(solver)
    components = []  # (index in W, -1 for a scalar, the vector component, or 3 + it for a field)
    for name in layout.names:
        offset = layout.offsets[name]
        if layout.sizes[name] == 1:
            components.append((offset, -1))
        else:
            field = name != velocity
            components += [(offset + c, c + 3 * field) for c in range(3 if field else dim)]

    @ti.kernel
    def fill():
        for I in ti.grouped(ti.ndrange(*cells)):
            phase = ti.cast(0.0, ti.f64)
            for d in ti.static(range(dim)):
                phase += 2 * np.pi * (I[d] + first_cell[d] + 0.5) / whole[d]
            w = ti.Vector.zero(solver.dtype, layout.n)
            for k, c in ti.static(components):
                value = ti.cast(0.0, ti.f64)
                if ti.static(c < 0):
                    value = 1.0 + 0.2 * ti.sin(phase)
                elif ti.static(c < 3):
                    value = 0.3 * ti.cos(phase + c)
                else:
                    value = FIELD_UNIFORM[c - 3] + FIELD_WAVE[c - 3] * ti.cos(phase)
                w[k] = ti.cast(value, solver.dtype)
            W[I] = w

    fill()
    solver.transfer.conserve()


def _first_cell(solver) -> tuple:
    """The block's first cell in the whole grid (zeros where the solver holds the whole grid)."""
    return tuple(solver.offset) or (0,) * solver.dim


def set_idle_beyond(solver, fraction: float, whole=None):
    """Every conserved variable but the static ones zero (the model's idle state: a dry bed)
    in the cells whose centre lies beyond `fraction` of the box along x (of the whole grid,
    `whole` cells, where the solver holds one block of it)."""
    model = solver.phys.model
    if "idle" not in model.functions:
        raise ValueError(f"--wet-fraction needs a model that declares idle(); '{model.name}' does not")
    U, cells = solver.U, solver.cells
    first, length = _first_cell(solver)[0], tuple(whole or cells)[0]
    moving = [k for k in range(solver.phys.U.n) if k not in solver.phys.static_indices]

    @ti.kernel
    def dry():
        for I in ti.grouped(ti.ndrange(*cells)):
            if (I[0] + first + 0.5) / length > fraction:
                for k in ti.static(moving):
                    U[I][k] = 0.0

    dry()
    solver.idle.reset()
    solver.refresh_primitives()


def _scheme_label(solver, riemann: str, integrator: str) -> str:
    """reconstruction+riemann+integrator, or method+integrator for a method with its own flux."""
    scheme = solver.schemes[0]
    if scheme.riemann is None:  # (SHASTA: neither a reconstruction nor a Riemann solver)
        return f"{scheme.recon.name}+{integrator}"
    return f"{scheme.recon.name}+{riemann}+{integrator}"


def _active_share(solver, comm) -> float:
    """The share of tiles the kernels computed at the end of the timing (over every block)."""
    active, total = comm.allreduce_sum(solver.idle.active_counts())
    return float(active) / float(total)


def _background(model: str) -> str:
    """An inline TOML state naming every primitive variable (smooth_wave then sets them)."""
    layout = load_model(model).primitive
    values = [f"{name} = {'[0.0, 0.0, 0.0]' if layout.sizes[name] == 3 else '1.0'}" for name in layout.names]
    return "{ " + ", ".join(values) + " }"


def benchmark_case(model="euler", reconstruction="weno5", limiter="mc", riemann="hllc", integrator="lsrk3",
                   cells=128, dim=3, precision="f32", arch="auto", overrides=(), grid=None) -> dict:
    """The loaded case of a benchmark: a periodic unit box of cells^dim (or of `grid` cells)."""
    grid = list(grid) if grid else [cells] * dim
    dim = len(grid)
    text = CASE.format(model=model, arch=arch, precision=precision, cells=grid, upper=[1.0] * dim,
                       background=_background(model),
                       reconstruction=reconstruction, limiter=limiter, riemann=riemann, integrator=integrator,
                       boundary="\n".join(f'{"xyz"[d]} = "periodic"' for d in range(dim)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(text)
        return load_case(path, list(overrides))


def run_benchmark(model="euler", reconstruction="weno5", limiter="mc", riemann="hllc", integrator="lsrk3",
                  cells=128, dim=3, precision="f32", arch="auto", steps=20, repeats=5, overrides=(),
                  wet_fraction=None, grid=None) -> dict:
    """The median throughput of `steps` steps; with wet_fraction (a model with idle()), the
    cells beyond that fraction of x are made idle (a dry bed beside the water). `grid`: cells
    per axis, in place of cells^dim. Under MPI every rank returns the same figures."""
    from .parallel.comm import world

    comm = world()
    grid = list(grid) if grid else [cells] * dim
    sim = Simulation(benchmark_case(model, reconstruction, limiter, riemann, integrator, cells, dim, precision,
                                    arch, overrides, grid=grid))
    set_smooth_wave(sim.solver, sim.model.primitive, sim.model.velocity, whole=grid)
    if wet_fraction is not None:
        set_idle_beyond(sim.solver, wet_fraction, whole=grid)
    start = time.perf_counter()
    sim.advance(1.0, max_steps=1)
    ti.sync()
    first_step = float(comm.allreduce_max(np.array([time.perf_counter() - start]))[0])
    sim.advance(1.0, max_steps=3)
    ti.sync()
    timings = []
    for _ in range(repeats):
        target = sim.step_count + steps
        comm.barrier()  # (the ranks start together: each timing is the slowest rank's)
        start = time.perf_counter()
        sim.advance(1e30, max_steps=target)
        ti.sync()
        timings.append(time.perf_counter() - start)
    timings = comm.allreduce_max(np.array(timings))
    median = statistics.median(timings)
    n = int(np.prod(grid))
    solver = sim.solver
    block = int(np.prod(solver.cells))
    bytes_per_cell = solver.resident_bytes() / block
    traffic = solver.modelled_bytes_per_cell_step()
    rate = n * steps / median
    copy = float(comm.allreduce_sum(np.array([copy_bandwidth(solver, repeats)]))[0])  # (after the timing: it overwrites R)
    roof = copy / traffic
    return {
        "device": _device_name(sim.arch), "arch": sim.arch, "precision": precision,
        "model": model, "scheme": _scheme_label(solver, riemann, integrator),
        "grid": "x".join(map(str, grid)), "overrides": " ".join(overrides), "steps": steps, "repeats": repeats,
        "ranks": comm.size, "block": "x".join(map(str, solver.cells)), "exchange": solver.halo.exchange_path,
        "wet_fraction": wet_fraction, "active_tiles": _active_share(solver, comm),
        "first_step_s": first_step, "median_s": median, "timings_s": [float(t) for t in timings],
        "cell_updates_per_s": rate,
        "cell_updates_per_s_per_rank": rate / comm.size,
        "resident_bytes_per_cell": bytes_per_cell,
        "modelled_bytes_per_cell_step": traffic,
        "modelled_bandwidth_GBps": traffic * rate / 1e9,
        "copy_bandwidth_GBps": copy / 1e9,
        "memory_roof_cell_updates_per_s": roof,
        "of_memory_roof": rate / roof,
    }


def copy_bandwidth(solver, repeats: int) -> float:
    """Bytes per second (read + written) of a device copy of U into R: the bandwidth this
    machine gives a plain stream, which over the modelled bytes per cell-step makes the
    memory roof of the step (docs/performance.md)."""
    U, R = solver.U, solver.R

    @ti.kernel
    def copy():
        for I in ti.grouped(U):
            R[I] = U[I]

    copy()
    ti.sync()
    timings = []
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        copy()
        ti.sync()
        timings.append(time.perf_counter() - start)
    size = 4 if solver.dtype == ti.f32 else 8
    return 2 * int(np.prod(U.shape)) * U.n * size / statistics.median(timings)


def run_sweep(cells=256, arch="auto", steps=10, repeats=5, overrides=(), on_result=None) -> list[dict]:
    """Every workload of SWEEP, each with its target; one Taichi start per workload.
    on_result(result) is called as each workload ends (a sweep takes minutes: rows print as
    they come, and a sweep cut short keeps the rows it measured)."""
    results = []
    for work in SWEEP:
        settings = {k: v for k, v in work.items() if k not in ("target", "overrides")}
        dim = settings.get("dim", 3)
        settings["cells"] = round(cells ** (3 / dim))  # (the same number of cells in 1D, 2D, 3D)
        result = run_benchmark(**settings, arch=arch, steps=steps, repeats=repeats,
                               overrides=[*work.get("overrides", ()), *overrides])
        results.append({**result, "target": work["target"]})
        if on_result:
            on_result(results[-1])
    return results


def _device_name(arch: str) -> str:
    if arch != "cuda":
        import platform
        return f"cpu ({platform.processor() or platform.machine()})"
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return out.splitlines()[0] if out else "cuda"
    except (OSError, subprocess.SubprocessError):
        return "cuda"
