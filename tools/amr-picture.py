"""A picture of an adaptive run's snapshot with the outlines of its leaf blocks, coloured by
level: a field on the plane z = `--z` of a 3D snapshot, or a 2D snapshot (a run's, or a plane
of tools/amr-run.py --planes), optionally zoomed on a window and in log scale.

    python3 tools/amr-picture.py SNAPSHOT.vtu PICTURE.png [--field rho] [--z 0] [--log]
                                 [--window X0 X1 Y0 Y1] [--size W H]
"""
import argparse

import numpy as np
import pyvista as pv

from taichiflow.viz.amr import block_outlines

parser = argparse.ArgumentParser()
parser.add_argument("snapshot")
parser.add_argument("picture")
parser.add_argument("--field", default="rho")
parser.add_argument("--z", type=float, default=0.0)
parser.add_argument("--log", action="store_true", help="the field's log10")
parser.add_argument("--window", type=float, nargs=4, metavar=("X0", "X1", "Y0", "Y1"))
parser.add_argument("--size", type=int, nargs=2, default=[1000, 900])
args = parser.parse_args()

leaves = pv.read(args.snapshot)
dim = int(leaves.field_data["TAICHIFLOW_NDIM"][0])
cut = leaves.slice(normal="z", origin=(0.0, 0.0, args.z)) if dim == 3 else leaves
outlines = block_outlines(leaves, args.z if dim == 3 else None)
if args.window:
    x0, x1, y0, y1 = args.window
    cut = cut.clip_box((x0, x1, y0, y1, -1e9, 1e9), invert=False)
    outlines = outlines.clip_box((x0, x1, y0, y1, -1e9, 1e9), invert=False)
title = f"log10 {args.field}" if args.log else args.field
values = np.asarray(cut.cell_data[args.field], dtype=np.float64)
cut.cell_data[title] = np.log10(values) if args.log else values
plotter = pv.Plotter(off_screen=True, window_size=args.size)
plotter.add_mesh(cut, scalars=title, cmap="viridis", show_scalar_bar=True, scalar_bar_args={"title": title})
top = float(np.asarray(cut.points)[:, 2].max()) + 1e-6
outlines.points[:, 2] = top
levels = int(np.asarray(leaves.cell_data["level"]).max())
plotter.add_mesh(outlines, scalars="level", cmap="autumn_r", clim=(0, max(levels, 1)), line_width=1,
                 show_scalar_bar=False)
time = float(leaves.field_data["TIME"][0]) if "TIME" in leaves.field_data else 0.0
shown = np.unique(np.asarray(cut.cell_data["block"]), return_index=True)[1]  # (the blocks in the picture)
blocks = np.bincount(np.asarray(cut.cell_data["level"])[shown], minlength=levels + 1)
plotter.add_text(f"t = {time:.4g}; leaf blocks per level in this picture {[int(b) for b in blocks]} "
                 f"(yellow: level 0 to red: {levels})", font_size=9)
plotter.view_xy()
plotter.screenshot(args.picture)
print(f"wrote {args.picture}")
