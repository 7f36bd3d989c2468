"""Work-arounds for limits of the Taichi release we run on (1.7), applied on import.

1. Vector fields beyond 2 GiB (below). 2. The front end's source excerpts. 3. The stack
recorded at every field's declaration. 4. The source of every function, read again at every
call inside a kernel (the last three: compile time, at the end).

Vector fields with more than 2 GiB between their SOA components (a 1024^3 grid in f32) make
Taichi 1.7 fail while materializing: the byte stride it records for indexing components at
run time does not fit its C++ int argument (TypeError). taichiflow indexes components only
with compile-time constants, so such a field can do without that stride: leave it unset.
"""
import functools
import textwrap
import traceback
import weakref

from taichi.lang import _ndarray, impl, kernel_impl, matrix, snode
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


# Every field Taichi creates records the whole Python stack that declared it, each frame
# formatted with its source line (a few hundred fields a build, 60 frames deep under pytest:
# 5.8 s of a warm 56 s run of tests/test_riemann.py). Taichi shows it only when a field is never
# placed, which taichiflow does not do; the innermost frames, which name the declaring line, stay.
_DECLARATION_FRAMES = 8


def _short_traceback(stacklevel=1):
    frames = traceback.extract_stack(limit=_DECLARATION_FRAMES + 1 + stacklevel)[: -1 - stacklevel]
    return "".join(traceback.format_list(frames))


for _module in (impl, matrix, snode, _ndarray):
    _module.get_traceback = _short_traceback


# Each call of a ti.func inside a kernel reads the function's source again (inspect tokenizes
# its file) and rewraps every line: 5 s of the same run. A function's source does not change
# while its object lives, so it is read once per function object; what is parsed is the same.
_sources = weakref.WeakKeyDictionary()
_read_source_lines = kernel_impl.getsourcelines
_read_source_file = kernel_impl.getsourcefile


def _remembered(read, key):
    def remembered(func):
        try:
            return _sources[func][key]
        except KeyError:
            pass
        except TypeError:  # not a function that takes weak references: read it each time
            return read(func)
        value = read(func)
        _sources.setdefault(func, {})[key] = value
        return value
    return remembered


kernel_impl.getsourcelines = _remembered(_read_source_lines, "lines")
kernel_impl.getsourcefile = _remembered(_read_source_file, "file")


class _LineWrapping:
    """kernel_impl's view of textwrap: the same fill and dedent, fill's answers kept per line."""
    dedent = staticmethod(textwrap.dedent)

    @staticmethod
    @functools.lru_cache(maxsize=65536)
    def _fill(text, options):
        return textwrap.fill(text, **dict(options))

    @classmethod
    def fill(cls, text, **options):
        return cls._fill(text, tuple(sorted(options.items())))


kernel_impl.textwrap = _LineWrapping
