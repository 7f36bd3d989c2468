"""Limits a run is checked against before anything is allocated: the memory it needs (device
and host) against what the machine has, 32-bit kernel indices, and the number of snapshots.

A grid too large for the machine used to die deep inside Taichi ("Virtual memory allocation
(1.28 TB) failed" after ~300 lines of stack) or be killed without a word; a tiny output
interval wrote files by the hundred thousand. Each now ends with one line naming the numbers.
"""
from __future__ import annotations

import math

from ..errors import CaseError
from ..resolved import ResolvedCase
from . import device_memory

MAX_SNAPSHOTS = 10_000        # [output] interval may ask for at most this many snapshots
MAX_BLOCK_CELLS = 2 ** 31     # a kernel's range over the cells is indexed in 32 bits
MEMORY_MARGIN = 0.9           # of the available memory a run may plan to use


def memory_needed(plan, n_conserved: int, n_primitive: int, n_fields: int) -> tuple[int, int]:
    """(device bytes, host bytes) of a run: on the device U, R (and U0 where kept) and W with
    its ghost layers; on the host one snapshot's arrays (W and the derived output fields)."""
    size = 4 if plan.precision == "f32" else 8
    cells = math.prod(plan.cells)
    ghosted = math.prod(n + 2 * plan.ghost for n in plan.cells)
    device = size * (cells * n_conserved * (3 if plan.keep_last_good else 2) + ghosted * n_primitive)
    host = size * cells * (n_primitive + n_fields)
    return device, host


def available_host_memory() -> int | None:
    """Bytes this process may still use: MemAvailable, or the cgroup's room if lower."""
    memory = device_memory.host_memory()
    return memory.free if memory else None


def available_device_memory() -> int | None:
    """Free bytes of the GPU this process uses (the first of CUDA_VISIBLE_DEVICES); None where
    it cannot be asked."""
    memory = device_memory.cuda_memory()
    return memory.free if memory else None


def _gigabytes(n: int) -> str:
    return f"{n / 1e9:.3g} GB"


def check_limits(case: ResolvedCase, plan, model, where: str) -> None:
    """CaseError naming the numbers where the run cannot fit or would flood its folder."""
    cells = math.prod(plan.cells)
    if cells >= MAX_BLOCK_CELLS:
        raise CaseError(f"{where}: [grid] cells {list(plan.cells)}: {cells:,} cells, but one device's kernels "
                        f"index at most {MAX_BLOCK_CELLS - 1:,} (32-bit ranges); use fewer cells")
    output, end = case.output, case.time.end
    if output.interval > 0 and end / output.interval > MAX_SNAPSHOTS:
        raise CaseError(f"{where}: [output] interval = {output.interval:g} asks for {end / output.interval:,.0f} "
                        f"snapshots up to t = {end:g}; at most {MAX_SNAPSHOTS:,}: use an interval of at least "
                        f"{end / MAX_SNAPSHOTS:.3g}")
    n_fields = len(output.fields or model.primitive.names)
    device, host = memory_needed(plan, model.conserved.n, model.primitive.n, n_fields)
    if plan.arch == "cpu":
        needs = [("memory", device + host, available_host_memory())]
    else:
        needs = [("GPU memory", device, available_device_memory()), ("host memory", host, available_host_memory())]
    for what, need, available in needs:
        if available is not None and need > MEMORY_MARGIN * available:
            raise CaseError(f"{where}: [grid] cells {list(plan.cells)} need about {_gigabytes(need)} of {what} "
                            f"({need / cells:.0f} bytes per cell, {plan.precision}); {_gigabytes(available)} is "
                            f"available. Use fewer cells, precision f32, or [run] keep_last_good = false")
