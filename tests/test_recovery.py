"""Recovery from bad steps: the [scheme] retry (a posteriori order reduction) and the
model's repair() floors, on the two-phase model where a compressive scheme can fail."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise
from taichiflow.case import load_case
from taichiflow.run import Simulation, SimulationError
from test_two_phase import ADVECTION

# A sharp (staircase) air bubble at 5x the water's pressure on 24 x 20 cells: WENO5-Z + HLLC
# makes Pi negative in an air cell at step 1 (c^2 < 0, repaired) and rho negative at step 2;
# PLM-minmod + HLL copes. Point values at the cell centres make the staircase (cell averages,
# the finite-volume default, blend the cells the interface cuts and the scheme copes).
SHARP_BUBBLE = ADVECTION.format(
    cells=[24, 20], upper=[1.0, 1.0], vel=[0.2, -0.1, 0.0], riemann="hllc",
    region='shape = "sphere"\ncenter = [0.5, 0.5]\nradius = 0.2', boundary='x = "periodic"\ny = "periodic"',
).replace("rho = 0.001 }", "rho = 0.01, p = 5.0e-4 }").replace("[initial]\n", '[initial]\nvalues = "point"\n')
RETRY = {"reconstruction": "plm", "limiter": "minmod", "riemann": "hll"}


def sharp_bubble(tmp_path, arch, retry):
    case = precise(case_from_text(tmp_path, SHARP_BUBBLE), arch)
    case["scheme"]["retry"] = retry
    return Simulation(case)


def test_without_retry_the_sharp_bubble_stops(tmp_path, arch):
    with pytest.raises(SimulationError, match=r"inadmissible state after step 2 .*rho = -"):
        sharp_bubble(tmp_path, arch, {}).advance(100.0, max_steps=5)


def test_retried_steps_run_on_and_conserve_mass_and_momentum(tmp_path, arch):
    sim = sharp_bubble(tmp_path, arch, RETRY)
    before = sim.solver.reductions()[0]
    retried = []
    sim.advance(100.0, max_steps=40, on_step=lambda s: retried.append(s.retries))
    after = sim.solver.reductions()[0]
    mass_momentum = [0, 1, 2, 3]
    assert np.abs(after[mass_momentum] - before[mass_momentum]).max() <= 1e-12 * np.abs(before[mass_momentum]).max()
    # The pressure floor adds energy in the cells it repairs (measured 8.5e-6 relative here).
    repairs = sim.solver.take_repair_count()
    assert abs(after[4] / before[4] - 1.0) <= (1e-12 if repairs == 0 else 2e-5)
    assert retried[1] == 1 and sum(retried) >= 1                  # step 2 was redone


def test_each_retry_names_its_step_and_first_bad_cell_in_the_log(tmp_path, arch):
    """run.log says which cell made a step fail and its state then (rho < 0 at step 2), so a
    user can see where a case's steps fail."""
    case = precise(case_from_text(tmp_path, SHARP_BUBBLE), arch)
    case["scheme"]["retry"] = RETRY
    case["time"]["max_steps"] = 3
    lines = []
    Simulation(case, out_dir=tmp_path / "out", quiet=True).run(log=lines.append)
    retried = [line for line in lines if "redone with the retry scheme" in line]
    assert len(retried) == 1 and retried[0].startswith("step 2 (t = ")
    cell = [int(i) for i in retried[0].split("first bad cell (")[1].split(")")[0].split(",")]
    assert len(cell) == 2 and all(0 <= i < n for i, n in zip(cell, (24, 20)))
    assert float(retried[0].split("rho = ")[1].split(",")[0]) < 0.0


def test_a_failed_step_leaves_nothing_behind_in_the_low_storage_register(tmp_path, arch):
    """The retry starts from the state before the failed step; LSRK3's register R of that
    step holds its (possibly NaN) right-hand sides, and the first stage must not read it
    (0 * NaN = NaN made every retry after a NaN step fail)."""
    sim = sharp_bubble(tmp_path, arch, {})
    sim.solver.R.fill(float("nan"))
    sim.advance(100.0, max_steps=1)       # would stop with rho = nan
    sim.case["output"]["fields"] = ["rho"]
    assert np.isfinite(sim.fields()["rho"]).all()


GAMMA_WATER, GAMMA_AIR = 1 / 5.59, 2.5
PI_WATER = 6.59 * 0.4069 / 5.59


def repaired_cells(tmp_path, arch, rows, overrides=()):
    """Four cells (water but `rows`, {cell: W}) through one check: U before and after it and
    the repaired W, after asserting that no cell is left bad; and the count of repairs."""
    sim = Simulation(precise(case_from_text(tmp_path, ADVECTION.format(
        cells=[4], upper=[1.0], vel=[0.1, 0.0, 0.0], riemann="hllc", region='shape = "box"\nlower = [0.5]\nupper = [1.0]',
        boundary='x = "periodic"'), list(overrides)), arch))
    w = np.array([[1.0, 0.1, 0, 0, 1e-4, GAMMA_WATER, PI_WATER]] * 4)
    for cell, row in rows.items():
        w[cell] = row
    sim.set_primitive(w)
    u_before = sim.solver.U.to_numpy()
    rate, bad = sim.solver.check_state()
    assert bad is None
    return u_before, sim.solver.U.to_numpy(), sim.solver.primitive_array(), sim.solver.take_repair_count()


def test_repair_floors_pressure_and_clips_the_volume_fraction(tmp_path, arch):
    """Two cells outside the model: a gas-rich mixture (alpha 0.9) in tension beyond its
    pc, and gas with Gamma 10% above air's. repair() keeps rho and rho u, sets
    p + pc = p_floor and clips Gamma, Pi to the materials' values."""
    mix_gamma, mix_pi = 0.9 * GAMMA_AIR + 0.1 * GAMMA_WATER, 0.1 * PI_WATER
    u_before, u_after, repaired, repairs = repaired_cells(tmp_path, arch, {
        1: [0.1, 0.1, 0, 0, -0.02, mix_gamma, mix_pi],          # p + pc = -0.02 + 0.0148 < 0
        2: [0.001, 0.1, 0, 0, 1e-4, 1.1 * GAMMA_AIR, 0.0]})     # alpha = 1.11
    assert repairs == 2
    np.testing.assert_array_equal(u_after[:, :4], u_before[:, :4])           # rho, rho u kept
    np.testing.assert_array_equal(u_after[[0, 3]], u_before[[0, 3]])          # good cells untouched
    pc_mix = mix_pi / (mix_gamma + 1.0)
    assert repaired[1, 4] + pc_mix == pytest.approx(1e-6, rel=1e-6)           # p_floor
    assert repaired[2, 5] == pytest.approx(GAMMA_AIR, rel=1e-12)              # alpha = 1
    assert repaired[2, 4] > 1e-4                                              # E kept: p = E/Gamma rises


def test_with_tension_alpha_a_gas_cell_in_tension_takes_more_gas_at_the_same_energy(tmp_path, arch):
    """tension_alpha = 1e-3: a mixture cell (alpha 0.5) at p = -0.01 (within its pc, so
    admissible without the option) gets the gas fraction that gives p = p_floor, with rho,
    rho u and E exactly kept; a liquid cell (alpha 1e-4) in the same tension is left alone; a
    gas-rich cell beyond its pc (E too small for any alpha) still gets the energy floor."""
    mixed = lambda alpha: (alpha * GAMMA_AIR + (1 - alpha) * GAMMA_WATER, (1 - alpha) * PI_WATER)
    u_before, u_after, repaired, repairs = repaired_cells(tmp_path, arch, {
        1: [0.5, 0.1, 0, 0, -0.01, *mixed(0.5)],
        2: [1.0, 0.1, 0, 0, -0.01, *mixed(1e-4)],
        3: [0.1, 0.1, 0, 0, -0.05, *mixed(0.99)]},              # p + pc = -0.05 + 0.0014 < 0
        ["model.params.tension_alpha=1.0e-3"])
    assert repairs == 2
    np.testing.assert_array_equal(u_after[:, :4], u_before[:, :4])           # rho, rho u kept
    np.testing.assert_array_equal(u_after[:3, 4], u_before[:3, 4])           # E kept but in cell 3
    np.testing.assert_array_equal(u_after[[0, 2]], u_before[[0, 2]])          # water, liquid-like cell untouched
    alpha = (repaired[:, 5] - GAMMA_WATER) / (GAMMA_AIR - GAMMA_WATER)
    assert repaired[1, 4] == pytest.approx(1e-6, rel=1e-6) and 0.5 < alpha[1] < 1.0
    # E = Gamma p + Pi + kinetic: from p = -0.01 to p_floor with Pi (1 - alpha) pi_water
    internal = mixed(0.5)[0] * -0.01 + mixed(0.5)[1]
    assert alpha[1] == pytest.approx((1e-6 * GAMMA_WATER + PI_WATER - internal) / (PI_WATER - 1e-6 * (GAMMA_AIR - GAMMA_WATER)),
                                     rel=1e-9)
    assert alpha[3] == pytest.approx(1.0, rel=1e-12) and repaired[3, 4] == pytest.approx(1e-6, rel=1e-6)


def test_with_vacuum_density_an_emptied_cell_becomes_still_matter_at_the_floor(tmp_path, arch):
    """vacuum_density = 1e-6: a gas cell at rho = 1e-9 moving at 50 mm/us (an emptied pocket)
    becomes gas at rho = 1e-6, at rest, at p = p_floor; gas at 2e-6 is left alone. With
    tension_alpha = 1e-3 as well, an emptied gas-rich mixture (alpha 0.999, whose pc exceeds
    p_floor) comes to rest at p = 0, not in tension: the check then finds no bad cell."""
    u_before, u_after, repaired, repairs = repaired_cells(tmp_path, arch, {
        1: [1e-9, 50.0, -20.0, 0, 1e-5, GAMMA_AIR, 0.0],
        2: [2e-6, 0.3, 0, 0, 1e-5, GAMMA_AIR, 0.0]}, ["model.params.vacuum_density=1.0e-6"])
    assert repairs == 1
    np.testing.assert_array_equal(u_after[[0, 2, 3]], u_before[[0, 2, 3]])
    np.testing.assert_allclose(repaired[1], [1e-6, 0, 0, 0, 1e-6, GAMMA_AIR, 0.0], rtol=1e-12, atol=1e-300)
    gamma, pi = 0.999 * GAMMA_AIR + 0.001 * GAMMA_WATER, 0.001 * PI_WATER   # pc = 7.3e-4 > p_floor
    _, _, repaired, repairs = repaired_cells(tmp_path, arch, {1: [1e-9, 5.0, 0, 0, 1e-5, gamma, pi]}, [
        "model.params.vacuum_density=1.0e-6", "model.params.tension_alpha=1.0e-3"])
    assert repairs == 1
    np.testing.assert_allclose(repaired[1, :5], [1e-6, 0, 0, 0, 0.0], rtol=1e-12, atol=1e-300)


def test_a_cell_with_negative_density_is_not_repaired_into_matter(tmp_path, arch):
    """vacuum_density acts on 0 < rho < vacuum_density only: rho < 0 is a failed step, which
    the check reports (and a run retries), not a cell to fill with matter."""
    text = ADVECTION.format(cells=[4], upper=[1.0], vel=[0.1, 0.0, 0.0], riemann="hllc",
                            region='shape = "box"\nlower = [0.5]\nupper = [1.0]', boundary='x = "periodic"')
    sim = Simulation(precise(case_from_text(tmp_path, text, ["model.params.vacuum_density=1.0e-6"]), arch))
    w = np.array([[1.0, 0.1, 0, 0, 1e-4, GAMMA_WATER, PI_WATER]] * 4)
    w[1] = [-1e-9, 0.1, 0, 0, 1e-5, GAMMA_AIR, 0.0]
    sim.set_primitive(w)
    rate, bad = sim.solver.check_state()
    assert bad is not None and sim.solver.conserved_array()[1, 0] == pytest.approx(-1e-9)


def test_a_retry_inside_a_batch_of_device_steps_gives_the_one_of_single_steps(tmp_path, arch):
    """Without a callback the device runs steps in batches: the bad step 2 halts its batch,
    is retried from U0 and the batch goes on, as when every step is read back."""
    batched = sharp_bubble(tmp_path, arch, RETRY)
    batched.advance(100.0, max_steps=12)
    result = (batched.t, batched.step_count, batched.retries, batched.solver.conserved_array())
    single = sharp_bubble(tmp_path, arch, RETRY)
    single.advance(100.0, max_steps=12, on_step=lambda sim: None)  # a read back after every step
    assert result[:3] == (single.t, single.step_count, single.retries) and result[2] >= 1
    np.testing.assert_array_equal(result[3], single.solver.conserved_array())


def test_a_second_check_of_a_repaired_state_changes_nothing(arch):
    """The check after a step repairs cells; a later check of that state (a checkpoint's, a
    resumed run's, the start of every advance()) must find the same U and W bit for bit, or a
    run parts from itself wherever it was checked once more (two H200 runs of the cavity array
    parted at step 2546 that way). The cavity array as shipped (f32, fast-math) with a third of
    its cells pushed below the pressure floor: W of the repaired cells taken from repair()'s
    registers differed from W read back from U in 571 values (the test without the second visit)."""
    case = load_case(CASES / "cavity_array_quarter.toml",
                     ["grid.cells=[64, 32, 32]", "output.interval=0", f"run.arch={arch!r}", "run.precision='f32'"])
    sim = Simulation(case)
    u = sim.solver.conserved_array()
    rng = np.random.default_rng(1)
    pushed = rng.random(u.shape[:-1]) < 0.3
    gamma, pi = u[..., 5], u[..., 6]
    u[..., 1] = np.where(pushed, u[..., 0] * rng.normal(0.0, 0.5, pushed.shape), u[..., 1])
    p = -rng.random(pushed.shape) * (pi / (gamma + 1.0) + 1e-3)  # p + pc below the floor
    kinetic = 0.5 * (u[..., 1:4] ** 2).sum(-1) / u[..., 0]
    u[..., 4] = np.where(pushed, gamma * p + pi + kinetic, u[..., 4])
    sim.solver.set_conserved(u.astype(np.float32))
    checks = []
    for _ in range(2):
        rate, bad = sim.solver.check_state()
        checks.append((rate, bad, sim.solver.take_repair_count(), sim.solver.conserved_array(),
                       sim.solver.primitive_array()))
    (rate_a, bad_a, repairs_a, u_a, w_a), (rate_b, bad_b, repairs_b, u_b, w_b) = checks
    assert bad_a is None and repairs_a > 500 and repairs_b == 0 and rate_a == rate_b
    np.testing.assert_array_equal(u_a, u_b)
    np.testing.assert_array_equal(w_a, w_b)
