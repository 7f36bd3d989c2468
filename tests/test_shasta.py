"""SHASTA flux-corrected transport ([scheme] method = "shasta", taichiflow/numerics/shasta.py):
the step against a numpy transcription of Boris & Book's three steps, no new extrema on a
contact, Sod's errors, conservation in 2D, and what the method refuses.

Measured numbers (CPU, f64) are in docs/numerics.md ("SHASTA"); each bound below is the
measured value plus 20%.
"""
import numpy as np
import pytest

from exact_riemann import exact_riemann
from helpers import CASES, case_from_text, l1, precise, simulate
from taichiflow import registry
from taichiflow.case import load_case
from taichiflow.errors import CaseError, ModelError
from taichiflow.run import Simulation

GAMMA = 1.4
CONTACT = """
[model]
name = "euler"
params = {{ gamma = 1.4 }}
[grid]
cells = {cells}
upper = {upper}
[scheme]
{scheme}
[time]
end = {end}
[boundary]
{boundary}
[initial]
background = {{ rho = 1.0, vel = {vel}, p = 1.0 }}
[[initial.regions]]
shape = "box"
lower = {lower}
upper = {box_upper}
state = {{ rho = 2.0 }}
"""
SHASTA = 'method = "shasta"'


def contact_case(tmp_path, scheme: str, cells=(100,), end=1.0, vel=(1.0, 0.0, 0.0), box=((0.25, 0.55),)):
    """A density square wave (a contact) in uniform velocity and pressure, periodic."""
    dim = len(cells)
    text = CONTACT.format(cells=list(cells), upper=[1.0] * dim, scheme=scheme, end=end, vel=list(vel),
                          boundary="\n".join(f'{"xyz"[d]} = "periodic"' for d in range(dim)),
                          lower=[b[0] for b in box], box_upper=[b[1] for b in box])
    return precise(case_from_text(tmp_path, text))


# --- the step is Boris & Book's, transcribed ------------------------------------------------

def _euler_flux(u):
    rho, mom, energy = u[0], u[1], u[4]
    vel = mom / rho
    p = (GAMMA - 1.0) * (energy - 0.5 * (mom ** 2 + u[2] ** 2 + u[3] ** 2) / rho)
    return np.stack([mom, mom * vel + p, u[2] * vel, u[3] * vel, (energy + p) * vel])


def shasta_step(u, e, eta=0.125, a=0.125):
    """One forward-Euler SHASTA step of periodic cells u (components first), e = dt/dx: the
    three steps of docs/physics.md 2.6 one after the other."""
    up, um = np.roll(u, -1, axis=1), np.roll(u, 1, axis=1)
    centred = 0.5 * (_euler_flux(u) + _euler_flux(up))                 # F_{j+1/2}
    smooth = u - e * (centred - np.roll(centred, 1, axis=1)) + eta * (up - 2.0 * u + um)
    d = np.roll(smooth, -1, axis=1) - smooth                          # D_{j+1/2}
    s = np.where(d < 0.0, -1.0, 1.0)
    f = s * np.maximum(0.0, np.minimum.reduce([s * np.roll(d, 1, axis=1), a * np.abs(d), s * np.roll(d, -1, axis=1)]))
    return smooth - (f - np.roll(f, 1, axis=1))


@pytest.mark.parametrize("eta,a", [(0.125, 0.125), (0.2, 0.05)])
def test_one_step_is_the_three_steps_of_boris_and_book(tmp_path, eta, a):
    scheme = f'{SHASTA}\nintegrator = "euler"\nshasta_diffusion = {eta}\nshasta_antidiffusion = {a}'
    n = 64
    sim = Simulation(contact_case(tmp_path, scheme, cells=(n,)))
    x = (np.arange(n) + 0.5) / n
    w = np.zeros((n, 5))
    w[:, 0] = np.where(x < 0.5, 1.0 + 0.3 * np.sin(6 * np.pi * x), 0.4)
    w[:, 1] = 0.5 + 0.2 * np.cos(2 * np.pi * x)
    w[:, 2] = 0.1
    w[:, 4] = np.where(x < 0.3, 1.5, 0.6)
    sim.set_primitive(w)
    before = sim.solver.conserved_array()
    sim.advance(1.0, max_steps=1)
    expected = shasta_step(before.T, sim.last_dt * n, eta, a).T
    np.testing.assert_allclose(sim.solver.conserved_array(), expected, rtol=0, atol=1e-13)


# --- no new extrema, sharper than first order ------------------------------------------------

def contact_errors(tmp_path, scheme: str, n=100, end=1.0):
    """(min - 1, max - 2, L1 error) of rho after the square wave [0.25, 0.55] went once around."""
    sim = simulate(contact_case(tmp_path, scheme, cells=(n,), end=end))
    rho = sim.fields()["rho"]
    x = (np.arange(n) + 0.5) / n
    shifted = (x - end) % 1.0
    exact = np.where((shifted > 0.25) & (shifted < 0.55), 2.0, 1.0)
    return rho.min() - 1.0, rho.max() - 2.0, l1(rho, exact, 1.0 / n)


# L1 error of rho after one period (100 cells, CFL 0.4, 546 steps); first order + Rusanov with
# forward Euler measures 0.212, every SHASTA row at least 6x less.
@pytest.mark.parametrize("integrator,bound", [("euler", 0.0134), ("ssprk2", 0.0413), ("ssprk3", 0.0419),
                                              ("lsrk3", 0.0419)])
def test_square_wave_keeps_its_bounds_and_stays_sharp(tmp_path, integrator, bound):
    below, above, error = contact_errors(tmp_path, f'{SHASTA}\nintegrator = "{integrator}"')
    assert below >= -1e-12 and above <= 1e-12, (below, above)
    first_order = contact_errors(tmp_path, 'reconstruction = "first_order"\nriemann = "rusanov"\n'
                                           'integrator = "euler"')[2]
    assert error < bound
    assert first_order > 5.0 * error, (first_order, error)


# --- Sod ----------------------------------------------------------------------------------------

def sod_errors(cells: int, integrator="lsrk3"):
    case = load_case(CASES / "sod.toml", [f"grid.cells=[{cells}]", "scheme.method='shasta'",
                                          f"scheme.integrator='{integrator}'"])
    fields = simulate(case).fields()
    x = (np.arange(cells) + 0.5) / cells
    rho, u, p = exact_riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), x, 0.2, x0=0.5, gamma=1.4)
    return np.array([l1(fields["rho"], rho, 1.0 / cells), l1(fields["vel"][:, 0], u, 1.0 / cells),
                     l1(fields["p"], p, 1.0 / cells)])


# Measured L1 errors of (rho, u, p) with the case's LSRK3 at CFL 0.4.
SOD_MEASURED = {100: (6.79e-3, 1.156e-2, 5.07e-3), 200: (3.41e-3, 5.55e-3, 2.44e-3),
                400: (1.72e-3, 2.77e-3, 1.19e-3)}


def test_sod_errors_decrease_with_the_grid():
    errors = {n: sod_errors(n) for n in SOD_MEASURED}
    assert np.all(errors[100] > errors[200]) and np.all(errors[200] > errors[400]), errors
    for n, measured in SOD_MEASURED.items():
        assert np.all(errors[n] < 1.2 * np.array(measured)), (n, errors[n])


# --- conservation -------------------------------------------------------------------------------

def test_totals_constant_to_round_off_in_2d(tmp_path):
    cells = (24, 20)
    sim = Simulation(contact_case(tmp_path, f'{SHASTA}\nintegrator = "ssprk3"', cells=cells, end=10.0,
                                  vel=(0.0, 0.0, 0.0), box=((0.0, 0.1), (0.0, 0.1))))
    x, y = np.meshgrid((np.arange(cells[0]) + 0.5) / cells[0], (np.arange(cells[1]) + 0.5) / cells[1],
                       indexing="ij")
    w = np.zeros(cells + (5,))
    w[..., 0] = 1.0 + 0.5 * np.sin(2 * np.pi * x) * np.cos(2 * np.pi * y)
    w[..., 1] = 0.6 + 0.3 * np.cos(2 * np.pi * (x + y))
    w[..., 2] = -0.4 + 0.2 * np.sin(2 * np.pi * x)
    w[..., 4] = 1.0 + 0.4 * np.cos(2 * np.pi * y)
    sim.set_primitive(w)
    sim.solver.refresh_primitives()
    before = sim.solver.reductions()[0]
    sim.advance(10.0, max_steps=40)
    after = sim.solver.reductions()[0]
    assert sim.step_count == 40
    change = np.abs(after - before) / np.abs(before).max()
    assert change.max() <= 1e-13, change
    assert np.abs(sim.fields()["rho"] - w[..., 0]).max() > 1e-2  # it did move


def test_three_ghost_layers_and_one_face_flux_per_face(tmp_path):
    from taichiflow.numerics import shasta
    assert registry.methods.get("shasta").reach == shasta.REACH == 3
    sim = Simulation(contact_case(tmp_path, f'{SHASTA}\nreconstruction = "first_order"', cells=(16, 12),
                                  box=((0.25, 0.55), (0.0, 0.5))))
    assert sim.plan.ghost == 3 and sim.plan.per_cell == (False,)
    assert "shasta on conserved variables (shasta_diffusion 0.125, shasta_antidiffusion 0.125" in sim.plan.describe()


# --- what it refuses ----------------------------------------------------------------------------

def test_refuses_a_model_with_non_conservative_equations():
    from taichiflow.requirements import check_case_against_model
    from taichiflow.run.build import load_case_model
    case = load_case(CASES / "gas_water_tube.toml", ["scheme.method='shasta'", "scheme.retry={}"])
    with pytest.raises(ModelError, match="method = 'shasta' needs every equation in conservation form.*"
                                         "use method = 'finite_volume'"):
        check_case_against_model(case, load_case_model(case), "gas_water_tube.toml")


def test_ignores_the_riemann_solver_and_its_hooks():
    from taichiflow.model import load_model
    from taichiflow.requirements import check_case_against_model
    case = load_case(CASES / "sod.toml", ["scheme.method='shasta'", "scheme.wave_speeds='einfeldt'"])
    model = load_model(str(CASES.parent / "models" / "euler.py"))
    model.functions.pop("hllc_star")
    model.functions.pop("roe_speeds", None)
    check_case_against_model(case, model, "sod.toml")  # hllc, einfeldt: named, never built


@pytest.mark.parametrize("overrides,message", [
    (["scheme.retry={riemann='hll'}"], "retry: method = 'shasta' uses no reconstruction or Riemann solver"),
    (["scheme.variables='primitive'"], "variables: method = 'shasta' takes variables = 'conserved'"),
    (["scheme.shasta_antidiffusion=0.2"], "shasta_antidiffusion"),
    (["scheme.shasta_diffusion=0"], "shasta_diffusion"),
])
def test_refuses_what_it_cannot_do(overrides, message):
    with pytest.raises(CaseError, match=message):
        load_case(CASES / "sod.toml", ["scheme.method='shasta'", *overrides])


def test_its_keys_belong_to_it():
    with pytest.raises(CaseError, match="shasta_antidiffusion: is read by method = 'shasta' only, not 'finite_volume'"):
        load_case(CASES / "sod.toml", ["scheme.shasta_antidiffusion=0.1"])
    case = load_case(CASES / "sod.toml")
    assert "shasta_diffusion" not in case["scheme"]  # (other methods' resolved cases do not change)
    case = load_case(CASES / "sod.toml", ["scheme.method='shasta'", "scheme.shasta_antidiffusion=0.1"])
    assert (case["scheme"]["shasta_diffusion"], case["scheme"]["shasta_antidiffusion"]) == (0.125, 0.1)
