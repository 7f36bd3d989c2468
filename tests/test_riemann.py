"""Riemann solvers: consistency, Einfeldt (Roe) speeds, Euler eigenvectors, FORCE/MUSTA and
HLLC against exact solutions (Toro, Riemann Solvers and Numerical Methods, 3rd ed.)."""
import numpy as np
import pytest
import taichi as ti

from exact_riemann import exact_riemann, star_state
from helpers import CASES, l1, simulate
from taichiflow.case import load_case
from taichiflow.layout import permute
from taichiflow.model import ModelError, load_model
from taichiflow.numerics import riemann as riemann_mod
from taichiflow.numerics.riemann import RIEMANN_SOLVERS, missing_hooks
from taichiflow.bound_model import BoundModel
from taichiflow.run.backend import init_taichi

EULER_FILE = CASES.parent / "models" / "euler.py"
GAMMA = 1.4

SOLVERS = [  # (riemann, extra scheme keys)
    ("rusanov", {}),
    ("hll", {}),
    ("hll", {"wave_speeds": "einfeldt"}),
    ("hllc", {}),
    ("hllc", {"wave_speeds": "einfeldt"}),
    ("force", {}),
    ("force", {"dimension": 3}),
    ("musta", {"musta_stages": 1}),
    ("musta", {"musta_stages": 3}),
]

# Toro's tests 1-5 (Table 4.1): (rho, u, p) left and right, gamma = 1.4.
TORO_TESTS = [
    ((1.0, 0.0, 1.0), (0.125, 0.0, 0.1)),
    ((1.0, -2.0, 0.4), (1.0, 2.0, 0.4)),
    ((1.0, 0.0, 1000.0), (1.0, 0.0, 0.01)),
    ((1.0, 0.0, 0.01), (1.0, 0.0, 100.0)),
    ((5.99924, 19.5975, 460.894), (5.99242, -6.19633, 46.0950)),
]


def euler_physics(arch):
    """The Euler model bound to gamma = 1.4, after a fresh f64 Taichi start (fast-math off)."""
    init_taichi(arch, "f64", False)
    model = load_model(str(EULER_FILE))
    return BoundModel(model, dict(model.params), ti.f64, ti.Vector.field(1, ti.f64, shape=()))


def random_states(n, seed):
    """Admissible primitive Euler states (rho, u, v, w, p) in the global frame."""
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(0.1, 10.0, n), rng.uniform(-3.0, 3.0, (n, 3)), rng.uniform(0.1, 10.0, n)])


def sound_speed(w):
    return np.sqrt(GAMMA * w[..., 4] / w[..., 0])


def euler_flux(w):
    """Normal-frame Euler flux in numpy (docs/physics.md section 1.1)."""
    rho, vel, p = w[:, 0], w[:, 1:4], w[:, 4]
    E = p / (GAMMA - 1.0) + 0.5 * rho * np.sum(vel**2, axis=1)
    un = vel[:, 0]
    mom_flux = rho[:, None] * vel * un[:, None]
    mom_flux[:, 0] += p
    return np.column_stack([rho * un, mom_flux, (E + p) * un])


@pytest.mark.parametrize("name,extra", SOLVERS, ids=[f"{n}-{'-'.join(map(str, e.values())) or 'default'}"
                                                    for n, e in SOLVERS])
def test_flux_of_equal_states_is_the_physical_flux(name, extra, arch):
    phys = euler_physics(arch)
    solver = RIEMANN_SOLVERS[name](phys, {"riemann": name, **extra})
    n = 16
    states = random_states(n, seed=1)
    w_in = ti.Vector.field(5, ti.f64, shape=n)
    f_num = ti.Vector.field(5, ti.f64, shape=(3, n))
    f_phys = ti.Vector.field(5, ti.f64, shape=(3, n))
    w_in.from_numpy(states)
    rotations = [phys.W.rotation(d, True) for d in range(3)]

    @ti.kernel
    def fluxes(dt_dx: ti.f64):
        for i in range(n):
            for d in ti.static(range(3)):
                w = permute(w_in[i], rotations[d])
                f_num[d, i] = solver(w, w, dt_dx)
                _, f = phys.state_and_flux(w)
                f_phys[d, i] = f

    fluxes(0.07)
    num, exact = f_num.to_numpy(), f_phys.to_numpy()
    for d in range(3):
        rotated = states[:, rotations[d]]
        np.testing.assert_allclose(exact[d], euler_flux(rotated), rtol=1e-13, atol=0)
    scale = np.max(np.abs(exact), axis=2, keepdims=True)
    assert np.max(np.abs(num - exact) / scale) <= 1e-13


def test_euler_eigenvectors_diagonalize_the_primitive_jacobian(arch):
    phys = euler_physics(arch)
    n = 16
    states = random_states(n, seed=2)
    w_in = ti.Vector.field(5, ti.f64, shape=n)
    L_out = ti.Matrix.field(5, 5, ti.f64, shape=n)
    R_out = ti.Matrix.field(5, 5, ti.f64, shape=n)
    w_in.from_numpy(states)

    @ti.kernel
    def eigen():
        for i in range(n):
            L, R = phys.eigenvectors(w_in[i])
            L_out[i] = L
            R_out[i] = R

    eigen()
    for w, L, R in zip(states, L_out.to_numpy(), R_out.to_numpy()):
        rho, u, p = w[0], w[1], w[4]
        c = np.sqrt(GAMMA * p / rho)
        A = u * np.eye(5)          # dW/dt + A dW/dx = 0, W = (rho, u, v, w, p)
        A[0, 1] = rho
        A[1, 4] = 1.0 / rho
        A[4, 1] = rho * c * c
        np.testing.assert_allclose(L @ R, np.eye(5), rtol=0, atol=1e-13)
        np.testing.assert_allclose(L @ A @ R, np.diag([u - c, u, u, u, u + c]), rtol=0,
                                   atol=1e-13 * (abs(u) + c))


def einfeldt_and_roe_speeds(phys, left, right):
    """(Einfeldt s_L, s_R) and (Roe s_min, s_max) for pairs of primitive states."""
    n = len(left)
    wl, wr = ti.Vector.field(5, ti.f64, shape=n), ti.Vector.field(5, ti.f64, shape=n)
    out = ti.Vector.field(4, ti.f64, shape=n)
    wl.from_numpy(np.asarray(left, dtype=float))
    wr.from_numpy(np.asarray(right, dtype=float))

    @ti.kernel
    def speeds():
        for i in range(n):
            sL, sR = riemann_mod.einfeldt_speeds(phys, wl[i], wr[i])
            rmin, rmax = phys.roe_speeds(wl[i], wr[i])
            out[i] = ti.Vector([sL, sR, rmin, rmax])

    speeds()
    result = out.to_numpy()
    return result[:, :2], result[:, 2:]


def test_roe_speeds_of_equal_states_are_u_minus_and_plus_c(arch):
    phys = euler_physics(arch)
    states = random_states(16, seed=3)
    _, roe = einfeldt_and_roe_speeds(phys, states, states)
    c = sound_speed(states)
    np.testing.assert_allclose(roe, np.column_stack([states[:, 1] - c, states[:, 1] + c]), rtol=1e-13, atol=1e-13)


def exact_wave_speeds(left, right):
    """Slowest and fastest signal of the exact solution: shock speed or rarefaction head."""
    p_star, _ = star_state(left, right, gamma=GAMMA)
    speeds = []
    for (rho, u, p), sign in ((left, -1.0), (right, 1.0)):
        c = np.sqrt(GAMMA * p / rho)
        if p_star > p:
            speeds.append(u + sign * c * np.sqrt((GAMMA + 1) / (2 * GAMMA) * p_star / p + (GAMMA - 1) / (2 * GAMMA)))
        else:
            speeds.append(u + sign * c)
    return speeds


def full(state, tangential=(0.0, 0.0)):
    rho, u, p = state
    return [rho, u, *tangential, p]


def test_einfeldt_speeds_bound_the_exact_waves_of_toro_tests(arch):
    """Toro's Table 4.1 tests 2-5. Test 1 (Sod) is left out on purpose: its right shock
    (1.752) is faster than both the Einfeldt (1.152) and the Davis (1.183) estimate; no
    estimate from the two states alone bounds every shock."""
    phys = euler_physics(arch)
    einfeldt, _ = einfeldt_and_roe_speeds(phys, [full(left) for left, _ in TORO_TESTS[1:]],
                                          [full(right) for _, right in TORO_TESTS[1:]])
    for (left, right), (sL, sR) in zip(TORO_TESTS[1:], einfeldt):
        slowest, fastest = exact_wave_speeds(left, right)
        assert sL <= slowest + 1e-12 * abs(slowest) and sR >= fastest - 1e-12 * abs(fastest), (left, right)


def shock_pair(ahead, ratio, facing):
    """States behind and ahead of a shock of pressure ratio `ratio` moving into `ahead`
    (Rankine-Hugoniot, Toro 3.1.3), as (left, right), and the shock speed."""
    rho0, u0, p0 = ahead
    sign = 1.0 if facing == "right" else -1.0
    c0 = np.sqrt(GAMMA * p0 / rho0)
    S = u0 + sign * c0 * np.sqrt((GAMMA + 1) / (2 * GAMMA) * ratio + (GAMMA - 1) / (2 * GAMMA))
    rho1 = rho0 * ((GAMMA + 1) * ratio + GAMMA - 1) / ((GAMMA - 1) * ratio + GAMMA + 1)
    behind = (rho1, S + rho0 / rho1 * (u0 - S), ratio * p0)
    return ((behind, ahead) if facing == "right" else (ahead, behind)), S


def test_einfeldt_speed_of_an_isolated_shock_is_its_speed(arch):
    """Roe's average satisfies A_roe (U_R - U_L) = F_R - F_L, so across one shock its fastest
    (slowest) eigenvalue is the shock speed and Einfeldt's estimate is exact."""
    phys = euler_physics(arch)
    cases = [shock_pair(ahead, ratio, facing) for ahead in ((1.0, 0.0, 1.0), (0.125, -0.4, 0.1))
             for ratio in (1.5, 10.0, 1e4) for facing in ("right", "left")]
    tangential = (0.3, -0.7)
    einfeldt, _ = einfeldt_and_roe_speeds(phys, [full(lr[0], tangential) for lr, _ in cases],
                                          [full(lr[1], tangential) for lr, _ in cases])
    for ((left, right), S), (sL, sR), facing in zip(cases, einfeldt, ["right", "left"] * 6):
        estimate = sR if facing == "right" else sL
        assert abs(estimate - S) <= 1e-12 * max(abs(S), 1.0), (left, right, S, estimate)


def test_missing_hooks_name_what_the_scheme_needs(tmp_path):
    text = EULER_FILE.read_text()
    no_roe = tmp_path / "euler_no_roe.py"
    no_roe.write_text(text[:text.index("@model.roe_speeds")])
    model, full = load_model(str(no_roe)), load_model(str(EULER_FILE))
    einfeldt = {"wave_speeds": "einfeldt"}
    assert missing_hooks(model, {"riemann": "hll", **einfeldt}) == ["@model.roe_speeds"]
    assert missing_hooks(model, {"riemann": "hllc", **einfeldt}) == ["@model.roe_speeds"]
    assert missing_hooks(model, {"riemann": "hllc", "wave_speeds": "davis"}) == []
    assert missing_hooks(model, {"riemann": "rusanov", **einfeldt}) == []
    assert missing_hooks(full, {"riemann": "hllc", **einfeldt}) == []
    model.functions.pop("hllc_star")
    model.pressure = None
    assert missing_hooks(model, {"riemann": "hllc", **einfeldt}) == ["pressure", "@model.hllc_star", "@model.roe_speeds"]
    assert missing_hooks(model, {"riemann": "musta", "musta_stages": 3}) == []
    init_taichi("cpu", "f64", False)
    phys = BoundModel(model, dict(model.params), ti.f64, ti.Vector.field(1, ti.f64, shape=()))
    with pytest.raises(ModelError, match="roe_speeds"):
        RIEMANN_SOLVERS["hll"](phys, {"riemann": "hll", **einfeldt})


# --- exact solutions ------------------------------------------------------------------------
def sod_density_error(cells, scheme, arch):
    case = load_case(CASES / "sod.toml", [f"grid.cells=[{cells}]", *scheme])
    sim = simulate(case, arch)
    x = (np.arange(cells) + 0.5) / cells
    rho, _, _ = exact_riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), x, 0.2, x0=0.5, gamma=GAMMA)
    return l1(sim.fields()["rho"], rho, 1.0 / cells)


FIRST_ORDER = ("scheme.reconstruction='first_order'", "scheme.integrator='euler'", "scheme.cfl=0.9")
PLM = ("scheme.reconstruction='plm'", "scheme.limiter='mc'", "scheme.integrator='ssprk2'", "scheme.cfl=0.4")


@pytest.mark.parametrize("riemann,recon,bound", [
    ("force", FIRST_ORDER, 1.06e-2),
    ("musta", FIRST_ORDER, 4.9e-3),
    ("force", PLM, 2.7e-3),
    ("musta", PLM, 1.35e-3),
], ids=["force-first_order", "musta-first_order", "force-plm", "musta-plm"])
def test_sod_force_and_musta_converge(riemann, recon, bound, arch):
    """Bounds are the measured 400-cell L1 errors plus ~20%: first order at CFL 0.9 (forward
    Euler, FORCE's own one-step setting) 8.8e-3 (force) and 4.0e-3 (musta, 3 stages; HLLC
    measures 6.0e-3); PLM-MC + SSP-RK2 at CFL 0.4: 2.2e-3 and 1.1e-3."""
    scheme = (f"scheme.riemann='{riemann}'", *recon)
    coarse, fine = sod_density_error(200, scheme, arch), sod_density_error(400, scheme, arch)
    assert fine < coarse
    assert fine < bound


STATIONARY_CONTACT = ("grid.cells=[100]", "time.end=2.0", "scheme.reconstruction='first_order'",
                      "initial.background={rho = 1.4, vel = [0.0, 0.0, 0.0], p = 1.0}",
                      "initial.regions.0.state={rho = 1.0, p = 1.0}")


@pytest.mark.parametrize("speeds", ["davis", "einfeldt"])
def test_stationary_contact_sharp_with_hllc_smeared_with_hll(speeds, arch):
    """Toro's stationary contact (rho, u, p) = (1.4, 0, 1) | (1.0, 0, 1): HLLC resolves the
    contact wave, so its flux is exact there; HLL has no contact and diffuses it."""
    rho = {}
    for riemann in ("hllc", "hll"):
        case = load_case(CASES / "sod.toml", [*STATIONARY_CONTACT, f"scheme.riemann='{riemann}'",
                                              f"scheme.wave_speeds='{speeds}'"])
        fields = simulate(case, arch).fields()
        rho[riemann] = fields["rho"]
        if riemann == "hllc":
            assert np.abs(fields["vel"]).max() <= 1e-12 and np.abs(fields["p"] - 1.0).max() <= 1e-12
    assert np.abs(rho["hllc"][:50] - 1.4).max() <= 1e-12
    assert np.abs(rho["hllc"][50:] - 1.0).max() <= 1e-12
    smeared = np.sum((rho["hll"] > 1.0 + 1e-3) & (rho["hll"] < 1.4 - 1e-3))
    assert smeared >= 40, smeared  # measured: 83 cells between the states, Davis and Einfeldt


def test_advected_unit_scalar_stays_exact_with_force_and_musta(tmp_path):
    """The centred solvers feed the unit scalar through the same Lax-Wendroff / MUSTA states,
    so phi = 1 stays 1 through Sod's waves (cf. test_model_hooks for the upwind solvers)."""
    from test_model_hooks import EULER_WITH_COLOUR

    path = tmp_path / "euler_colour.py"
    path.write_text(EULER_WITH_COLOUR)
    for riemann in ("force", "musta"):
        case = load_case(CASES / "sod.toml", [f"model.name='{path}'", "grid.cells=[100]",
                                              "initial.background.phi=1.0", f"scheme.riemann='{riemann}'",
                                              "scheme.reconstruction='plm'"])
        fields = simulate(case).fields()
        assert np.abs(fields["vel"][:, 0]).max() > 0.9
        assert np.abs(fields["phi"] - 1.0).max() <= 1e-14, riemann


def test_force_in_3d_with_the_dimension_factor_stays_admissible(arch):
    """FORCE evaluated with alpha = 3 (scheme["dimension"], set by the caller) runs the Sedov
    blast; with alpha = 1 the three axes' Lax-Friedrichs diffusions overshoot and the
    pressure goes negative within two steps (measured here, and at 24^3)."""
    case = load_case(CASES / "sedov3d.toml", ["grid.cells=[16,16,16]", "scheme.riemann='force'",
                                              "scheme.reconstruction='first_order'", "scheme.cfl=0.3"])
    case["scheme"]["dimension"] = 3
    sim = simulate(case, arch)  # to the end time: 16 steps
    fields = sim.fields()
    assert sim.t >= case["time"]["end"] * (1 - 1e-12)
    assert fields["p"].min() > 0.0 and fields["rho"].min() > 0.0


def test_euler_conserved_eigensystem_of_the_finite_difference_method(arch):
    """jacobians: dU/dW and dW/dU inverse to each other and dU/dW the derivative of
    to_conserved; with eigenvectors and eigenvalues, L dW/dU (dF/dU) dU/dW R is diag(lambda)
    for the flux Jacobian dF/dU (central differences of the Euler flux)."""
    phys = euler_physics(arch)
    n = 8
    states = random_states(n, seed=3)
    w_in = ti.Vector.field(5, ti.f64, shape=n)
    out = {name: ti.Matrix.field(5, 5, ti.f64, shape=n) for name in ("L", "R", "dU_dW", "dW_dU")}
    speeds = ti.Vector.field(5, ti.f64, shape=n)
    w_in.from_numpy(states)

    @ti.kernel
    def eigen():
        for i in range(n):
            L, R = phys.eigenvectors(w_in[i])
            dU_dW, dW_dU = phys.jacobians(w_in[i])
            out["L"][i], out["R"][i], out["dU_dW"][i], out["dW_dU"][i] = L, R, dU_dW, dW_dU
            speeds[i] = phys.eigenvalues(w_in[i])

    eigen()
    got = {name: field.to_numpy() for name, field in out.items()}

    def conserved(w):
        return np.array([w[0], *(w[0] * w[1:4]), w[4] / (GAMMA - 1) + 0.5 * w[0] * w[1:4] @ w[1:4]])

    def flux_of(u):
        vel = u[1:4] / u[0]
        p = (GAMMA - 1) * (u[4] - 0.5 * u[0] * vel @ vel)
        return np.array([u[1], u[1] * vel[0] + p, u[2] * vel[0], u[3] * vel[0], (u[4] + p) * vel[0]])

    for i, w in enumerate(states):
        h = 1e-6
        dU_dW = np.stack([(conserved(w + h * e) - conserved(w - h * e)) / (2 * h) for e in np.eye(5)], axis=1)
        np.testing.assert_allclose(got["dU_dW"][i], dU_dW, rtol=0, atol=1e-8 * np.abs(dU_dW).max())
        np.testing.assert_allclose(got["dU_dW"][i] @ got["dW_dU"][i], np.eye(5), rtol=0, atol=1e-13)
        u = conserved(w)
        A = np.stack([(flux_of(u + h * e) - flux_of(u - h * e)) / (2 * h) for e in np.eye(5)], axis=1)
        L_U, R_U = got["L"][i] @ got["dW_dU"][i], got["dU_dW"][i] @ got["R"][i]
        c = np.sqrt(GAMMA * w[4] / w[0])
        np.testing.assert_allclose(speeds.to_numpy()[i], [w[1] - c, w[1], w[1], w[1], w[1] + c], rtol=1e-14)
        np.testing.assert_allclose(L_U @ A @ R_U, np.diag(speeds.to_numpy()[i]), rtol=0, atol=1e-7 * (abs(w[1]) + c))
