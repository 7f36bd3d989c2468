"""The gallery pictures of the valley dam break (cases/valley_dam_break.toml), from its run folder:

    taichiflow run cases/valley_dam_break.toml && python tools/flood-pictures.py out/valley_dam_break

It runs nothing: it reads the run's snapshots and draws them with taichiflow's viewer, writing
into --out (docs/gallery):

  valley_flood_depth.png   the depth over the hill-shaded valley seen from above (the `terrain`
                           style) at the snapshot nearest --time (300 s, mid-flood)
  valley_flood_3d.png      the valley and the water's surface in perspective, heights x3 (the
                           `surface3d` style) at the same time
  valley_flood_depth.gif   the depth at every snapshot in one colour range (the terrain style),
                           written only if it stays under --gif-limit (2 MB); --no-gif skips it

and prints the numbers the README's caption quotes (wet area, deepest water, fastest flow, how
far down the valley the front has come).
"""
import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from taichiflow.viz import Series, Viewer  # noqa: E402

TITLE = "Valley dam break"
PICTURE = (1200, 760)
MOVIE = (720, 460)            # the GIF ships with the repository: small
WET = 1e-3                    # m: the viewer's default wet depth


def facts(series: Series, index: int) -> str:
    """Wet area, deepest water, fastest flow and the front (the wet cell furthest down the valley)."""
    grid = series.grid(index)
    h = np.asarray(grid.cell_data["h"])
    wet = h > WET
    centres = np.asarray(grid.cell_centers().points)
    area = wet.sum() * grid.spacing[0] * grid.spacing[1]
    speed = np.linalg.norm(np.asarray(grid.cell_data["vel"]), axis=1) if "vel" in grid.cell_data.keys() else None
    line = (f"t = {series.times[index]:g} s: wet {area / 1e6:.2f} km^2 ({wet.mean():.0%} of the cells), "
            f"deepest {h.max():.1f} m, front at x = {centres[wet, 0].max():.0f} m")
    if speed is not None:
        line += f", fastest {speed[wet].max():.1f} m/s"
    return line


def picture(series: Series, style: str, index: int, png: Path):
    viewer = Viewer(series, style=style, field="h", size=PICTURE)
    try:
        viewer.screenshot(png, index)
        print(f"{png}: {png.stat().st_size / 1e3:.0f} kB; {viewer.description}")
    finally:
        viewer.close()


def movie(series: Series, gif: Path, limit: float):
    """The terrain style at every snapshot, in one colour range (the depth's over the series),
    kept only if it is smaller than `limit` bytes."""
    with tempfile.TemporaryDirectory() as scratch:
        draft = Path(scratch) / gif.name
        viewer = Viewer(series, style="terrain", field="h", size=MOVIE)
        try:
            viewer.write_movie(draft, fps=2.0)
        finally:
            viewer.close()
        size = draft.stat().st_size
        if size > limit:
            print(f"{gif}: not written, {size / 1e6:.2f} MB is over the {limit / 1e6:g} MB limit")
            return
        gif.write_bytes(draft.read_bytes())
    lo, hi = series.field_range("h", 2)
    print(f"{gif}: {len(series)} frames, t = {series.times[0]:g} to {series.times[-1]:g} s, "
          f"h from {lo:g} to {hi:.3g} m in every frame, {size / 1e6:.2f} MB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", nargs="?", default="out/valley_dam_break",
                        help="the run's output folder (out/valley_dam_break)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs" / "gallery"),
                        help="folder of the pictures (docs/gallery)")
    parser.add_argument("--time", type=float, default=300.0, help="time of the two pictures (300 s)")
    parser.add_argument("--no-gif", action="store_true", help="skip the animated GIF")
    parser.add_argument("--gif-limit", type=float, default=2.0, help="largest GIF kept, in MB (2)")
    args = parser.parse_args(argv)

    series = Series.open(args.run)
    missing = [name for name in ("bed", "h") if name not in series.arrays]
    if series.ndim != 2 or missing:
        print(f"{args.run}: not a 2D run with bed and h arrays (it has {', '.join(series.arrays)}); "
              f"run cases/valley_dam_break.toml first", file=sys.stderr)
        return 1
    series.name = TITLE
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    index = series.nearest(args.time)
    print(facts(series, index))
    picture(series, "terrain", index, out / "valley_flood_depth.png")
    picture(series, "surface3d", index, out / "valley_flood_3d.png")
    if not args.no_gif:
        movie(series, out / "valley_flood_depth.gif", args.gif_limit * 1e6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
