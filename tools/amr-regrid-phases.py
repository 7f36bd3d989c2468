"""Where an adaptive run's regrids spend their time on the device's machine: each phase of
`PackSolver.adapt` timed with the device synchronised before and after it, beside the steps.

    python3 tools/amr-regrid-phases.py CASE.toml [--set KEY=VALUE ...] [--arch cuda]
                                       [--precision f32] [--max-steps N]

The phases, as solver.py runs them: the indicators (ghost fill, one launch, the flags read
back), the forest's regrid on the host (`Forest.refined_where`), the slot plan, the tables,
the upload's staging, the launch that makes the new blocks, the check of the new forest, and
the rest (the regions' levels, the matching of old and new leaves, padding, Python).
A regrid that changes nothing has only the first two. The synchronisations cost a little
(every phase waits for the device): the total is a bound on what the run spends, not its
figure; `tools/amr-run.py` gives the run's own rate and share. Prints one JSON line and a
table of the median and total milliseconds per phase over the regrids that changed the forest
and those that did not.
"""
import argparse
import json
import statistics
import time
from collections import defaultdict

import taichi as ti

from taichiflow.case import load_case
from taichiflow.kernels.amr import solver as solver_module
from taichiflow.kernels.amr.pool import BlockPool
from taichiflow.mesh.forest import Forest
from taichiflow.run.adaptive import AdaptiveRun

parser = argparse.ArgumentParser()
parser.add_argument("case")
parser.add_argument("--set", action="append", default=[])
parser.add_argument("--arch", default="auto")
parser.add_argument("--precision", default="auto")
parser.add_argument("--max-steps", type=int, default=0)
args = parser.parse_args()

current = {"regrid": None}  # the phases' seconds of the regrid under way


def timed(label, function):
    """`function` with the device synchronised around it, its seconds added to the regrid's
    `label` while a regrid runs."""
    def wrapper(*a, **k):
        if current["regrid"] is None:
            return function(*a, **k)
        ti.sync()
        began = time.perf_counter()
        try:
            return function(*a, **k)
        finally:
            ti.sync()
            current["regrid"][label] += time.perf_counter() - began
    return wrapper


Forest.refined_where = timed("forest", Forest.refined_where)
BlockPool.stage = timed("staging", BlockPool.stage)
solver_module.plan_regrid = timed("slot plan", solver_module.plan_regrid)
solver_module.updated_tables = timed("tables", solver_module.updated_tables)
solver_module.PackSolver._indicator_codes = timed("indicators", solver_module.PackSolver._indicator_codes)
solver_module.PackSolver.check_state = timed("check", solver_module.PackSolver.check_state)

case = load_case(args.case, args.set)
case["run"].update(arch=args.arch, precision=args.precision)
run = AdaptiveRun(case)
run.solver._apply = timed("new blocks", run.solver._apply)
regrid = run.regrid
regrids = []


def timed_regrid():
    """The whole regrid, with its phases, kept as one row."""
    current["regrid"] = defaultdict(float)
    ti.sync()
    began = time.perf_counter()
    try:
        regrid()
    finally:
        ti.sync()
        row = current["regrid"]
        row["total"] = time.perf_counter() - began
        row["rest"] = row["total"] - sum(v for k, v in row.items() if k != "total")
        row["changed"] = "new blocks" in row  # (the launch runs only where the forest changed)
        regrids.append(row)
        current["regrid"] = None


run.regrid = timed_regrid
end = case["time"]["end"]
run.advance(end, max_steps=1)  # (compiles: not counted)
regrids.clear()
steps = 0
ti.sync()
started = time.perf_counter()
while run.t < end * (1 - 1e-14) and not (args.max_steps and steps >= args.max_steps):
    run.advance(end, max_steps=1)
    steps += 1
ti.sync()
wall = time.perf_counter() - started
phases = ["indicators", "forest", "slot plan", "tables", "staging", "new blocks", "check", "rest", "total"]
summary = {"case": args.case, "steps": steps, "wall_s": round(wall, 3), "leaf_blocks": len(run.solver.forest.levels),
           "regrid_share": sum(r["total"] for r in regrids) / wall}
print(f"{'phase (ms)':<12} | {'changed: median':>16} | {'total':>9} | {'unchanged: median':>18} | {'total':>9}")
for phase in phases:
    for kind, rows in (("changed", [r for r in regrids if r["changed"]]), ("unchanged", [r for r in regrids if not r["changed"]])):
        values = [1e3 * r[phase] for r in rows]
        summary[f"{kind}_{phase}_ms"] = [round(statistics.median(values), 3) if values else None, round(sum(values), 1)]
    c, u = summary[f"changed_{phase}_ms"], summary[f"unchanged_{phase}_ms"]
    print(f"{phase:<12} | {c[0]!s:>16} | {c[1]:>9} | {u[0]!s:>18} | {u[1]:>9}")
summary["regrids_changed"] = sum(1 for r in regrids if r["changed"])
summary["regrids_unchanged"] = len(regrids) - summary["regrids_changed"]
print(json.dumps(summary))
