"""Positivity: inadmissible reconstructed face states fall back to first order; the density
limiter keeps a cell's face densities consistent with its mean."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise
from taichiflow.case import CaseError, load_case
from taichiflow.errors import ModelError
from taichiflow.kernels import plan as kernel_plan
from taichiflow.run import Simulation, SimulationError
from test_symmetry import BLAST
from test_two_phase import ADVECTION


def colliding_blasts(tmp_path, fallback: bool, arch: str):
    """Periodic images of a blast collide at the boundary at step ~33 (32^2 cells)."""
    text = BLAST.format(cells=[32, 32], lower=[-0.5, -0.5], upper=[0.5, 0.5], recon="weno5",
                        boundary='x = "periodic"\ny = "periodic"').replace('riemann = "hllc"', 'riemann = "hll"')
    case = precise(case_from_text(tmp_path, text), arch)
    case["scheme"]["positivity_fallback"] = fallback
    return Simulation(case)


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
    with pytest.raises(SimulationError, match=r"inadmissible state after step 1[0-9][0-9] .*rho = -"):
        pulled_apart_gap(tmp_path, arch, False).advance(0.3, max_steps=400)
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
