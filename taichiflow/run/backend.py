"""Taichi's start for a run: the backend and precision a case asks for, "auto" resolved."""
from __future__ import annotations

import contextlib
import io
import os

import taichi as ti

from ..errors import SimulationError

# taichiflow --verbose: Taichi's own lines (its start, its INFO log) are shown too.
VERBOSE = False
_starts = 0  # ti.init calls so far: a Simulation built before the last one has lost its fields
_before_restart = []  # callables run just before Taichi starts again (before_restart)


def taichi_starts() -> int:
    """How many times Taichi has been started in this process (each Simulation starts it)."""
    return _starts


def before_restart(callback) -> None:
    """Call callback() just before each later ti.init of this process, while the fields of the
    run it ends are still readable: the Python API (taichiflow/api) keeps numpy copies of the
    older simulations' states there."""
    if callback not in _before_restart:
        _before_restart.append(callback)


def init_taichi(arch: str, precision: str, fast_math, local_rank: int = 0, ranks: int = 1) -> tuple[str, str, bool]:
    """ti.init for the run; resolves "auto" settings and returns (arch, precision, fast_math).
    One of several MPI ranks sees only its local rank's GPU (Taichi's CUDA backend uses device 0)."""
    if ranks > 1 and arch != "cpu":
        from ..parallel.comm import local_gpu
        gpu = local_gpu(local_rank)
        if gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    if arch == "auto":
        arch = "cuda" if has_cuda() else "cpu"
    if precision == "auto":
        precision = "f32" if arch == "cuda" else "f64"
    if fast_math == "auto":
        fast_math = precision == "f32"
    dtype = ti.f32 if precision == "f32" else ti.f64
    global _starts
    _starts += 1
    start_taichi(arch=ti.cuda if arch == "cuda" else ti.cpu, default_fp=dtype, fast_math=bool(fast_math),
                 offline_cache=True)
    if arch == "cuda" and ti.lang.impl.current_cfg().arch != ti.cuda:
        raise SimulationError("arch 'cuda' was requested but no CUDA device is available; use --arch cpu")
    return arch, precision, bool(fast_math)


def start_taichi(**options) -> None:
    """ti.init with Taichi's own noise out of sight unless verbose: "[Taichi] Starting on
    arch=...", printed unconditionally (run.log names the arch), its INFO log, the
    SyntaxWarning on every static loop over more than 32 components (a model's matrices:
    every MHD and two-phase run printed it; unrolling_limit = 0 turns the warning off), and
    its warnings, such as "Lock .../ticache.lock failed" where another process (an MPI rank)
    holds the kernel cache: that process's kernels then stay out of the cache, nothing else.
    Taichi's errors still show (they raise, and taichiflow names them in one line)."""
    for callback in list(_before_restart):
        callback()
    quiet = {} if VERBOSE else {"unrolling_limit": 0}
    with contextlib.nullcontext() if VERBOSE else contextlib.redirect_stdout(io.StringIO()):
        ti.init(log_level=ti.INFO if VERBOSE else ti.ERROR, **quiet, **options)


def has_cuda() -> bool:
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False
