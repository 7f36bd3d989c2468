"""Load-time check of a model's functions on one sample state.

Compiles each registered function alone (so a failure names it), evaluates it on the
model's sample primitive state, and checks results are finite and that
to_primitive(to_conserved(W)) returns W. Errors become ModelError naming file,
function and cause instead of a Taichi traceback.
"""
import numpy as np
import taichi as ti

from .layout import permute
from .errors import ModelError
from .bound_model import BoundModel


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else type(err).__name__


def check_model(model, params: dict, dtype) -> None:
    phys = BoundModel(model, params, dtype)
    where = model.source_file
    nU, nW = phys.U.n, phys.W.n
    w_in = ti.Vector.field(nW, dtype, shape=())
    u_out = ti.Vector.field(nU, dtype, shape=())
    w_out = ti.Vector.field(nW, dtype, shape=())
    f_out = ti.Vector.field(nU, dtype, shape=(3,))
    s_out = ti.Vector.field(2, dtype, shape=(3,))
    w_in[None] = ti.Vector(model.sample_state())

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
        try:
            kernel()
        except ModelError:
            raise
        except Exception as err:  # Taichi compile errors: name the model function
            raise ModelError(f"{where}: {name}(): does not compile: {_first_line(err)}") from None

    sample = np.array(model.sample_state())
    for name, value in (("to_conserved", u_out.to_numpy()), ("to_primitive", w_out.to_numpy()),
                        ("flux", f_out.to_numpy()), ("speeds", s_out.to_numpy())):
        if not np.all(np.isfinite(value)):
            raise ModelError(f"{where}: {name}(): non-finite result {value.tolist()} on the sample "
                             f"state {sample.tolist()} (set Model(sample=...) to an admissible state)")
    tol = 1e-4 if dtype == ti.f32 else 1e-10
    error = np.max(np.abs(w_out.to_numpy() - sample) / np.maximum(np.abs(sample), 1.0))
    if error > tol:
        raise ModelError(f"{where}: to_primitive() is not the inverse of to_conserved(): sample "
                         f"{sample.tolist()} came back as {w_out.to_numpy().tolist()}")
    s = s_out.to_numpy()
    if np.any(s[:, 0] > s[:, 1]):
        raise ModelError(f"{where}: signal speeds: smin > smax on the sample state: {s.tolist()}")
