"""Weak and strong scaling over MPI ranks (one rank per GPU), with `taichiflow bench` and real runs.

    python tools/scaling.py weak --ranks 1 2 4 8 --block 256                 # Euler WENO5 + HLLC + LSRK3 f32
    python tools/scaling.py weak --ranks 1 2 4 8 --block 192 --model two_phase
    python tools/scaling.py weak --ranks 1 2 4 8 --block 192 --model two_phase --along-y
    python tools/scaling.py strong --ranks 1 2 4 8 --grid 512 128 128        # a fixed grid, bench's state
    python tools/scaling.py case cases/cavity_array.toml --ranks 2 4 8 --grid 2048 512 512 --steps 50

weak: each rank a block of block^3 cells, the grid px*block x py*block x pz*block with the
split (px, py, pz) of 1, 2, 4, 8 ranks = (1,1,1), (2,1,1), (2,2,1), (2,2,2) (other counts: the
split `parallel.decomposition` picks, blocks as equal as it can make them), or with --along-y
(1, K, 1) for every count K. Efficiency: the rate per rank over the one-rank rate. strong: the
same grid on every rank count; efficiency: rate(K) / (K rate(1)). case: a shipped case on `--grid` for `--steps` steps, no output; its rate
from run.log without the first step (which compiles).

Each count is one `mpirun -n K` launch (`--mpirun` names another launcher, e.g. "srun -n");
on a GPU node each rank takes the GPU of its local rank (parallel/comm.py). The figures go to
stdout as JSON lines, then a table with the path of the ghost layers (`[parallel] exchange`;
`--set parallel.exchange=pinned` compares another path).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPLITS = {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2)}
SCHEMES = {  # the bench's schemes of the weak-scaling targets (docs/scaling.md)
    "euler": ["--reconstruction", "weno5", "--riemann", "hllc", "--integrator", "lsrk3"],
    "two_phase": ["--reconstruction", "weno5", "--riemann", "hllc", "--integrator", "lsrk3"],
}


def launch(mpirun: str, ranks: int, arguments: list) -> subprocess.CompletedProcess:
    """One launch; as root (a container) Open MPI must be told that it may start."""
    command = [*shlex.split(mpirun), str(ranks), sys.executable, "-m", "taichiflow.cli", *arguments]
    print("#", " ".join(command), file=sys.stderr, flush=True)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)


def bench_row(args, ranks: int, grid: list, split=None) -> dict | None:
    """One bench launch on `ranks` ranks: rank 0's JSON line."""
    arguments = ["bench", "--model", args.model, *SCHEMES.get(args.model, []), "--precision", args.precision,
                 "--arch", args.arch, "--steps", str(args.steps), "--repeats", str(args.repeats), "--json",
                 "--grid", *map(str, grid)]
    if split:
        arguments += ["--set", f"parallel.ranks={list(split)}"]
    for setting in args.set:
        arguments += ["--set", setting]
    done = launch(args.mpirun, ranks, arguments)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not rows:
        print(f"{ranks} ranks: failed (rc {done.returncode})\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return rows[-1]


def case_row(args, ranks: int) -> dict | None:
    """A case on `ranks` ranks for args.steps steps: its rate from run.log, first step excluded."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        arguments = ["run", args.case, "--out", str(out), "--quiet", "--arch", args.arch, "--precision",
                     args.precision, "--set", f"grid.cells={list(args.grid)}", "--set", f"time.max_steps={args.steps}",
                     "--set", "output.interval=0"]
        for setting in args.set:
            arguments += ["--set", setting]
        done = launch(args.mpirun, ranks, arguments)
        log = (out / "run.log").read_text() if (out / "run.log").exists() else ""
    found = re.search(r"first step \(including compile\) ([0-9.]+) s; (\d+) steps .* in ([0-9.]+) s .*; "
                      r"([0-9.e+]+) after the first step", log)
    if done.returncode or not found:
        print(f"{ranks} ranks: failed (rc {done.returncode})\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    first, steps, rate = float(found.group(1)), int(found.group(2)), float(found.group(4))
    paths = {"through NCCL": "nccl", "page-locked": "pinned", "CUDA-aware MPI": "device", "(numpy)": "host"}
    exchange = next((name for text, name in paths.items() if text in log), None)
    return {"ranks": ranks, "grid": "x".join(map(str, args.grid)), "exchange": exchange, "steps": steps, "first_step_s": first,
            "cell_updates_per_s": rate, "cell_updates_per_s_per_rank": rate / ranks}


def weak_grid(block: int, ranks: int, along_y: bool = False):
    """The weak-scaling grid of `ranks` blocks of block^3 and its split; along_y: slabs along y
    alone, (1, ranks, 1), the axis the walk along x does not read on CUDA in f32, so the ghost
    layers travel while it runs (kernels/exchange.py)."""
    split = (1, ranks, 1) if along_y else SPLITS.get(ranks)
    if split is None:
        return [block * ranks, block, block], None
    return [block * p for p in split], split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["weak", "strong", "case"])
    parser.add_argument("case", nargs="?", help="the case file (kind 'case')")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--block", type=int, default=256, help="weak: cells per axis of each rank's block")
    parser.add_argument("--grid", type=int, nargs="+", help="strong and case: the grid's cells per axis")
    parser.add_argument("--along-y", action="store_true", help="weak: split the grid along y alone, (1, K, 1)")
    parser.add_argument("--model", default="euler")
    parser.add_argument("--precision", default="f32", choices=["f32", "f64"])
    parser.add_argument("--arch", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mpirun", default="mpirun -n", help="the launcher, followed by the rank count")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a case override for every launch, e.g. parallel.exchange=host")
    args = parser.parse_args()
    if args.kind in ("strong", "case") and not args.grid:
        parser.error(f"{args.kind} needs --grid")
    if args.kind == "case" and not args.case:
        parser.error("case needs a case file")
    rows = []
    for ranks in args.ranks:
        if args.kind == "weak":
            grid, split = weak_grid(args.block, ranks, args.along_y)
            row = bench_row(args, ranks, grid, split)
        elif args.kind == "strong":
            row = bench_row(args, ranks, args.grid)
        else:
            row = case_row(args, ranks)
        if row:
            rows.append(row)
            print(json.dumps(row), flush=True)
    print_table(args.kind, rows)
    return 0 if len(rows) == len(args.ranks) else 1


def print_table(kind: str, rows: list):
    """Rate, rate per rank and the efficiency against the fewest ranks measured."""
    if not rows:
        return
    base = rows[0]
    print(f"{'ranks':>5} {'grid':>16} {'exchange':>8} {'cell-updates/s':>15} {'per rank':>11} {'efficiency':>10}")
    for r in rows:
        if kind == "weak":
            efficiency = r["cell_updates_per_s_per_rank"] / base["cell_updates_per_s_per_rank"]
        else:
            efficiency = r["cell_updates_per_s"] * base["ranks"] / (base["cell_updates_per_s"] * r["ranks"])
        print(f"{r['ranks']:>5} {r['grid']:>16} {str(r.get('exchange') or '-'):>8} {r['cell_updates_per_s']:>15.3e} "
              f"{r['cell_updates_per_s_per_rank']:>11.3e} {efficiency:>10.0%}")


if __name__ == "__main__":
    sys.exit(main())
