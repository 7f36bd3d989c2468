"""Load-time check of a model's functions on one sample state.

Compiles each registered function alone (so a failure names it), evaluates it on the
model's sample primitive state, and checks results are finite and that
to_primitive(to_conserved(W)) returns W. Errors become ModelError naming file,
function and cause instead of a Taichi traceback. When the model fails only with the
parameter values it was given (an ideal gas with gamma = 1), the error names those values
(ParameterError), not the sample state.

Before any kernel, every function runs once on the sample state as plain Python (model_host.py),
each for at most model_host.TIME_LIMIT_S seconds: a loop that never ends is named there, where
a Taichi kernel, once launched, cannot be interrupted and the loader would hang.
"""
from pathlib import Path

import numpy as np
import taichi as ti

from . import model_host, taichi_patches  # noqa: F401  (taichi_patches: before the first field)
from .layout import permute
from .errors import ModelError, ParameterError, model_error_within
from .bound_model import BoundModel


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else type(err).__name__


def _check_fields(model, params: dict, dtype):
    """(the bound model, its state hooks, the check's fields), the sample state written in:
    the fields' tree is then materialized, so the solver's fields after it keep their places
    (and its kernels their code: tests/kernel_fingerprints.py) whether the check runs or not."""
    phys = BoundModel(model, params, dtype)
    nU, nW = phys.U.n, phys.W.n
    w_in = ti.Vector.field(nW, dtype, shape=())
    u_out = ti.Vector.field(nU, dtype, shape=())
    w_out = ti.Vector.field(nW, dtype, shape=())
    f_out = ti.Vector.field(nU, dtype, shape=(3,))
    s_out = ti.Vector.field(2, dtype, shape=(3,))
    hooks = [hook for hook in STATE_HOOKS if hook in model.functions]
    hooks_out = ti.Vector.field(phys.n_transport, dtype, shape=max(len(hooks), 1))
    w_in[None] = ti.Vector(model.sample_state())
    return phys, hooks, (w_in, u_out, w_out, f_out, s_out, hooks_out)


def _evaluate(model, params: dict, dtype) -> dict:
    """to_conserved, to_primitive (of that), the flux and the signal speeds along each axis
    of the sample state, as numpy arrays by name; a function that does not compile raises
    ModelError naming it."""
    phys, hooks, (w_in, u_out, w_out, f_out, s_out, hooks_out) = _check_fields(model, params, dtype)

    @ti.kernel
    def conserve():
        u_out[None] = phys.cons(w_in[None])

    @ti.kernel
    def recover():
        w_out[None] = phys.prim(u_out[None])

    @ti.kernel
    def fluxes():
        for d in ti.static(range(3)):
            w = permute(w_in[None], phys.W.rotation(d, True))
            f_out[d] = phys.flux(w, phys.cons(w))

    @ti.kernel
    def speeds():
        for d in ti.static(range(3)):
            smin, smax = phys.signal_speeds(permute(w_in[None], phys.W.rotation(d, True)))
            s_out[d] = ti.Vector([smin, smax])

    steps = [("to_conserved", conserve), ("to_primitive", recover), ("flux", fluxes),
             ("wave_speeds" if "wave_speeds" in model.functions else "sound_speed", speeds)]
    for name, kernel in steps:
        _compile_and_run(model, name, kernel)
    _compile_state_hooks(model, phys, w_in, dtype, hooks, hooks_out)
    return {"to_conserved": u_out.to_numpy(), "to_primitive": w_out.to_numpy(),
            "flux": f_out.to_numpy(), "speeds": s_out.to_numpy()}


STATE_HOOKS = ("hllc_star", "repair", "source")


def _compile_state_hooks(model, phys, w_in, dtype, hooks, out) -> None:
    """Compile the optional functions that return a state (hllc_star, repair, source) on the
    sample, in one kernel: a wrong layout there is then reported by file, function and layout
    before the solver compiles them. Their values are not judged (a star state needs a real
    Riemann problem, a repair an inadmissible state)."""
    if not hooks:
        return

    @ti.kernel
    def state_hooks():
        w = w_in[None]
        u = phys.cons(w)
        for k in ti.static(range(len(hooks))):
            if ti.static(hooks[k] == "hllc_star"):
                out[k] = phys.star_state(w, phys.state_and_flux(w)[0], -1.0, 0.0)
            if ti.static(hooks[k] == "repair"):
                out[k][0] = phys.repair(u, w)[0]
            if ti.static(hooks[k] == "source"):
                out[k][0] = phys.source(u, w, ti.Vector([0.5, 0.5, 0.5], dtype), 0.0)[0]

    _compile_and_run(model, " / ".join(hooks), state_hooks)


def _compile_and_run(model, name: str, kernel) -> None:
    """Run one check kernel; a compile error is reported against the model function `name`
    (or, where the framework already said what is wrong, e.g. a layout, with its words)."""
    try:
        kernel()
    except ModelError:
        raise
    except Exception as err:  # Taichi compile errors: name the model function
        inner = model_error_within(err)
        if inner is not None:
            raise ModelError(str(inner)) from None
        raise ModelError(f"{model.source_file}: {name}(): does not compile: {_first_line(err)}") from None


def _problem(model, values: dict, dtype) -> str | None:
    """What is wrong with the evaluated sample (without the file and the advice), or None."""
    sample = np.array(model.sample_state())
    for name, value in values.items():
        if not np.all(np.isfinite(value)):
            return f"{name}(): non-finite result {value.tolist()} on the sample state {sample.tolist()}"
    back = values["to_primitive"]
    tol = 1e-4 if dtype == ti.f32 else 1e-10
    if np.max(np.abs(back - sample) / np.maximum(np.abs(sample), 1.0)) > tol:
        return (f"to_primitive() is not the inverse of to_conserved(): sample {sample.tolist()} came back "
                f"as {back.tolist()}")
    s = values["speeds"]
    if np.any(s[:, 0] > s[:, 1]):
        return f"signal speeds: smin > smax on the sample state: {s.tolist()}"
    return None


def _fails_with(model, params: dict, dtype) -> bool:
    return _problem(model, _evaluate(model, params, dtype), dtype) is not None


def singular_parameters(model, params: dict, dtype) -> list[str]:
    """The parameters whose given values (not the model's defaults) make the sample fail:
    those that, alone set back to the default, make it pass; all the changed ones together
    if no single one does; [] when the defaults fail as well (then the cause is elsewhere)."""
    changed = [name for name, value in params.items() if value != model.params.get(name)]
    if not changed or _fails_with(model, {**params, **{n: model.params[n] for n in changed}}, dtype):
        return []
    alone = [name for name in changed if not _fails_with(model, {**params, name: model.params[name]}, dtype)]
    return alone or changed


def _host_views(model, values: dict):
    """(W, U) of the sample state as Python-scope views; U None where to_conserved cannot run
    in Python scope."""
    W = model_host.view(model.primitive, model.sample_state())
    arguments = model_host.arguments(model, "to_conserved", W, None)
    try:
        U = model_host.flat_state(model.conserved, model_host.call(model, "to_conserved", arguments, values))
    except model_host.HostUnsupported:
        return W, None
    return W, model_host.view(model.conserved, U)


def check_returns(model, params: dict, seconds: float = model_host.TIME_LIMIT_S) -> None:
    """Raise model_host.DidNotReturn (its text the function's role) for the first function
    that does not return within `seconds` on the sample state, run as plain Python (a loop that
    never ends). What Python scope cannot run, or what fails there, is left to the kernels'
    checks."""
    values = {**params, **{name: 1.0 for name in model.globals}}  # (a global's value: any finite one)
    with model_host.time_limit(seconds, "to_conserved"):
        W, U = _host_views(model, values)
    for role in model_host.roles(model):
        arguments = model_host.arguments(model, role, W, U)
        if arguments is None:
            continue
        try:
            with model_host.time_limit(seconds, role):
                model_host.call(model, role, arguments, values)
        except model_host.HostUnsupported:
            continue


def require_returns(model, params: dict) -> None:
    """ModelError naming the function that does not return on the sample state (check_returns),
    before any kernel runs one: `taichiflow run` and `taichiflow check` call this first."""
    try:
        check_returns(model, params)
    except model_host.DidNotReturn as stuck:
        role = str(stuck)
        name = getattr(model_host.python_function(model, role), "__name__", role)
        raise ModelError(f"{model.source_file}: {name}() did not return within {model_host.TIME_LIMIT_S:g} s on "
                         f"the sample state {model_host.describe(model.primitive, model.sample_state())} (run as "
                         f"Python when the model loads): a loop that never ends?") from None


# The checks passed in this process: a test session or a Python API script builds the same model
# with the same parameters again and again (0.5 s a build on a 2-core CPU with a warm kernel
# cache), and the check's verdict depends on nothing else (the model file's text, the values,
# the precision, the backend and its fast-math).
_PASSED = set()


def _passed_key(model, params: dict, dtype):
    """What a passed check is remembered by; None where the model has no file to read."""
    try:
        text = Path(model.source_file).read_text()
    except OSError:
        return None
    config = ti.lang.impl.current_cfg()
    key = (model.source_file, text, tuple(sorted(params.items())), str(dtype), str(config.arch), config.fast_math)
    try:
        hash(key)
    except TypeError:  # a parameter value that is not a number
        return None
    return key


def check_model(model, params: dict, dtype, params_from: str = "[model] params") -> None:
    """Raise ModelError if the model's functions fail on its sample state; ParameterError
    naming the values (given in `params_from`) when only the given parameters make them fail.
    A check this process passed before for the same model text, values and backend is not run
    again (its fields are still made)."""
    where = model.source_file
    passed = _passed_key(model, params, dtype)
    if passed is not None and passed in _PASSED:
        _check_fields(model, params, dtype)
        return
    require_returns(model, params)
    problem = _problem(model, _evaluate(model, params, dtype), dtype)
    if problem is None:
        if passed is not None:
            _PASSED.add(passed)
        return
    blamed = singular_parameters(model, params, dtype)
    if blamed:
        given = ", ".join(f"{name} = {params[name]:g}" for name in blamed)
        default = ", ".join(f"{name} = {model.params[name]:g}" for name in blamed)
        raise ParameterError(f"{where}: the parameter value {given} ({params_from}) makes model "
                             f"'{model.name}' singular: {problem}; with the default {default} the sample "
                             f"state is fine, so choose another value of {', '.join(blamed)}")
    advice = " (set Model(sample=...) to an admissible state)" if "non-finite" in problem else ""
    raise ModelError(f"{where}: {problem}{advice}")
