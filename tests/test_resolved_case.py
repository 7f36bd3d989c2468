"""The resolved case (taichiflow/resolved.py): typed, frozen, built once from case.py's checked
dict, holding the same values with the same Python types, every schema key an attribute, and
its dict form (what case.toml and checkpoints record) the dict it came from, to the byte."""
import copy
import dataclasses
import pickle
from pathlib import Path

import pytest

from taichiflow import case as case_mod
from taichiflow.api import Case
from taichiflow.case import OMIT, REQUIRED, load_case
from taichiflow.kernels import plan as kernel_plan
from taichiflow.resolved import TABLES, Record, ResolvedCase, SchemeTable, frozen, thawed

ROOT = Path(__file__).resolve().parent.parent
CASE_FILES = sorted((ROOT / "cases").glob("*.toml"))


def shipped(path: Path) -> dict:
    return load_case(path)


def same_types(a, b) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 and [1] == [1.0] are not enough:
    dump_toml writes them apart, and the kernels compile some of them in)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_the_dict_form_is_the_checked_dict_to_the_byte(path):
    checked = shipped(path)
    resolved = ResolvedCase.from_dict(checked)
    assert same_types(resolved.as_dict(), checked)
    assert case_mod.dump_toml(resolved.as_dict()) == case_mod.dump_toml(checked)
    assert resolved.source == str(path) and resolved.warnings == tuple(checked.get("_warnings", ()))


def _walk(value, path=()):
    """(path, value) of every key of a checked dict, tables of arrays by index."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not key.startswith("_"):
                yield path + (key,), item
                yield from _walk(item, path + (key,))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, item in enumerate(value):
            yield from _walk(item, path + (i,))


def _get(resolved, path):
    """A key's value by attributes: case.scheme.retry.riemann, case.initial.regions[0].state.rho."""
    value = resolved
    for part in path:
        if isinstance(part, int):
            value = value[part]
        elif isinstance(value, Record) and not part.isidentifier():
            value = value[part]
        else:
            value = getattr(value, part)
    return value


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_every_key_is_an_attribute_with_the_dicts_value_and_type(path):
    checked = shipped(path)
    resolved = ResolvedCase.from_dict(checked)
    for key, value in _walk(checked):
        got = _get(resolved, key)
        if isinstance(got, SchemeTable.__dataclass_fields__["retry"].default.__class__):
            got = got.given()
        elif dataclasses.is_dataclass(got) or key == ("materials",):
            continue  # (a table: its keys are walked)
        assert same_types(thawed(got), value), (key, got, value)
        assert got == frozen(value) or isinstance(value, dict), key


def test_every_schema_key_is_a_field_of_its_table():
    """Each key case.SCHEMA knows is a field of the dataclass of its table (tables whose keys
    depend on the data, such as regions, states and inflow faces, are Records: any key)."""
    fields = {f.name for f in dataclasses.fields(ResolvedCase)}
    for path in case_mod.schema_entries():
        assert path[0] in fields, path
        table = TABLES[path[0]]
        if len(path) == 2 and path[0] != "materials":
            assert path[1] in {f.name for f in dataclasses.fields(table)}, path
    retry = {f.name for f in dataclasses.fields(SchemeTable.__dataclass_fields__["retry"].default)}
    assert retry == set(case_mod.SCHEMA.keys["scheme"].spec.keys["retry"].spec.keys)
    for name, table in TABLES.items():
        spec = case_mod.SCHEMA.keys[name].spec
        keys = spec.keys if hasattr(spec, "keys") else case_mod.Materials.entry.keys
        assert {f.name for f in dataclasses.fields(table)} == set(keys), name


def test_the_fields_defaults_are_the_schemas():
    """A table built from a partial mapping (kernels/plan.py's tests pass them) takes the
    schema's defaults; None where the schema leaves the key out."""
    for name, table in TABLES.items():
        spec = case_mod.SCHEMA.keys[name].spec
        keys = spec.keys if hasattr(spec, "keys") else case_mod.Materials.entry.keys
        for field in dataclasses.fields(table):
            default = keys[field.name].default
            if default is REQUIRED or callable(default) or field.name == "retry":
                continue
            expected = None if default is OMIT else frozen(default)
            if name == "scheme" and field.name in ("riemann", "variables"):  # (the method's: check_scheme)
                continue
            assert field.default == expected, (name, field.name)


def test_frozen_all_the_way_down():
    resolved = ResolvedCase.from_dict(shipped(ROOT / "cases" / "gas_water_tube.toml"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.scheme.cfl = 0.1
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.grid = None
    with pytest.raises(AttributeError):
        resolved.model.params.gamma = 2.0
    with pytest.raises(TypeError):
        resolved.model.params["gamma"] = 2.0
    assert isinstance(resolved.grid.cells, tuple) and isinstance(resolved.initial.regions, tuple)
    assert isinstance(resolved.initial.regions[0].state, Record)
    hash(resolved)  # (frozen values throughout)
    mutated = resolved.as_dict()
    mutated["scheme"]["cfl"] = 0.1
    assert resolved.scheme.cfl == 0.4 and resolved.as_dict()["scheme"]["cfl"] == 0.4
    assert pickle.loads(pickle.dumps(resolved)) == resolved and copy.deepcopy(resolved) is resolved


def test_built_once_from_a_dict_that_it_does_not_share():
    checked = shipped(ROOT / "cases" / "sod.toml")
    resolved = ResolvedCase.from_dict(checked)
    checked["scheme"]["cfl"] = 0.1
    checked["grid"]["cells"].append(3)
    assert resolved.scheme.cfl == 0.4 and resolved.grid.cells == (400,)
    case = Case.from_file(ROOT / "cases" / "sod.toml")
    assert case.resolved is case.resolved and ResolvedCase.of(case) is case.resolved
    assert ResolvedCase.of(case.resolved) is case.resolved
    assert case.resolved.as_dict() == case.to_dict()


def test_values_keep_their_python_types():
    """What the kernels compile in must not change type (an int where a float was)."""
    resolved = ResolvedCase.from_dict(shipped(ROOT / "cases" / "sod.toml"))
    assert type(resolved.scheme.cfl) is float and type(resolved.scheme.theta) is float
    assert type(resolved.time.max_steps) is int and all(type(n) is int for n in resolved.grid.cells)
    assert all(type(x) is float for x in resolved.grid.lower + resolved.grid.upper)
    assert resolved.run.fast_math == "auto" and resolved.run.keep_last_good is True


def test_settled_is_a_new_case_and_the_old_one_stays():
    resolved = ResolvedCase.from_dict(shipped(ROOT / "cases" / "sod.toml"))
    settled = resolved.settled(arch="cpu", precision="f64", fast_math=False, model_file="/m/euler.py",
                               params={"gamma": 1.4})
    assert (resolved.run.arch, resolved.model.name, resolved.initial.values) == ("auto", "euler", "auto")
    assert (settled.run.arch, settled.run.precision, settled.run.fast_math) == ("cpu", "f64", False)
    assert settled.model.name == "/m/euler.py" and dict(settled.model.params) == {"gamma": 1.4}
    assert settled.initial.values == "average" and list(settled.as_dict()) == list(resolved.as_dict())
    differences = ResolvedCase.from_dict(load_case(ROOT / "cases" / "sod.toml", [
        "scheme.method='finite_difference'", "scheme.riemann='rusanov'", "scheme.variables='characteristic'"]))
    assert differences.initial_values == "point"


def test_the_plan_of_the_typed_tables_is_the_plan_of_the_dicts():
    checked = load_case(ROOT / "cases" / "sedov3d.toml", ["grid.cells=[8, 8, 8]",
                                                          "scheme.retry={reconstruction='plm', riemann='hll'}"])
    resolved = ResolvedCase.from_dict(checked)
    for arch, precision in (("cpu", "f64"), ("cuda", "f32"), ("cuda", "f64")):
        typed = kernel_plan.resolve(resolved.scheme, resolved.run, arch, precision, resolved.grid.cells,
                                    resolved.boundary_kinds)
        plain = kernel_plan.resolve(checked["scheme"], checked["run"], arch, precision, checked["grid"]["cells"],
                                    [tuple(checked["boundary"][a]) for a in "xyz"])
        assert typed == plain
    retry = typed.schemes[1]
    assert (retry.reconstruction, retry.riemann, retry.limiter) == ("plm", "hll", resolved.scheme.limiter)
    assert retry.mapping() == {**{k: v for k, v in checked["scheme"].items()}, "reconstruction": "plm",
                               "riemann": "hll"}
    assert resolved.scheme.mapping() == checked["scheme"]  # (what the numerics' factories take)


# --- what the run layer reads of the typed tables (run/build_amr.py, run/failure.py, run/model_blame.py)

AMR_FILES = [p for p in CASE_FILES if "\n[amr]" in p.read_text()]


def test_the_amr_tables_derived_values():
    """The criteria's finest level and the pool's first size, per shipped adaptive case."""
    from taichiflow.kernels.amr.criteria import Criteria
    from taichiflow.run.build_amr import criteria_of, roots_of
    cases = {p.stem: ResolvedCase.from_dict(shipped(p)) for p in AMR_FILES}
    assert {"sedov3d_amr", "bubble_collapse_amr", "cloud_blast_amr", "shock_bubble_amr"} <= set(cases)
    sedov, bubble, cloud, tube = (cases[n] for n in ("sedov3d_amr", "bubble_collapse_amr", "cloud_blast_amr",
                                                     "shock_bubble_amr"))
    assert (sedov.amr.criteria_max_level, sedov.amr.max_level, sedov.amr.criteria_up_to) == (None, 2, 2)
    assert (bubble.amr.criteria_max_level, bubble.amr.max_level, bubble.amr.criteria_up_to) == (1, 2, 1)
    assert (cloud.amr.criteria_up_to, tube.amr.criteria_up_to) == (3, 3)
    assert roots_of(sedov) == (4, 4, 4) and roots_of(bubble) == (12, 6, 6) and roots_of(tube) == (12, 2)
    assert sedov.amr.pool_slots(64) == 4096 and tube.amr.pool_slots(24) == 1536 and tube.amr.pool_slots(2) == 512
    assert cloud.amr.pool_slots(512) == 49152  # ([amr] capacity given)
    assert sedov.amr.pool_slots(64, ranks=4) == 1024 and sedov.amr.pool_slots(64, ranks=3) == 1408
    assert cloud.amr.pool_slots(512, ranks=4) == 49152  # (given: per rank as it is)
    assert criteria_of(tube.amr) == Criteria(0.8, 0.2, 0.05, up_to=3)
    assert criteria_of(bubble.amr).up_to == 1 and criteria_of(cloud.amr).up_to == 3


@pytest.mark.parametrize("path", AMR_FILES, ids=lambda p: p.stem)
def test_the_adaptive_build_reads_the_typed_amr_table_as_it_read_the_dict(path):
    from taichiflow.kernels.amr.criteria import Criteria
    from taichiflow.mesh import Region
    from taichiflow.run.build_amr import amr_refusal, criteria_of, roots_of
    checked = shipped(path)
    resolved = ResolvedCase.from_dict(checked)
    amr = checked["amr"]
    assert criteria_of(resolved.amr) == Criteria.of(amr)
    assert [Region.of(r) for r in resolved.amr.regions] == [Region.of(r) for r in amr["regions"]]
    assert roots_of(resolved) == tuple(c // amr["block_cells"] for c in checked["grid"]["cells"])
    assert amr_refusal(resolved) is None and amr_refusal(checked) is None


def test_the_adaptive_refusals_name_the_case_and_the_key():
    from taichiflow.errors import CaseError
    from taichiflow.run.build_amr import amr_refusal, roots_of
    path = ROOT / "cases" / "shock_bubble_amr.toml"
    retried = ResolvedCase.from_dict(load_case(path, ["scheme.retry={riemann='hll'}"]))
    assert amr_refusal(retried) is None  # (adaptive runs retry: tests/test_amr_retry.py)
    split = ResolvedCase.from_dict(load_case(path, ["scheme.dimensional_splitting=true"]))
    assert amr_refusal(split).startswith("[scheme] dimensional_splitting is not supported with [amr]")
    uneven = ResolvedCase.from_dict(load_case(path, ["grid.cells=[100, 16]"]))
    with pytest.raises(CaseError, match=r"shock_bubble_amr.toml: \[grid\] cells = \[100, 16\] must be multiples of "
                                        r"\[amr\] block_cells = 8"):
        roots_of(uneven)


def test_the_failure_advice_reads_the_typed_scheme():
    """The advice of a blow-up from the case's SchemeTable: its values, and a key the case
    leaves out (None) as the method's default."""
    from taichiflow.run.failure import advice
    sod = ResolvedCase.from_dict(shipped(ROOT / "cases" / "sod.toml"))
    assert advice(sod.scheme, None) == (
        "Try a lower [scheme] cfl (now 0.4), or a more diffusive scheme ([scheme] reconstruction = 'plm' with "
        "limiter = 'minmod', riemann = 'hll'), or a strong-stability-preserving integrator ([scheme] integrator = "
        "'ssprk3'; 'lsrk3' may break in a stage the positivity that a forward Euler step keeps).")
    assert advice(sod.scheme, None) == advice(shipped(ROOT / "cases" / "sod.toml")["scheme"], None)
    careful = ResolvedCase.from_dict(load_case(ROOT / "cases" / "sod.toml", [
        "scheme.cfl=0.25", "scheme.positivity_fallback=false", "scheme.integrator='ssprk3'"]))
    text = advice(careful.scheme, None)
    assert "cfl (now 0.25)" in text and "positivity_fallback = true" in text and "integrator" not in text
    shasta = ResolvedCase.from_dict(load_case(ROOT / "cases" / "sod.toml", [
        "scheme.method='shasta'", "scheme.shasta_antidiffusion=0.1"]))
    text = advice(shasta.scheme, None)
    assert "shasta_diffusion (now 0.125)" in text and "shasta_antidiffusion (now 0.1)" in text
    unset = dataclasses.replace(shasta.scheme, shasta_diffusion=None, shasta_antidiffusion=None)  # (a partial table)
    assert "shasta_diffusion (now 0.125)" in advice(unset, None) and "antidiffusion (now 0.125)" in advice(unset, None)


def test_the_model_functions_blamed_follow_the_typed_scheme():
    from types import SimpleNamespace
    from taichiflow.run.model_blame import roles_in_use
    every = SimpleNamespace(functions={r: None for r in (
        "to_conserved", "to_primitive", "flux", "sound_speed", "roe_speeds", "eigenvectors", "eigenvalues",
        "jacobians", "splitting_speeds")})
    sod = ROOT / "cases" / "sod.toml"
    plain = roles_in_use(every, ResolvedCase.from_dict(load_case(sod)).scheme)
    assert plain == ["to_conserved", "to_primitive", "flux", "sound_speed"]
    retried = ResolvedCase.from_dict(load_case(sod, ["scheme.retry={riemann='hll', wave_speeds='einfeldt'}"]))
    assert roles_in_use(every, retried.scheme)[-1] == "roe_speeds"
    split = ResolvedCase.from_dict(load_case(sod, ["scheme.method='finite_difference'", "scheme.riemann='rusanov'",
                                                   "scheme.variables='characteristic'"]))
    assert roles_in_use(every, split.scheme)[4:] == ["eigenvectors", "eigenvalues", "jacobians", "splitting_speeds"]
