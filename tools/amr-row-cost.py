"""What a diagnostics row of an adaptive run costs, part by part, beside a step: the case built,
3 steps taken, then each part timed alone (the mean of 30 calls, the device synchronised).

    python3 tools/amr-row-cost.py CASE.toml [--set KEY=VALUE ...] [--arch cuda] [--precision f32]

docs/amr.md ("The diagnostics rows") has its figures for the cavity array on an H200.
"""
import argparse
import math
import time

import taichi as ti

from taichiflow.case import load_case
from taichiflow.exact_sum import column_sums
from taichiflow.run.adaptive import AdaptiveRun

parser = argparse.ArgumentParser()
parser.add_argument("case")
parser.add_argument("--set", action="append", default=[])
parser.add_argument("--arch", default="auto")
parser.add_argument("--precision", default="auto")
args = parser.parse_args()
case = load_case(args.case, args.set)
case["run"].update(arch=args.arch, precision=args.precision)
run = AdaptiveRun(case)
run.advance(case["time"]["end"], max_steps=3)
solver = run.solver


def timed(label: str, work, calls: int = 30) -> None:
    work()
    ti.sync()
    began = time.perf_counter()
    for _ in range(calls):
        work()
    ti.sync()
    print(f"{label:36s} {(time.perf_counter() - began) / calls * 1e3:8.3f} ms", flush=True)


print(f"{len(solver.forest.levels)} leaves, {run.leaf_cells()} leaf cells, a pool of {solver.pool.capacity} slots")
timed("a step", lambda: run.advance(case["time"]["end"], max_steps=1), calls=10)
timed("extrema (device, read back, least)", solver.extrema)
timed("totals (device, read back, sums)", solver.totals)
per_leaf = solver._block_totals()
timed("  of which the exact sums", lambda: column_sums(per_leaf))
timed("  math.fsum instead", lambda: [math.fsum(column) for column in per_leaf.T])
timed("repairs counted", solver.take_repair_count)
