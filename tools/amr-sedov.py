"""Sedov 3D with AMR against the uniform grid of its finest level, same end time: shock radii
(tests/test_sedov.shock_radius of the density, the adaptive run resampled on its finest grid),
the leaf cells against the uniform cells (at the end and the largest over the run), steps and
wall times.

    python3 tools/amr-sedov.py [--arch cuda] [--precision f32] [--finest 256] [--root 32] [--block 8]
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import taichi as ti

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_sedov import shock_radius  # noqa: E402
from taichiflow.case import load_case  # noqa: E402
from taichiflow.run.adaptive import AdaptiveRun  # noqa: E402
from taichiflow.run.driver import Simulation  # noqa: E402

CASES = Path(__file__).resolve().parent.parent / "cases"
parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="auto")
parser.add_argument("--precision", default="auto")
parser.add_argument("--finest", type=int, default=256)
parser.add_argument("--root", type=int, default=32)
parser.add_argument("--block", type=int, default=8)
parser.add_argument("--end", type=float, default=0.05)
parser.add_argument("--capacity", type=int, default=0, help="[amr] capacity (0: the case's default)")
args = parser.parse_args()
levels = int(round(math.log2(args.finest / args.root)))
centres = [-0.5 + (np.arange(args.finest) + 0.5) / args.finest] * 3
grid = np.meshgrid(*centres, indexing="ij")


def pinned(case):
    case["run"].update(arch=args.arch, precision=args.precision)
    return case


uniform = pinned(load_case(CASES / "sedov3d.toml", [f"grid.cells={[args.finest] * 3}", f"time.end={args.end}"]))
sim = Simulation(uniform)
started = time.perf_counter()
sim.advance(args.end)
ti.sync()
uniform_s = time.perf_counter() - started
uniform_radius = shock_radius(sim.fields()["rho"].astype(np.float64), grid)
uniform_steps = sim.step_count
del sim

adaptive = pinned(load_case(CASES / "sedov3d_amr.toml", [f"grid.cells={[args.root] * 3}", f"amr.block_cells={args.block}",
                                                          f"amr.max_level={levels}", f"time.end={args.end}",
                                                          f"amr.capacity={args.capacity}"]))
run = AdaptiveRun(adaptive)
largest, mean = run.leaf_cells(), 0.0
started = time.perf_counter()
while run.t < args.end * (1 - 1e-14):
    run.advance(args.end, max_steps=1)
    largest = max(largest, run.leaf_cells())
    mean += run.leaf_cells()
ti.sync()
adaptive_s = time.perf_counter() - started
mean /= max(run.step_count, 1)
rho = run.uniform()[..., run.model.primitive.offsets["rho"]]
radius = shock_radius(rho, grid)
cells = args.finest ** 3
print(json.dumps({
    "finest": args.finest, "root": args.root, "block": args.block, "levels": levels, "end": args.end,
    "arch": sim.arch, "precision": sim.precision,
    "uniform": {"radius": uniform_radius, "steps": uniform_steps, "wall_s": round(uniform_s, 2)},
    "amr": {"radius": radius, "steps": run.step_count, "wall_s": round(adaptive_s, 2), "regrid_s": round(run.regrid_seconds, 2),
            "leaf_cells_end": run.leaf_cells(), "leaf_cells_largest": largest, "leaf_cells_mean": round(mean),
            "blocks_per_level": run.solver.forest.leaf_count_per_level()},
    "radius_ratio": radius / uniform_radius, "cells_end_share": run.leaf_cells() / cells,
    "cells_largest_share": largest / cells, "cells_mean_share": mean / cells,
}))
