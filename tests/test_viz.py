"""`taichiflow view` and `run --render`: pictures, movies and the interactive viewer, off-screen.

Real runs (1D Sod, 2D Riemann, 3D Sedov, all small) are made once per module; every picture is
rendered off-screen (Mesa through EGL or OSMesa: no display, no GPU).
"""
import sys

import numpy as np
import pytest

import pyvista as pv  # noqa: E402  (a dependency of taichiflow; GPU nodes skip this file)
from PIL import Image  # noqa: E402  (pillow comes with pyvista)

from helpers import CASES  # noqa: E402
from taichiflow import viz  # noqa: E402
from taichiflow.cli import main  # noqa: E402
from taichiflow.io import PvdSeries, read_vti  # noqa: E402

RUNS = {
    "1d": ("sod.toml", ["grid.cells=[64]", "output.interval=0.1"]),
    "2d": ("riemann2d.toml", ["grid.cells=[32,32]", "time.end=0.2", "output.interval=0.1"]),
    "3d": ("sedov3d.toml", ["grid.cells=[24,24,24]", "time.end=0.02", "output.interval=0.01"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Output folders of the three runs; the 2D one also with --render (a PNG per snapshot)."""
    base = tmp_path_factory.mktemp("viz")
    out = {}
    for kind, (case, sets) in RUNS.items():
        out[kind] = base / kind
        args = ["run", str(CASES / case), "--out", str(out[kind]), "--quiet", "--arch", "cpu"]
        args += [a for s in sets for a in ("--set", s)]
        if kind == "2d":
            args.append("--render")
        assert main(args) == 0
    return out


def pixels(path):
    return np.asarray(Image.open(path).convert("RGB"))


def assert_not_blank(img):
    """More than a handful of colours, and the picture covers 2% to 98% of the frame."""
    flat = img.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    assert len(colours) > 16
    background = colours[counts.argmax()]
    drawn = (np.abs(img.astype(int) - background).sum(axis=-1) > 30).mean()
    assert 0.02 < drawn < 0.98, drawn


@pytest.mark.parametrize("kind,size", [("1d", (640, 480)), ("2d", (600, 500)), ("3d", (720, 540))])
def test_screenshot_has_the_size_asked_shows_structure_and_changes_with_time(runs, tmp_path, kind, size):
    first, last = tmp_path / "first.png", tmp_path / "last.png"
    w, h = size
    assert main(["view", str(runs[kind]), "--screenshot", str(first), "--time", "0.0",
                 "--size", str(w), str(h)]) == 0
    assert main(["view", str(runs[kind]), "--screenshot", str(last), "--size", str(w), str(h)]) == 0
    a, b = pixels(first), pixels(last)
    assert a.shape == b.shape == (h, w, 3)
    assert_not_blank(a)
    assert_not_blank(b)
    changed = (np.abs(a.astype(int) - b).sum(axis=-1) > 30).mean()
    assert changed > 0.005, changed


@pytest.mark.parametrize("style", ["iso", "volume", "schlieren", "streamlines"])
def test_3d_styles_and_fields(runs, tmp_path, style):
    png = tmp_path / f"{style}.png"
    assert main(["view", str(runs["3d"]), "--screenshot", str(png), "--style", style, "--field", "p",
                 "--size", "480", "360"]) == 0
    assert_not_blank(pixels(png))


def test_2d_schlieren_and_one_field_of_a_1d_run(runs, tmp_path):
    assert main(["view", str(runs["2d"]), "--screenshot", str(tmp_path / "s.png"), "--style", "schlieren",
                 "--size", "400", "400"]) == 0
    img = pixels(tmp_path / "s.png")
    assert_not_blank(img)
    assert main(["view", str(runs["1d"]), "--screenshot", str(tmp_path / "u.png"), "--field", "vel",
                 "--size", "400", "300"]) == 0
    assert_not_blank(pixels(tmp_path / "u.png"))


def test_view_rejects_a_style_or_field_the_run_does_not_have(runs, tmp_path, capsys):
    png = str(tmp_path / "x.png")
    assert main(["view", str(runs["1d"]), "--screenshot", png, "--style", "volume"]) == 1
    assert "1D runs are drawn as line plots" in capsys.readouterr().err
    assert main(["view", str(runs["3d"]), "--screenshot", png, "--field", "rhoo"]) == 1
    assert "no field 'rhoo'" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--screenshot", png]) == 1
    assert "no series.pvd" in capsys.readouterr().err


def test_interactive_view_needs_a_display(runs, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view", str(runs["3d"])]) == 1
    assert "--screenshot" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["1d", "3d"])
def test_gif_movie_has_one_frame_per_snapshot(runs, tmp_path, kind):
    gif = tmp_path / "movie.gif"
    assert main(["view", str(runs[kind]), "--movie", str(gif), "--size", "320", "240"]) == 0
    snapshots = len(PvdSeries(runs[kind] / "series.pvd", resume=True))
    with Image.open(gif) as im:
        assert im.n_frames == snapshots == 3
        assert im.size == (320, 240)


def test_mp4_without_imageio_ffmpeg_falls_back_to_gif(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(viz.env, "have_ffmpeg", lambda: False)
    assert main(["view", str(runs["2d"]), "--movie", str(tmp_path / "movie.mp4"), "--size", "320", "240"]) == 0
    assert "imageio-ffmpeg is not installed" in capsys.readouterr().err
    assert not (tmp_path / "movie.mp4").exists()
    with Image.open(tmp_path / "movie.gif") as im:
        assert im.n_frames == 3


def test_mp4_movie_with_imageio_ffmpeg(runs, tmp_path):
    import imageio.v2 as imageio
    mp4 = tmp_path / "movie.mp4"
    assert main(["view", str(runs["3d"]), "--movie", str(mp4), "--size", "320", "240"]) == 0
    with imageio.get_reader(str(mp4)) as reader:
        assert sum(1 for _ in reader) == 3


def test_interactive_viewer_builds_and_its_callbacks_step_through_time(runs):
    viewer = viz.Viewer(viz.Series.open(runs["3d"]), off_screen=True, size=(800, 600))
    try:
        viewer.add_widgets()
        viewer.draw()
        p = viewer.plotter
        assert len(p.widgets.slider_widgets) == 1
        assert len(p.widgets.button_widgets) == len(viewer.fields) + len(viewer.styles)
        times = viewer.series.times
        assert viewer.time == times[-1]

        def press(key):
            for callback in p.iren._key_press_event_callbacks[key]:
                callback()

        press("Left")
        assert viewer.time == times[-2]
        assert f"t = {times[-2]:.4g}" in p.actors["time"].GetInput()
        press("Home")
        assert viewer.index == 0
        press("Right")
        assert viewer.index == 1
        press("End")
        assert viewer.index == len(times) - 1

        slider = p.widgets.slider_widgets[0]            # drag the slider to t = 0 and let go
        slider.GetRepresentation().SetValue(0.004)
        slider.InvokeEvent("EndInteractionEvent")
        assert viewer.time == 0.0 and f"t = {0:.4g}" in p.actors["time"].GetInput()

        button = viewer._field_buttons["p"]               # click the field button "p"
        button.GetRepresentation().SetState(1)
        button.InvokeEvent("StateChangedEvent")
        assert viewer.field == "p"
        assert [b.GetRepresentation().GetState() for b in viewer._field_buttons.values()].count(1) == 1
        press("bracketright")
        assert viewer.field != "p"
        style = viewer.style
        press("slash")
        assert viewer.style != style
        # the widgets survive the redraws
        assert p.renderer.GetViewProps().IsItemPresent(viewer.slider.GetRepresentation())
        assert all(p.renderer.GetViewProps().IsItemPresent(b.GetRepresentation())
                   for b in viewer._field_buttons.values())
        img = p.screenshot(return_img=True)
        assert img.shape[:2] == (600, 800)
    finally:
        viewer.close()


def test_1d_viewer_callbacks_update_the_charts(runs):
    viewer = viz.Viewer(viz.Series.open(runs["1d"]), off_screen=True, size=(500, 400))
    try:
        viewer.add_widgets()
        viewer.draw()
        before = viewer.plotter.screenshot(return_img=True).copy()
        viewer.step(-1)
        after = viewer.plotter.screenshot(return_img=True)
        assert "t = 0.1" in viewer._charts[1][0].title
        assert (np.abs(before.astype(int) - after).sum(axis=-1) > 30).mean() > 0.005
        viewer.set_field("p")
        assert len(viewer._charts[1]) == 1
    finally:
        viewer.close()


def test_render_flag_writes_a_picture_beside_every_snapshot(runs):
    for _, name in PvdSeries(runs["2d"] / "series.pvd", resume=True).entries:
        png = runs["2d"] / name.replace(".vti", ".png")
        assert png.is_file()
        img = pixels(png)
        assert img.shape == (viz.DEFAULT_SIZE[1], viz.DEFAULT_SIZE[0], 3)
        assert_not_blank(img)


def test_render_without_pyvista_says_so_once_and_the_run_goes_on(monkeypatch):
    monkeypatch.setattr(viz, "pv", None)
    monkeypatch.setattr(viz, "_PYVISTA_ERROR", ImportError("No module named 'pyvista'"), raising=False)

    class Sim:
        def write_snapshot(self):
            return "snapshot_00000.vti"

    sim, said = Sim(), []
    assert viz.attach_renderer(sim, log=said.append) is False
    assert sim.write_snapshot() == "snapshot_00000.vti" and sim.write_snapshot() == "snapshot_00000.vti"
    assert len(said) == 1 and "pyvista" in said[0]


def vtk_order(a, ndim):
    """Cells x fastest (Fortran order of [i, j, k]), one row per cell, components in columns."""
    if a.ndim == ndim:
        return a.ravel(order="F")
    return np.stack([a[..., c].ravel(order="F") for c in range(a.shape[-1])], axis=1)


def test_plain_vtk_and_pyvista_readers_give_the_arrays_the_solver_wrote(runs):
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader
    from vtkmodules.util.numpy_support import vtk_to_numpy

    for kind, out in runs.items():
        pvd = pv.get_reader(str(out / "series.pvd"))
        entries = PvdSeries(out / "series.pvd", resume=True).entries
        assert pvd.time_values == [t for t, _ in entries]
        for t, name in entries:
            meta, arrays = read_vti(out / name)
            cells = meta["cells"]
            grid = pv.read(str(out / name))
            reader = vtkXMLImageDataReader()
            reader.SetFileName(str(out / name))
            reader.Update()
            raw = reader.GetOutput().GetCellData()
            assert tuple(n - 1 if n > 1 else 1 for n in grid.dimensions) == cells
            assert grid.field_data["TIME"][0] == t == meta["time"]
            assert sorted(grid.cell_data.keys()) == sorted(arrays)
            for field, a in arrays.items():
                expect = vtk_order(a, meta["ndim"])
                np.testing.assert_array_equal(np.asarray(grid.cell_data[field]), expect)
                np.testing.assert_array_equal(vtk_to_numpy(raw.GetArray(field)), expect)
                assert np.asarray(grid.cell_data[field]).dtype == a.dtype


@pytest.mark.parametrize("ndim", [2, 3])
def test_two_phase_runs_default_to_the_alpha_half_iso_coloured_by_pressure(tmp_path, ndim):
    """A made-up two-phase series (a gas bubble, alpha = 1 inside) until that model ships."""
    from taichiflow.io import write_vti

    n = 24
    centres = (np.arange(n) + 0.5) / n - 0.5
    axes = np.meshgrid(*([centres] * ndim), indexing="ij")
    r = np.sqrt(sum(a ** 2 for a in axes))
    series = PvdSeries(tmp_path / "series.pvd")
    (tmp_path / "case.toml").write_text('[case]\nname = "bubble"\n\n[model]\nname = "two_phase"\n')
    for k, radius in enumerate([0.3, 0.2]):
        alpha = 0.5 * (1 - np.tanh((r - radius) / 0.03))
        fields = {"alpha": alpha, "p": 1.0 + 5.0 * k * np.exp(-((r - radius) / 0.1) ** 2),
                  "rho": 1000.0 * (1 - alpha) + alpha}
        write_vti(tmp_path / f"snapshot_{k:05d}.vti", (n,) * ndim, (-0.5,) * ndim, (1 / n,) * ndim,
                  fields, time=0.1 * k)
        series.add(0.1 * k, f"snapshot_{k:05d}.vti")
    viewer = viz.Viewer(viz.Series.open(tmp_path), off_screen=True, size=(400, 300))
    try:
        assert (viewer.field, viewer.style) == ("alpha", "iso")
        viewer.screenshot(tmp_path / "bubble.png", 0)
        assert "alpha = 0.5" in viewer.description and "p" in viewer.description
        assert_not_blank(pixels(tmp_path / "bubble.png"))
    finally:
        viewer.close()


def magnetised_box(folder, n=16, times=(0.0, 0.1)):
    """A made-up 3D MHD series on the unit box: a uniform B = (2, 0, 0), a velocity turning about
    the axis x = y = 0.5 (v = (0.5 - y, x - 0.5, 0)), and a dense blob in the middle."""
    from taichiflow.io import write_vti

    centres = (np.arange(n) + 0.5) / n
    x, y, z = np.meshgrid(centres, centres, centres, indexing="ij")
    B = np.zeros((n, n, n, 3))
    B[..., 0] = 2.0
    vel = np.stack([0.5 - y, x - 0.5, np.zeros_like(x)], axis=-1)
    folder.mkdir(parents=True, exist_ok=True)
    series = PvdSeries(folder / "series.pvd")
    (folder / "case.toml").write_text('[case]\nname = "box"\n\n[model]\nname = "mhd"\n')
    for k, t in enumerate(times):
        rho = 1.0 + (1 + k) * np.exp(-((x - 0.5) ** 2 + (y - 0.5) ** 2 + (z - 0.5) ** 2) / 0.02)
        write_vti(folder / f"snapshot_{k:05d}.vti", (n,) * 3, (0.0,) * 3, (1 / n,) * 3,
                  {"rho": rho, "vel": vel, "B": B}, time=t)
        series.add(t, f"snapshot_{k:05d}.vti")
    return folder


def test_seed_points_are_the_same_every_time_distinct_and_inside_the_box():
    bounds = (0.1, 0.9, 0.0, 2.0, -1.0, 1.0)
    a, b = viz.fields.seed_points(bounds, 50), viz.fields.seed_points(bounds, 50)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (50, 3) and len(np.unique(a, axis=0)) == 50
    assert (a >= np.array(bounds[0::2])).all() and (a <= np.array(bounds[1::2])).all()
    # spread through the box: every octant holds some
    octant = (a > np.array([0.5, 1.0, 0.0])).astype(int) @ np.array([1, 2, 4])
    assert len(np.unique(octant)) == 8


def test_streamlines_of_a_uniform_field_are_straight_and_of_a_rotation_are_circles(tmp_path):
    grid = viz.Series.open(magnetised_box(tmp_path)).grid(0)
    h = 1 / 16
    lines = viz.fields.streamlines(grid, "B", 30)
    seeds = viz.fields.seed_points((h / 2, 1 - h / 2) * 3, 30)        # the box of the cell centres
    assert lines.n_cells >= 30
    ends = set()
    for c in range(lines.n_cells):
        p = lines.get_cell(c).points
        assert np.ptp(p[:, 1]) < 1e-6 and np.ptp(p[:, 2]) < 1e-6       # along x only
        ends.add((round(p[0, 1], 6), round(p[0, 2], 6)))
        assert np.all(np.diff(p[:, 0]) > 0) or np.all(np.diff(p[:, 0]) < 0)
    assert ends == {(round(s[1], 6), round(s[2], 6)) for s in seeds}     # one line through each seed
    assert lines.bounds[0] < 2 * h and lines.bounds[1] > 1 - 2 * h        # across the box
    np.testing.assert_allclose(lines.point_data["B magnitude"], 2.0)

    circles = viz.fields.streamlines(grid, "vel", 10)
    for c in range(circles.n_cells):
        p = circles.get_cell(c).points
        r = np.hypot(p[:, 0] - 0.5, p[:, 1] - 0.5)
        assert np.ptp(r) < 1e-3 * r.max() and np.ptp(p[:, 2]) < 1e-6


def test_streamlines_style_draws_the_field_lines_over_the_density(tmp_path):
    folder = magnetised_box(tmp_path / "box")
    png, gif = tmp_path / "lines.png", tmp_path / "lines.gif"
    assert main(["view", str(folder), "--screenshot", str(png), "--style", "streamlines", "--seeds", "40",
                 "--size", "480", "360"]) == 0
    img = pixels(png)
    assert img.shape == (360, 480, 3)
    assert_not_blank(img)
    viewer = viz.Viewer(viz.Series.open(folder), style="streamlines", seeds=40, size=(480, 360))
    try:
        assert viewer.vectors == "B" and viewer.field == "rho"            # the defaults
        viewer.draw()
        lines = viewer.plotter.actors["lines"].mapper.dataset
        assert lines.n_cells >= 40 and np.ptp(lines.points[:, 2]) > 0.5   # spread through the box
        assert "volume" in viewer.plotter.actors
        assert set(viewer.plotter.scalar_bars.keys()) == {"rho", "B magnitude"}
        assert "lines of B from 40 seeds" in viewer.description
    finally:
        viewer.close()
    viewer = viz.Viewer(viz.Series.open(folder), style="streamlines", vectors="vel", iso=1.5, seeds=10,
                        size=(320, 240))
    try:
        viewer.draw()
        assert "rho = 1.5 iso-surface" in viewer.description and "lines of vel" in viewer.description
        assert "iso" in viewer.plotter.actors and "volume" not in viewer.plotter.actors
    finally:
        viewer.close()
    assert main(["view", str(folder), "--movie", str(gif), "--style", "streamlines", "--seeds", "20",
                 "--size", "320", "240"]) == 0
    with Image.open(gif) as im:
        assert im.n_frames == 2


def test_streamlines_need_a_vector_field_of_three_components(runs, tmp_path, capsys):
    folder = magnetised_box(tmp_path / "box", times=(0.0,))
    png = str(tmp_path / "x.png")
    assert main(["view", str(folder), "--screenshot", png, "--style", "streamlines", "--vectors", "rho"]) == 1
    assert "--vectors rho: no three-component array" in capsys.readouterr().err
    assert main(["view", str(runs["2d"]), "--screenshot", png, "--style", "streamlines"]) == 1
    assert "2D runs are drawn as images" in capsys.readouterr().err


# --- water over terrain: the terrain and surface3d styles of 2D runs with bed and h arrays ------------

def valley(folder, times=(0.0, 60.0), arrays=("h", "vel", "bed", "surface", "speed"), model="any_model"):
    """A made-up 2D flood on 1200 m x 800 m (30 x 20 cells of 40 m): a V-shaped valley along x,
    falling down it (the bed from 50 to 110 m), with a lake of level 70 m in its upper part
    (x < 600 m at the first time, x < 900 m at the second) and dry ground elsewhere."""
    from taichiflow.io import write_vti

    nx, ny, dx = 30, 20, 40.0
    x = (np.arange(nx) + 0.5) * dx
    y = (np.arange(ny) + 0.5) * dx
    X, Y = np.meshgrid(x, y, indexing="ij")
    bed = 50.0 + 0.01 * (1200.0 - X) + 0.15 * np.abs(Y - 400.0)
    folder.mkdir(parents=True, exist_ok=True)
    series = PvdSeries(folder / "series.pvd")
    (folder / "case.toml").write_text(f'[case]\nname = "valley"\n\n[model]\nname = "{model}"\n')
    for k, t in enumerate(times):
        h = np.where(X < 600.0 + 300.0 * k, np.maximum(70.0 - bed, 0.0), 0.0)
        vel = np.zeros((nx, ny, 3))
        vel[..., 0] = np.where(h > 0, 1.5, 0.0)
        fields = {"h": h, "vel": vel, "bed": bed, "surface": h + bed, "speed": np.abs(vel[..., 0])}
        write_vti(folder / f"snapshot_{k:05d}.vti", (nx, ny), (0.0, 0.0), (dx, dx),
                  {name: fields[name] for name in arrays}, time=t)
        series.add(t, f"snapshot_{k:05d}.vti")
    return folder


def pixel_at(viewer, x, y, z):
    """The picture's (row, column) of the world point (x, y, z) as the viewer's camera sees it."""
    renderer = viewer.plotter.renderer
    renderer.SetWorldPoint(x, y, z, 1.0)
    renderer.WorldToDisplay()
    column, row, _ = renderer.GetDisplayPoint()
    return int(round(viewer.size[1] - 1 - row)), int(round(column))


def patch(img, row, column, half=4):
    return img[row - half:row + half + 1, column - half:column + half + 1].reshape(-1, 3).astype(float).mean(axis=0)


def blueness(rgb):
    return rgb[2] - 0.5 * (rgb[0] + rgb[1])


def test_terrain_styles_are_offered_only_where_the_run_has_bed_and_h(tmp_path):
    viewer = viz.Viewer(viz.Series.open(valley(tmp_path / "valley")), size=(320, 240))
    try:   # any model: the array names decide; such a run opens on the terrain style, field h
        assert viewer.styles == ("image", "iso", "schlieren", "terrain", "surface3d")
        assert (viewer.style, viewer.field) == ("terrain", "h")
    finally:
        viewer.close()
    for name, arrays in (("no_h", ("vel", "bed", "surface")), ("no_bed", ("h", "vel", "speed"))):
        viewer = viz.Viewer(viz.Series.open(valley(tmp_path / name, arrays=arrays)), size=(320, 240))
        try:
            assert viewer.styles == ("image", "iso", "schlieren") and viewer.style == "image"
        finally:
            viewer.close()
    assert not viz.has_terrain(["rho", "vel", "p"]) and viz.has_terrain(["h", "bed", "vel"])


def test_terrain_screenshot_shows_blue_water_where_wet_and_grey_relief_where_dry(tmp_path, capsys):
    folder = valley(tmp_path / "valley")
    png = tmp_path / "terrain.png"
    assert main(["view", str(folder), "--screenshot", str(png), "--time", "0", "--size", "480", "360"]) == 0
    out = capsys.readouterr().out
    assert "h where h > 1 mm" in out and "hill-shaded" in out
    img = pixels(png)
    assert img.shape == (360, 480, 3)
    assert_not_blank(img)
    viewer = viz.Viewer(viz.Series.open(folder), style="terrain", size=(480, 360))
    try:
        viewer.screenshot(tmp_path / "again.png", 0)
        again = pixels(tmp_path / "again.png")
        np.testing.assert_array_equal(again, img)                  # the command drew the same picture
        z = viz.fields.centre_plane(viewer.series.grid(0), 2)
        lake = patch(img, *pixel_at(viewer, 300.0, 400.0, z))       # 11 m deep
        ground = patch(img, *pixel_at(viewer, 900.0, 400.0, z))     # the dry valley floor downstream
        hillside = patch(img, *pixel_at(viewer, 300.0, 740.0, z))   # dry, high up
        assert blueness(lake) > 40, lake
        for dry in (ground, hillside):
            assert abs(blueness(dry)) < 12 and np.ptp(dry) < 15, dry   # grey
        assert set(viewer.plotter.scalar_bars.keys()) == {"h (m)"}      # units from the array's name
        assert "t = 0 s" in viewer.plotter.actors["time"].GetInput()
        # the second snapshot's water reaches x = 750 m
        viewer.screenshot(tmp_path / "later.png", 1)
        later = pixels(tmp_path / "later.png")
        assert blueness(patch(later, *pixel_at(viewer, 750.0, 400.0, z))) > 40
        assert abs(blueness(patch(img, *pixel_at(viewer, 750.0, 400.0, z)))) < 12
    finally:
        viewer.close()


def test_hillshade_is_lit_from_the_north_west():
    x = np.arange(8) * 10.0
    X, Y = np.meshgrid(x, x, indexing="xy")
    facing = {"north-west": 0.5 * (X - Y), "south-east": 0.5 * (Y - X), "flat": 0 * X}   # rising away, towards
    shade = {k: viz.hillshade(v.ravel(), (8, 8), (10.0, 10.0)) for k, v in facing.items()}
    np.testing.assert_allclose(shade["flat"], np.sin(np.radians(45)))
    assert shade["north-west"].min() > shade["flat"].max() > shade["south-east"].max()


def test_surface3d_draws_the_bed_and_the_water_warped_by_height(tmp_path):
    folder = valley(tmp_path / "valley")
    png = tmp_path / "3d.png"
    assert main(["view", str(folder), "--screenshot", str(png), "--style", "surface3d", "--size", "480", "360"]) == 0
    img = pixels(png)
    assert_not_blank(img)
    assert (np.array([blueness(p) for p in img.reshape(-1, 3).astype(float)]) > 40).mean() > 0.01   # water
    viewer = viz.Viewer(viz.Series.open(folder), style="surface3d", exaggeration=5, wet_depth=0.5,
                        size=(480, 360))
    try:
        viewer.draw(0)
        actors = viewer.plotter.actors
        ground = actors["ground"].mapper.dataset
        water = actors["water"].mapper.dataset
        bed = np.asarray(viewer.series.grid(0).cell_data["bed"])
        np.testing.assert_allclose(ground.points[:, 2], 5 * bed)         # heights x5
        lift = 0.01 * 5 * np.ptp(bed)                                   # drawn a hair above the ground
        assert 5 * 70.0 <= water.points[:, 2].max() <= 5 * 70.0 + lift    # the lake's level
        assert water.bounds[1] < 700                                      # the lake only: x < 600 m
        assert set(viewer.plotter.scalar_bars.keys()) == {"bed (m)", "h (m)"}
        assert "heights x5" in viewer.description and "h > 500 mm" in viewer.description
        viewer.set_field("speed")
        assert "speed (m/s)" in viewer.plotter.scalar_bars.keys()
    finally:
        viewer.close()


def test_terrain_styles_make_movies_and_work_from_the_window_buttons(tmp_path):
    folder = valley(tmp_path / "valley")
    for style in ("terrain", "surface3d"):
        gif = tmp_path / f"{style}.gif"
        assert main(["view", str(folder), "--movie", str(gif), "--style", style, "--size", "320", "240"]) == 0
        with Image.open(gif) as im:
            assert im.n_frames == 2 and im.size == (320, 240)
    viewer = viz.Viewer(viz.Series.open(folder), off_screen=True, size=(800, 600))
    try:
        viewer.add_widgets()
        viewer.draw()
        assert set(viewer._style_buttons) == {"image", "iso", "schlieren", "terrain", "surface3d"}
        button = viewer._style_buttons["surface3d"]
        button.GetRepresentation().SetState(1)
        button.InvokeEvent("StateChangedEvent")
        assert viewer.style == "surface3d" and "ground" in viewer.plotter.actors
        assert viewer.plotter.renderer.axes_widget.GetEnabled()          # the orientation marker
        for callback in viewer.plotter.iren._key_press_event_callbacks["slash"]:
            callback()                                                    # / : the next style, image
        assert viewer.style == "image" and "ground" not in viewer.plotter.actors
        assert not viewer.plotter.renderer.axes_widget.GetEnabled()
        viewer.set_style("terrain")
        assert "water" in viewer.plotter.actors and "relief" in viewer.plotter.actors
    finally:
        viewer.close()


def test_terrain_on_a_run_without_bed_or_h_is_a_clear_error(tmp_path, capsys):
    png = str(tmp_path / "x.png")
    for name, arrays in (("no_bed", ("h", "vel", "speed")), ("no_h", ("vel", "bed"))):
        folder = valley(tmp_path / name, times=(0.0,), arrays=arrays)
        for style in ("terrain", "surface3d"):
            assert main(["view", str(folder), "--screenshot", png, "--style", style]) == 1
            err = capsys.readouterr().err
            assert err.startswith(f"taichiflow: error: style '{style}' draws water over terrain")
            assert "a bed elevation array 'bed' and a depth array 'h'" in err and "Traceback" not in err
    assert not (tmp_path / "x.png").exists()
    magnetised_box(tmp_path / "box", times=(0.0,))
    assert main(["view", str(tmp_path / "box"), "--screenshot", png, "--style", "terrain"]) == 1
    assert "needs a 2D run" in capsys.readouterr().err
    folder = valley(tmp_path / "valley", times=(0.0,))
    assert main(["view", str(folder), "--screenshot", png, "--exaggeration", "0"]) == 1
    assert "--exaggeration must be above 0" in capsys.readouterr().err


def test_flood_pictures_tool_writes_the_gallery_files_from_a_run_folder(tmp_path):
    import subprocess
    root = CASES.parent
    folder, out = valley(tmp_path / "valley", times=(0.0, 60.0, 120.0)), tmp_path / "gallery"
    done = subprocess.run([sys.executable, str(root / "tools" / "flood-pictures.py"), str(folder), "--out", str(out),
                           "--time", "60"], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    for name in ("valley_flood_depth.png", "valley_flood_3d.png"):
        img = pixels(out / name)
        assert img.shape == (760, 1200, 3)
        assert_not_blank(img)
    with Image.open(out / "valley_flood_depth.gif") as im:
        assert im.n_frames == 3
    assert "t = 60 s: wet 0.14 km^2" in done.stdout and "front at x = 860 m" in done.stdout   # the last wet centre
    bare = valley(tmp_path / "bare", times=(0.0,), arrays=("vel", "speed"))
    done = subprocess.run([sys.executable, str(root / "tools" / "flood-pictures.py"), str(bare), "--out", str(out)],
                          capture_output=True, text=True, cwd=root)
    assert done.returncode == 1 and "not a 2D run with bed and h arrays" in done.stderr
