"""A model's Taichi functions called as plain Python on the host, one state at a time.

A model function is a `ti.func`; the Python function under it runs in Python scope too
(Taichi's operators fall back to numpy there, `model.W(...)` builds a Python-scope Struct).
That lets the loader bound its sample evaluation in time (a loop that never ends is
interrupted here, where a Taichi kernel could not be) and lets a failed run ask which
function turned a finite state into NaN, without compiling anything (no kernel or field
changes). A function that Python scope cannot run (a construct only Taichi scope has) raises
HostUnsupported: the caller then knows nothing about it, and says nothing.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
import types
import warnings
import weakref
from contextlib import contextmanager

import numpy as np
import taichi as ti
from taichi.lang.matrix import Matrix
from taichi.lang.struct import Struct

# Seconds a model function may take on one state in the loader (docs/models.md): a sample
# evaluation takes milliseconds, so this is only ever reached by a loop that never ends.
TIME_LIMIT_S = 5.0


class HostUnsupported(Exception):
    """The function cannot run in Python scope (or raised there): nothing is known of it."""


class DidNotReturn(Exception):
    """The function ran past the time limit."""


def _under(wrapped):
    """The Python function under a `ti.func` wrapper, or None for anything else."""
    if not getattr(wrapped, "_is_taichi_function", False):
        return None
    inner = getattr(getattr(wrapped, "func", None), "func", None)
    return inner if isinstance(inner, types.FunctionType) else None


def python_function(model, role: str):
    """The model's function of `role` as plain Python (None if it has none), with the Taichi
    functions it calls by global name (a model file's helpers) plain Python too: Python scope
    refuses to call a `ti.func`."""
    wrapped = model.functions.get(role) if not role.startswith("derived:") else model.derived.get(role[8:])
    inner = _under(wrapped)
    if inner is None:
        return None
    made = _MADE.setdefault(model, {})
    if role not in made:
        made[role] = _plain(inner, {}, {})
    return made[role]


_MADE = weakref.WeakKeyDictionary()  # model -> role -> its plain function (made once)


def _plain(function, done: dict, namespaces: dict):
    """`function` re-made over a copy of its module's globals in which every `ti.func` is its
    plain Python function (likewise re-made); `done` and `namespaces` share the copies."""
    if function in done:
        return done[function]
    original = function.__globals__
    fresh = id(original) not in namespaces
    namespace = namespaces.setdefault(id(original), dict(original))
    made = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    made.__kwdefaults__ = function.__kwdefaults__
    done[function] = made
    if fresh:
        for name, value in original.items():
            inner = _under(value)
            if inner is not None:
                namespace[name] = _plain(inner, done, namespaces)
            elif value is ti:
                namespace[name] = HOST_TAICHI
    return made


def _select(cond, x1, x2):
    """ti.select that picks a side, as a kernel does: Taichi's Python-scope one computes
    x1 * cond + x2 * (1 - cond), NaN where the side not taken is infinite (0.5 / ch at ch = 0)."""
    if any(isinstance(v, Matrix) for v in (cond, x1, x2)):
        c, a, b = (v.to_numpy() if isinstance(v, Matrix) else np.asarray(v) for v in (cond, x1, x2))
        return Matrix(np.where(c != 0, a, b))
    return x1 if cond else x2


_NUMPY_TYPES = {ti.f32: np.float32, ti.f64: np.float64, ti.i32: np.int32, ti.i64: np.int64}


def _cast(value, dtype):
    """ti.cast on the host: numpy's number of that type (Taichi's Python-scope cast takes
    Taichi values only; a model that iterates in f32 inside an f64 kernel casts numbers)."""
    if isinstance(value, Matrix):
        return Matrix(value.to_numpy().astype(_NUMPY_TYPES[dtype]))
    return _NUMPY_TYPES[dtype](value)


class _HostTaichi(types.ModuleType):
    """The `ti` a model's functions see on the host: taichi, with a select that picks a side
    and a cast of numbers."""

    def __getattr__(self, name):
        return getattr(ti, name)

    select = staticmethod(_select)
    cast = staticmethod(_cast)


HOST_TAICHI = _HostTaichi("taichi")


def view(layout, flat) -> Struct:
    """The named Python-scope view of a flat host vector (a model function's argument), its
    numbers numpy's: a division by zero gives inf as in a kernel, not Python's exception."""
    flat = [np.float64(v) for v in flat]
    return Struct({name: flat[off] if layout.sizes[name] == 1 else ti.Vector(flat[off:off + 3])
                   for name, off in layout.offsets.items()})


def flat_values(value) -> np.ndarray:
    """Every number a function returned (a state, a vector, a matrix, a tuple of them) as a
    flat float array; HostUnsupported for anything else."""
    if isinstance(value, Struct):
        parts = [flat_values(v) for v in value.to_dict().values()]
    elif isinstance(value, Matrix):
        parts = [np.asarray(value.to_numpy(), dtype=float).ravel()]
    elif isinstance(value, (tuple, list)):
        parts = [flat_values(v) for v in value]
    elif isinstance(value, dict):
        parts = [flat_values(v) for v in value.values()]
    else:
        try:
            parts = [np.asarray(value, dtype=float).ravel()]
        except (TypeError, ValueError):
            raise HostUnsupported(f"returned a {type(value).__name__}") from None
    return np.concatenate(parts) if parts else np.zeros(0)


def flat_state(layout, value) -> np.ndarray:
    """A state a function returned (model.U(...), model.W(...)) as the flat vector of `layout`,
    in the layout's order whatever order the function named its components in;
    HostUnsupported where it is not such a state."""
    entries = value.to_dict() if isinstance(value, Struct) else None
    if entries is None or sorted(entries) != sorted(layout.names):
        raise HostUnsupported(f"returned no {layout.role} state")
    flat = np.concatenate([flat_values(entries[name]) for name in layout.names])
    if flat.size != layout.n:
        raise HostUnsupported(f"returned a {layout.role} state of {flat.size} numbers")
    return flat


def call(model, role: str, states: tuple, values: dict):
    """The function of `role` on `states` (Structs, or numbers such as s, dt), its parameters
    and globals from `values` by name; HostUnsupported where Python scope cannot run it."""
    function = python_function(model, role)
    if function is None:
        raise HostUnsupported("not a Python function")
    extra = model.extra_args(role)
    if any(name not in values for name in extra):
        raise HostUnsupported("a parameter or global without a value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numpy's "invalid value in sqrt": the NaN is the answer)
        with np.errstate(all="ignore"):
            try:
                return function(*states, *[_as_kernel_number(values[name]) for name in extra])
            except (DidNotReturn, KeyboardInterrupt):
                raise
            except Exception as err:  # noqa: BLE001  (Taichi-scope-only constructs, math domain errors)
                raise HostUnsupported(f"{type(err).__name__}: {err}") from None


def _as_kernel_number(value):
    """A parameter as numpy's float (inf on a division by zero, as in a kernel)."""
    return np.float64(value) if isinstance(value, (float, int)) and not isinstance(value, bool) else value


@contextmanager
def time_limit(seconds: float, role: str):
    """Raise DidNotReturn in the code inside after `seconds`: a SIGALRM timer on the main
    thread (POSIX), elsewhere a trace function that looks at the clock on every line."""
    if seconds <= 0:
        yield
        return
    on_main = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    with (_alarm(seconds, role) if on_main else _traced_deadline(seconds, role)):
        yield


@contextmanager
def _alarm(seconds: float, role: str):
    """SIGALRM after `seconds` raises DidNotReturn; the previous handler is restored after,
    and a timer someone else had set is set again with the time it had left."""
    def expired(signum, frame):
        raise DidNotReturn(role)

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expired)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            left = max(outer_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


@contextmanager
def _traced_deadline(seconds: float, role: str):
    """Off the main thread (no signals there): a line tracer raises DidNotReturn once the
    clock passes the deadline (the previous tracer restored after)."""
    deadline = time.monotonic() + seconds

    def tracer(frame, event, arg):
        if time.monotonic() > deadline:
            raise DidNotReturn(role)
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


# Roles whose states are in a face's normal frame (local x the face normal): evaluated along
# each axis of the grid, the state's 3-vectors rotated; the others see the global frame.
NORMAL_FRAME = ("flux", "sound_speed", "wave_speeds", "roe_speeds", "face_states", "eigenvectors",
                "eigenvalues", "jacobians", "splitting_speeds", "hllc_star", "face_balance")


def in_normal_frame(role: str) -> bool:
    """Whether the function of `role` sees states in a face's normal frame."""
    return role in NORMAL_FRAME or role.startswith("solver:")


def arguments(model, role: str, W, U, other=None, x=(0.5, 0.5, 0.5), t: float = 0.0, dt: float = 1e-3,
              h: float = 0.1):
    """The state arguments of the function of `role` at the state (W, U) (views), `other` the
    right state of a pair (WL, WR; W itself if None), s = -1 and s_star = 0 for hllc_star (as
    the loader's kernel): None where a single state cannot give them (a gradient, balance
    values) or where U is needed and unknown."""
    table = {"W": W, "U": U, "WL": W, "WR": other if other is not None else W, "W_solved": W, "s": -1.0,
             "s_star": 0.0, "x": ti.Vector(list(x)), "t": t, "dt": dt, "h": h}
    leading = model.leading_args(role)
    if any(name not in table or table[name] is None for name in leading):
        return None
    return tuple(table[name] for name in leading)


def roles(model) -> list[str]:
    """Every function of the model (derived fields as 'derived:name'), to_conserved first."""
    named = list(model.functions) + [f"derived:{name}" for name in model.derived]
    return sorted(named, key=lambda role: role != "to_conserved")


def describe(layout, flat) -> str:
    """'rho = 2, vel = [0, 0, 0], p = 1' of a flat host vector."""
    def number(v):
        return f"{v:.6g}"
    return ", ".join(f"{name} = {number(value)}" if not isinstance(value, list) else
                     f"{name} = [{', '.join(number(v) for v in value)}]"
                     for name, value in layout.split(flat).items())
