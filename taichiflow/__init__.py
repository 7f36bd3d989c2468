"""taichiflow: hyperbolic conservation laws on GPUs from Python, compiled with Taichi."""
import os
import warnings

# Taichi prints its banner when imported; a user sees taichiflow's own lines (`--verbose` for
# Taichi's). Set before anything imports taichi; an explicit setting wins.
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "False")

# Model and numerics glue is plain Python run while Taichi compiles; Taichi warns about
# every such call although it is intended here.
warnings.filterwarnings("ignore", message=r".*Calling non-taichi function.*")

from .model import Model, ModelError, load_model  # noqa: E402

__all__ = ["Model", "ModelError", "load_model"]
__version__ = "0.1.0"
