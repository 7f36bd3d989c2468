"""The relativistic seeds' speed-up tables: each seed problem on CUDA (f32 and f64) against the
CPU backend with one thread on the same machine, as seeds 000 (Cygert et al., MUSTA-FORCE,
"over 200x" against one CPU core) and 002 (Gerhard et al., SHASTA, 160x) report them.

    python tools/seed-speedups.py                       # the table, every problem
    python tools/seed-speedups.py --gpu-cells 32 64 128 192 --cpu-cells 32 64 --steps 5
    python tools/seed-speedups.py --arches cpu > cpu.jsonl &     # the two halves apart, then
    python tools/seed-speedups.py --arches cuda > gpu.jsonl; wait
    python tools/seed-speedups.py --table cpu.jsonl gpu.jsonl    # one table

Every configuration runs in a process of its own (a fresh Taichi; the CPU ones with
TI_CPU_MAX_NUM_THREADS=1, several at once on different cores while the GPU ones run one after
another). Timing excludes compilation: the first step is run and synchronised, then `--steps`
steps are timed (3D problems), or the rest of the run to the case's end (1D problems, whose
whole runs take well under a minute). Rates count cells x steps over the timed wall time.
The speed-up of a grid is CUDA's rate over the one-thread CPU's rate on that same grid; a grid
the CPU was not run on has none (no extrapolation).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# name: (case file, 3D?, the seed and scheme it stands for, overrides of the case)
SHASTA_SPLIT = ("scheme.method='shasta'", "scheme.integrator='euler'", "scheme.dimensional_splitting=true")
PROBLEMS = {
    "marti_muller_1": ("sr_marti_muller_1.toml", False, "seed 000's 1D test, the case's scheme", ()),
    "marti_muller_2": ("sr_marti_muller_2.toml", False, "seed 000's 1D test, the case's scheme", ()),
    "blast_3d": ("sr_blast_3d.toml", True, "seed 000: MUSCL-Hancock (MINBEE) + MUSTA-FORCE, 3D", ()),
    "expanding_ball": ("sr_expanding_ball.toml", True, "seed 002's ball, the case's scheme (PLM + HLL + SSP-RK2)", ()),
    "expanding_ball_shasta": ("sr_expanding_ball.toml", True, "seed 002's ball with its scheme: SHASTA, the axes "
                              "one after the other", SHASTA_SPLIT),
}


def measure_one(problem: str, arch: str, precision: str, cells: int, steps: int) -> dict:
    """One configuration, in this process: the timed steps' rate after a first (compiling) step."""
    import taichi as ti
    from taichiflow.case import load_case
    from taichiflow.run import Simulation

    case_file, three_d, _, scheme = PROBLEMS[problem]
    overrides = ["output.interval=0", f"run.arch='{arch}'", f"run.precision='{precision}'", *scheme]
    if three_d:
        overrides.append(f"grid.cells=[{cells}, {cells}, {cells}]")
    case = load_case(ROOT / "cases" / case_file, overrides)
    sim = Simulation(case)
    end = case["time"]["end"]
    sim.advance(end, max_steps=1)
    ti.sync()
    start_steps = sim.step_count
    start = time.perf_counter()
    sim.advance(end, max_steps=start_steps + steps if three_d else 0)
    ti.sync()
    wall = time.perf_counter() - start
    timed = sim.step_count - start_steps
    n = math.prod(case["grid"]["cells"])
    return {"problem": problem, "arch": arch, "precision": precision, "cells": n,
            "grid": "x".join(map(str, case["grid"]["cells"])), "steps": timed, "wall_s": wall,
            "cell_updates_per_s": n * timed / wall, "retries": sim.retries}


def _command(problem, arch, precision, cells, steps):
    return [sys.executable, __file__, "--one", problem, arch, precision, str(cells), str(steps)]


def _measure(job, env=None) -> dict | None:
    """One configuration in a process of its own: its JSON line, printed as it comes."""
    done = subprocess.run(_command(*job), capture_output=True, text=True, env=env)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            print(line, flush=True)
            return json.loads(line)
    print(f"{job}: no result (rc {done.returncode})\n{done.stderr[-2000:]}", file=sys.stderr)
    return None


def run_table(problems, gpu_cells, cpu_cells, steps, cpu_jobs, arches=("cpu", "cuda")) -> list[dict]:
    """The CPU configurations in a pool of one-thread processes, the CUDA ones one at a time."""
    cpu_env = {**os.environ, "TI_CPU_MAX_NUM_THREADS": "1"}
    cpu_todo, gpu_todo = [], []
    for problem in problems:
        three_d = PROBLEMS[problem][1]
        for precision in ("f64", "f32"):
            if "cpu" in arches:
                cpu_todo += [(problem, "cpu", precision, cells, steps) for cells in (cpu_cells if three_d else [0])]
            if "cuda" in arches:
                gpu_todo += [(problem, "cuda", precision, cells, steps) for cells in (gpu_cells if three_d else [0])]
    with ThreadPoolExecutor(max_workers=cpu_jobs) as pool:  # (one-thread CPU runs on cores of their own)
        cpu_runs = [pool.submit(_measure, job, cpu_env) for job in cpu_todo]
        results = [_measure(job) for job in gpu_todo]
        results += [run.result() for run in cpu_runs]
    return [r for r in results if r]


def print_table(results):
    """Rows per problem and grid: CPU (one thread) and CUDA rates, and CUDA's speed-ups."""
    rate = {(r["problem"], r["arch"], r["precision"], r["grid"]): r["cell_updates_per_s"] for r in results}
    rows = sorted({(r["problem"], r["grid"], r["cells"]) for r in results}, key=lambda k: (k[0], k[2]))
    print(f"{'problem':>21} {'grid':>12} {'CPU 1 thread f64':>17} {'CPU f32':>10} {'CUDA f64':>10} "
          f"{'CUDA f32':>10} {'speed-up f64':>12} {'speed-up f32':>12}")
    for problem, grid, _ in rows:
        values = [rate.get((problem, a, p, grid)) for a, p in
                  (("cpu", "f64"), ("cpu", "f32"), ("cuda", "f64"), ("cuda", "f32"))]
        ups = [f"{g / c:.0f}x" if g and c else "-" for c, g in ((values[0], values[2]), (values[1], values[3]))]
        text = [f"{v:.3e}" if v else "-" for v in values]
        print(f"{problem:>21} {grid:>12} {text[0]:>17} {text[1]:>10} {text[2]:>10} {text[3]:>10} "
              f"{ups[0]:>12} {ups[1]:>12}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--gpu-cells", nargs="+", type=int, default=[32, 64, 128, 192, 256],
                        help="cells per axis of the 3D problems on CUDA")
    parser.add_argument("--cpu-cells", nargs="+", type=int, default=[32, 64],
                        help="cells per axis of the 3D problems on one CPU thread")
    parser.add_argument("--steps", type=int, default=5, help="timed steps of the 3D problems")
    parser.add_argument("--cpu-jobs", type=int, default=8, help="one-thread CPU runs at once")
    parser.add_argument("--arches", nargs="+", default=["cpu", "cuda"], choices=["cpu", "cuda"])
    parser.add_argument("--table", nargs="+", metavar="JSONL", help="print the table of results printed before")
    parser.add_argument("--one", nargs=5, metavar=("PROBLEM", "ARCH", "PRECISION", "CELLS", "STEPS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        problem, arch, precision, cells, steps = args.one
        print(json.dumps(measure_one(problem, arch, precision, int(cells), int(steps))))
        return 0
    if args.table:
        results = [json.loads(line) for name in args.table for line in Path(name).read_text().splitlines()
                   if line.startswith("{")]
    else:
        results = run_table(args.problems, args.gpu_cells, args.cpu_cells, args.steps, args.cpu_jobs, args.arches)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
