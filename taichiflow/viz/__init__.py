"""Pictures of taichiflow results with PyVista: `taichiflow view` and `taichiflow run --render`.

Only this package (imported lazily by the command line) imports pyvista; the solver never
does, so GPU nodes without VTK still run cases. Everything works off-screen on a machine
with no display and no GPU (VTK renders with Mesa through EGL or OSMesa).

Scenes, by the run's dimension:

* 3D: ``iso`` (an iso-surface of the field, coloured by the pressure, with the domain's
  outline), ``slice`` (three orthogonal slices through the centre), ``volume`` (volume
  rendering), ``schlieren`` (numerical schlieren on the central z slice) and ``streamlines``
  (the field's volume rendering, or its iso-surface at `iso`, with the lines of a vector field,
  B or vel, through evenly spread seed points, coloured by the vector's size).
* 2D: ``image`` (the field as an image), ``iso`` (an image of the pressure with the field's
  iso-line) and ``schlieren``.
* 1D: ``line`` (line plots, one chart per field, or only the field asked for).
* 2D runs whose snapshots have a bed elevation array ``bed`` and a depth array ``h`` (shallow
  water over terrain; these two array names decide, not the model): ``terrain`` (the bed as a
  grey hill-shaded relief lit from the north-west, the water where h > `wet_depth`, 1 mm,
  coloured by the field, in blues, seen from above; the default style of such runs, with the
  field h) and ``surface3d`` (the bed warped by its elevation times `exaggeration`, in earth
  tones, and the water's surface h + bed warped alike, in perspective). Their scalar bars carry
  SI units (h (m), speed (m/s)); terrain.py.

Defaults follow the model: for a two-phase run (the fields contain ``alpha`` or the model is
``two_phase``) the ``alpha`` = 0.5 iso-surface coloured by ``p`` (3D; in 2D an image of ``p``
with the ``alpha`` = 0.5 line); for hydrodynamics the density on slices (3D) or as an image.
Numerical schlieren is exp(-k |grad f| / max |grad f|) (Quirk & Karni 1996), computed with
numpy from the cell data, in grey.

2D images carry x and y axes with ticks and coordinates, 3D views a labelled bounds box and an
orientation marker, all in the grid's units. A movie, and the window's time slider, keep one
colour range (the field's over all snapshots) unless `clim` gives one. A run whose case
declares symmetry faces (boundary kind "symmetry") is mirrored across them and shown whole.

Public API
----------
Series.open(out_dir, mirror)    the run's snapshots (series.pvd) and resolved case
Viewer(series, field, style, size, off_screen, iso, clim, vectors, seeds, wet_depth, exaggeration)
    .draw(index) .screenshot(png, index) .write_movie(path, fps) .add_widgets() .show()
view_command(args)              `taichiflow view`
attach_renderer(sim, log)       `taichiflow run --render`: a PNG beside every snapshot

Modules: env (pyvista, off-screen, ffmpeg), series (the snapshots), fields (values, colours,
seed points and streamlines), mirror (symmetry faces), viewer (the plotter, widgets, outputs),
scenes (2D and 3D), terrain (water over terrain), axes (coordinates, orientation marker), charts
(1D), log_charts (log-log line charts as PNGs), spectrum_chart (`taichiflow spectrum --plot`).
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import env
from .env import PYVISTA_ERROR as _PYVISTA_ERROR
from .env import have_display as _have_display
from .env import pv
from .env import require_pyvista as _require_pyvista
from .fields import SCHLIEREN_K, cmap_for, scalar_values, schlieren
from .series import NDIM_FIELD, Series
from .terrain import TERRAIN_ARRAYS, TERRAIN_STYLES, has_terrain, hillshade
from .viewer import DEFAULT_SEEDS, DEFAULT_SIZE, STYLES, Viewer

__all__ = ["DEFAULT_SEEDS", "DEFAULT_SIZE", "NDIM_FIELD", "SCHLIEREN_K", "STYLES", "Series",
           "TERRAIN_ARRAYS", "TERRAIN_STYLES", "Viewer", "attach_renderer", "cmap_for", "env", "has_terrain",
           "hillshade", "scalar_values", "schlieren", "view_command"]


def view_command(args) -> int:
    """`taichiflow view OUT_DIR [--screenshot PNG] [--movie FILE] [--time T] [--field F] ...`."""
    _require_pyvista()
    series = Series.open(args.out_dir, mirror=getattr(args, "mirror", True))
    off_screen = bool(args.screenshot or args.movie)
    if not off_screen and not _have_display():
        raise RuntimeError("no display here for the interactive viewer; write pictures off-screen "
                           "with --screenshot fig.png or --movie movie.gif")
    viewer = Viewer(series, field=args.field, style=args.style, size=args.size or DEFAULT_SIZE,
                    off_screen=off_screen, iso=getattr(args, "iso", None), clim=getattr(args, "clim", None),
                    vectors=getattr(args, "vectors", None), seeds=getattr(args, "seeds", None),
                    wet_depth=getattr(args, "wet_depth", None), exaggeration=getattr(args, "exaggeration", None),
                    blocks=getattr(args, "blocks", False))
    index = series.nearest(args.time)
    try:
        if args.screenshot:
            viewer.screenshot(args.screenshot, index)
            print(f"wrote {args.screenshot}: t = {viewer.time:.6g}, {viewer.description}")
        if args.movie:
            written, note = viewer.write_movie(args.movie, fps=args.fps)
            if note:
                print(f"taichiflow: {note}", file=sys.stderr)
            print(f"wrote {written}: {len(series)} frames, t = {series.times[0]:.6g} to {series.times[-1]:.6g}")
        if not off_screen:
            viewer.add_widgets()
            viewer.draw(index)
            viewer.show()
    finally:
        viewer.close()
    return 0


def attach_renderer(sim, log=print) -> bool:
    """`taichiflow run --render`: a picture (snapshot_NNNNN.png) of every snapshot the run
    writes, drawn by a listener of its outputs (run/outputs.py: Outputs.on_snapshot). Without
    pyvista, or after a rendering error, it says so once and the run goes on without pictures.
    """
    if pv is None:
        log(f"--render: pyvista is not importable ({_PYVISTA_ERROR}); the run goes on without pictures")
        return False
    series = Series([], case=sim.case, cache=1)  # (the dict form: a Series reads a run's case.toml as TOML gives it)
    state = {"viewer": None, "failed": False}

    def draw(t, path):
        if state["failed"]:
            return
        try:
            series.append(t, path)
            if state["viewer"] is None:
                state["viewer"] = Viewer(series, off_screen=True)
            state["viewer"].screenshot(Path(path).with_suffix(".png"), len(series) - 1)
        except Exception as err:  # a picture must never end a run
            state["failed"] = True
            log(f"--render: rendering failed ({type(err).__name__}: {err}); the run goes on without pictures")

    sim.outputs.on_snapshot(draw)
    return True
