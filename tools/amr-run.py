"""An adaptive case run to its end with the figures AMR is judged by: steps, leaf cells per
level, wall time, leaf cell-updates per second (the sum over steps of the leaf cells stepped,
over the wall time of the steps after the first, regrids included), the regrids' share of it, and the pool's
device bytes per leaf cell.

    python3 tools/amr-run.py CASE.toml [--set KEY=VALUE ...] [--arch cuda] [--precision f32]
                             [--planes DIR [--plane-z Z]] [--kernel-profile]

--planes DIR: a 3D run's leaves on the plane z = Z (default 0) at the start, at each [output]
interval and at the end, as 2D adaptive snapshots listed in DIR/series.pvd (small, even for a
deep forest: `taichiflow view DIR --blocks` draws them; run/adaptive_outputs.write_plane).

--kernel-profile: Taichi's kernel profiler on; at the end, each kernel's launches and device time
and their sum against the wall time (what is left is the host's). The profiler times each launch
on its own, so the run's own figures are then not its speed.
"""
import argparse
import json
import os
import time

from pathlib import Path

import taichi as ti

from taichiflow.case import dump_toml, load_case
from taichiflow.io import PvdSeries
from taichiflow.run.adaptive import AdaptiveRun
from taichiflow.run.adaptive_outputs import write_plane
from taichiflow.run.stopping import output_times

parser = argparse.ArgumentParser()
parser.add_argument("case")
parser.add_argument("--set", action="append", default=[])
parser.add_argument("--arch", default="auto")
parser.add_argument("--precision", default="auto")
parser.add_argument("--max-steps", type=int, default=0)
parser.add_argument("--planes", metavar="DIR")
parser.add_argument("--plane-z", type=float, default=0.0)
parser.add_argument("--kernel-profile", action="store_true")
args = parser.parse_args()
if args.kernel_profile:
    os.environ["TI_KERNEL_PROFILER"] = "1"  # (read by ti.init, before the run starts Taichi)
case = load_case(args.case, args.set)
case["run"].update(arch=args.arch, precision=args.precision)
started = time.perf_counter()
if args.planes and (len(case["grid"]["cells"]) != 3
                    or not case["grid"]["lower"][2] <= args.plane_z < case["grid"]["upper"][2]):
    parser.error(f"--planes needs a 3D case and --plane-z within its z range (got z = {args.plane_z})")
run = AdaptiveRun(case)
planes = []
if args.planes:
    folder = Path(args.planes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.toml").write_text(dump_toml(case))
    series = PvdSeries(folder / "series.pvd")
    planes = output_times(case["time"]["end"], case["output"]["interval"])


written = {"count": 0, "seconds": 0.0}  # (the planes' time is left out of the rates)


def plane():
    began = time.perf_counter()
    name = f"plane_{written['count']:04d}.vtu"
    cut = write_plane(run, folder / name, args.plane_z, case["output"]["fields"])
    series.add(run.t, name)
    written["count"] += 1
    written["seconds"] += time.perf_counter() - began
    print(f"t = {run.t:.6g}: {cut} leaves on z = {args.plane_z} in {folder / name}", flush=True)


if planes:
    plane()
run.advance(planes[0] if planes else case["time"]["end"], max_steps=1)  # (compiles the step's kernels: not timed)
ti.sync()
built = time.perf_counter() - started
if args.kernel_profile:
    ti.profiler.clear_kernel_profiler_info()  # (the steps' kernels only)
end = case["time"]["end"]
updates, steps = 0, 0
ti.sync()
started = time.perf_counter()
while run.t < end * (1 - 1e-14) and not (args.max_steps and steps >= args.max_steps):
    cells = run.leaf_cells()
    run.advance(planes[0] if planes else end, max_steps=1)
    updates += cells
    steps += 1
    if planes and run.t >= planes[0] * (1 - 1e-14):
        planes.pop(0)
        plane()
    if steps % 200 == 0:
        print(f"step {steps + 1}, t = {run.t:.6g}, leaf blocks per level {run.solver.forest.leaf_count_per_level()}, "
              f"{time.perf_counter() - started:.1f} s", flush=True)
ti.sync()
wall = time.perf_counter() - started - written["seconds"]
pool = run.solver.pool
dim, N = pool.dim, pool.N
finest = [r * N * 2 ** run.solver.forest.max_level for r in run.solver.forest.roots]
print(json.dumps({
    "case": args.case, "arch": run.case["run"]["arch"], "precision": run.case["run"]["precision"],
    "steps": steps + 1, "t": run.t, "build_s": round(built, 2), "wall_s": round(wall, 3),
    "leaf_blocks_per_level": run.solver.forest.leaf_count_per_level(), "leaf_cells": run.leaf_cells(),
    "finest_uniform_cells": int(__import__("numpy").prod(finest)),
    "leaf_cell_updates_per_s": updates / wall, "regrid_share": run.regrid_seconds / wall,
    "pool_bytes_per_leaf_cell": pool.resident_bytes() / run.leaf_cells(),
    "pool_bytes_per_slot_cell": pool.resident_bytes() / (pool.capacity * N ** dim),
}))
if args.kernel_profile:
    records = ti.profiler.get_kernel_profiler_total_time()
    print(f"kernel profiler: {records:.3f} s on the device over the steps, wall of the steps {wall:.3f} s")
    ti.profiler.print_kernel_profiler_info("count")
