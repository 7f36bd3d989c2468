"""The rounding unit of the precision the kernels are being compiled in, for model files whose
iterations stop at the rounding (a primitive recovery): plain Python, so a call inside a Taichi
function is a constant of the compiled kernel (f32 and f64 kernels each get their own)."""
import taichi as ti
from taichi.lang import impl


def unit_roundoff() -> float:
    """2^-24 for f32 kernels, 2^-53 for f64 ones (half the gap between 1 and the next number)."""
    return 2.0 ** -53 if impl.get_runtime().default_fp == ti.f64 else 2.0 ** -24
