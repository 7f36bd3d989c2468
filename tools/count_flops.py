"""Floating-point operations per cell-step of the benchmark workloads, counted in the code the
compiler emits (CPU backend, no GPU needed):

    python3 tools/count_flops.py [--segments 16,16,2] [--cells 256]

Each piece of the step (one face: reconstruction + Riemann solver; one cell's reconstruction
for both its faces; conserved -> primitive; the CFL rate and admissibility check) is compiled
alone, as a serial Taichi kernel on values read from a field, with LLVM's optimisation on and
fast-math as the GPU runs it; its LLVM IR is read and the operations on the costliest path
through its branches are counted (for HLLC: a star state, the subsonic case of the benchmark).
add, sub and mul count 1, a fused multiply-add 2; divisions and square roots are listed
apart (reciprocals and roots run on the GPU's special-function unit, not the FMA pipes), as
are min/max/abs/compare, which are not flop. The per-cell update (R = a R + dt (F- - F+)/dx,
U = c1 U + c2 R) is counted from its formula. The NVPTX backend optimises the same IR a
little differently (it contracts multiply-adds), so GPU counts differ by a few percent.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import tempfile
from collections import Counter

import numpy as np
import taichi as ti
from taichi.lang import impl

import taichiflow.run.backend as backend
from taichiflow.bench import SWEEP, benchmark_case
from taichiflow.initial import state_vector
from taichiflow.kernels.plan import (FUSED_SHUFFLE_MIN_GHOST, SHUFFLE_LAST_AXIS, WARP, reconstructs_per_cell,
                                     sweep_segments)
from taichiflow.layout import permute
from taichiflow.numerics.integrators import INTEGRATORS
from taichiflow.run import Simulation

_init = ti.init
FLOP_KINDS = ("add", "mul", "fma")


def init_writing_ir(*args, **kwargs):
    kwargs.update(arch=ti.cpu, print_kernel_llvm_ir_optimized=True, offline_cache=False)
    return _init(*args, **kwargs)


# --- reading the IR ------------------------------------------------------------------------
_OP = re.compile(r"= (?:tail )?(?:call )?(?:(fadd|fsub|fmul|fdiv|fneg|fcmp)\b|[^@]*@llvm\.(fma|fmuladd|sqrt|"
                 r"minnum|maxnum|fabs)\.)")
_KIND = {"fadd": "add", "fsub": "add", "fmul": "mul", "fdiv": "div", "fma": "fma", "fmuladd": "fma",
         "sqrt": "sqrt", "minnum": "minmax", "maxnum": "minmax", "fabs": "abs", "fcmp": "compare",
         "fneg": "neg"}


def _lanes(line: str) -> int:
    """Vector width of an IR instruction (<4 x float> counts 4 times)."""
    match = re.search(r"<(\d+) x (?:float|double)>", line)
    return int(match.group(1)) if match else 1


def costliest_path(ir: str) -> Counter:
    """Operation counts along the most expensive path through the blocks of the kernel's
    serial task (its control flow is acyclic: loops over components are unrolled)."""
    body = ir[ir.index("define"):]
    blocks, order, current = {}, [], None
    for line in body.splitlines():
        label = re.match(r"^([\w.]+):", line)
        if label or current is None and line.startswith("define"):
            current = label.group(1) if label else "entry"
            blocks[current] = {"ops": Counter(), "next": []}
            order.append(current)
            continue
        if current is None:
            continue
        if line.startswith("}"):
            break
        op = _OP.search(line)
        if op:
            blocks[current]["ops"][_KIND[op.group(1) or op.group(2)]] += _lanes(line)
        if line.strip().startswith("br "):
            blocks[current]["next"] += re.findall(r"label %([\w.]+)", line)
    best = {}

    def from_block(name):
        """Counts along the costliest path from block `name` to the end (memoised DFS)."""
        if name not in best:
            tails = [from_block(n) for n in blocks[name]["next"] if n in blocks]
            best[name] = blocks[name]["ops"] + max(tails, key=flop, default=Counter())
        return best[name]

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(order) + 100))
    return from_block(order[0])


def flop(ops: Counter) -> int:
    return ops["add"] + ops["mul"] + 2 * ops["fma"]


def count(kernel) -> Counter:
    """Compile kernel (no arguments) and count the operations of its newest IR file."""
    before = set(glob.glob("taichi_kernel_cpu_llvm_ir_optimized_*.ll"))
    kernel()
    new = sorted(set(glob.glob("taichi_kernel_cpu_llvm_ir_optimized_*.ll")) - before)
    return costliest_path(open(new[-1]).read())


# --- the pieces of one step ----------------------------------------------------------------
def pieces(solver):
    """Operation counts of a face, a cell's two face states, a flux, prim(U) and the CFL rate."""
    phys, recon, riemann, g = solver.phys, solver.schemes[0].recon, solver.schemes[0].riemann, solver.schemes[0].recon.ghost
    nW, nU, dtype = phys.W.n, phys.U.n, solver.dtype
    cells = ti.Vector.field(nW, dtype, shape=2 * g)
    out = ti.Vector.field(max(phys.n_flux, 2 * nW), dtype, shape=2)
    cells.from_numpy(_smooth_states(solver, 2 * g))

    def stencil(first, size):
        return [impl.subscript(None, cells, first + k) for k in range(size)]

    @ti.kernel
    def face():
        left, right = recon.face_states(stencil(0, 2 * g), 0.1)
        f = riemann(left, right, 0.1)
        for k in ti.static(range(phys.n_flux)):
            out[0][k] = f[k]

    @ti.kernel
    def cell_states():
        lower, upper = recon.cell_states(stencil(0, 2 * g - 1), 0.1)
        for k in ti.static(range(nW)):
            out[0][k] = lower[k]
            out[1][k] = upper[k]

    @ti.kernel
    def riemann_only():
        f = riemann(cells[0], cells[1], 0.1)
        for k in ti.static(range(phys.n_flux)):
            out[0][k] = f[k]

    u_in = ti.Vector.field(nU, dtype, shape=1)

    @ti.kernel
    def set_conserved():
        u_in[0] = phys.cons(cells[0])

    @ti.kernel
    def primitive():
        w = phys.prim(u_in[0])
        for k in ti.static(range(nW)):
            out[0][k] = w[k]

    normal = [phys.W.rotation(d, True) for d in range(solver.dim)]

    @ti.kernel
    def rate():
        w = cells[0]
        fastest = 0.0
        for d in ti.static(range(solver.dim)):
            smin, smax = phys.signal_speeds(permute(w, normal[d]))
            fastest = ti.max(fastest, ti.max(ti.abs(smin), ti.abs(smax)) * (d + 1.0))
        out[0][0] = fastest

    set_conserved()
    return {"face": count(face), "cell_states": count(cell_states), "riemann": count(riemann_only),
            "prim": count(primitive), "rate": count(rate)}


def _smooth_states(solver, n):
    layout = solver.phys.model.primitive
    background = {name: (1.0 if layout.sizes[name] == 1 else [0.3, 0.2, 0.1]) for name in layout.names}
    base = np.asarray(state_vector(background, layout), dtype=np.float64)
    return np.stack([base * (1.0 + 0.01 * k) for k in range(n)]).astype(
        np.float32 if solver.dtype == ti.f32 else np.float64)


# --- per cell-step -------------------------------------------------------------------------
def evaluations_per_cell(solver, segments, cells: int, lead: int, shuffle) -> float:
    """Evaluations per cell and stage, summed over the axes, of a piece the sweeps repeat
    lead times more than there are cells in a segment (a walk) or a warp (the shuffle sweep,
    shuffle = True). With shuffle = "walk" the walk along x runs in lanes along the last axis
    (32 for 32 - lead cells, n + lead slots per row: per cell the first lane only reconstructs
    the cell below), each lane solving one last-axis face per walked cell. A fused stage
    ([run] fuse) walks x (and solves the last axis through shuffles, fused_shuffles); the faces
    it solves across the walk are counted by across_faces."""
    lanes = shuffle_lanes(cells, lead)
    if solver.plan.fused:
        walk = (segments[0] + lead) / segments[0]
        if fused_shuffles(solver, shuffle):  # the last axis once, through shuffles, in every lane
            return (walk + 1) * lanes
        return walk
    total = 0.0
    for d in range(solver.dim):
        if shuffle and d == solver.dim - 1:  # the shuffle sweep, or the last axis in the walk
            total += lanes
        elif shuffle == "walk" and d == 0:
            total += (segments[d] + lead) / segments[d] * lanes
        else:
            total += (segments[d] + lead) / segments[d]
    return total


def shuffle_lanes(cells: int, lead: int) -> float:
    """Lanes per cell along the last axis through shuffles: 32 lanes for 32 - lead cells,
    n + lead slots per row."""
    return WARP / (WARP - lead) * (cells + lead) / cells


def across_faces(solver, cells: int, lead: int, shuffle) -> float:
    """Faces per cell and stage that a fused stage solves across its walk: both faces of each
    cell along y (and z unless shuffled), each from its own stencil, so per face whatever
    [run] reconstruct says; in every lane of a walk with shuffles."""
    if not solver.plan.fused:
        return 0.0
    if fused_shuffles(solver, shuffle):
        return 2 * (solver.dim - 2) * shuffle_lanes(cells, lead)
    return 2 * (solver.dim - 1)


def fused_shuffles(solver, shuffle) -> bool:
    """Whether CUDA's fused stage solves the last axis through shuffles (kernels/plan.py)."""
    return shuffle == "walk" and solver.dim > 1 and solver.schemes[0].recon.ghost >= FUSED_SHUFFLE_MIN_GHOST


def update_flop(nU: int, advected: int, dim: int, stages) -> float:
    """R = a R + dt (F- - F+)/dx per axis (5 per component with the R term), plus the
    advected div(u) terms (4 each), plus U = c1 U + c2 R (+ c0 U0) on the last axis."""
    per_stage = []
    for s in stages:
        axes = dim * (4 * nU + 4 * advected) + (dim - (1 if s.a == 0.0 else 0)) * nU
        stage = 3 * nU + (2 * nU if s.c0 != 0.0 else 0)
        per_stage.append(axes + stage)
    return sum(per_stage)


def report(work: dict, segments, cells: int):
    settings = {k: v for k, v in work.items() if k != "target"}
    segments = segments or sweep_segments([], 3, "cuda", work["precision"])
    case = benchmark_case(**settings, cells=8, arch="cpu")
    sim = Simulation(case)
    solver = sim.solver
    counts = pieces(solver)
    stages = INTEGRATORS[work["integrator"]]
    nU, dim = solver.phys.U.n, solver.dim
    advected = len(solver.phys.advected_indices)
    face, cell, solve = counts["face"], counts["cell_states"], counts["riemann"]
    ideal = len(stages) * dim * flop(face)
    # As on CUDA by default: walking per face, L + 1 faces for L cells; per cell, L + 2 cells
    # reconstructed and L + 1 fluxes; the last axis maybe with shuffles (32 lanes for 31 or 30).
    shuffle = SHUFFLE_LAST_AXIS.get(("cuda", work["precision"]), False)
    per_cell = reconstructs_per_cell("auto", "primitive", "cuda", work["precision"], solver.schemes[0].recon.ghost)

    def each(lead):
        return evaluations_per_cell(solver, segments, cells, lead, shuffle)

    def across(lead):
        return across_faces(solver, cells, lead, shuffle)

    per_face_executed = (each(1) + across(1)) * flop(face)
    per_cell_executed = each(2) * flop(cell) + each(1) * flop(solve) + across(2) * flop(face)
    # per step: the updates, prim(U) at every stage (the first in the check) and the CFL rate
    common = update_flop(nU, advected, dim, stages) + len(stages) * flop(counts["prim"]) + flop(counts["rate"])
    name = f"{work['model']} {solver.schemes[0].recon.name}+{work['riemann']}+{work['integrator']} {work['precision']}"
    print(f"{name}:")
    print(f"  one face (2 states + flux): {flop(face)} flop  ({_ops(face)})")
    print(f"  per cell: 2 face states {flop(cell)} flop ({_ops(cell)}), flux {flop(solve)} ({_ops(solve)})")
    print(f"  prim(U) {flop(counts['prim'])} flop ({_ops(counts['prim'])}); CFL rate {flop(counts['rate'])} "
          f"({_ops(counts['rate'])}); updates {update_flop(nU, advected, dim, stages):.0f} flop per cell-step")
    executed = per_cell_executed if per_cell else per_face_executed
    special = each(2) * (cell["div"] + cell["sqrt"]) + each(1) * (solve["div"] + solve["sqrt"]) \
        + across(2) * (face["div"] + face["sqrt"]) if per_cell else (each(1) + across(1)) * (face["div"] + face["sqrt"])
    how = f"{'per cell' if per_cell else 'per face'}, " + (
        ("fused stage, last axis shuffled in the walk" if fused_shuffles(solver, shuffle) else "fused stage")
        if solver.plan.fused else
        {True: "last axis shuffle sweep", "walk": "last axis shuffled in the walk", False: "walked"}[shuffle])
    print(f"  per cell-step: {ideal + common:.0f} flop with one face per cell and axis; as CUDA runs it "
          f"({how}, {cells}^3, segments {segments}): {len(stages) * executed + common:.0f} flop and "
          f"{len(stages) * special:.0f} divisions and roots")


def _ops(ops: Counter) -> str:
    return ", ".join(f"{k} {ops[k]}" for k in ("add", "mul", "fma", "div", "sqrt", "minmax", "abs", "compare")
                     if ops[k])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", default="", help="segment lengths per axis (default: CUDA's for the precision)")
    parser.add_argument("--cells", type=int, default=256, help="cells per axis (for the per-segment overhead)")
    args = parser.parse_args()
    segments = [int(s) for s in args.segments.split(",")] if args.segments else None
    backend.ti.init = init_writing_ir
    here = os.getcwd()
    for work in SWEEP:
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            try:
                report(work, segments, args.cells)
            finally:
                os.chdir(here)


if __name__ == "__main__":
    main()
