"""Work-arounds for limits of the Taichi release we run on (1.7), applied on import.

Vector fields with more than 2 GiB between their SOA components (a 1024^3 grid in f32) make
Taichi 1.7 fail while materializing: the byte stride it records for indexing components at
run time does not fit its C++ int argument (TypeError). taichiflow indexes components only
with compile-time constants, so such a field can do without that stride: leave it unset.
"""
from taichi.lang.matrix import MatrixField

_calc_stride = MatrixField._calc_dynamic_index_stride


def _calc_stride_or_skip(field):
    try:
        _calc_stride(field)
    except TypeError:  # stride beyond int32: no run-time component indexing for this field
        pass


MatrixField._calc_dynamic_index_stride = _calc_stride_or_skip
