"""Per-kernel GPU times of the benchmark step (Taichi's kernel profiler).

    python3 tools/profile.py [cells] [reconstruction] [riemann] [precision] [--set KEY=VALUE ...]

Prints the kernels that took the most time first.
"""
import sys

import taichi as ti

import taichiflow.run as simulation
from taichiflow.bench import run_benchmark

_init = ti.init


def init_with_profiler(*args, **kwargs):
    kwargs["kernel_profiler"] = True
    return _init(*args, **kwargs)


simulation.ti.init = init_with_profiler
args = [a for a in sys.argv[1:] if a != "--set"]
overrides = [a for a in args if "=" in a]
positional = [a for a in args if "=" not in a]
cells = int(positional[0]) if len(positional) > 0 else 256
recon = positional[1] if len(positional) > 1 else "weno5"
riemann = positional[2] if len(positional) > 2 else "hllc"
precision = positional[3] if len(positional) > 3 else "f32"
result = run_benchmark(cells=cells, reconstruction=recon, riemann=riemann, precision=precision,
                       arch="cuda", steps=5, repeats=1, overrides=overrides)
print({k: result[k] for k in ("scheme", "grid", "precision", "cell_updates_per_s")})
ti.profiler.print_kernel_profiler_info("count")
