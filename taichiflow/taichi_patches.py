"""Work-arounds for limits of the Taichi release we run on (1.7), applied on import.

1. Vector fields beyond 2 GiB (below). 2. The front end's source excerpts (at the end).

Vector fields with more than 2 GiB between their SOA components (a 1024^3 grid in f32) make
Taichi 1.7 fail while materializing: the byte stride it records for indexing components at
run time does not fit its C++ int argument (TypeError). taichiflow indexes components only
with compile-time constants, so such a field can do without that stride: leave it unset.
"""
from taichi.lang.ast.ast_transformer_utils import ASTTransformerContext
from taichi.lang.matrix import MatrixField

_calc_stride = MatrixField._calc_dynamic_index_stride


def _calc_stride_or_skip(field):
    try:
        _calc_stride(field)
    except TypeError:  # stride beyond int32: no run-time component indexing for this field
        pass


MatrixField._calc_dynamic_index_stride = _calc_stride_or_skip


# Compiling a kernel (also one the offline cache holds: Taichi runs its Python front end to
# find the cache key) builds a source excerpt for every name it meets, wrapping the line and a
# caret line under it with textwrap: 10,000 excerpts and about 1 s of the 2.1 s that a warm
# first step of Euler WENO5 + HLLC + LSRK3 took on 2 CPU cores. The excerpt is only shown when
# Taichi reports an error; file, line and source line stay, the caret line goes.
def _position(context, node):
    return (f'File "{context.file}", line {node.lineno + context.lineno_offset}, in {context.func.func.__name__}:\n'
            f'{context.src[node.lineno - 1]}\n')


ASTTransformerContext.get_pos_info = _position
