"""Positivity: inadmissible reconstructed face states fall back to first order; the density
limiter keeps a cell's face densities consistent with its mean."""
import csv

import numpy as np
import pytest

from helpers import CASES, case_from_text, precise
from taichiflow.case import CaseError, dump_toml, load_case
from taichiflow.cli import main
from taichiflow.errors import ModelError
from taichiflow.kernels import plan as kernel_plan
from taichiflow.run import Simulation, SimulationError
from taichiflow.run.adaptive import AdaptiveRun
from test_symmetry import BLAST
from test_two_phase import ADVECTION


def colliding_blasts(tmp_path, fallback: bool, arch: str, blocks: int = 0):
    """Periodic images of a blast collide at the boundary at step ~33 (32^2 cells); blocks:
    on an adaptive grid of blocks of that many cells a side, all at the root level (the case)."""
    case = blasts_case(tmp_path, fallback, arch, blocks)
    return case if blocks else Simulation(case)


def blasts_case(tmp_path, fallback: bool, arch: str, blocks: int = 0, recon: str = "weno5", limiter: bool = False):
    """colliding_blasts' case, with `recon` and [scheme] positivity_limiter."""
    text = BLAST.format(cells=[32, 32], lower=[-0.5, -0.5], upper=[0.5, 0.5], recon=recon,
                        boundary='x = "periodic"\ny = "periodic"').replace('riemann = "hllc"', 'riemann = "hll"')
    if blocks:
        text += f"[amr]\nblock_cells = {blocks}\nmax_level = 0\n"
    case = precise(case_from_text(tmp_path, text, name=f"blasts{blocks}.toml"), arch)
    case["scheme"].update(positivity_fallback=fallback, positivity_limiter=limiter)
    return case


def test_weno5_fails_without_fallback_and_runs_with_it(tmp_path, arch):
    unprotected = colliding_blasts(tmp_path, False, arch)
    with pytest.raises(SimulationError, match="inadmissible state after step"):
        unprotected.advance(1.0, max_steps=60)

    protected = colliding_blasts(tmp_path, True, arch)
    counts = []
    protected.advance(1.0, max_steps=60, on_step=lambda sim: counts.append(sim.solver.take_fallback_count()))
    assert protected.step_count == 60
    assert sum(counts) > 0                    # the fallback did act ...
    assert sum(c > 0 for c in counts) < 30    # ... only at the few steps of the collision
    fields = protected.fields()
    assert fields["rho"].min() > 0 and fields["p"].min() > 0


# Two water slabs pulled apart at 0.1 mm/us from an air layer 0.04 mm wide (200 cells, f64,
# WENO5-Z + HLLC + LSRK3, cfl 0.4): the layer thins, and its mixture cells would go into
# tension without tension_alpha (set here as in the cavity-array cases).
def pulled_apart_gap(tmp_path, arch, density_limiter: bool, tension_alpha=1e-3, vacuum_density=0.0):
    text = ADVECTION.format(cells=[200], upper=[1.0], vel=[0.0, 0.0, 0.0], riemann="hllc",
                            region='shape = "box"\nlower = [0.48]\nupper = [0.52]\nsmoothing = 0.005',
                            boundary='x = "outflow"')
    case = precise(case_from_text(tmp_path, text, [
        "scheme.cfl=0.4", f"model.params.tension_alpha={tension_alpha}",
        f"model.params.vacuum_density={vacuum_density}", f"scheme.density_limiter={str(density_limiter).lower()}"]), arch)
    sim = Simulation(case)
    w = sim.solver.primitive_array()
    x = (np.arange(200) + 0.5) / 200
    w[:, 1] = np.where(x < 0.5, -0.1, 0.1)
    sim.set_primitive(w)
    sim.solver.refresh_primitives()
    return sim


def test_the_density_limiter_carries_an_emptying_gas_layer_through(tmp_path, arch):
    """Without the limiter the layer's middle cell reaches rho < 0 at step 150: its WENO5-Z face
    densities take up the water's beside it, and the faces carry off more gas than the cell
    holds. Limited (Zhang & Shu's scaling towards the cell's mean), the run reaches t = 0.3 with
    every density positive and the gas thinned in the middle to a small fraction of its 1e-3."""
    with pytest.raises(SimulationError, match=r"inadmissible state after step 1[0-9][0-9] .*rho = -") as failed:
        pulled_apart_gap(tmp_path, arch, False).advance(0.3, max_steps=400)
    assert "or [scheme] density_limiter = true (a cell beside much denser ones" in str(failed.value)  # (advised)
    sim = pulled_apart_gap(tmp_path, arch, True)
    sim.advance(0.3, max_steps=400)
    rho = sim.solver.primitive_array()[:, 0]
    assert sim.t == pytest.approx(0.3) and sim.step_count < 300
    assert rho.min() > 0.0 and rho[95:105].min() < 1e-5


def test_the_limiter_with_a_vacuum_density_carries_the_layer_through_without_tension_alpha(tmp_path, arch):
    """Without tension_alpha the layer's mixture cells go into tension and pull the gas out of
    its middle. Limited, the densities stay positive, but the emptied cells take speeds of
    their faces' pressure and the time step collapses before t = 0.3 (a SimulationError
    naming it). With vacuum_density = 1e-6 as well (repair(): an emptier cell becomes still
    gas of that density at the pressure floor) the run ends in fewer than 300 steps."""
    with pytest.raises(SimulationError, match="time step collapsed"):
        pulled_apart_gap(tmp_path, arch, True, tension_alpha=1.0).advance(0.3, max_steps=1000)
    sim = pulled_apart_gap(tmp_path, arch, True, tension_alpha=1.0, vacuum_density=1e-6)
    sim.advance(0.3, max_steps=1000)
    rho = sim.solver.primitive_array()[:, 0]
    assert sim.t == pytest.approx(0.3) and sim.step_count < 300
    assert 1e-6 <= rho.min() < 1.01e-6   # the emptied middle held at vacuum_density


def test_the_density_limiter_leaves_sods_tube_bit_for_bit(tmp_path, arch):
    """Where no cell's face densities need scaling, the limited run is the unlimited one to
    the last bit: on Sod's tube (density ratio 8) no cell's faces average three times its mean."""
    def run(limited):
        case = precise(load_case(CASES / "sod.toml", ["grid.cells=[200]",
                                                      f"scheme.density_limiter={str(limited).lower()}"]), arch)
        sim = Simulation(case)
        sim.advance(0.2)
        return sim.solver.conserved_array()
    np.testing.assert_array_equal(run(True), run(False))


def test_the_density_limiter_needs_both_face_states_of_a_cell_and_a_density(tmp_path):
    with pytest.raises(CaseError, match="density_limiter needs both face states of a cell"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.density_limiter=true", "run.reconstruct='face'"]))
    with pytest.raises(CaseError, match="density_limiter needs both face states.*variables = 'characteristic'"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.density_limiter=true", "scheme.variables='characteristic'"]))
    with pytest.raises(CaseError, match="reconstruction = 'muscl_hancock' predicts them half a step ahead"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.density_limiter=true",
                                                  "scheme.reconstruction='muscl_hancock'"]))
    with pytest.raises(CaseError, match="faces a fused stage solves across its walk"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.density_limiter=true", "run.fuse=true"]))
    with pytest.raises(ModelError, match="density_limiter limits the density, which model 'shallow_water'"):
        Simulation(load_case(CASES / "dam_break_wet.toml", ["scheme.density_limiter=true"]))
    # on CUDA in f32 WENO5 reconstructs per face by default (kernels/plan.py); limited, per cell
    case = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]", "scheme.density_limiter=true"])
    kinds = [tuple(case["boundary"]["xyz"[d]]) for d in range(3)]
    cuda_f32_per_cell = lambda: kernel_plan.resolve(case["scheme"], case["run"], "cuda", "f32", case["grid"]["cells"],
                                                    kinds).per_cell
    assert cuda_f32_per_cell() == (True,)
    case["scheme"]["density_limiter"] = False
    assert cuda_f32_per_cell() == (False,)
    # the faces across a fused walk are solved per face: a limited stage is not fused (PLM fuses by default)
    plm = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]", "scheme.reconstruction='plm'"])
    fused = lambda: kernel_plan.resolve(plm["scheme"], plm["run"], "cpu", "f64", plm["grid"]["cells"], kinds).fused
    assert fused()
    plm["scheme"]["density_limiter"] = True
    assert not fused()


def test_the_density_limiter_keeps_the_mean_and_lifts_the_least_point_to_its_floor():
    """numerics/positivity.py on single cells (f64, CPU): untouched where the three Gauss-Lobatto
    points are above 1e-3 of the mean; else both faces moved towards the mean by one factor,
    so that the least point lands on the floor and the mean (lower + 4 interior + upper) / 6
    is kept; a cell whose mean is not positive gets the mean on both faces."""
    import taichi as ti
    from taichiflow.numerics.positivity import FLOOR_SHARE, make_density_limiter
    ti.init(arch=ti.cpu, default_fp=ti.f64, fast_math=False, log_level=ti.WARN)
    limit = make_density_limiter(0)
    cases = np.array([[1.0, 0.9, 1.2], [1e-4, 5e-3, 2e-4], [1e-4, -1e-5, 3e-4], [-1e-6, 0.3, 0.1]])
    out = ti.Vector.field(2, ti.f64, shape=len(cases))

    @ti.kernel
    def run(c: ti.types.ndarray()):
        for k in range(c.shape[0]):
            lower, upper = limit(ti.Vector([c[k, 0], 7.0]), ti.Vector([c[k, 1], 8.0]), ti.Vector([c[k, 2], 9.0]))
            out[k] = ti.Vector([lower[0], upper[0]])

    run(cases)
    faces = out.to_numpy()
    np.testing.assert_array_equal(faces[0], cases[0, 1:])                       # nothing to do
    for k in (1, 2):
        mean, (low, high) = cases[k, 0], faces[k]
        interior = 1.5 * mean - 0.25 * (low + high)
        assert min(low, high, interior) == pytest.approx(FLOOR_SHARE * mean, rel=1e-9)
        assert (low + 4 * interior + high) / 6 == pytest.approx(mean, rel=1e-12)
        theta = (low - mean) / (cases[k, 1] - mean)
        assert 0 < theta < 1 and (high - mean) / (cases[k, 2] - mean) == pytest.approx(theta, rel=1e-12)
    np.testing.assert_array_equal(faces[3], [-1e-6, -1e-6])                    # mean <= 0: first order


# --- the flux limiter of the cell means' update ([scheme] positivity_limiter) ------------------
# Seed 000's 3D blast with SUPERBEE (cases/sr_blast_3d.toml at 24^3, f64, CPU) at its first failing
# step, 27: W of the cells 8..11 along x at (y, z) = (10, 10), the MUSTA flux through the face
# between cells 9 and 10 and dt/dx. Cell 10, the cold expanding gas beside the centre, ends that
# step with E^2 < |S|^2 + D^2. And the face between cells 3 and 4, which needs nothing.
BLAST_DT_DX = 0.32149181136233174
BLAST_FACES = [  # (W of the four cells, the face's flux)
    ([[0.32191739304441674, -0.74996044624047220, -0.30195749035316755, -0.30195749035316755, 0.033594573761916706],
      [0.22549850346785705, -0.69071714543010432, -0.36773647917304303, -0.36773647917304281, 0.017715762930261936],
      [0.19644236376465807, -0.45549232471024370, -0.45549232471024420, -0.45549232471024348, 0.0031594702898743777],
      [0.18015731724618125, -0.072569542705902990, -0.47242923643628815, -0.47242923643628837, 5.2282561128150771e-4]],
     [-0.21964158030754743, 0.2570545523416098, 0.17363371799022936, 0.17363371799022903, -0.20295952148339394]),
    ([[1.126800951425444, -0.6639833764201414, -0.06797260265861364, -0.06797260265861363, 0.2551485497226644],
      [0.31796415031823744, -0.8471920666394773, -0.12219982883274594, -0.12219982883274569, 0.0288530566387315],
      [0.270421366684648, -0.8438593037688473, -0.16312020426546253, -0.16312020426546248, 0.02064087924972373],
      [0.34079802171812396, -0.8329654518642027, -0.17283588657176246, -0.17283588657176216, 0.03710302839385309]],
     [-0.45430437314805305, 0.9618473983849533, 0.17411521666365581, 0.17411521666365587, -0.6587710183074382]),
]


def srhd_state_flux_speeds(w, gamma=5.0 / 3.0):
    """U, the x-flux and the slowest and fastest signal speeds along x of SRHD primitive states
    (rows rho, vel, p; Marti & Mueller 2003, eq. 46)."""
    rho, vel, p = w[:, 0], w[:, 1:4], w[:, 4]
    v2 = (vel ** 2).sum(axis=1)
    lorentz = 1.0 / np.sqrt(1.0 - v2)
    enthalpy = rho + gamma / (gamma - 1.0) * p
    momentum = (enthalpy * lorentz ** 2)[:, None] * vel
    u = np.column_stack([rho * lorentz, momentum, enthalpy * lorentz ** 2 - p - rho * lorentz])
    f = u * vel[:, :1]
    f[:, 1] += p
    f[:, 4] = u[:, 1] - u[:, 0] * vel[:, 0]
    cs2 = gamma * p / enthalpy
    root = np.sqrt(cs2 * (1 - v2) * (1 - vel[:, 0] ** 2 - (v2 - vel[:, 0] ** 2) * cs2))
    return u, f, (vel[:, 0] * (1 - cs2) - root) / (1 - v2 * cs2), (vel[:, 0] * (1 - cs2) + root) / (1 - v2 * cs2)


def srhd_admissible(u):
    """E^2 > |S|^2 + D^2 and D > 0 (E = tau + D): the states some ideal gas (gamma <= 2) has."""
    return u[0] > 0 and u[4] * (u[4] + 2 * u[0]) > u[1] ** 2 + u[2] ** 2 + u[3] ** 2


def test_the_flux_limiter_keeps_both_cells_halves_admissible_and_passes_other_faces_bit_for_bit(arch):
    """numerics/positivity.py (make_flux_positivity_limiter, 3 axes) on two faces of seed 000's
    SUPERBEE blast: the face that empties cell 10 is blended toward the HLL flux of the cell
    means with theta = 9/64, the largest multiple of 1/64 for which both halves
    Q -/+ 2 d lam theta (F - G) (G: HLL, Q: a cell's update along x with HLL fluxes) are
    physical states; the other face keeps its flux bit for bit. The reference is numpy's."""
    import taichi as ti
    from taichiflow.numerics.positivity import make_flux_positivity_limiter
    from test_musta_stages import srhd_physics
    phys = srhd_physics(arch)
    limit = make_flux_positivity_limiter(phys, 3)
    stencils = ti.Vector.field(5, ti.f64, shape=(2, 4))
    fluxes = ti.Vector.field(5, ti.f64, shape=2)
    out = ti.Vector.field(5, ti.f64, shape=2)
    limited = ti.field(ti.i32, shape=2)
    stencils.from_numpy(np.array([w for w, _ in BLAST_FACES]))
    fluxes.from_numpy(np.array([f for _, f in BLAST_FACES]))

    @ti.kernel
    def run(dt_dx: ti.f64):
        for k in range(2):
            out[k], limited[k] = limit([stencils[k, 0], stencils[k, 1], stencils[k, 2], stencils[k, 3]], fluxes[k],
                                       dt_dx)

    run(BLAST_DT_DX)
    assert limited.to_numpy().tolist() == [1, 0]
    np.testing.assert_array_equal(out.to_numpy()[1], BLAST_FACES[1][1])
    u, f, slowest, fastest = srhd_state_flux_speeds(np.array(BLAST_FACES[0][0]))

    def hll(a, b):
        s_left, s_right = min(slowest[a], slowest[b], 0.0), max(fastest[a], fastest[b], 0.0)
        return (s_right * f[a] - s_left * f[b] + s_left * s_right * (u[b] - u[a])) / (s_right - s_left)

    mu, flux, g = 3 * BLAST_DT_DX, np.array(BLAST_FACES[0][1]), hll(1, 2)
    below, above = u[1] - mu * (g - hll(0, 1)), u[2] - mu * (hll(2, 3) - g)
    halves_admissible = lambda theta: (srhd_admissible(below - 2 * mu * theta * (flux - g))
                                       and srhd_admissible(above + 2 * mu * theta * (flux - g)))
    assert halves_admissible(9 / 64) and not halves_admissible(10 / 64) and not halves_admissible(1.0)
    np.testing.assert_allclose(out.to_numpy()[0], g + 9 / 64 * (flux - g), rtol=1e-12, atol=1e-15)


def test_the_positivity_limiter_needs_face_fluxes_between_conserved_cell_means():
    with pytest.raises(ValueError, match="positivity_limiter limits the fluxes of a Riemann solver.*'finite_diff"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.method='finite_difference'", "scheme.riemann='rusanov'",
                                                  "scheme.positivity_limiter=true"]))
    with pytest.raises(ValueError, match="model 'two_phase' has non-conservative terms"):
        Simulation(load_case(CASES / "gas_water_tube.toml", ["scheme.positivity_limiter=true"]))


def test_adaptive_runs_count_the_fallbacks_as_the_uniform_grid(tmp_path, arch):
    """[amr] with the fallback: one block over the colliding blasts' whole grid replaces the
    uniform solver's face states, step by step, and counts them alike. Blocks of 8 solve a face
    between two blocks in both; the blasts collide on the periodic boundary, whose face the
    uniform solver also solves from both sides, so their rows' `fallbacks` are the same counts."""
    uniform = colliding_blasts(tmp_path, True, arch)
    counted = []
    uniform.advance(1.0, max_steps=45, on_step=lambda sim: counted.append(sim.solver.take_fallback_count()))
    rho = uniform.fields()["rho"]  # (before Taichi restarts)
    run = AdaptiveRun(colliding_blasts(tmp_path, True, arch, blocks=32))
    taken = []
    run.advance(1.0, max_steps=45, after_step=lambda dt: taken.append(run.solver.take_fallback_count()))
    assert taken == counted and sum(counted) > 0
    assert np.max(np.abs(run.uniform(0)[..., 0] - rho)) < 1e-12

    blocks = colliding_blasts(tmp_path, True, arch, blocks=8)
    blocks["time"].update(end=1.0, max_steps=45)
    (tmp_path / "blocks.toml").write_text(dump_toml(blocks))
    assert main(["run", str(tmp_path / "blocks.toml"), "--out", str(tmp_path / "out")]) == 0
    with open(tmp_path / "out" / "diagnostics.csv") as f:
        rows = [int(row["fallbacks"]) for row in csv.DictReader(f)][1:]  # (the first row: the initial state)
    assert len(rows) == 45
    assert rows == counted


def diagnostics_rows(tmp_path, case: dict, name: str, steps: int) -> list:
    """The diagnostics.csv rows of `case` run by the command line for `steps` steps, after the
    initial state's."""
    case["time"].update(end=1.0, max_steps=steps)
    (tmp_path / f"{name}.toml").write_text(dump_toml(case))
    assert main(["run", str(tmp_path / f"{name}.toml"), "--out", str(tmp_path / name)]) == 0
    with open(tmp_path / name / "diagnostics.csv") as f:
        rows = list(csv.DictReader(f))[1:]
    assert len(rows) == steps
    return rows


def test_the_fallbacks_column_counts_the_faces_the_positivity_limiter_limits(tmp_path, arch):
    """docs/cases.md: each face the positivity limiter limits counts in the `fallbacks` column,
    with positivity_fallback off too. PLM (MC) of the primitives keeps the colliding blasts' face
    states between their cells' (positive), so the fallback replaces none: the rows with it are
    those without it, bit for bit, and its count (which adds the limited faces to the replaced
    ones) is the limited faces' alone, tens a step ahead of the shocks. The uniform grid and one
    block over it count each face alike (tests above)."""
    steps = 20
    with_fallback = diagnostics_rows(tmp_path, blasts_case(tmp_path, True, arch, recon="plm", limiter=True),
                                     "with_fallback", steps)
    limited = [int(row["fallbacks"]) for row in with_fallback]
    assert min(limited) > 0 and sum(limited) > 1000
    uniform = diagnostics_rows(tmp_path, blasts_case(tmp_path, False, arch, recon="plm", limiter=True), "uniform",
                               steps)
    assert [int(row["fallbacks"]) for row in uniform] == limited
    # every other column too: the same steps, no state replaced (to the last bits: on CUDA the two
    # kernels may contract their arithmetic differently)
    assert [float(v) for row in uniform for v in row.values()] == \
        pytest.approx([float(v) for row in with_fallback for v in row.values()], rel=1e-12, abs=1e-14)
    blocks = diagnostics_rows(tmp_path, blasts_case(tmp_path, False, arch, blocks=32, recon="plm", limiter=True),
                              "blocks", steps)
    assert [int(row["fallbacks"]) for row in blocks] == limited
    assert [float(row["min_p"]) for row in blocks] == pytest.approx([float(row["min_p"]) for row in uniform],
                                                                   rel=1e-12)
