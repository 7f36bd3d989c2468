"""Per-kernel GPU times of the benchmark step (Taichi's kernel profiler).

    python3 tools/profile.py [cells] [reconstruction] [riemann] [precision] [--amr-blocks N] [--cpu]
                             [--set KEY=VALUE ...]

Prints the kernels that took the most time first; with --amr-blocks N, the bench's box as a
pack of N^3 blocks at one level (`taichiflow bench --amr-blocks N`); --cpu: on the CPU (a
check of the script, not a figure).
"""
import sys

import taichi as ti

from taichiflow.bench import run_benchmark
from taichiflow.bench_amr import run_amr_benchmark

_init = ti.init


def init_with_profiler(*args, **kwargs):
    kwargs["kernel_profiler"] = True
    return _init(*args, **kwargs)


ti.init = init_with_profiler
argv = sys.argv[1:]
blocks = 0
if "--amr-blocks" in argv:
    at = argv.index("--amr-blocks")
    blocks = int(argv[at + 1])
    del argv[at:at + 2]
args = [a for a in argv if a not in ("--set", "--cpu")]
overrides = [a for a in args if "=" in a]
positional = [a for a in args if "=" not in a]
cells = int(positional[0]) if len(positional) > 0 else 256
recon = positional[1] if len(positional) > 1 else "weno5"
riemann = positional[2] if len(positional) > 2 else "hllc"
precision = positional[3] if len(positional) > 3 else "f32"
ARCH = "cpu" if "--cpu" in sys.argv else "cuda"
options = dict(cells=cells, reconstruction=recon, riemann=riemann, precision=precision, arch=ARCH, steps=5,
               repeats=1, overrides=overrides)
result = run_amr_benchmark(block_cells=blocks, **options) if blocks else run_benchmark(**options)
print({k: result[k] for k in ("scheme", "grid", "precision", "cell_updates_per_s")})
ti.profiler.print_kernel_profiler_info("count")
