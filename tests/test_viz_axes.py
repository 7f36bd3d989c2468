"""Pictures that can be read: coordinate axes on 2D images and around 3D views, an orientation
marker in 3D, one colour range over a movie (or --clim), and runs with symmetry planes shown
whole (mirrored, vectors right) unless --no-mirror. Everything renders off-screen."""
import numpy as np
import pytest
from PIL import Image

import pyvista as pv  # noqa: F401  (a dependency of taichiflow; GPU nodes skip this file)

from helpers import CASES
from taichiflow import viz
from taichiflow.cli import main
from taichiflow.io import PvdSeries, read_vti, write_vti

RUNS = {
    "2d": ("riemann2d.toml", ["grid.cells=[24,24]", "time.end=0.2", "output.interval=0.1"]),
    "3d": ("sedov3d.toml", ["grid.cells=[24,24,24]", "time.end=0.02", "output.interval=0.01"]),
    # a quarter of the 2D blast: x = 0 and y = 0 are symmetry planes
    "quarter": ("sedov2d.toml", ["grid.cells=[16,16]", "grid.lower=[0.0,0.0]", "time.end=0.02",
                                 "output.interval=0.01", 'boundary.x=["symmetry","outflow"]',
                                 'boundary.y=["symmetry","outflow"]']),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("viz_axes")
    out = {}
    for kind, (case, sets) in RUNS.items():
        out[kind] = base / kind
        args = ["run", str(CASES / case), "--out", str(out[kind]), "--quiet", "--arch", "cpu"]
        assert main(args + [a for s in sets for a in ("--set", s)]) == 0
    return out


def viewer_of(out, mirror=None, **kw):
    series = viz.Series.open(out) if mirror is None else viz.Series.open(out, mirror=mirror)
    return viz.Viewer(series, off_screen=True, **kw)


def to_pixels(renderer, x, y, z, height):
    """(column, row) in a screenshot of the world point (x, y, z)."""
    renderer.SetWorldPoint(x, y, z, 1.0)
    renderer.WorldToDisplay()
    dx, dy, _ = renderer.GetDisplayPoint()
    return dx, height - dy


def axis_labels(actor, axis):
    labels = actor.GetAxisLabels(axis)
    return [labels.GetValue(i) for i in range(labels.GetNumberOfValues())]


# --- axes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["image", "iso", "schlieren"])
def test_2d_images_have_x_and_y_axes_with_coordinates_beside_the_data(runs, style):
    viewer = viewer_of(runs["2d"], style=style)
    try:
        viewer.draw()
        p = viewer.plotter
        axes = p.renderer.cube_axes_actor
        assert axes is not None and axes.GetVisibility() and axes.GetUse2DMode()
        assert (axes.x_title, axes.y_title) == ("x", "y")
        assert axes.GetXAxisVisibility() and axes.GetYAxisVisibility() and not axes.GetZAxisVisibility()
        for axis in (0, 1):     # round coordinates of the grid [0, 1]^2
            assert axis_labels(axes, axis) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
        assert axes.GetLabelTextProperty(0).GetFontSize() >= 14       # readable at 1024 x 768
        with_axes = p.screenshot(return_img=True).copy()
        axes.SetVisibility(False)
        p.render()
        without = p.screenshot(return_img=True)
        drawn = np.abs(with_axes.astype(int) - without).sum(axis=-1) > 60
        assert drawn.sum() > 400                         # tick labels and titles
        h = viewer.size[1]
        x0, y0 = to_pixels(p.renderer, 0.0, 0.0, 0.0, h)
        x1, y1 = to_pixels(p.renderer, 1.0, 1.0, 0.0, h)
        inside = drawn[int(y1) + 2:int(y0) - 2, int(x0) + 2:int(x1) - 2]
        assert inside.sum() == 0                          # nothing over the data
        bar = next(iter(p.scalar_bars.values()))
        bx, by = bar.GetPosition()
        assert drawn[int(h * (1 - by - bar.GetHeight())):, :].sum() == 0   # nor over the colour bar
        assert drawn[:, :int(x0)].sum() > 100 and drawn[int(y0):, :].sum() > 100   # left of and below it
    finally:
        viewer.close()


@pytest.mark.parametrize("style", ["slice", "iso", "volume"])
def test_3d_views_have_a_labelled_bounds_box_and_an_orientation_marker(runs, style):
    viewer = viewer_of(runs["3d"], style=style)
    try:
        viewer.draw()
        p = viewer.plotter
        axes = p.renderer.cube_axes_actor
        assert axes is not None and axes.GetVisibility() and not axes.GetUse2DMode()
        assert (axes.x_title, axes.y_title, axes.z_title) == ("x", "y", "z")
        assert np.allclose(axes.bounds, viewer.series.grid(viewer.index).bounds)
        assert axis_labels(axes, 0) == ["-0.5", "-0.25", "0", "0.25", "0.5"]
        widget = p.renderer.axes_widget
        assert widget is not None and widget.GetEnabled()
        img = p.screenshot(return_img=True)
        x0, y0, x1, y1 = widget.GetViewport()
        h, w = img.shape[:2]
        corner = img[int(h * (1 - y1)):int(h * (1 - y0)), int(w * x0):int(w * x1)].astype(int)
        coloured = (corner.max(axis=-1) - corner.min(axis=-1)) > 80   # the red, green, blue arrows
        assert coloured.sum() > 50
    finally:
        viewer.close()


def test_3d_schlieren_is_a_flat_image_with_axes_and_the_marker(runs):
    viewer = viewer_of(runs["3d"], style="schlieren")
    try:
        viewer.draw()
        assert viewer.plotter.renderer.cube_axes_actor.GetUse2DMode()
        assert viewer.plotter.renderer.axes_widget.GetEnabled()
    finally:
        viewer.close()


def test_label_counts_give_round_coordinates():
    from taichiflow.viz.axes import label_count

    assert label_count(0.0, 1.0) == 6          # 0, 0.2, ... 1
    assert label_count(0.0, 0.75) == 4         # 0, 0.25, 0.5, 0.75
    assert label_count(-0.375, 0.375) == 4     # -0.375, -0.125, 0.125, 0.375
    assert label_count(0.0, 6.0) == 4          # 0, 2, 4, 6
    assert label_count(-6.0, 6.0) == 7


# --- one colour range -----------------------------------------------------------------------
def series_range(out, field):
    values = [read_vti(out / name)[1][field] for _, name in PvdSeries(out / "series.pvd", resume=True).entries]
    return min(float(v.min()) for v in values), max(float(v.max()) for v in values)


def test_a_movie_colours_every_frame_with_the_series_range(runs, tmp_path, monkeypatch):
    viewer = viewer_of(runs["2d"], size=(320, 240))
    ranges = []
    write_frame = viewer.plotter.write_frame
    monkeypatch.setattr(viewer.plotter, "write_frame",
                        lambda: (ranges.append(tuple(viewer.plotter.actors["image"].mapper.scalar_range)),
                                 write_frame()))
    try:
        frame_ranges = [tuple(np.round(viz.fields.value_range(viewer.series.grid(i).cell_data["rho"]), 12))
                        for i in range(len(viewer.series))]
        assert len(set(frame_ranges)) > 1              # the snapshots' own ranges differ
        viewer.write_movie(tmp_path / "m.gif")
    finally:
        viewer.close()
    assert len(ranges) == 3
    assert ranges == [pytest.approx(series_range(runs["2d"], "rho"), rel=1e-12)] * 3


def test_a_screenshot_keeps_its_own_range_and_clim_fixes_both(runs, tmp_path):
    viewer = viewer_of(runs["2d"], size=(320, 240))
    try:
        viewer.draw(0)
        own = viz.fields.value_range(viewer.series.grid(0).cell_data["rho"])
        assert viewer.plotter.actors["image"].mapper.scalar_range == pytest.approx(own)
    finally:
        viewer.close()
    viewer = viewer_of(runs["2d"], size=(320, 240), clim=(0.2, 1.2))
    try:
        viewer.draw(0)
        assert viewer.plotter.actors["image"].mapper.scalar_range == pytest.approx((0.2, 1.2))
        viewer.write_movie(tmp_path / "m.gif")
        assert viewer.plotter.actors["image"].mapper.scalar_range == pytest.approx((0.2, 1.2))
    finally:
        viewer.close()


def test_the_window_keeps_the_series_range_while_stepping_through_time(runs):
    viewer = viewer_of(runs["3d"], size=(480, 360))
    try:
        viewer.add_widgets()
        expected = series_range(runs["3d"], "rho")
        for index in range(len(viewer.series)):
            viewer.set_index(index)
            assert viewer.plotter.actors["slices"].mapper.scalar_range == pytest.approx(expected, rel=1e-12)
    finally:
        viewer.close()


def test_view_clim_on_the_command_line(runs, tmp_path, monkeypatch, capsys):
    seen = []
    screenshot = viz.Viewer.screenshot
    monkeypatch.setattr(viz.Viewer, "screenshot", lambda self, *a: (seen.append(self.clim), screenshot(self, *a))[1])
    png = str(tmp_path / "c.png")
    assert main(["view", str(runs["2d"]), "--screenshot", png, "--clim", "0.1", "2", "--size", "320", "240"]) == 0
    assert seen == [(0.1, 2.0)]
    assert main(["view", str(runs["2d"]), "--screenshot", png, "--clim", "2", "0.1"]) == 1
    assert "--clim LOW HIGH: LOW must be below HIGH" in capsys.readouterr().err


def test_the_series_range_reads_one_array_per_file_without_vtk(runs, monkeypatch):
    series = viz.Series.open(runs["2d"])
    series.arrays                                      # the first grid, read once
    monkeypatch.setattr(viz.series.pv, "read", lambda *a, **k: pytest.fail("a whole snapshot was read"))
    assert series.field_range("rho", 2) == pytest.approx(series_range(runs["2d"], "rho"), rel=1e-12)
    speeds = [np.linalg.norm(read_vti(f)[1]["vel"], axis=-1) for _, f in series.entries]
    assert series.field_range("vel", 2) == pytest.approx((min(s.min() for s in speeds),
                                                          max(s.max() for s in speeds)), rel=1e-12)


# --- symmetry planes ------------------------------------------------------------------------
def test_a_run_with_symmetry_planes_is_shown_whole_with_vectors_mirrored(runs):
    out = runs["quarter"]
    meta, raw = read_vti(out / PvdSeries(out / "series.pvd", resume=True).entries[-1][1])
    viewer = viewer_of(out, field="vel_x")
    try:
        viewer.draw()
        shown = viewer.plotter.actors["image"].mapper.dataset
        assert shown.bounds[0] == pytest.approx(-0.5) and shown.bounds[1] == pytest.approx(0.5)
        assert shown.bounds[2] == pytest.approx(-0.5) and shown.bounds[3] == pytest.approx(0.5)
        assert "mirrored across x = 0, y = 0" in viewer.description
        grid = viewer.series.grid(viewer.index)
        assert grid.bounds[:4] == pytest.approx((-0.5, 0.5, -0.5, 0.5))
        vel = np.asarray(grid.cell_data["vel"]).reshape(32, 32, -1)        # [j, i] of the whole
        rho = np.asarray(grid.cell_data["rho"]).reshape(32, 32)
        quarter = raw["vel"]                                               # [i, j] as computed
        np.testing.assert_array_equal(vel[16:, 16:, 0], quarter[..., 0].T)          # as computed
        np.testing.assert_array_equal(vel[16:, 15::-1, 0], -quarter[..., 0].T)      # x mirror: u negated
        np.testing.assert_array_equal(vel[16:, 15::-1, 1], quarter[..., 1].T)       # ... v kept
        np.testing.assert_array_equal(vel[15::-1, 16:, 1], -quarter[..., 1].T)      # y mirror: v negated
        np.testing.assert_array_equal(vel[15::-1, 15::-1, :2], -quarter[..., :2].transpose(1, 0, 2))
        np.testing.assert_array_equal(rho[15::-1, 15::-1], raw["rho"].T)
        assert quarter[..., 0].max() > 0.1                                 # the blast moves
    finally:
        viewer.close()


def test_no_mirror_shows_the_part_computed(runs, tmp_path, capsys):
    out = runs["quarter"]
    png = str(tmp_path / "q.png")
    assert main(["view", str(out), "--screenshot", png, "--size", "320", "240", "--no-mirror"]) == 0
    assert "mirrored" not in capsys.readouterr().out
    assert main(["view", str(out), "--screenshot", png, "--size", "320", "240"]) == 0
    assert "mirrored across x = 0, y = 0" in capsys.readouterr().out
    viewer = viewer_of(out, mirror=False)
    try:
        viewer.draw()
        assert viewer.plotter.actors["image"].mapper.dataset.bounds[:4] == pytest.approx((0, 0.5, 0, 0.5))
    finally:
        viewer.close()


def synthetic_series(tmp_path, ndim, boundary):
    """Two snapshots of made-up fields, velocity pointing away from the lower corner."""
    n = 6
    (tmp_path / "case.toml").write_text(f'[case]\nname = "made_up"\n[model]\nname = "euler"\n'
                                        f'[grid]\ncells = {[n] * ndim}\n[boundary]\n{boundary}\n')
    series = PvdSeries(tmp_path / "series.pvd")
    centres = np.meshgrid(*([(np.arange(n) + 0.5) / n] * ndim), indexing="ij")
    for k in range(2):
        vel = np.stack(list(centres) + [np.zeros_like(centres[0])] * (3 - ndim), axis=-1) * (k + 1)
        write_vti(tmp_path / f"s{k}.vti", (n,) * ndim, (0.0,) * ndim, (1 / n,) * ndim,
                  {"rho": 1 + sum(centres), "vel": vel}, time=0.1 * k)
        series.add(0.1 * k, f"s{k}.vti")
    return tmp_path


def test_3d_mirroring_across_two_faces_and_the_upper_face(tmp_path):
    out = synthetic_series(tmp_path, 3, 'x = ["outflow", "symmetry"]\ny = ["symmetry", "outflow"]\n'
                                        'z = ["symmetry", "symmetry"]')
    series = viz.Series.open(out)
    assert series.mirror_faces == [(0, 1), (1, 0), (2, 0)]
    grid = series.grid(1)
    assert grid.bounds == pytest.approx((0, 2, -1, 1, -1, 1))
    vel = np.asarray(grid.cell_data["vel"]).reshape(12, 12, 12, 3)          # [k, j, i]
    _, raw = read_vti(out / "s1.vti")
    np.testing.assert_array_equal(vel[6:, 6:, :6], raw["vel"].transpose(2, 1, 0, 3))
    np.testing.assert_array_equal(vel[6:, 6:, 11:5:-1, 0], -raw["vel"][..., 0].T)   # beyond x = 1
    np.testing.assert_array_equal(vel[5::-1, 5::-1, :6, 1:], -raw["vel"][..., 1:].transpose(2, 1, 0, 3))
    viewer = viz.Viewer(series, off_screen=True, size=(320, 240), style="slice")
    try:
        viewer.draw()
        assert viewer.plotter.actors["slices"].mapper.dataset.bounds == pytest.approx((0, 2, -1, 1, -1, 1),
                                                                                      abs=1e-9)
    finally:
        viewer.close()


def test_a_1d_range_covers_the_mirrored_velocity(tmp_path):
    out = synthetic_series(tmp_path, 1, 'x = ["symmetry", "outflow"]')
    series = viz.Series.open(out)
    assert series.field_range("vel", 1) == pytest.approx((-2 * 11 / 12, 2 * 11 / 12))
    assert viz.Series.open(out, mirror=False).field_range("vel", 1) == pytest.approx((1 / 12, 2 * 11 / 12))
    assert series.grid(0).bounds[:2] == pytest.approx((-1, 1))


# --- 1D charts: units, no duplicate panel ------------------------------------------------------
def chart_texts(viewer):
    """(x label of the last chart, the y labels, the first chart's title) of a 1D viewer."""
    charts = viewer._charts[1]
    return charts[-1].x_label, [c.y_label for c in charts], charts[0].title


def test_1d_charts_carry_the_units_the_case_declares(tmp_path):
    """Issue 43: the gas-water tube's axes had no units though its case is in mm, us, g/cm^3 and
    GPa. A case's [case] units name them (length, time, fields by array name: vel for vel_x)."""
    plain, declared = tmp_path / "plain", tmp_path / "declared"
    for out in (plain, declared):
        out.mkdir()
        synthetic_series(out, 1, 'x = "outflow"')
    text = (declared / "case.toml").read_text().replace(
        '[case]\nname = "made_up"\n',
        '[case]\nname = "made_up"\nunits = { length = "mm", time = "µs", rho = "g/cm³", vel = "km/s" }\n')
    (declared / "case.toml").write_text(text)
    for out, expected in ((plain, ("x", ["rho", "vel_x"], "t = 0.1   (2/2)")),
                          (declared, ("x (mm)", ["rho (g/cm³)", "vel_x (km/s)"], "t = 0.1 µs   (2/2)"))):
        viewer = viewer_of(out, size=(400, 300))
        try:
            viewer.draw(1)
            x_label, y_labels, title = chart_texts(viewer)
            assert (x_label, y_labels) == expected[:2] and title.endswith(expected[2]), (x_label, y_labels, title)
        finally:
            viewer.close()


def test_a_depth_over_a_flat_bed_is_one_panel_not_two(tmp_path):
    """Issue 43: a dam break (flat bed) drew h and surface as two identical panels; over a bump
    the surface keeps its panel."""
    for bed, panels in ((0.0, ["h", "vel"]), (None, ["h", "vel", "surface"])):
        out = tmp_path / ("flat" if bed is not None else "bump")
        out.mkdir()
        (out / "case.toml").write_text('[case]\nname = "dam"\n[model]\nname = "shallow_water"\n[grid]\ncells = [8]\n')
        x = (np.arange(8) + 0.5) / 8
        ground = np.full(8, bed) if bed is not None else 0.2 * np.exp(-30 * (x - 0.5) ** 2)
        h = np.where(x < 0.5, 0.005, 0.001)
        write_vti(out / "s0.vti", (8,), (0.0,), (1 / 8,), {"h": h, "vel": np.zeros((8, 3)), "surface": h + ground},
                  time=0.0)
        PvdSeries(out / "series.pvd").add(0.0, "s0.vti")
        viewer = viewer_of(out, size=(400, 300))
        try:
            viewer.draw(0)
            assert viewer._charts[0] == panels
        finally:
            viewer.close()
