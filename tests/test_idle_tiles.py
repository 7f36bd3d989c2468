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
    # 297 cells in tiles of 4: the last tile is 1 cell wide, and the water crossing the periodic
    # face reaches the tile below it within a step (a reach of 4): both stay active
    "ritter_1d_periodic_cut_tile": ("dam_break_dry.toml", ["grid.cells=[297]", "run.idle_tile=4",
                                                           "boundary.x='periodic'"], 3.0),
    # three stages, a reach of 6: an SSP integrator, since lsrk3 drives a thin shore negative
    # there in f32 (not strong-stability preserving); its two registers are skipped in 1D
    "thacker_2d_ssprk3": ("thacker_2d.toml", ["grid.cells=[64,64]", "scheme.integrator='ssprk3'",
                                              "run.idle_tile=6"], 1.2),
    "ritter_1d_lsrk3": ("dam_break_dry.toml", ["grid.cells=[300]", "scheme.integrator='lsrk3'",
                                               "run.idle_tile=8"], 6.0),
    "valley_2d": ("valley_dam_break.toml", ["grid.cells=[120,60]", "run.idle_tile=4"], 240.0),
}


def run(name, skip, arch="cpu"):
    """On CUDA in f32: its plan walks through warp shuffles, whose warps skip by a vote and
    walk the listed columns of tiles only."""
    case_name, overrides, end = RUNS[name]
    case = load_case(CASES / case_name, [*overrides, f"run.skip_idle={str(skip).lower()}"])
    sim = simulate(case, arch, "f32" if arch == "cuda" else "f64", until=0.0)
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
def test_skipping_idle_tiles_changes_nothing(name, arch):
    """The same state and step count, bit for bit, with and without skipping; the skipping run
    really skipped (fewer active tiles than all) and covered every wet cell after every step."""
    skipped, skipped_steps, skipping, shares = run(name, True, arch)
    full, full_steps, not_skipping, _ = run(name, False, arch)
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


def test_retried_steps_restore_and_repeat_the_same_tiles(arch):
    """WENO5 drives the shores of the emerged bump negative, the retry with PLM mends each such
    step: the restore and the retry run on the failed step's tiles, and the result is the
    no-skipping run's, bit for bit."""
    states = {}
    for skip in ("true", "false"):
        case = load_case(CASES / "dam_break_dry.toml",
                         ["grid.cells=[200]", "scheme.reconstruction='weno5'", "scheme.retry={reconstruction='plm'}",
                          "run.idle_tile=9", f"run.skip_idle={skip}"])
        sim = simulate(case, arch, until=2.0)  # (1D: walked on CUDA too)
        states[skip] = (sim.solver.conserved_array().tobytes(), sim.step_count, sim.retries)
    assert states["true"] == states["false"]
    assert states["true"][2] > 0, "no step was retried: the test lost its point"


def test_faces_that_may_bring_water_keep_their_tiles_active():
    """A periodic axis the tiles divide wraps its tiles' neighbours; faces whose ghost cells copy
    the inside (outflow, walls) keep nothing active; a constant inflow face, another rank's block
    (kind "neighbour") and a periodic axis with a cut last tile keep their tiles active: along
    an upper face with a cut last tile the two last (water crosses a narrow tile in a step)."""
    from taichiflow.kernels.idle import _faces
    wraps, frame = _faces([("periodic", "periodic"), ("periodic", "periodic"), ("inflow", "outflow")],
                          (64, 60, 32), 16)
    assert wraps == [True, False, False]
    assert frame == [(0, 0), (1, 2), (1, 0)]
    wraps, frame = _faces([("wall", "neighbour"), ("symmetry", "absorbing")], (64, 64), 16)
    assert wraps == [False, False] and frame == [(0, 1), (0, 0)]


@pytest.mark.parametrize("cells, tile, length, lead_in", [((100, 70), 16, 16, 2), ((100, 70), 16, 8, 1),
                                                         ((37, 29, 45), 8, 8, 2), ((37, 29, 45), 8, 4, 2)])
def test_the_shuffle_walk_over_listed_columns_solves_each_of_their_faces_once(cells, tile, length, lead_in):
    """The thread-to-slot map of the warp-shuffle walk over the listed columns of tiles (CUDA
    only, so the map is checked here alone): the lanes that solve a face (not the warp's lead-in
    lanes nor its last, slots of faces f >= 0) cover each slot of every row of every listed
    column exactly once, and no lane holds a slot outside them."""
    import itertools
    import taichi as ti
    from taichiflow.kernels.idle import IdleTiles
    from taichiflow.kernels.plan import WARP
    ti.init(arch=ti.cpu)
    idle = IdleTiles(None, cells, tile, True)  # (the rebuild needs a clock; nothing here launches it)
    n_segments = (cells[0] + length - 1) // length
    row_shape = (n_segments,) + tuple(cells[1:-1])
    slots_per_row, stride = cells[-1] + lead_in, WARP - lead_in
    total = int(np.prod(row_shape)) * slots_per_row
    per_column, slot_of = idle.column_walk(row_shape, length, slots_per_row, stride, total)
    n_columns = int(np.prod(idle.columns))
    chosen = np.sort(np.random.default_rng(1).choice(n_columns, size=n_columns // 3, replace=False)).astype(np.int32)
    idle.listed_columns.from_numpy(np.concatenate([chosen, np.zeros(n_columns - len(chosen), np.int32)]))
    idle.column_count[None] = len(chosen)
    slots = ti.field(ti.i64, shape=len(chosen) * per_column)

    @ti.kernel
    def walk():
        for k in range(idle.listed_columns_times(per_column)):
            slots[k] = slot_of(k)

    walk()
    got = slots.to_numpy()
    lane = np.arange(len(got)) % WARP
    solving = (got < total) & (lane >= lead_in - 1) & (lane < WARP - 1) & (got % slots_per_row >= lead_in - 1)
    expected = set()
    for column in chosen:
        C = np.unravel_index(column, idle.columns)
        spans = [range(C[0] * (tile // length), min((C[0] + 1) * (tile // length), n_segments))]
        spans += [range(C[a] * tile, min((C[a] + 1) * tile, cells[a])) for a in range(1, len(cells) - 1)]
        for row in itertools.product(*spans):
            first = int(np.ravel_multi_index(row, row_shape)) * slots_per_row
            expected.update(range(first, first + slots_per_row))
    assert set(got[got < total].tolist()) <= expected
    assert sorted(got[solving].tolist()) == sorted(s for s in expected if s % slots_per_row >= lead_in - 1)
