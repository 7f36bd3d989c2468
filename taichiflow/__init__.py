"""taichiflow: hyperbolic conservation laws on GPUs from Python, compiled with Taichi."""
import os
import warnings

# Taichi prints its banner when imported; a user sees taichiflow's own lines (`--verbose` for
# Taichi's). Set before anything imports taichi; an explicit setting wins.
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "False")

# Model and numerics glue is plain Python run while Taichi compiles; Taichi warns about
# every such call although it is intended here.
warnings.filterwarnings("ignore", message=r".*Calling non-taichi function.*")
# Taichi 1.7's own sources have escape sequences Python 3.12 warns about when it compiles them
# (once, where pip installed them without byte code): not the user's concern.
warnings.filterwarnings("ignore", message=r"invalid escape sequence", category=SyntaxWarning)

from .model import Model, ModelError, load_model  # noqa: E402

# The Python API (taichiflow/api, docs/api.md), imported on first use: `import taichiflow`
# stays what it was (model files import it for Model).
_API = ("Case", "Simulation", "STOP", "Stop", "RunResult", "SimulationReleased", "SimulationError", "CaseError")


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'taichiflow' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_API))


__all__ = ["Model", "ModelError", "load_model", *_API]
__version__ = "0.1.0"
