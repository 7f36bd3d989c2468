"""`taichiflow bench --amr-blocks N`: the benchmark's box as a pack of N^dim blocks, every one
at the root level ([amr] max_level = 0), stepped by the adaptive solver: what the block pool
costs against the uniform kernels on the same grid (`taichiflow bench` without the flag).

The state is a smooth periodic wave along the diagonal (density, and the velocity along x),
set by the case's own `sine` perturbations. Each step reads the CFL rate back (the adaptive
run plans dt on the host), as a real adaptive run does.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np
import taichi as ti

from .bench import _device_name, benchmark_case
from .model import load_model
from .run.adaptive import AdaptiveRun


def _wave_perturbations(model, dim: int) -> str:
    """A --set override: sine perturbations of the model's density and of its velocity along
    x, along the diagonal."""
    k = [2 * math.pi] * dim
    waves = [f"{{ kind = 'sine', variable = '{model.density}', amplitude = 0.2, wavenumber = {k} }}"]
    if model.velocity:
        waves.append(f"{{ kind = 'sine', variable = '{model.velocity}_x', amplitude = 0.3, wavenumber = {k} }}")
    return f"initial.perturbations=[{', '.join(waves)}]"


def run_amr_benchmark(model="euler", reconstruction="weno5", limiter="mc", riemann="hllc", integrator="lsrk3",
                      cells=128, dim=3, precision="f32", arch="auto", steps=20, repeats=5, overrides=(),
                      block_cells=16) -> dict:
    """The median throughput of `steps` steps of the pack, and its device bytes per cell."""
    grid = [cells] * dim
    roots = [c // block_cells for c in grid]
    amr = [f"amr.block_cells={block_cells}", "amr.max_level=0", f"amr.capacity={int(np.prod(roots))}"]
    waves = _wave_perturbations(load_model(model), dim)
    case = benchmark_case(model, reconstruction, limiter, riemann, integrator, cells, dim, precision, arch,
                          [*amr, waves, "initial.values='point'", *overrides], grid=grid)
    start = time.perf_counter()
    run = AdaptiveRun(case)
    run.advance(1.0, max_steps=1)
    ti.sync()
    first_step = time.perf_counter() - start
    run.advance(1.0, max_steps=3)
    timings = []
    for _ in range(repeats):
        ti.sync()
        start = time.perf_counter()
        run.advance(1e30, max_steps=steps)
        ti.sync()
        timings.append(time.perf_counter() - start)
    median = statistics.median(timings)
    pool = run.solver.pool
    return {
        "device": _device_name(run.resolved.run.arch), "precision": run.resolved.run.precision, "model": model,
        "scheme": f"{reconstruction}+{riemann}+{integrator}", "grid": "x".join(map(str, grid)),
        "block_cells": block_cells, "blocks": pool.n_active, "steps": steps, "repeats": repeats,
        "first_step_s": first_step, "median_s": median, "timings_s": timings,
        "cell_updates_per_s": int(np.prod(grid)) * steps / median,
        "resident_bytes_per_cell": pool.resident_bytes() / (pool.capacity * block_cells ** dim),
    }
