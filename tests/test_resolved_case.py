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
