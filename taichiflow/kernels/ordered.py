"""Floats as order-preserving 64-bit integers, so that reductions use integer atomics: native
on GPUs, where float atomic min/max are compare-and-swap loops (measured 50x slower)."""
import numpy as np
import taichi as ti

NO_BAD_CELL = np.iinfo(np.int64).max
HIGHEST_KEY = np.iinfo(np.int64).max
LOWEST_KEY = np.iinfo(np.int64).min


@ti.func
def _magnitude_mask(bits):
    """All bits but the sign where bits < 0, else 0 (no 64-bit literal: Taichi's are i32)."""
    return ti.cast(ti.cast(bits >> 63, ti.u64) >> 1, ti.i64)


@ti.func
def ordered_bits(x):
    """An i64 whose signed order is the order of the float x (any sign), for atomics."""
    bits = ti.bit_cast(ti.cast(x, ti.f64), ti.i64)
    return bits ^ _magnitude_mask(bits)


@ti.func
def ordered_value(key):
    """Inverse of ordered_bits, as f64."""
    return ti.bit_cast(key ^ _magnitude_mask(key), ti.f64)


def from_ordered_bits(keys) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    bits = keys ^ ((keys >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    return bits.view(np.float64)


def fill_keys(field, value: int):
    """field.fill for 64-bit integers (Taichi's fill takes them as i32)."""
    field.from_numpy(np.full(field.shape + ((field.n,) if hasattr(field, "n") else ()), value, dtype=np.int64))
