"""Weak scaling of an adaptive (AMR) run over MPI ranks (one rank per GPU), with the share of a
step spent in regrid, rebalance and exchange.

    python tools/amr-scaling.py                                # 1 2 4 ranks, 64^3 root, 16^3 blocks, 2 levels, f32
    python tools/amr-scaling.py --ranks 1 2 4 --exchange nccl --steps 200
    python tools/amr-scaling.py --no-phase-timers              # the headline rate, no syncs added
    python tools/amr-scaling.py --ranks 1 2 --arch cpu --precision f64 --root 16 --block 8 --levels 1 --steps 4
    mpirun -n K python3 tools/amr-scaling.py --worker CASE.toml --steps N    # what each launch runs

K ranks run K copies of one unit, side by side along x: the 3D Sedov blast of
cases/sedov3d_amr.toml in a unit box (`--root` cells per axis, `--block`, `--levels`), x from
-0.5 to K-0.5, a blast at x = 0, 1, ..., K-1. The units' blocks are contiguous in the Morton
order and the partition cuts it into equal runs, so each rank steps about one unit's leaves
(measured: each rank's own leaf blocks are reported). The pool has one unit's default slots
per rank ([amr] capacity = 64 unit root blocks, at least 512) on every K. Efficiency: leaf
cell-updates/s per rank over the one-rank figure.

Per rank, after [amr] regrid_every untimed steps (the first step and the first regrid compile
their kernels) and a barrier, `--steps` steps (fewer where the case's end time comes first; a
pool that grows in them compiles anew: pool_grew says): their wall time, and, with ti.sync()
before and after each piece so that device work is counted where it was launched: regrid
(AdaptiveRun.regrid: indicators, the flags gathered, the new forest installed and checked); of
it, `moved_to` (the install) and rebalance (RankPackSolver._swap_blocks: whole blocks crossing
ranks, from moved_to and _bring_siblings); exchange (SlabRefresh's start and finish: the copies'
cells before each stage and check, outside the regrids, the work between them not counted; a
regrid's own refreshes count in regrid). The syncs keep that work from overlapping the messages.
The syncs cost a little, more with nccl, whose exchange the host otherwise never waits for, and
a wait for a slower rank shows in the phase that waits: `--no-phase-timers` runs without them
(regrid then from AdaptiveRun.regrid_seconds, unsynced). Rank 0 prints one JSON line a launch;
the shares are the ranks' mean seconds over the slowest rank's wall time.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
UNIT = ROOT / "cases" / "sedov3d_amr.toml"
PHASES = ("regrid", "moved_to", "rebalance", "exchange")


def unit_case(args, ranks: int) -> dict:
    """The raw case of `ranks` units along x, from the shipped Sedov case."""
    case = tomllib.loads(UNIT.read_text())
    n, blocks = args.root, (args.root // args.block) ** 3
    case["case"] = {"name": f"amr_scaling_{ranks}", "description": f"{ranks} Sedov blasts along x (amr-scaling.py)"}
    case["grid"] = {"cells": [ranks * n, n, n], "lower": [-0.5, -0.5, -0.5], "upper": [ranks - 0.5, 0.5, 0.5]}
    case["amr"].update(block_cells=args.block, max_level=args.levels, capacity=max(512, 64 * blocks))
    if args.regrid_every:
        case["amr"]["regrid_every"] = args.regrid_every
    blast = case["initial"]["regions"][0]
    case["initial"]["regions"] = [dict(copy.deepcopy(blast), center=[float(k), 0.0, 0.0]) for k in range(ranks)]
    case["run"] = {"arch": args.arch, "precision": args.precision}
    case.setdefault("parallel", {})["exchange"] = args.exchange
    return case


def write_case(args, ranks: int, folder: Path) -> Path:
    """The case file, validated by load_case with the --set overrides, written resolved."""
    from taichiflow.case import load_case
    from taichiflow.toml_text import dump_toml
    raw = folder / f"raw_{ranks}.toml"
    raw.write_text(dump_toml(unit_case(args, ranks)))
    path = folder / f"amr_scaling_{ranks}.toml"
    path.write_text(dump_toml(load_case(raw, args.set)))
    return path


# --- the worker: one rank of a launch ---------------------------------------------------------
def timed(table: dict, name: str, method, sync, moved=None, counted=True):
    """`method` wrapped: synced before and after, its seconds and calls added to table[name]
    (exchange: to table['exchange_in_regrid'] while a regrid runs; moved: counts blocks;
    counted=False: the seconds only, the calls counted by another part of the same call)."""
    def wrapper(*a, **k):
        key = "exchange_in_regrid" if name == "exchange" and table["in_regrid"] else name
        if name == "regrid":
            table["in_regrid"] = True
        sync()
        began = time.perf_counter()
        try:
            return method(*a, **k)
        finally:
            sync()
            table[key] += time.perf_counter() - began
            table[key + "_calls"] += int(counted)
            if moved:
                table["blocks_moved"] += moved(*a)
            if name == "regrid":
                table["in_regrid"] = False
    return wrapper


def install_timers(ti) -> dict:
    """The phase wrappers on the library's classes (from here, the library unchanged)."""
    from taichiflow.kernels.amr.solver import PackSolver
    from taichiflow.parallel.amr_exchange import SlabRefresh
    from taichiflow.parallel.amr_solver import RankPackSolver
    from taichiflow.run.adaptive import AdaptiveRun
    table = {"in_regrid": False, "blocks_moved": 0}
    for name in (*PHASES, "exchange_in_regrid"):
        table[name], table[name + "_calls"] = 0.0, 0
    AdaptiveRun.regrid = timed(table, "regrid", AdaptiveRun.regrid, ti.sync)
    for cls in (PackSolver, RankPackSolver):
        cls.moved_to = timed(table, "moved_to", cls.__dict__["moved_to"], ti.sync)
    RankPackSolver._swap_blocks = timed(table, "rebalance", RankPackSolver._swap_blocks, ti.sync,
                                        moved=lambda self, out, inc: sum(len(s) for s in out.values()))
    SlabRefresh.start = timed(table, "exchange", SlabRefresh.start, ti.sync, counted=False)
    SlabRefresh.finish = timed(table, "exchange", SlabRefresh.finish, ti.sync)
    return table


def timed_steps(run, steps: int, comm, ti) -> dict:
    """`steps` steps (fewer at the end time) after a barrier: wall time and this rank's own leaf
    blocks stepped (the sum, least and most over the steps)."""
    end = run.case["time"]["end"]
    owned, taken = [], 0
    ti.sync()
    comm.barrier()
    began = time.perf_counter()
    while taken < steps and run.t < end * (1 - 1e-14):
        owned.append(run.solver.n_owned)
        run.advance(end, max_steps=1)
        taken += 1
    ti.sync()
    return {"wall": time.perf_counter() - began, "steps": taken, "owned": sum(owned), "owned_min": min(owned, default=0),
            "owned_max": max(owned, default=0)}


def worker(args) -> int:
    """One rank: build, the untimed steps, the timed steps, the figures gathered to rank 0."""
    import taichi as ti
    from taichiflow.case import load_case
    from taichiflow.parallel.comm import world
    from taichiflow.run.adaptive import AdaptiveRun
    comm = world()
    run = AdaptiveRun(load_case(args.worker))
    warmup = run.case["amr"]["regrid_every"]  # (compiles the step's and the regrid's kernels: not timed)
    run.advance(run.case["time"]["end"], max_steps=warmup)
    ti.sync()
    table = install_timers(ti) if args.phase_timers else None
    regrid_before, grown_before = run.regrid_seconds, len(run.grown)
    done = timed_steps(run, args.steps, comm, ti)
    mine = {**done, "owned_end": run.solver.n_owned, "regrids": table["regrid_calls"] if table else None,
            "phases": table or {"regrid": run.regrid_seconds - regrid_before}}
    ranks = comm.gather(mine, root=0)
    if comm.rank == 0:
        print(json.dumps(summary(run, ranks, len(run.grown) > grown_before)), flush=True)
    return 0


def summary(run, ranks: list, grew: bool) -> dict:
    """Rank 0's JSON line from every rank's figures."""
    K, solver = len(ranks), run.solver
    cells = solver.N ** solver.dim
    wall = max(r["wall"] for r in ranks)
    rate = sum(r["owned"] for r in ranks) * cells / wall
    row = {"ranks": K, "steps": ranks[0]["steps"], "t": run.t, "arch": run.case["run"]["arch"],
           "precision": run.case["run"]["precision"], "exchange": getattr(solver, "exchange_path", "none"),
           "block_cells": solver.N, "leaf_blocks": len(solver.forest.levels),
           "leaf_blocks_per_level": solver.forest.leaf_count_per_level(),
           "leaf_blocks_per_rank": [r["owned_end"] for r in ranks],
           "leaf_blocks_per_rank_mean": [round(r["owned"] / max(r["steps"], 1), 1) for r in ranks],
           "leaf_blocks_per_rank_min": min(r["owned_min"] for r in ranks),
           "leaf_blocks_per_rank_max": max(r["owned_max"] for r in ranks),
           "leaf_cells": run.leaf_cells(), "wall_s": wall, "wall_s_per_rank": [r["wall"] for r in ranks],
           "leaf_cell_updates_per_s": rate, "leaf_cell_updates_per_s_per_rank": rate / K,
           "leaf_cell_updates_per_s_each_rank": [r["owned"] * cells / r["wall"] for r in ranks],
           "regrids": ranks[0]["regrids"], "rebalances": getattr(solver, "rebalances", 0), "pool_grew": grew}
    for phase in (*PHASES, "exchange_in_regrid"):
        values = [r["phases"].get(phase) for r in ranks]
        if None in values:
            continue
        row[f"{phase}_s_max"], row[f"{phase}_s_mean"] = max(values), sum(values) / K
        row[f"{phase}_share"] = row[f"{phase}_s_mean"] / wall
    if "exchange_calls" in ranks[0]["phases"]:
        row["exchange_calls"] = ranks[0]["phases"]["exchange_calls"]
        row["blocks_moved"] = sum(r["phases"]["blocks_moved"] for r in ranks)
    return row


# --- the parent: one launch per rank count ------------------------------------------------------
def launcher(mpirun: str | None) -> tuple:
    """The launcher's words (default: the venv's mpirun, else PATH's, with -n); Open MPI is
    told not to bind each rank to one core (its default, which starves the host side)."""
    words = shlex.split(mpirun) if mpirun else [
        shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun") or "mpirun", "-n"]
    try:
        version = subprocess.run([words[0], "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    return words, "Open MPI" in version


def launch(args, ranks: int, case: Path) -> dict | None:
    """One `mpirun -n K` launch of the workers: rank 0's JSON line."""
    words, open_mpi = launcher(args.mpirun)
    command = [*words, str(ranks), *(["--bind-to", "none"] if open_mpi else []), sys.executable,
               str(Path(__file__).resolve()), "--worker", str(case), "--steps", str(args.steps),
               *([] if args.phase_timers else ["--no-phase-timers"])]
    print("#", " ".join(command), file=sys.stderr, flush=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not rows:
        print(f"{ranks} ranks: failed (rc {done.returncode})\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}",
              file=sys.stderr)
        return None
    return rows[-1]


def print_table(rows: list):
    """Leaf blocks and rate per rank, the weak efficiency against the one-rank row (else the
    fewest ranks measured) and the phases' shares."""
    if not rows:
        return
    base = next((r for r in rows if r["ranks"] == 1), rows[0])
    print(f"{'ranks':>5} {'leaf blocks/rank':>16} {'updates/s/rank':>14} {'weak eff':>8} {'regrid':>7} "
          f"{'rebal':>7} {'exch':>7}")
    for r in rows:
        efficiency = r["leaf_cell_updates_per_s_per_rank"] / base["leaf_cell_updates_per_s_per_rank"]
        blocks = f"{min(r['leaf_blocks_per_rank'])}-{max(r['leaf_blocks_per_rank'])}"
        shares = [f"{r[p + '_share']:>7.1%}" if p + "_share" in r else f"{'-':>7}"
                  for p in ("regrid", "rebalance", "exchange")]
        print(f"{r['ranks']:>5} {blocks:>16} {r['leaf_cell_updates_per_s_per_rank']:>14.3e} {efficiency:>8.0%} "
              + " ".join(shares) + ("  (the pool grew: compiled in the timed steps)" if r["pool_grew"] else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", metavar="CASE", help="(internal) run CASE as one rank of a launch")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--root", type=int, default=64, help="root cells per axis of each unit")
    parser.add_argument("--block", type=int, default=16, help="[amr] block_cells")
    parser.add_argument("--levels", type=int, default=2, help="[amr] max_level")
    parser.add_argument("--steps", type=int, default=100, help="timed steps, after one untimed")
    parser.add_argument("--regrid-every", type=int, default=0, help="[amr] regrid_every (0: the case's)")
    parser.add_argument("--exchange", default="auto", help="[parallel] exchange: auto host pinned device nccl")
    parser.add_argument("--arch", default="cuda", choices=["cuda", "cpu", "auto"])
    parser.add_argument("--precision", default="f32", choices=["f32", "f64", "auto"])
    parser.add_argument("--mpirun", help='the launcher, followed by the rank count (default: "mpirun -n")')
    parser.add_argument("--no-phase-timers", dest="phase_timers", action="store_false",
                        help="no synced phase timers (the headline rate)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a case override")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.root % args.block:
        parser.error(f"--root {args.root} must be a multiple of --block {args.block}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            row = launch(args, ranks, write_case(args, ranks, Path(tmp)))
            if row:
                rows.append(row)
                print(json.dumps(row), flush=True)
    print_table(rows)
    return 0 if len(rows) == len(args.ranks) else 1


if __name__ == "__main__":
    sys.exit(main())
