"""The bytes a run may still take on its device, so that an adaptive run's pool grows only as
far as they allow (run/build_amr.py: grown_capacity) instead of ending in Taichi's allocation
error.

- CUDA: cuMemGetInfo through the driver (ctypes, libcuda) for the context current on this
  thread: Taichi's, made current by ti.init on the device CUDA_VISIBLE_DEVICES leaves as 0.
  Else nvidia-smi for the first device CUDA_VISIBLE_DEVICES names (else 0): an index there is
  nvidia-smi's PCI order, CUDA's only with CUDA_DEVICE_ORDER=PCI_BUS_ID or alike GPUs, hence
  the driver first.
- CPU: /proc/meminfo's MemAvailable and MemTotal, lowered to the cgroup's limit where one is
  set (v2 memory.max, v1 memory.limit_in_bytes).
- None where neither answers: the caller then does not bound what it allocates.

What is free is not all usable: a margin of 10% of the total, at least 1 GiB (at most half the
total), stays for Taichi's runtime, the arrays a kernel call stages and the host's copies of
what a regrid or a checkpoint gathers.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from typing import NamedTuple

MIB, GIB = 1 << 20, 1 << 30
MARGIN_FRACTION = 0.1   # of the total memory, kept out of what a pool may take
MARGIN_FLOOR = GIB      # the margin's least (but at most half the total)


class Memory(NamedTuple):
    """Free and total bytes of a device (or of the host), and where they were read."""
    free: int
    total: int
    where: str

    @property
    def margin(self) -> int:
        return min(max(int(self.total * MARGIN_FRACTION), MARGIN_FLOOR), self.total // 2)


def available(arch: str) -> Memory | None:
    """The memory of the device a run on `arch` ("cuda" or "cpu") allocates on; None where
    unknown. (The run calls it through this module, so tests may replace it.)"""
    return cuda_memory() if arch == "cuda" else host_memory()


# --- CUDA ------------------------------------------------------------------------------------------
def cuda_memory() -> Memory | None:
    """The driver's answer for the current context, else nvidia-smi's for the visible device."""
    return _driver_memory() or _smi_memory(visible_device())


def visible_device() -> str:
    """The device this process's CUDA calls use, as nvidia-smi -i takes it (index or UUID)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"


def _driver_memory() -> Memory | None:
    """cuMemGetInfo where a CUDA context is current on this thread (none is created here: a new
    context would itself take hundreds of MB)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        context = ctypes.c_void_p()
        if cuda.cuCtxGetCurrent(ctypes.byref(context)) != 0 or not context.value:
            return None
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        query = getattr(cuda, "cuMemGetInfo_v2", None) or cuda.cuMemGetInfo
        if query(ctypes.byref(free), ctypes.byref(total)) != 0:
            return None
        return Memory(free.value, total.value, "the GPU (CUDA driver)")
    except (OSError, AttributeError):
        return None


def _smi_memory(device: str) -> Memory | None:
    command = ["nvidia-smi", "--query-gpu=memory.free,memory.total", "--format=csv,noheader,nounits", "-i", device]
    try:
        answer = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    parsed = parse_nvidia_smi(answer.stdout) if answer.returncode == 0 else None
    return Memory(*parsed, f"GPU {device} (nvidia-smi)") if parsed else None


def parse_nvidia_smi(text: str) -> tuple[int, int] | None:
    """(free, total) bytes from the first line of `nvidia-smi --query-gpu=memory.free,memory.total
    --format=csv,noheader,nounits` (MiB); None for anything else ("[N/A]" under MIG, an error)."""
    lines = [line for line in text.splitlines() if line.strip()]
    parts = [part.strip() for part in lines[0].split(",")] if lines else []
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]) * MIB, int(parts[1]) * MIB


# --- the host --------------------------------------------------------------------------------------
def host_memory(meminfo: Path = Path("/proc/meminfo"), cgroup: Path = Path("/sys/fs/cgroup")) -> Memory | None:
    """MemAvailable and MemTotal, each lowered to what the cgroup's limit leaves."""
    try:
        parsed = parse_meminfo(meminfo.read_text())
    except OSError:
        return None
    if parsed is None:
        return None
    free, total = parsed
    room = cgroup_room(cgroup)
    if room is not None:
        free, total = min(free, room[0]), min(total, room[1])
    return Memory(free, total, "host memory")


def parse_meminfo(text: str) -> tuple[int, int] | None:
    """(MemAvailable, MemTotal) bytes of /proc/meminfo's text (kB); None where either is missing."""
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if name in ("MemAvailable", "MemTotal") and words and words[0].isdigit():
            values[name] = int(words[0]) * 1024
    if len(values) < 2:
        return None
    return values["MemAvailable"], values["MemTotal"]


def cgroup_room(root: Path) -> tuple[int, int] | None:
    """(bytes left, limit) of this process's memory cgroup where it sets a limit; else None."""
    for limit_file, used_file in (("memory.max", "memory.current"),
                                  ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        try:
            limit = (root / limit_file).read_text().strip()
            used = int((root / used_file).read_text())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # (v1 writes a huge number for none)
            return max(int(limit) - used, 0), int(limit)
    return None


# --- what Taichi holds -----------------------------------------------------------------------------
def taichi_field_bytes() -> int | None:
    """Bytes of every Taichi field of the current program: the sum of its field trees' sizes
    (their dtypes and shapes as Taichi lays them out, paddings included), the default tree
    placed first if still open; None where this Taichi cannot tell. The fields' memory only:
    ndarrays and Taichi's own runtime are not counted (the margin holds them)."""
    try:
        import taichi as ti
        runtime = ti.lang.impl.get_runtime()
        runtime.materialize()
        program = runtime.prog
        return sum(int(program.get_snode_root(k).cell_size_bytes) for k in range(program.get_snode_tree_size()))
    except (AttributeError, RuntimeError, TypeError):
        return None
