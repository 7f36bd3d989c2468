"""Per-kernel GPU times of the benchmark step (Taichi's kernel profiler).

    python3 tools/profile.py [cells] [reconstruction] [riemann] [precision]
"""
import sys

import taichi as ti

import taichiflow.simulation as simulation
from taichiflow.bench import run_benchmark

_init = ti.init


def init_with_profiler(*args, **kwargs):
    kwargs["kernel_profiler"] = True
    return _init(*args, **kwargs)


simulation.ti.init = init_with_profiler
cells = int(sys.argv[1]) if len(sys.argv) > 1 else 256
recon = sys.argv[2] if len(sys.argv) > 2 else "weno5"
riemann = sys.argv[3] if len(sys.argv) > 3 else "hllc"
precision = sys.argv[4] if len(sys.argv) > 4 else "f32"
result = run_benchmark(cells=cells, reconstruction=recon, riemann=riemann, precision=precision,
                       arch="cuda", steps=5, repeats=1)
print({k: result[k] for k in ("scheme", "grid", "precision", "cell_updates_per_s")})
ti.profiler.print_kernel_profiler_info("count")
