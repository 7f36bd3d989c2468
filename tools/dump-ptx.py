"""Compile the benchmark's kernels with Taichi writing their PTX to the current directory.

    python3 tools/dump-ptx.py [bench arguments: --precision f64, --reconstruction plm, ...]

Used by tools/kernel-report.sh (ptxas -v then reports registers and spills).
"""
import argparse

import taichi as ti

import taichiflow.simulation as simulation
from taichiflow.bench import run_benchmark

_init = ti.init


def init_writing_ptx(*args, **kwargs):
    return _init(*args, **kwargs, print_kernel_asm=True, offline_cache=False)


parser = argparse.ArgumentParser()
parser.add_argument("--model", default="euler")
parser.add_argument("--reconstruction", default="weno5")
parser.add_argument("--riemann", default="hllc")
parser.add_argument("--integrator", default="lsrk3")
parser.add_argument("--precision", default="f32")
parser.add_argument("--set", action="append", default=[])
args = parser.parse_args()
simulation.ti.init = init_writing_ptx
run_benchmark(model=args.model, reconstruction=args.reconstruction, riemann=args.riemann,
              integrator=args.integrator, precision=args.precision, arch="cuda", cells=32, steps=1, repeats=1,
              overrides=args.set)
