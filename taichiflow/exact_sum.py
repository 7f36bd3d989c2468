"""Correctly rounded sums of the columns of a float64 table, the same bits as math.fsum.

An adaptive run's totals add every leaf's f64 totals on the host in a way that does not depend
on their order, so that one rank and many give the same bits (math.fsum did it, a column at a
time: 1.3 ms of every diagnostics row of the cavity array's 4,341 leaves, H200 host). Here each
value is split exactly into an integer mantissa and a power of two; the mantissas of one power
are added as float64 integers below 2^53 (exact), and the few sums per power are combined as a
Python integer, which is divided by the power once: correctly rounded, as fsum is.

Subnormal values, in or out, are left to fsum: Taichi's CPU backend turns on flush-to-zero for
the whole process when it starts, and numpy's arithmetic then reads and writes them as zeros.
"""
import math

import numpy as np

_MANTISSA_BITS = 53
_HALF = 26                 # mantissas split in two halves, each summed exactly below 2^53
_MOST_ROWS = 1 << 26       # rows beyond this could round the halves' sums: fsum then
_ALL_NEGATIVE_ZEROS = math.fsum([-0.0, -0.0])  # (fsum's sign of a zero sum of -0.0 alone)
_LEAST_NORMAL_POWER = -1022
_EXPONENT_BITS, _FRACTION_BITS = np.uint64(0x7FF << 52), np.uint64((1 << 52) - 1)


def _subnormal(table: np.ndarray) -> bool:
    """Whether any value is subnormal, read from its bits (not by arithmetic, which
    flush-to-zero would answer with a zero)."""
    bits = table.view(np.uint64)
    return bool(np.any(((bits & _EXPONENT_BITS) == 0) & ((bits & _FRACTION_BITS) != 0)))


def column_sums(table: np.ndarray) -> np.ndarray:
    """math.fsum of each column of a 2D float64 array (rows, columns), bit for bit."""
    table = np.ascontiguousarray(table, dtype=np.float64)
    if len(table) > _MOST_ROWS or not np.all(np.isfinite(table)) or _subnormal(table):  # (fsum's errors, nan)
        return np.array([math.fsum(column) for column in table.T])
    rows, columns = table.shape
    if rows == 0:
        return np.zeros(columns)
    mantissas, powers = np.frexp(table)  # value = (mantissa 2^53) 2^(power - 53): an integer times a power of 2
    high = np.floor(mantissas * 2.0 ** (_MANTISSA_BITS - _HALF))  # (float64 integers below 2^27: exact)
    low = mantissas * 2.0 ** _MANTISSA_BITS - high * 2.0 ** _HALF  # 0 <= low < 2^26
    least = powers.min(axis=0)
    span = int((powers.max(axis=0) - least).max()) + 1
    bins = (powers - least + span * np.arange(columns)).ravel()  # (a column's powers in bins of their own)
    highs = np.bincount(bins, weights=high.ravel(), minlength=span * columns).reshape(columns, span)
    lows = np.bincount(bins, weights=low.ravel(), minlength=span * columns).reshape(columns, span)
    return np.array([_rounded(highs[j], lows[j], int(least[j]), table[:, j]) for j in range(columns)])


def _rounded(highs, lows, least: int, column) -> float:
    """The column's sum from its halves' sums per power (power least + k in bin k), rounded once."""
    total = 0
    for k in np.flatnonzero((highs != 0) | (lows != 0)).tolist():
        total += ((int(highs[k]) << _HALF) + int(lows[k])) << k
    if total == 0:
        return _ALL_NEGATIVE_ZEROS if np.all(np.signbit(column)) else 0.0
    scale = least - _MANTISSA_BITS
    if abs(total).bit_length() + scale <= _LEAST_NORMAL_POWER:  # (a subnormal sum, or nearly)
        return math.fsum(column)
    try:
        return total / (1 << -scale) if scale < 0 else float(total << scale)
    except OverflowError:  # (beyond float64: fsum says so in its words)
        return math.fsum(column)
