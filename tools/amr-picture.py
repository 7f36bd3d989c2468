"""A picture of an adaptive run's snapshot with the outlines of its blocks: the density on the
plane z = `--z` (3D) or the whole run (2D), each leaf block outlined, coloured by level.

    python3 tools/amr-picture.py out/sedov3d_amr/snapshot_0002.vtu picture.png [--field rho] [--z 0]
"""
import argparse

import numpy as np
import pyvista as pv

parser = argparse.ArgumentParser()
parser.add_argument("snapshot")
parser.add_argument("picture")
parser.add_argument("--field", default="rho")
parser.add_argument("--z", type=float, default=0.0)
parser.add_argument("--size", type=int, nargs=2, default=[1000, 900])
args = parser.parse_args()

leaves = pv.read(args.snapshot)
dim = int(leaves.field_data["TAICHIFLOW_NDIM"][0])
cut = leaves.slice(normal="z", origin=(0.0, 0.0, args.z)) if dim == 3 else leaves
plotter = pv.Plotter(off_screen=True, window_size=args.size)
plotter.add_mesh(cut, scalars=args.field, cmap="viridis", show_scalar_bar=True,
                 scalar_bar_args={"title": args.field})
blocks = np.asarray(cut.cell_data["block"])
levels = np.asarray(cut.cell_data["level"])
centres = np.asarray(cut.cell_centers().points)
colours = ["white", "orange", "red", "magenta", "cyan", "yellow", "lime"]
for block in np.unique(blocks):
    chosen = blocks == block
    bounds = cut.extract_cells(np.flatnonzero(chosen)).bounds
    x0, x1, y0, y1 = bounds[0], bounds[1], bounds[2], bounds[3]
    z = centres[chosen, 2].max() + 1e-3
    outline = pv.lines_from_points(np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z], [x0, y0, z]]))
    plotter.add_mesh(outline, color=colours[int(levels[chosen][0]) % len(colours)], line_width=1)
time = float(leaves.field_data["TIME"][0]) if "TIME" in leaves.field_data else 0.0
counts = [int(n) for n in np.bincount(np.asarray(leaves.cell_data["level"]))]
plotter.add_text(f"t = {time:.4g}, leaf cells per level {counts}", font_size=10)
plotter.view_xy()
plotter.screenshot(args.picture)
print(f"wrote {args.picture}")
