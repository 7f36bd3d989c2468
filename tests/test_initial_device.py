"""The initial state built on the device (taichiflow/kernels/initial.py) against the numpy
initial_primitive it replaces: every shape, sharp and smoothed, overlapping regions, every
perturbation kind, 1D/2D/3D; blocks of a grid that reassemble it bit for bit; f32 storage; the
same errors; and shipped cases.

"Equal to 1e-13 relative" is measured against each variable's largest magnitude on the grid:
a smoothed weight's tail (1 - tanh near 1) has no relative precision in numpy either, and
numpy's tanh/exp may be SIMD versions that differ from libm's by an ulp. Cases with sharp
regions and sine perturbations use only +, -, *, /, sqrt and sin, and are compared bitwise.
"""
import copy
from pathlib import Path

import numpy as np
import pytest
import taichi as ti

from taichiflow.case import load_case
from taichiflow.initial import initial_primitive, state_vector
from taichiflow.kernels.initial import MAX_BLOCK_CELLS, make_initial_fill
from taichiflow.model import load_model
from taichiflow.run.states import resolve_states

ROOT = Path(__file__).resolve().parent.parent
RTOL = 1e-13
EULER = {"rho": 1, "vel": 3, "p": 1}
PARAMS = {"gamma": 1.4}
BACKGROUND = {"rho": 1.0, "vel": [0.25, -0.5, 0.0], "p": 1.0}
CENTER = [0.0, 0.75, 1.25]
STATES = ({"rho": 0.125, "p": 0.1}, {"vel": [0.5, -0.25, 0.75], "p": 10.0})
GRIDS = {1: ([40], [-1.1], [1.3]),  # bounds that f32 cannot hold: a constant rounded to f32 shows
         2: ([24, 18], [-1.1, 0.1], [1.3, 1.7]),
         3: ([12, 10, 8], [-1.1, 0.1, 0.3], [1.3, 1.7, 2.1])}


@pytest.fixture(scope="module", autouse=True)
def taichi_cpu_f64():
    ti.init(arch=ti.cpu, default_fp=ti.f64, fast_math=False, log_level=ti.WARN)
    yield


# --- helpers ------------------------------------------------------------------------------

def device_state(initial, layout, cells, lower, upper, params=PARAMS, dtype=ti.f64,
                 offset=None, block=None, ghosts=0):
    """The fill's result for one block, read back without its ghost layers, after checking
    that the ghost cells (set to NaN first) were left alone."""
    fill = make_initial_fill(initial, layout, cells, lower, upper, params, dtype,
                             block_offset=offset, block_cells=block)
    offset_or_0 = offset or [0] * len(cells)
    block = list(block or [n - o for n, o in zip(cells, offset_or_0)])  # the fill's default: the rest
    n = len(state_vector(initial["background"], layout))
    W = ti.Vector.field(n, dtype, shape=tuple(b + 2 * ghosts for b in block), offset=(-ghosts,) * len(block))
    W.fill(np.nan)
    fill(W)
    w = W.to_numpy()
    interior = tuple(slice(ghosts, ghosts + b) for b in block)
    ghost_cells = np.ones(w.shape[:-1], dtype=bool)
    ghost_cells[interior] = False
    assert np.all(np.isnan(w[ghost_cells])), "the fill wrote into ghost cells"
    return w[interior]


def assert_close_to_host(device, host, rtol=RTOL):
    """|device - host| <= rtol * (largest |host| of that variable), every cell and variable."""
    scale = np.max(np.abs(host), axis=tuple(range(host.ndim - 1)))
    error = np.abs(device - host)
    worst = np.max(error / np.where(scale > 0, scale, 1.0))
    assert np.all(error <= rtol * scale), f"worst error {worst:.3g} of the variable's scale"


def compare(initial, cells, lower, upper, layout=EULER, params=PARAMS, bitwise=False):
    host = initial_primitive(initial, layout, cells, lower, upper, params)
    device = device_state(initial, layout, cells, lower, upper, params)
    assert device.shape == host.shape
    if bitwise:
        np.testing.assert_array_equal(device, host)
    else:
        assert_close_to_host(device, host)
    return device


def shape_regions(shape, dim, smoothing):
    """Two overlapping regions of one shape around CENTER (3-vectors, as the schema pads them)."""
    geometry = {
        "half_space": [{"point": CENTER, "normal": [1.0, -0.5, 0.25]},
                       {"point": [0.3, 1.0, 1.0], "normal": [-1.0, 0.0, 0.5]}],
        "box": [{"lower": [-0.5, 0.3, 0.8], "upper": [0.4, 1.2, 1.6]},
                {"lower": [0.0, 0.5, 1.0], "upper": [0.9, 1.4, 1.9]}],
        "sphere": [{"center": CENTER, "radius": 0.5}, {"center": [0.4, 0.9, 1.0], "radius": 0.35}],
        "cylinder": [{"center": CENTER, "axis": [1.0, 1.0, 0.5] if dim == 3 else [0.0, 0.0, 1.0], "radius": 0.4},
                     {"center": [0.3, 0.9, 1.2], "axis": [0.0, 1.0, 1.0] if dim == 3 else [0.0, 0.0, 1.0],
                      "radius": 0.3}],
    }[shape]
    return [{"shape": shape, "smoothing": smoothing, "state": state, **g} for g, state in zip(geometry, STATES)]


def all_shapes_case(dim, smoothing=0.05):
    """Every shape at once, overlapping, then a sine inside a region and Shu's vortex."""
    regions = [region for shape in ("half_space", "box", "sphere", "cylinder")
               for region in shape_regions(shape, dim, smoothing)[:1]]
    regions.append(shape_regions("sphere", dim, smoothing)[1])
    return {"background": BACKGROUND, "regions": regions,
            "perturbations": [
                {"kind": "sine", "variable": "vel_y", "amplitude": 0.01, "wavenumber": [3.0, 4.0, 5.0],
                 "phase": 0.2, "region": 2},
                {"kind": "sine", "variable": "rho", "amplitude": 0.05, "wavenumber": [6.0, -2.0, 1.0], "phase": 0.0},
                {"kind": "isentropic_vortex", "center": [0.1, 0.6, 0.0], "strength": 2.0}]}


# --- agreement with initial_primitive -----------------------------------------------------

@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("shape", ["half_space", "box", "sphere", "cylinder"])
@pytest.mark.parametrize("smoothing", [0.0, 0.05])
def test_each_shape_matches_host(dim, shape, smoothing):
    """Two overlapping regions of one shape; sharp ones bit for bit."""
    initial = {"background": BACKGROUND, "regions": shape_regions(shape, dim, smoothing)}
    compare(initial, *GRIDS[dim], bitwise=smoothing == 0.0)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_all_shapes_and_perturbations_match_host(dim):
    compare(all_shapes_case(dim), *GRIDS[dim])


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_sharp_regions_and_sines_match_host_bitwise(dim):
    """Only +, -, *, /, sqrt and sin: the same operations in the same order give the same bits."""
    initial = all_shapes_case(dim, smoothing=0.0)
    initial["perturbations"] = initial["perturbations"][:2]
    compare(initial, *GRIDS[dim], bitwise=True)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_boundaries_through_cell_centres_match_bitwise(dim):
    """Cell centres exactly on sharp surfaces (distance 0, which is outside): the device
    must decide every such cell as numpy does."""
    n = 16
    cells, lower, upper = [n] * dim, [0.0] * dim, [8.0] * dim  # centres at 0.25, 0.75, ...
    on_centre = [2.75, 4.25, 3.75]
    regions = [{"shape": "cylinder", "center": on_centre, "axis": [0.0, 0.0, 1.0], "radius": 2.5,
                "state": {"rho": 0.5}},
               {"shape": "half_space", "point": on_centre, "normal": [1.0, 0.0, 0.0], "state": STATES[0]},
               {"shape": "box", "lower": [1.25, 1.75, 0.75], "upper": [5.75, 6.25, 7.25], "state": {"rho": 2.0}},
               {"shape": "sphere", "center": on_centre, "radius": 1.5, "state": {"rho": 3.0}}]
    device = compare({"background": BACKGROUND, "regions": regions}, cells, lower, upper, bitwise=True)
    assert set(np.unique(device[..., 0])) == {0.125, 0.5, 1.0, 2.0, 3.0}  # each region landed


def test_vortex_case_matches_host_in_1d_and_with_other_gamma():
    """The vortex on a 1D grid (y = 0 there) and with gamma = 5/3 (other pow exponents)."""
    vortex = {"kind": "isentropic_vortex", "center": [0.2, 0.3, 0.0], "strength": 3.0}
    initial = {"background": BACKGROUND, "regions": [], "perturbations": [vortex]}
    compare(initial, *GRIDS[1])
    compare(initial, *GRIDS[2], params={"gamma": 5.0 / 3.0})


def test_without_regions_or_perturbations_is_the_background():
    device = compare({"background": BACKGROUND}, *GRIDS[2], bitwise=True)
    assert np.all(device == state_vector(BACKGROUND, EULER))


# --- blocks -------------------------------------------------------------------------------

def split(n: int, pieces: int):
    """(offset, size) of `pieces` uneven blocks covering 0..n."""
    edges = [0] + [round(n * (k + 0.6) / pieces) for k in range(pieces - 1)] + [n]
    return [(a, b - a) for a, b in zip(edges, edges[1:])]


def assemble(initial, cells, lower, upper, pieces_per_axis, ghosts):
    """The whole grid put together from the fills of its blocks (pieces_per_axis along each axis)."""
    out = np.full(tuple(cells) + (5,), np.nan)
    for parts in np.ndindex(*pieces_per_axis):
        extents = [split(n, p)[k] for n, p, k in zip(cells, pieces_per_axis, parts)]
        offset, block = [e[0] for e in extents], [e[1] for e in extents]
        where = tuple(slice(o, o + b) for o, b in zip(offset, block))
        out[where] = device_state(initial, EULER, cells, lower, upper, offset=offset, block=block, ghosts=ghosts)
    return out


@pytest.mark.parametrize("dim, pieces", [(1, [3]), (2, [2, 1]), (2, [1, 4]), (2, [2, 2]),
                                         (3, [1, 3, 1]), (3, [1, 1, 4]), (3, [2, 1, 2])])
def test_blocks_reassemble_the_grid_bitwise(dim, pieces):
    """Blocks (with ghost layers the fill must not touch) give the whole-grid device result
    bit for bit: each cell's arithmetic does not depend on where its block starts."""
    initial = all_shapes_case(dim)
    cells, lower, upper = GRIDS[dim]
    whole = device_state(initial, EULER, cells, lower, upper)
    np.testing.assert_array_equal(assemble(initial, cells, lower, upper, pieces, ghosts=2), whole)


def test_a_block_defaults_to_the_rest_of_the_grid():
    initial = all_shapes_case(2)
    cells, lower, upper = GRIDS[2]
    whole = device_state(initial, EULER, cells, lower, upper)
    rest = device_state(initial, EULER, cells, lower, upper, offset=[5, 7], block=None)
    np.testing.assert_array_equal(rest, whole[5:, 7:])


# --- storage precision --------------------------------------------------------------------

@pytest.mark.parametrize("dim", [1, 3])
def test_f32_storage_is_the_f64_state_rounded(dim):
    initial = all_shapes_case(dim)
    cells, lower, upper = GRIDS[dim]
    f64 = device_state(initial, EULER, cells, lower, upper)
    f32 = device_state(initial, EULER, cells, lower, upper, dtype=ti.f32)
    assert f32.dtype == np.float32
    np.testing.assert_array_max_ulp(f32, f64.astype(np.float32), maxulp=1)


def test_default_fp_f32_keeps_the_arithmetic_in_f64():
    """An f32 run initialises Taichi with default_fp = f32, which bare float literals would
    take; the state must still come out of f64 arithmetic, bit for bit where the host's is."""
    ti.init(arch=ti.cpu, default_fp=ti.f32, fast_math=False, log_level=ti.WARN)
    try:
        initial = all_shapes_case(3, smoothing=0.0)
        compare({**initial, "perturbations": initial["perturbations"][:2]}, *GRIDS[3], bitwise=True)
        compare(all_shapes_case(2), *GRIDS[2])
    finally:
        ti.init(arch=ti.cpu, default_fp=ti.f64, fast_math=False, log_level=ti.WARN)


# --- errors -------------------------------------------------------------------------------

def error_of(call):
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("perturbation, layout, params", [
    ({"kind": "sine", "variable": "vel_q", "amplitude": 1.0, "wavenumber": [1.0, 0, 0], "phase": 0.0}, EULER, PARAMS),
    ({"kind": "sine", "variable": "rho", "amplitude": 1.0, "wavenumber": [1.0, 0, 0], "phase": 0.0, "region": 1},
     EULER, PARAMS),
    ({"kind": "isentropic_vortex", "center": [0, 0, 0], "strength": 1.0}, EULER, {}),
    ({"kind": "isentropic_vortex", "center": [0, 0, 0], "strength": 1.0}, {"rho": 1, "p": 1}, PARAMS),
    ({"kind": "turbulence", "rms_velocity": 1.0, "n_min": 1, "n_max": 2, "slope": 2.0, "solenoidal_fraction": 0.5,
      "seed": 0}, EULER, PARAMS),                                   # the model's velocity not resolved
    ({"kind": "turbulence", "rms_velocity": 1.0, "n_min": 1, "n_max": 2, "slope": 2.0, "solenoidal_fraction": 0.5,
      "seed": 0, "_velocity": "rho"}, EULER, PARAMS),               # not a 3-vector
    ({"kind": "linear_wave", "wave": "sound", "amplitude": 1.0, "wavenumber": [1.0, 0, 0], "phase": 0.0},
     EULER, PARAMS),                                                # the eigenvector not resolved
])
def test_perturbation_errors_are_the_host_ones(perturbation, layout, params):
    background = {k: v for k, v in BACKGROUND.items() if k in layout}
    initial = {"background": background, "regions": [{"shape": "sphere", "center": CENTER, "radius": 0.5,
                                                      "state": {"rho": 2.0}}],
               "perturbations": [{"kind": "sine", "variable": "rho", "amplitude": 0.1,
                                  "wavenumber": [1.0, 0, 0], "phase": 0.0}, perturbation]}
    cells, lower, upper = GRIDS[2]
    host = error_of(lambda: initial_primitive(initial, layout, cells, lower, upper, params))
    device = error_of(lambda: make_initial_fill(initial, layout, cells, lower, upper, params, ti.f64))
    assert device == host and host.startswith("[[initial.perturbations]] #2: ")


def test_block_errors():
    initial = {"background": BACKGROUND}
    cells, lower, upper = GRIDS[2]
    make = lambda **kw: make_initial_fill(initial, EULER, cells, lower, upper, PARAMS, ti.f64, **kw)  # noqa: E731
    assert "does not lie inside the grid" in error_of(lambda: make(block_offset=[20, 0], block_cells=[5, 18]))
    assert "does not lie inside the grid" in error_of(lambda: make(block_offset=[-1, 0]))
    assert "one per grid axis" in error_of(lambda: make(block_offset=[0, 0, 0]))
    big = [2048, 1024, 1024]  # 2^31 cells: a whole-grid block is refused, half of it is fine
    fill = lambda **kw: make_initial_fill(initial, EULER, big, [0.0] * 3, [1.0] * 3, PARAMS, ti.f64, **kw)  # noqa: E731
    assert "fewer than 2^31" in error_of(fill)
    assert MAX_BLOCK_CELLS == 2 ** 31
    fill(block_offset=[1024, 0, 0], block_cells=[1024, 1024, 1024 - 1])


def test_field_errors():
    initial = {"background": BACKGROUND}
    cells, lower, upper = GRIDS[2]
    fill = make_initial_fill(initial, EULER, cells, lower, upper, PARAMS, ti.f64)
    assert "5 components" in error_of(lambda: fill(ti.Vector.field(4, ti.f64, shape=tuple(cells))))
    assert "compiled for f64" in error_of(lambda: fill(ti.Vector.field(5, ti.f32, shape=tuple(cells))))
    assert "cannot hold" in error_of(lambda: fill(ti.Vector.field(5, ti.f64, shape=(24, 17))))


# --- shipped cases ------------------------------------------------------------------------

SMALL = {1: "[64]", 2: "[24,20]", 3: "[24,12,12]"}
SHIPPED = sorted(p.stem for p in (ROOT / "cases").glob("*.toml"))


def shipped_case(name: str):
    """(initial, primitive layout, cells, lower, upper, params) of a shipped case on a small
    grid, resolved as a run resolves it."""
    path = ROOT / "cases" / f"{name}.toml"
    dim = len(load_case(path)["grid"]["cells"])
    case = load_case(path, [f"grid.cells={SMALL[dim]}"])
    model = load_model(case["model"]["name"], [ROOT / "models"])
    params = model.resolve_params(case["model"]["params"], name)
    initial, _, _ = resolve_states(case, model, params)
    grid = case["grid"]
    return initial, model.primitive.sizes, grid["cells"], grid["lower"], grid["upper"], params


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_cases_match_host(name):
    initial, layout, cells, lower, upper, params = shipped_case(name)
    compare(initial, cells, lower, upper, layout=layout, params=params)


def test_required_cases_are_shipped():
    assert {"bubble_collapse", "isentropic_vortex", "kelvin_helmholtz", "sedov3d"} <= set(SHIPPED)


def test_bubble_collapse_blocks_reassemble_bitwise():
    """The two-phase bubble (smoothed sphere + sharp shocked half-space), in 3 slabs along x."""
    initial, layout, cells, lower, upper, params = shipped_case("bubble_collapse")
    whole = device_state(initial, layout, cells, lower, upper, params)
    slabs = [device_state(initial, layout, cells, lower, upper, params, offset=[o, 0, 0],
                          block=[n, cells[1], cells[2]], ghosts=3) for o, n in split(cells[0], 3)]
    np.testing.assert_array_equal(np.concatenate(slabs, axis=0), whole)


def test_cases_are_not_changed_by_the_fill():
    """make_initial_fill reads the resolved table; it must not edit it (a run writes it out)."""
    initial, layout, cells, lower, upper, params = shipped_case("kelvin_helmholtz")
    before = copy.deepcopy(initial)
    device_state(initial, layout, cells, lower, upper, params)
    assert initial == before


# --- cell averages (finite volumes) ---------------------------------------------------------

def averaged_state(initial, cells, lower, upper, points, offset=None, block=None):
    """The fill's cell averages of U with `points` nodes per axis, read back as W (Euler)."""
    from taichiflow.bound_model import BoundModel
    from taichiflow.kernels.initial import CellAverage
    model = load_model("euler", [ROOT / "models"])
    exact = BoundModel(model, PARAMS, ti.f64)
    average = CellAverage(points, model.conserved.n, exact.cons, exact.prim)
    fill = make_initial_fill(initial, EULER, cells, lower, upper, PARAMS, ti.f64, block_offset=offset,
                             block_cells=block, average=average)
    block = list(block or cells)
    W = ti.Vector.field(5, ti.f64, shape=tuple(block))
    fill(W)
    return W.to_numpy()


def test_cell_averages_of_a_sine_are_exact():
    """rho = 1 + a sin(k x + phase), u = 0: the stored rho is the exact cell average
    1 + a (cos(k x_l + phase) - cos(k x_r + phase)) / (k h), to 1e-14 with 6 nodes (point values
    differ from it by a k^2 h^2 / 24 = 1e-4 here)."""
    amplitude, k, phase, n, lower, upper = 0.2, 2 * np.pi / 1.7, 0.3, 40, -0.6, 1.1
    initial = {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [],
               "perturbations": [{"kind": "sine", "variable": "rho", "amplitude": amplitude, "wavenumber": [k, 0, 0],
                                  "phase": phase}]}
    h = (upper - lower) / n
    left = lower + h * np.arange(n)
    exact = 1.0 + amplitude * (np.cos(k * left + phase) - np.cos(k * (left + h) + phase)) / (k * h)
    averaged = averaged_state(initial, [n], [lower], [upper], points=6)
    assert np.abs(averaged[:, 0] - exact).max() < 1e-14
    pointwise = device_state(initial, EULER, [n], [lower], [upper])
    assert np.abs(pointwise[:, 0] - exact).max() > 1e-5


def test_cell_averages_conserve_what_the_initial_state_holds():
    """A 2D state with density, velocity and pressure varying: the grid's total mass, momentum
    and energy from the averaged state equal their integrals (a fine quadrature of the
    point-value fill) to 1e-10, and the kinetic energy is that of the averaged momentum."""
    initial = {"background": {"rho": 1.0, "vel": [0.3, -0.2, 0.0], "p": 1.0}, "regions": [],
               "perturbations": [
                   {"kind": "sine", "variable": "rho", "amplitude": 0.3, "wavenumber": [2 * np.pi, 4 * np.pi, 0],
                    "phase": 0.0},
                   {"kind": "sine", "variable": "vel_x", "amplitude": 0.5, "wavenumber": [0, 2 * np.pi, 0],
                    "phase": 1.0},
                   {"kind": "isentropic_vortex", "center": [0.5, 0.5, 0.0], "strength": 0.2}]}
    cells, lower, upper = [16, 16], [0.0, 0.0], [1.0, 1.0]
    w = averaged_state(initial, cells, lower, upper, points=5)
    fine = device_state(initial, EULER, [256, 256], lower, upper)

    def totals(w, n):
        rho, vel, p = w[..., 0], w[..., 1:4], w[..., 4]
        energy = p / 0.4 + 0.5 * rho * (vel ** 2).sum(-1)
        return np.array([rho.sum(), *(rho[..., None] * vel).sum((0, 1)), energy.sum()]) / n ** 2

    np.testing.assert_allclose(totals(w, 16), totals(fine, 256), rtol=0, atol=1e-5)
    # the averaged cells and blocks of them: the same numbers bit for bit
    halves = [averaged_state(initial, cells, lower, upper, 5, offset=[o, 0], block=[8, 16]) for o in (0, 8)]
    np.testing.assert_array_equal(np.concatenate(halves), w)


def test_a_sharp_edge_inside_a_cell_is_averaged():
    """A box ending 30% into a cell: that cell's density lies between the two states, as the
    nodes inside say (4 nodes: the first node's weight, 0.174), others are the states."""
    initial = {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0},
               "regions": [{"shape": "box", "lower": [-1.0, 0, 0], "upper": [0.53, 0, 0], "smoothing": 0.0,
                            "state": {"rho": 2.0}}], "perturbations": []}
    rho = averaged_state(initial, [10], [0.0], [1.0], points=4)[:, 0]
    nodes, weights = np.polynomial.legendre.leggauss(4)
    inside = weights[0.55 + 0.05 * nodes < 0.53].sum() / 2
    np.testing.assert_allclose(rho, [2.0] * 5 + [1.0 + inside] + [1.0] * 4, rtol=0, atol=1e-15)


# --- turbulence and linear waves: modes from a table, eigenvectors from the model -----------

def turbulence(**keys):
    """A resolved turbulence perturbation (the schema's defaults, the Euler velocity)."""
    return {"kind": "turbulence", "rms_velocity": 2.0, "n_min": 1, "n_max": 3, "slope": 2.0,
            "solenoidal_fraction": 0.5, "seed": 7, "_velocity": "vel", **keys}


def linear_wave(dim, wave="sound"):
    """A resolved Euler linear wave along a direction that tilts out of every axis the grid has."""
    from taichiflow.waves import linear_wave_eigenvector
    wavenumber = [5.0, -3.0, 2.0][:dim] + [0.0] * (3 - dim)
    p = {"kind": "linear_wave", "wave": wave, "amplitude": 0.01, "wavenumber": wavenumber, "phase": 0.4}
    eigenvector, _ = linear_wave_eigenvector(p, BACKGROUND, load_model("euler", [ROOT / "models"]), PARAMS, "here")
    return {**p, "_eigenvector": eigenvector}


def turbulent_case(dim):
    return {"background": BACKGROUND, "regions": shape_regions("sphere", dim, 0.05)[:1],
            "perturbations": [turbulence(), linear_wave(dim), turbulence(seed=8, n_min=2, n_max=2, slope=1.0),
                              linear_wave(dim, "entropy")]}


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_turbulence_and_linear_waves_match_host(dim):
    """The device's sum over modes against the host's inverse FFT, two turbulence fields (two
    mode tables in one ndarray) and two waves over a region."""
    device = compare(turbulent_case(dim), *GRIDS[dim])
    background = device_state({"background": BACKGROUND, "regions": shape_regions("sphere", dim, 0.05)[:1]},
                              EULER, *GRIDS[dim])
    assert np.abs(device[..., 1] - background[..., 1]).max() > 0.5  # the velocity did change


@pytest.mark.parametrize("dim, pieces", [(1, [3]), (2, [2, 2]), (3, [2, 1, 2])])
def test_turbulence_blocks_reassemble_the_grid_bitwise(dim, pieces):
    initial = turbulent_case(dim)
    cells, lower, upper = GRIDS[dim]
    whole = device_state(initial, EULER, cells, lower, upper)
    np.testing.assert_array_equal(assemble(initial, cells, lower, upper, pieces, ghosts=2), whole)


def test_turbulence_cell_averages_are_averages_of_the_point_field():
    """With cell averages the fill sums the modes at every node (the table reaches the nodes'
    loop): with a uniform density the stored velocity is the cell average of the field, here the
    mean of a 32x finer grid's point values over the cell to 1e-3 (that mean's own error)."""
    initial = {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [],
               "perturbations": [turbulence()]}
    coarse = averaged_state(initial, [8, 8], [0.0, 0.0], [1.0, 1.0], points=6)
    fine = device_state(initial, EULER, [256, 256], [0.0, 0.0], [1.0, 1.0])
    means = fine.reshape(8, 32, 8, 32, 5).mean(axis=(1, 3))
    assert np.abs(coarse[..., 1:3] - means[..., 1:3]).max() < 1e-3 * np.abs(means[..., 1:3]).max()
    assert np.abs(coarse[..., 1:3].mean(axis=(0, 1))).max() < 1e-14   # zero momentum, averages too (rms 2)


# --- formulas and rasters: a tree compiled in, nodes from the table ------------------------------

def formula(expression, variable="rho", **keys):
    return {"kind": "formula", "variable": variable, "expression": expression, "operation": "set", **keys}


def raster(path, variable="p", **keys):
    return {"kind": "raster", "variable": variable, "file": str(path), "operation": "set", **keys}


def save_raster(tmp_path, dim, name="bed.npy", shape=(9, 6), seed=0):
    """Random nodes (1D on a 1D grid) over an extent that is smaller than GRIDS[dim]'s box on some
    sides (clamped there) and larger on others."""
    values = np.random.default_rng(seed).normal(size=shape[:1] if dim == 1 else shape)
    np.save(tmp_path / name, values)
    return tmp_path / name, ([-0.8, 1.1] if dim == 1 else [-0.8, 1.1, -0.2, 1.4])


TRANSCENDENTAL = "1 + 0.3*tanh(5*x) * exp(-y) + 0.1*sin(3*x + pi/4)*cos(z) - 0.05*log(2 + atan2(y, x)) " \
                 "+ sqrt(abs(x*y)) / (3 + tan(x/2)) + min(x, y, z)**2 * max(0.5, z, x) + (1 + x*x)**-1.5"


def formula_case(dim, tmp_path, smoothing=0.05):
    """Formulas (every function, set and add, inside smoothed regions) and two rasters (set, add
    inside a region) on top of the regions, with a turbulence field sharing the table."""
    path, extent = save_raster(tmp_path, dim)
    other, _ = save_raster(tmp_path, dim, name="other.npy", shape=(4, 11), seed=1)
    return {"background": BACKGROUND, "regions": shape_regions("sphere", dim, smoothing),
            "perturbations": [
                formula(TRANSCENDENTAL),
                formula("-x + 2*y - z/3", variable="vel_y", operation="add", region=1),
                formula("0.5 + x*x", variable="vel_x", region=0),
                formula("max(0, 2 - rho) + vel_x*p", variable="vel_z", operation="add"),
                raster(path, extent=extent),
                turbulence(n_max=2),
                raster(other, variable="rho", extent=extent, operation="add", region=0)]}


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_formulas_and_rasters_match_host(dim, tmp_path):
    device = compare(formula_case(dim, tmp_path), *GRIDS[dim])
    assert np.ptp(device[..., 4]) > 1.0   # the raster set p


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_arithmetic_formulas_and_rasters_match_host_bitwise(dim, tmp_path):
    """+, -, *, / and the clamped bilinear sampling (min, max, floor): the same bits as numpy."""
    path, extent = save_raster(tmp_path, dim)
    initial = {"background": BACKGROUND, "regions": shape_regions("box", dim, 0.0),
               "perturbations": [formula("0.1*x + 1/3 - -y*z", region=1), raster(path, extent=extent),
                                 raster(path, variable="vel_z", extent=[0.0, 0.7, 0.5, 0.9][:2 * min(dim, 2)],
                                        operation="add", region=0),
                                 formula("x / 7", variable="p", operation="add")]}
    compare(initial, *GRIDS[dim], bitwise=True)


@pytest.mark.parametrize("dim, pieces", [(1, [3]), (2, [2, 2]), (3, [2, 1, 2])])
def test_formula_and_raster_blocks_reassemble_the_grid_bitwise(dim, pieces, tmp_path):
    initial = formula_case(dim, tmp_path)
    cells, lower, upper = GRIDS[dim]
    whole = device_state(initial, EULER, cells, lower, upper)
    np.testing.assert_array_equal(assemble(initial, cells, lower, upper, pieces, ghosts=2), whole)


def test_formula_constants_stay_f64_under_default_fp_f32(tmp_path):
    """0.1 and 1/3 are not f32 numbers: typed f64 constants keep the host's bits."""
    ti.init(arch=ti.cpu, default_fp=ti.f32, fast_math=False, log_level=ti.WARN)
    try:
        path, extent = save_raster(tmp_path, 2)
        initial = {"background": BACKGROUND, "regions": [],
                   "perturbations": [formula("0.1*x + 1/3 + 1e-9*y"), raster(path, extent=extent)]}
        compare(initial, *GRIDS[2], bitwise=True)
    finally:
        ti.init(arch=ti.cpu, default_fp=ti.f64, fast_math=False, log_level=ti.WARN)


def test_cell_averages_of_formulas_and_rasters_are_exact():
    """rho = 1 + x^2 and p = a raster of a linear function: the stored density is the exact
    cell average 1 + (x_r^3 - x_l^3) / (3h) (Gauss nodes are exact for it), and p the point value
    (a linear function's average is its centre value)."""
    import tempfile
    n, lower, upper = 10, -1.0, 2.0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "line.npy"
        np.save(path, np.array([2.0, 5.0]))    # 2 + x on [0, 3], clamped below 0
        initial = {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [],
                   "perturbations": [formula("1 + x**2"), raster(path, extent=[-1.0, 2.0])]}
        averaged = averaged_state(initial, [n], [lower], [upper], points=3)
    h = (upper - lower) / n
    left = lower + h * np.arange(n)
    np.testing.assert_allclose(averaged[:, 0], 1 + ((left + h) ** 3 - left ** 3) / (3 * h), rtol=1e-14)
    np.testing.assert_allclose(averaged[:, 4], 3.0 + left + h / 2, rtol=1e-14)


@pytest.mark.parametrize("perturbation", [
    formula("x", variable="z"),
    formula("x", region=1),
    formula("rho + bed"),
    raster("/nonexistent/bed.npy", extent=[0.0, 1.0, 0.0, 1.0]),
    raster(ROOT / "cases" / "data" / "valley.npz", variable="vel_q"),
])
def test_formula_and_raster_errors_are_the_host_ones(perturbation):
    initial = {"background": BACKGROUND, "regions": [{"shape": "sphere", "center": CENTER, "radius": 0.5,
                                                      "state": {"rho": 2.0}}],
               "perturbations": [formula("1"), perturbation]}
    cells, lower, upper = GRIDS[2]
    host = error_of(lambda: initial_primitive(initial, EULER, cells, lower, upper, PARAMS))
    device = error_of(lambda: make_initial_fill(initial, EULER, cells, lower, upper, PARAMS, ti.f64))
    assert device == host and host.startswith("[[initial.perturbations]] #2: ")
