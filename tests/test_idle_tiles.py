"""Skipping idle tiles ([run] skip_idle, kernels/idle.py): runs with and without it are the same
bit for bit, the active tiles cover every cell that is not idle after every step, and what
cannot combine with it is refused."""
import numpy as np
import pytest

from helpers import CASES, simulate
from taichiflow.case import load_case
from taichiflow.errors import CaseError

RUNS = {  # case, overrides, end time
    "ritter_1d": ("dam_break_dry.toml", ["grid.cells=[300]", "run.idle_tile=8"], 6.0),
    # the left reservoir runs out across the periodic face into the dry right end: tile
    # neighbours wrap around there (300 cells, tiles of 10)
    "ritter_1d_periodic": ("dam_break_dry.toml", ["grid.cells=[300]", "run.idle_tile=10", "boundary.x='periodic'"], 6.0),
    "thacker_2d_lsrk3": ("thacker_2d.toml", ["grid.cells=[64,64]", "scheme.integrator='lsrk3'",
                                             "run.idle_tile=6"], 1.2),
    "valley_2d": ("valley_dam_break.toml", ["grid.cells=[120,60]", "run.idle_tile=4"], 240.0),
}


def run(name, skip):
    case_name, overrides, end = RUNS[name]
    case = load_case(CASES / case_name, [*overrides, f"run.skip_idle={str(skip).lower()}"])
    sim = simulate(case, until=0.0)
    shares = []

    def watch(s):
        covered_every_busy_cell(s.solver)
        active, total = s.solver.idle.active_counts()
        shares.append(active / total)

    sim.advance(end, on_step=watch if skip else None)
    # read now: the next Simulation starts Taichi again, and this one's fields go with it
    return sim.solver.conserved_array().tobytes(), sim.step_count, sim.solver.plan.skip_idle, shares


def covered_every_busy_cell(solver):
    """Every cell that is not idle (h > 0 or a discharge) lies in an active tile."""
    u = solver.conserved_array()
    busy = (u[..., 0] != 0.0) | np.any(u[..., 1:4] != 0.0, axis=-1)
    tile = solver.idle.tile
    active = solver.idle.active.to_numpy() != 0
    index = np.nonzero(busy)
    assert np.all(active[tuple(i // tile for i in index)]), "a cell with water lies in a skipped tile"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_skipping_idle_tiles_changes_nothing(name):
    """The same state and step count, bit for bit, with and without skipping; the skipping run
    really skipped (fewer active tiles than all) and covered every wet cell after every step."""
    skipped, skipped_steps, skipping, shares = run(name, True)
    full, full_steps, not_skipping, _ = run(name, False)
    assert skipped_steps == full_steps > 20
    assert skipped == full
    assert min(shares) < 0.8 and max(shares) <= 1.0
    assert not_skipping is False and skipping is True


def test_refused_combinations():
    """A model without idle() cannot skip; skipping walks segments no longer than a tile, and
    tiles at least as wide as a step carries values."""
    cases = {
        ("sod.toml", "run.skip_idle=true"): "needs a model that declares idle",
        ("dam_break_dry.toml", "run.segment=[32]"): "segments of at most idle_tile = 16 cells",
        ("dam_break_dry.toml", "run.idle_tile=8", "scheme.reconstruction='weno5'",
         "scheme.integrator='lsrk3'"): "carries values up to 9 cells",
    }
    for (case_name, *overrides), message in cases.items():
        with pytest.raises(CaseError, match=message):
            simulate(load_case(CASES / case_name, overrides), until=0.0)


def test_retried_steps_restore_and_repeat_the_same_tiles():
    """WENO5 drives the shores of the emerged bump negative, the retry with PLM mends each such
    step: the restore and the retry run on the failed step's tiles, and the result is the
    no-skipping run's, bit for bit."""
    states = {}
    for skip in ("true", "false"):
        case = load_case(CASES / "dam_break_dry.toml",
                         ["grid.cells=[200]", "scheme.reconstruction='weno5'", "scheme.retry={reconstruction='plm'}",
                          "run.idle_tile=9", f"run.skip_idle={skip}"])
        sim = simulate(case, until=2.0)
        states[skip] = (sim.solver.conserved_array().tobytes(), sim.step_count, sim.retries)
    assert states["true"] == states["false"]
    assert states["true"][2] > 0, "no step was retried: the test lost its point"
