"""An adaptive case run to its end with the figures AMR is judged by: steps, leaf cells per
level, wall time, leaf cell-updates per second (the sum over steps of the leaf cells stepped,
over the wall time of the steps after the first, regrids included), the regrids' share of it, and the pool's
device bytes per leaf cell.

    python3 tools/amr-run.py CASE.toml [--set KEY=VALUE ...] [--arch cuda] [--precision f32]
"""
import argparse
import json
import time

import taichi as ti

from taichiflow.case import load_case
from taichiflow.run.adaptive import AdaptiveRun

parser = argparse.ArgumentParser()
parser.add_argument("case")
parser.add_argument("--set", action="append", default=[])
parser.add_argument("--arch", default="auto")
parser.add_argument("--precision", default="auto")
parser.add_argument("--max-steps", type=int, default=0)
args = parser.parse_args()
case = load_case(args.case, args.set)
case["run"].update(arch=args.arch, precision=args.precision)
started = time.perf_counter()
run = AdaptiveRun(case)
run.advance(case["time"]["end"], max_steps=1)  # (compiles the step's kernels: not timed)
ti.sync()
built = time.perf_counter() - started
end = case["time"]["end"]
updates, steps = 0, 0
ti.sync()
started = time.perf_counter()
while run.t < end * (1 - 1e-14) and not (args.max_steps and steps >= args.max_steps):
    cells = run.leaf_cells()
    run.advance(end, max_steps=1)
    updates += cells
    steps += 1
ti.sync()
wall = time.perf_counter() - started
pool = run.solver.pool
dim, N = pool.dim, pool.N
finest = [r * N * 2 ** run.solver.forest.max_level for r in run.solver.forest.roots]
print(json.dumps({
    "case": args.case, "arch": case["run"]["arch"], "precision": case["run"]["precision"],
    "steps": steps + 1, "t": run.t, "build_s": round(built, 2), "wall_s": round(wall, 3),
    "leaf_blocks_per_level": run.solver.forest.leaf_count_per_level(), "leaf_cells": run.leaf_cells(),
    "finest_uniform_cells": int(__import__("numpy").prod(finest)),
    "leaf_cell_updates_per_s": updates / wall, "regrid_share": run.regrid_seconds / wall,
    "pool_bytes_per_leaf_cell": pool.resident_bytes() / run.leaf_cells(),
    "pool_bytes_per_slot_cell": pool.resident_bytes() / (pool.capacity * N ** dim),
}))
