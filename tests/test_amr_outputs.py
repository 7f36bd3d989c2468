"""What an adaptive run ([amr]) writes: `taichiflow run` to .vtu snapshots of the leaves listed
in series.pvd, diagnostics rows with the forest's figures, the snapshot resampled on the
finest level as the adaptive run itself resamples it, and the refusals and failures."""
import csv
import re

import numpy as np
import pytest

from helpers import ROOT, case_from_text, precise
from taichiflow.cli import main
from taichiflow.errors import SimulationError
from taichiflow.io import read_pvd
from taichiflow.run.adaptive import AdaptiveRun
from taichiflow.run.adaptive_outputs import AdaptiveOutputs

SOD_2D = """
[case]
name = "sod_amr"
[model]
name = "euler"
params = { gamma = 1.4 }
[run]
arch = "cpu"
precision = "f64"
[grid]
cells = [32, 8]
upper = [1.0, 0.25]
[amr]
block_cells = 8
max_level = 2
gradient_above = 0.02
[time]
end = 0.1
[boundary]
x = "outflow"
y = "periodic"
[initial]
background = { rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }
[[initial.regions]]
shape = "half_space"
point = [0.5, 0.0]
normal = [1.0, 0.0]
state = { rho = 0.125, p = 0.1 }
[output]
interval = 0.05
"""


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_taichiflow_run_writes_the_leaves(tmp_path, capsys):
    import pyvista as pv

    case = tmp_path / "sod_amr.toml"
    case.write_text(SOD_2D)
    out = tmp_path / "out"
    assert main(["run", str(case), "--out", str(out), "--quiet"]) == 0
    series = read_pvd(out / "series.pvd")
    assert [t for t, _ in series] == pytest.approx([0.0, 0.05, 0.1])
    assert [name for _, name in series] == ["snapshot_0000.vtu", "snapshot_0001.vtu", "snapshot_0002.vtu"]
    table = rows(out / "diagnostics.csv")
    last = table[-1]
    leaves = pv.read(out / "snapshot_0002.vtu")
    head = (out / "snapshot_0002.vtu").read_bytes()[:4000].decode("utf-8", "replace")
    assert 'type="Int32" Name="connectivity"' in head and 'type="Int32" Name="offsets"' in head  # (fit: half the bytes)
    assert leaves.n_cells == int(last["leaf_cells"])
    assert leaves.n_cells == 64 * sum(int(last[f"leaf_blocks_{k}"]) for k in range(3))
    assert int(last["leaf_blocks_2"]) > 0 and leaves.cell_data["level"].max() == 2
    assert float(leaves.field_data["TIME"][0]) == pytest.approx(0.1)
    assert np.isclose(leaves.area, 0.25)  # (the leaves tile the domain)
    # Until a wave reaches an end (not by t = 0.1) the x-momentum grows by the pressure
    # difference of the two ends times the face area, p = 1 and 0.1 there as they were, and the
    # mass through the ends is the rounding of a still state's face flux.
    for row in table:
        assert float(row["total_mom_x"]) == pytest.approx(0.9 * 0.25 * float(row["time"]), rel=1e-12, abs=1e-15)
        assert float(row["total_rho"]) == pytest.approx(float(table[0]["total_rho"]), rel=1e-12)
    assert (out / "case.toml").read_text().count("[amr]") == 1
    # run.log's closing line keeps the initial outputs and the first step (which compiles) apart
    # from the rate of the steps after it, as a uniform run's does
    closing = (out / "run.log").read_text().splitlines()[-1]
    steps = int(last["step"])
    assert re.search(rf"first step \(including compile\) [0-9.]+ s; {steps} steps to step {steps}, t = 0\.1 in "
                     r"[0-9.]+ s \([0-9.e+]+ leaf cell-updates/s; [0-9.e+]+ after the first step, regrids", closing), closing
    # The rows' least and largest primitive values are the snapshot's leaves' (written at the
    # same time), and the ends' states still stand (p = 1 and 0.1 to 1e-5: the scheme's over-
    # and undershoots near the waves are 6e-8 and 3e-6).
    for name in ("rho", "p"):
        values = leaves.cell_data[name]
        assert float(last[f"min_{name}"]) == values.min() and float(last[f"max_{name}"]) == values.max()
    speeds = leaves.cell_data["vel"]
    assert float(last["max_vel_x"]) == speeds[:, 0].max() and float(last["min_vel_y"]) == speeds[:, 1].min()
    assert float(last["max_p"]) == pytest.approx(1.0, rel=1e-5) and float(last["min_p"]) == pytest.approx(0.1, rel=1e-5)
    assert float(table[0]["min_rho"]) == pytest.approx(0.125, rel=1e-14) and float(last["max_vel_x"]) > 0.9  # (the rarefaction's tail: 0.93)
    check_block_outlines_and_spectrum(out, last, capsys)


def check_block_outlines_and_spectrum(out, last, capsys):
    """The leaf blocks' outlines (4 sides each, of the block's width at its level: root blocks
    are 0.25 wide) drawn by `view --blocks`; `spectrum` refuses the leaves."""
    from taichiflow.viz.amr import block_outlines
    import pyvista as pv

    outlines = block_outlines(pv.read(out / "snapshot_0002.vtu"))
    counts = [int(last[f"leaf_blocks_{k}"]) for k in range(3)]
    assert outlines.n_cells == 4 * sum(counts)
    perimeters = outlines.compute_cell_sizes(length=True, area=False, volume=False).cell_data["Length"].sum()
    assert perimeters == pytest.approx(sum(n * 4 * 0.25 / 2 ** k for k, n in enumerate(counts)), rel=1e-12)
    picture = out / "blocks.png"
    assert main(["view", str(out), "--blocks", "--screenshot", str(picture), "--size", "400", "300"]) == 0
    assert picture.stat().st_size > 1000 and "leaf blocks outlined" in capsys.readouterr().out
    assert main(["spectrum", str(out)]) != 0
    assert "the leaves of an adaptive run ([amr]): a spectrum needs one uniform periodic grid" in capsys.readouterr().err


def test_the_snapshot_resampled_is_the_runs_finest_grid(tmp_path):
    import pyvista as pv
    from taichiflow.viz.amr import resampled

    run = AdaptiveRun(precise(case_from_text(tmp_path, SOD_2D)))
    run.advance(0.05)
    outputs = AdaptiveOutputs(run, tmp_path)
    path = outputs.snapshot()
    outputs.close()
    image = resampled(pv.read(path))
    assert tuple(n - 1 for n in image.dimensions[:2]) == (128, 32)
    rho = image.cell_data["rho"].reshape(32, 128).T  # (x fastest)
    assert np.array_equal(rho, run.uniform()[..., 0])


@pytest.mark.parametrize("extra,refused", [
    (["--render"], "--render: not supported with \\[amr\\]"),
    (["--set", 'output.fields=["rho", "mach"]'], "mach: derived fields are not written"),
])
def test_what_adaptive_runs_cannot_do_is_refused(tmp_path, capsys, extra, refused):
    case = tmp_path / "sod_amr.toml"
    case.write_text(SOD_2D)
    code = main(["run", str(case), "--out", str(tmp_path / "out"), "--quiet", *extra])
    assert code != 0
    assert re.search(refused, capsys.readouterr().err)
    assert not list((tmp_path / "out").glob("snapshot_*"))


def draining_model(folder):
    """Euler with a source that drains the energy from t = 0.02 on, as draining.py in `folder`."""
    euler = (ROOT / "models" / "euler.py").read_text()
    (folder / "draining.py").write_text(euler + """

@model.source
def source(U, W, x, t):
    return model.U(rho=0.0, mom=ti.Vector([0.0, 0.0, 0.0]), E=-1.0e4 * ti.cast(t > 0.02, ti.f64))
""")


def test_a_failed_step_keeps_the_last_good_state(tmp_path):
    """Euler with a source that drains the energy from t = 0.02 on: the first step after it
    leaves p < 0; the error names the block and cell, and the state is the one before that step."""
    draining_model(tmp_path)
    text = SOD_2D.replace('name = "euler"', 'name = "draining.py"')
    run = AdaptiveRun(precise(case_from_text(tmp_path, text)))
    with pytest.raises(SimulationError, match=r"left an inadmissible state in the block at level \d, \(\d+, \d+\), "
                                              r"cell \(\d+, \d+\); the state before it is kept"):
        run.advance(0.1)
    assert 0.02 - 0.01 < run.t <= 0.02 + 1e-12
    rate, bad = run.solver.check_state()
    assert bad is None and rate > 0


def test_a_failure_without_the_last_good_state_writes_no_snapshot_of_it(tmp_path):
    """[run] keep_last_good = false: the failed step cannot be undone, so the run says so and
    writes no snapshot of the bad state as if it were good."""
    draining_model(tmp_path)
    case = tmp_path / "sod_amr.toml"
    case.write_text(SOD_2D.replace('name = "euler"', 'name = "draining.py"'))
    out = tmp_path / "out"
    assert main(["run", str(case), "--out", str(out), "--quiet", "--set", "run.keep_last_good=false"]) == 2
    log = (out / "run.log").read_text()
    assert "keep_last_good = false: the state before it is lost" in log
    assert "the last snapshot and checkpoint are the newest good output" in log
    assert [name for _, name in read_pvd(out / "series.pvd")] == ["snapshot_0000.vtu"]
