"""The registry of scheme names: one Taichi-free catalogue that the case schema, the
requirement checks, `taichiflow check` and the numerics' factories read. A Riemann solver
defined in this file and registered at run time must be accepted, checked and run with no
edit to the package; unknown names must be refused with suggestions, never defaulted."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import taichi as ti

from helpers import CASES, ROOT, case_from_text, simulate
from taichiflow import registry
from taichiflow.case import CaseError, load_case
from taichiflow.checks_kernels import applicable_solvers, solver_variants
from taichiflow.errors import ModelError, UnknownNameError
from taichiflow.model import load_model
from taichiflow.numerics.integrators import INTEGRATORS, Stage
from taichiflow.numerics.reconstruction import make_limiter, make_reconstruction, stencil_reach
from taichiflow.numerics.riemann import RIEMANN_SOLVERS, make_riemann_solver
from taichiflow.numerics.variables import make_variables
from taichiflow.bound_model import BoundModel
from taichiflow.requirements import check_case_against_model, missing_hooks
from taichiflow.run.backend import init_taichi

EULER_FILE = CASES.parent / "models" / "euler.py"

SOD = """
[model]
name = "euler"
[grid]
cells = [64]
upper = [1.0]
[scheme]
reconstruction = "plm"
riemann = "{riemann}"
integrator = "ssprk2"
[time]
end = 0.1
[boundary]
x = "outflow"
[initial]
background = {{ rho = 1.0, vel = [0.0, 0.0, 0.0], p = 1.0 }}
[[initial.regions]]
shape = "half_space"
point = [0.5]
normal = [1.0]
state = {{ rho = 0.125, p = 0.1 }}
"""

CATALOGUES = {
    "reconstruction": registry.reconstructions,
    "limiter": registry.limiters,
    "variables": registry.reconstructed_variables,
    "wave_speeds": registry.wave_speeds,
    "riemann": registry.riemann_solvers,
    "integrator": registry.integrators,
}


# --- a Riemann solver that lives in this test file ---------------------------------------------
BUILT = []  # the schemes the test solver was built for


def make_test_rusanov(phys, scheme):
    """Rusanov's flux, written here: the run with it must equal the built-in 'rusanov' run."""
    BUILT.append(dict(scheme))

    @ti.func
    def flux(wL, wR, dt_dx):
        uL, fL = phys.state_and_flux(wL)
        uR, fR = phys.state_and_flux(wR)
        minL, maxL = phys.signal_speeds(wL)
        minR, maxR = phys.signal_speeds(wR)
        s = ti.max(ti.abs(minL), ti.abs(maxL), ti.abs(minR), ti.abs(maxR))
        return 0.5 * (fL + fR) - 0.5 * s * (uR - uL)

    return flux


@pytest.fixture
def registered():
    """Entries a test registers are forgotten after it (the docs test of test_case.py reads
    every registered choice)."""
    catalogues = [*CATALOGUES.values(), registry.boundary_kinds]
    before = {id(catalogue): set(catalogue.names()) for catalogue in catalogues}
    yield
    for catalogue in catalogues:
        for name in set(catalogue.names()) - before[id(catalogue)]:
            catalogue.remove(name)


def euler_physics():
    init_taichi("cpu", "f64", False)
    model = load_model(str(EULER_FILE))
    return BoundModel(model, dict(model.params), ti.f64, ti.Vector.field(1, ti.f64, shape=()))


def euler_without(*hooks, roles=()):
    model = load_model(str(EULER_FILE))
    for hook in hooks:
        model.functions.pop(hook)
    for role in roles:
        setattr(model, role, None)
    return model


# --- taichi-free ---------------------------------------------------------------------------------
def test_registry_and_errors_import_without_taichi():
    """The case schema reads the registry; neither may pull in Taichi (nor the package)."""
    code = textwrap.dedent(f"""
        import importlib.util, sys, types
        package = types.ModuleType("taichiflow")
        package.__path__ = [{str(ROOT / "taichiflow")!r}]
        sys.modules["taichiflow"] = package
        for name in ("errors", "registry"):
            spec = importlib.util.spec_from_file_location("taichiflow." + name, package.__path__[0] + "/" + name + ".py")
            module = importlib.util.module_from_spec(spec)
            sys.modules["taichiflow." + name] = module
            spec.loader.exec_module(module)
        assert "taichi" not in sys.modules, "registry.py imported taichi"
        assert sys.modules["taichiflow.registry"].riemann_solvers.names()
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --- unknown names -------------------------------------------------------------------------------
@pytest.mark.parametrize("catalogue, typo, meant", [
    (registry.reconstructions, "weno_5", "weno5"), (registry.limiters, "superbe", "superbee"),
    (registry.reconstructed_variables, "primitve", "primitive"), (registry.wave_speeds, "einfeld", "einfeldt"),
    (registry.riemann_solvers, "hlcc", "hllc"), (registry.integrators, "lsrk_3", "lsrk3"),
    (registry.boundary_kinds, "wal", "wall"),
])
def test_unknown_names_are_refused_with_a_suggestion_and_the_choices(catalogue, typo, meant):
    with pytest.raises(UnknownNameError) as info:
        catalogue.get(typo)
    message = str(info.value)
    assert f"'{typo}'" in message and f"did you mean '{meant}'?" in message
    assert "choices: " + ", ".join(catalogue.names()) in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("key, typo, meant", [
    ("scheme.reconstruction", "weno_5", "weno5"), ("scheme.limiter", "superbe", "superbee"),
    ("scheme.variables", "primitve", "primitive"), ("scheme.wave_speeds", "einfeld", "einfeldt"),
    ("scheme.riemann", "hlcc", "hllc"), ("scheme.integrator", "lsrk_3", "lsrk3"),
    ("scheme.retry.riemann", "rusanv", "rusanov"), ("boundary.x", "wal", "wall"),
])
def test_the_case_schema_refuses_unknown_names_with_suggestions(tmp_path, key, typo, meant):
    with pytest.raises(CaseError) as info:
        case_from_text(tmp_path, SOD.format(riemann="hll"), [f'{key}="{typo}"'])
    assert f"did you mean '{meant}'?" in str(info.value)


def test_lookups_by_name_in_the_numerics_refuse_unknown_names():
    """Nothing turns an unknown name into a default (Davis speeds, a wall, ...)."""
    phys = euler_physics()
    with pytest.raises(ValueError, match="unknown reconstruction 'weno7'"):
        stencil_reach("weno7")
    with pytest.raises(ValueError, match="unknown reconstruction 'weno7'"):
        make_reconstruction({"reconstruction": "weno7"}, phys)
    with pytest.raises(ValueError, match="unknown limiter 'minmd'.*did you mean 'minmod'"):
        make_limiter({"limiter": "minmd"})
    with pytest.raises(ValueError, match="unknown reconstructed variables 'entropy'"):
        make_variables("entropy", phys)
    with pytest.raises(ValueError, match="unknown wave-speed estimate 'roe'"):
        RIEMANN_SOLVERS["hll"](phys, {"riemann": "hll", "wave_speeds": "roe"})
    with pytest.raises(KeyError, match="unknown Riemann solver 'roe'"):
        RIEMANN_SOLVERS["roe"]
    assert "roe" not in RIEMANN_SOLVERS and "hllc" in RIEMANN_SOLVERS
    with pytest.raises(KeyError, match="unknown integrator 'rk4'"):
        INTEGRATORS["rk4"]


def test_an_unknown_boundary_kind_is_an_error_in_the_requirement_check():
    model = load_model(str(EULER_FILE))
    case = load_case(CASES / "sod.toml")
    case["boundary"]["x"] = ["outflow", "reflecting"]
    with pytest.raises(UnknownNameError, match="unknown boundary kind 'reflecting'"):
        check_case_against_model(case, model, "sod.toml")


# --- every entry works ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", registry.reconstructions.names())
def test_every_reconstruction_builds_with_the_reach_the_registry_says(name):
    phys = euler_physics()
    entry = registry.reconstructions.get(name)
    recon = make_reconstruction({"reconstruction": name, "limiter": "mc"}, phys)
    assert recon.ghost == entry.reach == stencil_reach(name)
    assert callable(recon.face_states) and callable(recon.cell_states)
    if entry.needs_model:
        with pytest.raises(ValueError, match="physics"):
            make_reconstruction({"reconstruction": name}, None)
    else:
        assert make_reconstruction({"reconstruction": name}, None).ghost == entry.reach


def test_every_limiter_variables_speeds_and_solver_has_a_working_factory():
    """Each factory builds; each solver (with each speed estimate it reads) compiles into a
    kernel whose flux of equal states is the physical flux."""
    phys = euler_physics()
    for name in registry.limiters.names():
        assert callable(make_limiter({"limiter": name, "theta": 1.5}))
    for entry in registry.reconstructed_variables.entries():
        assert make_variables(entry.name, phys).per_cell == entry.per_cell
        assert make_variables(entry.name, None).per_cell == entry.per_cell
    for entry in registry.wave_speeds.entries():
        assert callable(entry.load())
    # the numerics' own solvers (a model loaded earlier in this process may have added its own)
    variants = [(label, scheme) for label, scheme in solver_variants()
                if registry.riemann_solvers.get(scheme["riemann"]).provided_by is None]
    labels = [label for label, _ in variants]
    assert labels == ["rusanov", "hll", "hll+einfeldt", "hllc", "hllc+einfeldt", "force", "musta"]
    solvers = [RIEMANN_SOLVERS[scheme["riemann"]](phys, scheme) for _, scheme in variants]
    w = ti.Vector.field(5, ti.f64, shape=())
    out = ti.Vector.field(5, ti.f64, shape=len(solvers))
    w[None] = [1.2, 0.3, -0.2, 0.1, 2.0]

    @ti.kernel
    def fluxes():
        for k in ti.static(range(len(solvers))):
            out[k] = solvers[k](w[None], w[None], 0.1)

    fluxes()
    reference = np.array(
        [1.2 * 0.3, 1.2 * 0.3 * 0.3 + 2.0, -1.2 * 0.2 * 0.3, 1.2 * 0.1 * 0.3,
         (2.0 / 0.4 + 0.5 * 1.2 * (0.09 + 0.04 + 0.01) + 2.0) * 0.3])
    np.testing.assert_allclose(out.to_numpy(), np.tile(reference, (len(solvers), 1)), rtol=1e-13, atol=1e-15)


def test_every_integrator_is_a_table_of_stages():
    for name in registry.integrators.names():
        stages = INTEGRATORS[name]
        assert stages and all(isinstance(stage, Stage) for stage in stages)
        assert stages[0].time == 0.0
    assert list(INTEGRATORS) == list(registry.integrators.names())


def test_boundary_kinds_say_what_they_need():
    kinds = {entry.name: entry for entry in registry.boundary_kinds.entries()}
    assert kinds["wall"].needs_roles == ("velocity",)
    assert kinds["inflow"].needs_state and kinds["periodic"].both_sides
    assert all(entry.doc for entry in kinds.values())


def test_diffusive_choices_drive_the_advice():
    assert registry.is_diffusive({"reconstruction": "plm", "riemann": "hll"})
    assert not registry.is_diffusive({"reconstruction": "weno5", "riemann": "hll"})
    assert not registry.is_diffusive({"reconstruction": "first_order", "riemann": "hllc"})


# --- requirements read from the registry ---------------------------------------------------------
def test_requirements_name_what_is_missing_and_what_would_work():
    case = load_case(CASES / "sod.toml")
    model = euler_without("hllc_star")
    with pytest.raises(ModelError) as info:
        check_case_against_model(case, model, "sod.toml")
    assert str(info.value) == (
        "sod.toml: [scheme] riemann = 'hllc' (wave_speeds = 'davis') needs the model 'euler' to declare "
        "@model.hllc_star; use 'rusanov', 'hll' with 'davis' or 'einfeldt' speeds, 'force' or 'musta'")
    case["scheme"].update(riemann="hll", variables="characteristic", reconstruction="muscl_hancock")
    with pytest.raises(ModelError, match="variables = 'characteristic' does not combine with "
                                         r"reconstruction = 'muscl_hancock' \(its predictor"):
        check_case_against_model(case, model, "sod.toml")
    with pytest.raises(ModelError, match="to declare @model.eigenvectors; use 'primitive' or 'conserved'"):
        check_case_against_model(case, euler_without("eigenvectors"), "sod.toml")
    case["scheme"].update(variables="primitive")
    case["boundary"]["x"] = ["wall", "wall"]
    with pytest.raises(ModelError, match=r"\[boundary\] x = 'wall' needs a model that names its velocity "
                                         r"\(Model\(velocity=\.\.\.\)\) to reflect it"):
        check_case_against_model(case, euler_without(roles=("velocity",)), "sod.toml")


# --- run-time registration -----------------------------------------------------------------------
def test_registration_refuses_taken_names_and_unknown_roles(registered):
    with pytest.raises(ValueError, match="'hllc' is already registered"):
        registry.register_riemann_solver("hllc", make_test_rusanov)
    with pytest.raises(ValueError, match="unknown model role 'velocty'.*did you mean 'velocity'"):
        registry.register_riemann_solver("mine", make_test_rusanov, needs_roles=("velocty",))
    with pytest.raises(ValueError, match="reach must be an integer >= 1"):
        registry.register_reconstruction("mine", "taichiflow.numerics.reconstruction:make_first_order", reach=0)
    assert "mine" not in registry.riemann_solvers and "mine" not in registry.reconstructions


def test_a_registered_solver_is_accepted_by_the_schema_and_its_needs_are_checked(tmp_path, registered):
    text = SOD.format(riemann="test_star")
    with pytest.raises(CaseError, match="got \"test_star\""):
        case_from_text(tmp_path, text)
    registry.register_riemann_solver("test_star", make_test_rusanov, needs_hooks=("hllc_star",),
               needs_roles=("pressure",), options=("wave_speeds",), doc="a test solver")
    case = case_from_text(tmp_path, text)  # the choices are read when a value is checked
    assert case["scheme"]["riemann"] == "test_star"
    assert "test_star" in [label for label, _ in solver_variants()]
    assert missing_hooks(load_model(str(EULER_FILE)), case["scheme"]) == []
    lacking = euler_without("hllc_star", "roe_speeds", roles=("pressure",))
    assert missing_hooks(lacking, {**case["scheme"], "wave_speeds": "einfeldt"}) == [
        "pressure", "@model.hllc_star", "@model.roe_speeds"]
    assert "test_star" not in [label for label, _ in applicable_solvers(lacking)]
    with pytest.raises(ModelError, match="riemann = 'test_star'.*@model.hllc_star; use 'rusanov'"):
        check_case_against_model(case, lacking, "sod.toml")
    phys = euler_physics()
    phys.model.functions.pop("hllc_star")
    with pytest.raises(ModelError, match="hllc_star"):
        make_riemann_solver("test_star", phys, case["scheme"])


def test_a_solver_defined_in_a_test_file_runs_sod(tmp_path, registered):
    """Registered by an import path into this file's module, as a plug-in would be: Sod
    with it is Sod with the built-in Rusanov flux, bit for bit."""
    registry.register_riemann_solver("test_rusanov", f"{__name__}:make_test_rusanov", diffusive=True)
    BUILT.clear()
    mine = simulate(case_from_text(tmp_path, SOD.format(riemann="test_rusanov"), name="mine.toml"))
    assert BUILT and all(scheme["riemann"] == "test_rusanov" for scheme in BUILT)
    mine_steps, mine_rho = mine.step_count, mine.fields()["rho"]  # (read before the next Simulation starts Taichi)
    builtin = simulate(case_from_text(tmp_path, SOD.format(riemann="rusanov"), name="builtin.toml"))
    assert mine_steps == builtin.step_count > 10
    np.testing.assert_array_equal(mine_rho, builtin.fields()["rho"])
    assert registry.is_diffusive({"reconstruction": "plm", "riemann": "test_rusanov"})


def test_a_registered_reconstruction_and_integrator_are_choices(tmp_path, registered):
    registry.register_reconstruction("test_constant", "taichiflow.numerics.reconstruction:make_first_order", reach=1)
    registry.register_integrator("test_euler", "taichiflow.numerics.integrators:EULER")
    case = case_from_text(tmp_path, SOD.format(riemann="hll"),
                          ['scheme.reconstruction="test_constant"', 'scheme.integrator="test_euler"'])
    assert stencil_reach(case["scheme"]["reconstruction"]) == 1
    assert INTEGRATORS["test_euler"] == INTEGRATORS["euler"]
    registry.register_reconstruction("test_wrong_reach", "taichiflow.numerics.reconstruction:make_first_order",
               reach=2)
    with pytest.raises(ValueError, match="reads 1 cells a side, but the registry says 2"):
        make_reconstruction({"reconstruction": "test_wrong_reach"})


def test_a_removed_name_is_refused_again(tmp_path, registered):
    registry.register_limiter("test_minmod", "taichiflow.numerics.reconstruction:minmod")
    assert case_from_text(tmp_path, SOD.format(riemann="hll"), ['scheme.limiter="test_minmod"'])
    registry.limiters.remove("test_minmod")
    with pytest.raises(CaseError, match="expected one of .*\"superbee\", \"minbee\", got \"test_minmod\""):
        case_from_text(tmp_path, SOD.format(riemann="hll"), ['scheme.limiter="test_minmod"'])
