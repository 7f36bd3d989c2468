"""Where pictures can be made: pyvista (optional), off-screen rendering, the movie encoder.

The solver never imports this package, so GPU nodes without VTK still run cases.
"""
from __future__ import annotations

import ctypes.util
import importlib.util
import os
import sys

PYVISTA_ERROR = None
try:
    import pyvista as pv
except ImportError as err:  # the solver runs without it; only pictures need it
    pv = None
    PYVISTA_ERROR = err


def require_pyvista():
    """Say how to get pyvista, rather than fail on a missing attribute later."""
    if pv is None:
        raise RuntimeError(f"pictures need pyvista, which is not importable here ({PYVISTA_ERROR}); "
                           f"install it with: pip install pyvista")


def prepare_offscreen():
    """Without an X display VTK first tries X and warns; go straight to EGL when Mesa has it."""
    if sys.platform.startswith("linux") and not have_display() and ctypes.util.find_library("EGL"):
        os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")


def have_ffmpeg() -> bool:
    """imageio writes .mp4 through the ffmpeg binary that the imageio-ffmpeg wheel carries."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def have_display() -> bool:
    """Whether a window can open (an X or Wayland display on Linux)."""
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True

