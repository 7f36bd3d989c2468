"""A notebook-style 2D run: a picture of the density every N steps, drawn from the live state.

`sim.every(N, draw)` calls draw(sim) after every N-th step; `sim.to_pyvista()` gives the
current state as a pyvista.ImageData (in a notebook, `sim.to_pyvista().plot()` shows it
inline). Here the pictures are drawn off-screen into a folder.

    python examples/pictures_2d.py [FOLDER]     # default: a temporary folder
"""
import sys
import tempfile
from pathlib import Path

import pyvista as pv

import taichiflow as tf
from taichiflow.viz.env import prepare_offscreen

CASES = Path(__file__).resolve().parent.parent / "cases"


def main(folder: Path, every: int = 40, cells: int = 48) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    prepare_offscreen()  # (no display: VTK draws through EGL where it can)
    case = tf.Case.from_file(CASES / "riemann2d.toml", {"grid.cells": [cells, cells], "run.arch": "cpu"})
    sim = tf.Simulation(case)
    pictures = []

    def draw(sim):
        grid = sim.to_pyvista(["rho"])
        plotter = pv.Plotter(off_screen=True, window_size=(400, 400))
        plotter.add_mesh(grid, scalars="rho", cmap="viridis", show_scalar_bar=False)
        plotter.add_text(f"t = {sim.t:.3f}, step {sim.step}", font_size=10)
        plotter.view_xy()
        pictures.append(folder / f"rho_{sim.step:05d}.png")
        plotter.screenshot(pictures[-1])
        plotter.close()

    sim.every(every, draw)
    sim.run()
    draw(sim)  # (and the end state)
    print(f"{len(pictures)} pictures in {folder}: {', '.join(p.name for p in pictures)}")
    return pictures


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
