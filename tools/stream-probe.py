"""Bandwidth of plain device copies between fields placed several ways (GPU machine): how
much the alignment of the solver's arrays costs an element loop that streams them.

    python3 tools/stream-probe.py [cells]      (prints GB/s, read + written, per variant)

Each variant's arrays are a tree of their own (ti.FieldsBuilder), one dense array per
component as in the solver's structure-of-arrays fields; `lead` f32 values placed before
the components shift their base address, `pad` ghost cells below each axis (and the row
rounded up to `row` cells along the last) shift the interior as the solver's W does.
"""
import statistics
import sys
import time

import taichi as ti
from taichi.lang.field import ScalarField

n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
ti.init(arch=ti.cuda, offline_cache=False)
comps = 5
nbytes = 2 * n ** 3 * comps * 4


def timed(fn, reps=20):
    fn()
    ti.sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        ti.sync()
        times.append(time.perf_counter() - start)
    return nbytes / statistics.median(times) / 1e9


def vector(lead=0, pad=(0, 0), row=0, gap=0):
    """A SOA vector field of n^3 interior cells: pad = (ghosts on the first two axes, ghosts
    below the last axis); the last axis holds `row` cells (default: interior + 2 pads);
    `gap` f32 values placed after each component array, in the same tree."""
    field = ti.Vector.field(comps, ti.f32)
    builder = ti.FieldsBuilder()
    if lead:
        builder.dense(ti.i, lead).place(ti.field(ti.f32))
    g, lo = pad
    shape = (n + 2 * g, n + 2 * g, row or n + 2 * lo)
    for member in field._get_field_members():
        builder.dense(ti.ijk, shape).place(ScalarField(member), offset=(-g, -g, -lo))
        if gap:
            builder.dense(ti.i, gap).place(ti.field(ti.f32))
    builder.finalize()
    return field


def pair(gap):
    """U and R in one tree, each component array followed by `gap` f32 values."""
    U, R = ti.Vector.field(comps, ti.f32), ti.Vector.field(comps, ti.f32)
    builder = ti.FieldsBuilder()
    for field in (U, R):
        for member in field._get_field_members():
            builder.dense(ti.ijk, (n, n, n)).place(ScalarField(member))
            if gap:
                builder.dense(ti.i, gap).place(ti.field(ti.f32))
    builder.finalize()
    return U, R


def update(U, R):
    """The pattern of a sweep's update: read U and R, write both."""
    @ti.kernel
    def kernel():
        for I in ti.grouped(ti.ndrange(n, n, n)):
            r = 0.5 * R[I] + U[I]
            R[I] = r
            U[I] = U[I] + 0.1 * r
    return kernel


def copy(src, dst, block=0):
    @ti.kernel
    def kernel():
        ti.loop_config(block_dim=block or None)
        for I in ti.grouped(ti.ndrange(n, n, n)):
            dst[I] = src[I]
    return kernel


results = {}
try:
    import torch
    a = torch.ones(n ** 3 * comps, device="cuda")
    b = torch.empty_like(a)

    def torch_copy():
        b.copy_(a)
        torch.cuda.synchronize()
    results["torch copy_"] = timed(torch_copy)
    del a, b
    torch.cuda.empty_cache()
except Exception as error:  # no torch: no reference
    print("torch:", error)

U, R = vector(), vector()
results["aligned -> aligned"] = timed(copy(U, R))
results["aligned -> aligned, block 256"] = timed(copy(U, R, 256))
U4, R4 = vector(lead=4), vector(lead=4)
results["16 B off -> 16 B off"] = timed(copy(U4, R4))
U1, R1 = vector(lead=1), vector(lead=1)
results["4 B off -> 4 B off"] = timed(copy(U1, R1))
U32, R32 = vector(lead=32), vector(lead=32)
results["128 B off -> 128 B off"] = timed(copy(U32, R32))
for g, lo, row in ((3, 3, 0), (3, 4, 0), (3, 8, 0), (3, 8, n + 16), (3, 32, n + 64)):
    W = vector(pad=(g, lo), row=row)
    label = f"ghosts {g}, {lo} below, row {row or n + 2 * lo}"
    results[f"aligned -> {label}"] = timed(copy(U, W))
    results[f"{label} -> aligned"] = timed(copy(W, R))
for gap in (0, 32, 64, 96, 1024):
    Up, Rp = pair(gap)
    results[f"U, R in one tree, gap {gap}: copy"] = timed(copy(Up, Rp))
    results[f"U, R in one tree, gap {gap}: update (x2 bytes)"] = 2 * timed(update(Up, Rp))
print(f"copies of {n}^3 x {comps} f32 (GB/s, read + written):")
for name, value in results.items():
    print(f"  {name:44s} {value:8.0f}")
