"""Case files: every bad input names the file and the key; good input resolves fully."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from taichiflow.case import (CaseError, Choice, dump_toml, load_case, schema_entries, suggest,
                             validate_state)
from taichiflow.initial import cell_centers, initial_primitive, region_distance, state_vector
from taichiflow.model import load_model
from taichiflow.run.states import resolve_states

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

EULER = {"rho": 1, "vel": 3, "p": 1}

# The smallest valid case, section by section; tests replace or add sections.
MINIMAL = {
    "model": 'name = "euler"',
    "grid": "cells = [100]\nupper = [1.0]",
    "time": "end = 0.2",
    "initial": "background = {rho = 1.0, vel = [0.0], p = 1.0}",
}


def case_text(extra="", **sections):
    """TOML for MINIMAL with some sections replaced (None drops one), plus extra text."""
    parts = {**MINIMAL, **sections}
    return "".join(f"[{name}]\n{body}\n\n" for name, body in parts.items() if body is not None) + extra


def write(tmp_path, text, name="case.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def load_error(tmp_path, text, overrides=()):
    path = write(tmp_path, text)
    with pytest.raises(CaseError) as info:
        load_case(path, overrides)
    return str(info.value), str(path)


SPHERE = '[[initial.regions]]\nshape = "sphere"\ncenter = [0.5]\nradius = 0.1\nstate = {rho = 2.0}\n'

BAD_CASES = {
    "unknown section": (
        case_text("[gird]\ncells = [10]\n"), ["unknown section 'gird'", "did you mean 'grid'"]),
    "unknown key": (
        case_text(grid="cels = [100]\nupper = [1.0]"), ["unknown key 'grid.cels'", "did you mean 'cells'"]),
    "misspelt choice": (
        case_text(scheme='riemann = "hlcc"'), ["[scheme] riemann:", '"hlcc"', "did you mean 'hllc'"]),
    "wrong type": (
        case_text(time='end = "soon"'), ['[time] end: expected a number, got "soon"']),
    "float for integer": (
        case_text(time="end = 1.0\nmax_steps = 1.5"), ["[time] max_steps: expected an integer, got 1.5"]),
    "bool choice": (
        case_text(run='fast_math = "yes"'), ["[run] fast_math", '"auto", true, false']),
    "zero cells": (
        case_text(grid="cells = [0]\nupper = [1.0]"),
        ["[grid] cells: expected a list of 1 to 3 positive integers, got [0]"]),
    "negative cells": (
        case_text(grid="cells = [10, -4]\nupper = [1.0, 1.0]"), ["[grid] cells", "got [10, -4]"]),
    "four axes": (
        case_text(grid="cells = [1, 2, 3, 4]\nupper = [1.0]"), ["[grid] cells", "1 to 3"]),
    "upper <= lower": (
        case_text(grid="cells = [10]\nlower = [1.0]\nupper = [0.5]"),
        ["[grid] upper: must be greater than lower", "upper[0] = 0.5 <= lower[0] = 1.0"]),
    "grid vector length": (
        case_text(grid="cells = [10, 10]\nupper = [1.0]"), ["[grid] upper: expected a list of 2 numbers"]),
    "missing required key": (
        case_text(model='params = {gamma = 1.4}'), ["[model] name: missing required key"]),
    "param not a number": (
        case_text(model='name = "euler"\nparams = {gamma = "air"}'),
        ["[model] params.gamma: expected a number"]),
    "cfl out of range": (
        case_text(scheme="cfl = 1.5"), ["[scheme] cfl: out of range: allowed 0 < cfl <= 1, got 1.5"]),
    "cfl zero": (
        case_text(scheme="cfl = 0"), ["[scheme] cfl: out of range", "got 0.0"]),
    "end not positive": (
        case_text(time="end = -1"), ["[time] end: out of range: allowed end > 0, got -1.0"]),
    "diagnostics_every zero": (
        case_text(output="diagnostics_every = 0"), ["[output] diagnostics_every", "diagnostics_every >= 1"]),
    "periodic on one face": (
        case_text(boundary='x = ["periodic", "wall"]'),
        ["[boundary] x: 'periodic' must be on both faces", '["periodic", "wall"]']),
    "misspelt boundary kind": (
        case_text(boundary='x = "outlfow"'), ["[boundary] x", "did you mean 'outflow'"]),
    "inflow without state": (
        case_text(boundary='x = ["inflow", "outflow"]'),
        ["[boundary] x: face x_lower is 'inflow' but [boundary.inflow] has no x_lower state"]),
    "state for a face the grid lacks": (
        case_text(extra="[boundary.inflow]\ny_lower = {rho = 1.0, vel = [1.0], p = 1.0}\n"),
        ["[boundary] inflow.y_lower: a state is given but the grid has no y axis"]),
    "state for outflow face": (
        case_text(boundary='x = ["inflow", "wall"]', extra=(
            "[boundary.inflow]\nx_lower = {rho = 1.0, vel = [1.0], p = 1.0}\n"
            "x_upper = {rho = 1.0, vel = [1.0], p = 1.0}\n")),
        ["[boundary] inflow.x_upper: a state is given but face x_upper is 'wall', not 'inflow'"]),
    "misspelt inflow face": (
        case_text(boundary='x = "outflow"', extra="[boundary.inflow]\nx_low = {rho = 1.0}\n"),
        ["unknown key 'boundary.inflow.x_low'", "did you mean 'x_lower'"]),
    "axis beyond dimension": (
        case_text(boundary='y = "wall"'), ["[boundary] y: the grid is 1-dimensional, so it has no y axis"]),
    "region missing key": (
        case_text(extra=SPHERE.replace("radius = 0.1\n", "")),
        ["[initial] regions.0.radius: missing required key"]),
    "region extra key": (
        case_text(extra=('[[initial.regions]]\nshape = "box"\nlower = [0.1]\nupper = [0.2]\n'
                         'radius = 0.1\nstate = {rho = 2.0}\n')),
        ["unknown key 'initial.regions.0.radius'", "valid keys here: shape, state, smoothing, lower, upper"]),
    "region misspelt key": (
        case_text(extra=SPHERE.replace("radius", "radus")), ["unknown key 'initial.regions.0.radus'",
                                                             "did you mean 'radius'"]),
    "region without shape": (
        case_text(extra='[[initial.regions]]\nstate = {rho = 2.0}\n'),
        ["[initial] regions.0.shape: missing required key", '"half_space"']),
    "region unknown shape": (
        case_text(extra=SPHERE.replace('"sphere"', '"sphear"')),
        ["[initial] regions.0.shape", "did you mean 'sphere'"]),
    "region vector too long": (
        case_text(extra=SPHERE.replace("[0.5]", "[0.5, 0.5, 0.5, 0.5]")),
        ["[initial] regions.0.center: expected a list of 1 or 3 numbers"]),
    "region radius negative": (
        case_text(extra=SPHERE.replace("0.1", "-0.1")), ["[initial] regions.0.radius: out of range"]),
    "half-space normal zero": (
        case_text(extra=('[[initial.regions]]\nshape = "half_space"\npoint = [0.5]\n'
                         'normal = [0.0, 0.0, 1.0]\n'
                         'state = {rho = 2.0}\n')),
        ["[initial] regions.0.normal: must have a nonzero component along the grid's axes (x)"]),
    "box upper <= lower": (
        case_text(extra=('[[initial.regions]]\nshape = "box"\nlower = [0.5]\nupper = [0.5]\n'
                         'state = {rho = 2.0}\n')),
        ["[initial] regions.0.upper: must be greater than lower"]),
    "state value not a number": (
        case_text(initial='background = {rho = "dense", p = 1.0}'),
        ['[initial] background.rho: expected a number or a list of 1 to 3 numbers, got "dense"']),
    "background missing": (
        case_text(initial=None, extra=SPHERE), ["[initial] background: missing required key"]),
    "toml syntax error": (
        '[model]\nname = "euler"\n\n[grid\ncells = [10]\n', ["invalid TOML", "line 4"]),
}


@pytest.mark.parametrize("name", BAD_CASES)
def test_bad_case_names_file_and_key(tmp_path, name):
    text, expected = BAD_CASES[name]
    message, path = load_error(tmp_path, text)
    assert message.startswith(path + ": "), message
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_missing_file(tmp_path):
    with pytest.raises(CaseError, match=r"nope\.toml: cannot read case file"):
        load_case(tmp_path / "nope.toml")


# --- defaults and overrides ------------------------------------------------------------

def test_defaults_filled(tmp_path):
    path = write(tmp_path, case_text(), name="sod.toml")
    assert load_case(path) == {
        "_source": str(path),
        "case": {"name": "sod", "description": "", "units": {}},
        "model": {"name": "euler", "params": {}},
        "run": {"precision": "auto", "arch": "auto", "fast_math": "auto", "keep_last_good": True, "segment": [],
                "block_dim": 0, "reconstruct": "auto", "shuffle": "auto", "fuse": "auto", "skip_idle": "auto",
                "idle_tile": 16},
        "parallel": {"ranks": [], "exchange": "auto"},
        "materials": {},
        "grid": {"cells": [100], "lower": [0.0], "upper": [1.0]},
        "scheme": {"method": "finite_volume", "reconstruction": "weno5", "limiter": "mc", "theta": 1.5,
                   "variables": "primitive", "riemann": "hllc", "wave_speeds": "davis",
                   "musta_stages": 3, "force_fallback": False, "positivity_fallback": True, "density_limiter": False, "positivity_limiter": False,
                   "dimensional_splitting": False,
                   "integrator": "lsrk3", "cfl": 0.4, "retry": {}},
        "time": {"end": 0.2, "max_steps": 0},
        "boundary": {"x": ["outflow", "outflow"], "inflow": {}},
        "initial": {"background": {"rho": 1.0, "vel": [0.0, 0.0, 0.0], "p": 1.0}, "regions": [], "perturbations": [],
                    "values": "auto", "quadrature_points": 4},
        "output": {"interval": 0.0, "fields": [], "diagnostics_every": 1, "checkpoint_interval": 0.0,
                   "checkpoint_wall": 0.0},
    }


def test_types_normalised(tmp_path):
    case = load_case(write(tmp_path, case_text(
        grid="cells = [10, 20]\nupper = [2, 1]", boundary='y = "periodic"', extra=(
            '[[initial.regions]]\nshape = "cylinder"\ncenter = [1, 0]\nradius = 1\nstate = {p = 3}\n'))))
    assert case["grid"]["upper"] == [2.0, 1.0] and all(type(v) is float for v in case["grid"]["upper"])
    assert case["boundary"] == {"x": ["outflow", "outflow"], "y": ["periodic", "periodic"], "inflow": {}}
    region = case["initial"]["regions"][0]
    assert region == {"shape": "cylinder", "state": {"p": 3.0}, "smoothing": 0.0,
                      "center": [1.0, 0.0, 0.0], "axis": [0.0, 0.0, 1.0], "radius": 1.0}
    assert type(region["radius"]) is float


def test_cylinder_axis_required_in_3d(tmp_path):
    message, _ = load_error(tmp_path, case_text(
        grid="cells = [4, 4, 4]\nupper = [1.0, 1.0, 1.0]",
        extra=('[[initial.regions]]\nshape = "cylinder"\ncenter = [0.5, 0.5, 0.5]\nradius = 0.2\n'
               'state = {p = 3}\n')))
    assert "[initial] regions.0.axis: missing required key" in message


def test_set_overrides(tmp_path):
    path = write(tmp_path, case_text(extra=SPHERE))
    case = load_case(path, ["grid.cells=[800]", "initial.regions.0.radius=0.2", "scheme.riemann=hll",
                            "run.fast_math=false", "case.name=\"my run\"", "time.max_steps = 5"])
    assert case["grid"]["cells"] == [800]
    assert case["initial"]["regions"][0]["radius"] == 0.2
    assert case["scheme"]["riemann"] == "hll"  # not valid TOML, taken as a plain string
    assert case["scheme"]["cfl"] == 0.4        # the created [scheme] still gets its defaults
    assert case["run"]["fast_math"] is False
    assert case["case"]["name"] == "my run"
    assert case["time"]["max_steps"] == 5


def test_set_whole_table(tmp_path):
    case = load_case(write(tmp_path, case_text()), ["initial.background={rho = 2, vel = [1], p = 3}"])
    assert case["initial"]["background"] == {"rho": 2.0, "vel": [1.0, 0.0, 0.0], "p": 3.0}


BAD_OVERRIDES = {
    "grid.cells": "expected 'dotted.key=value'",
    "=3": "expected 'dotted.key=value'",
    "grid..cells=3": "expected 'dotted.key=value'",
    "gird.cells=[8]": "unknown section 'gird' (did you mean 'grid'?)",
    "initial.regions.3.radius=0.2": "'initial.regions' has 1 entries, so there is no index 3",
    "initial.regions.first.radius=0.2": "'initial.regions' is an array: expected an index, got 'first'",
    "time.end.x=1": "'time.end' is a value, not a table",
    "output.regions.0.radius=1": "there is no array 'output.regions' to index",
}


@pytest.mark.parametrize("override", BAD_OVERRIDES)
def test_bad_override_syntax(tmp_path, override):
    message, _ = load_error(tmp_path, case_text(extra=SPHERE), [override])
    assert message.startswith("<overrides>: "), message
    assert BAD_OVERRIDES[override] in message
    assert f"--set '{override}'" in message


def documented_set_examples() -> list[str]:
    """The --set examples in docs/cases.md's "Overrides" section, without their shell quotes."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "cases.md").read_text()
    section = text.split("## Overrides: `--set`", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return [line.split("--set ", 1)[1].strip().strip("'") for line in block.splitlines() if line.startswith("--set ")]


def test_documented_set_examples_apply_and_lists_of_values_can_be_indexed(tmp_path):
    """docs/cases.md and the code agree: every documented --set example applies, including a
    numeric part indexing a list of values (grid.cells.0: the cells along x), which the docs
    once called an error; an index past the end is still one."""
    examples = documented_set_examples()
    assert "grid.cells.0=200" in examples and "initial.background.vel.0=0.5" in examples, examples
    one_d = write(tmp_path, case_text(extra=SPHERE), name="one_d.toml")
    for example in examples:
        load_case(one_d, [example])
    two_d = write(tmp_path, case_text(grid="cells = [100, 50]\nupper = [1.0, 1.0]"), name="two_d.toml")
    case = load_case(two_d, ["grid.cells.0=200", "initial.background.vel.0=0.5"])
    assert case["grid"]["cells"] == [200, 50] and case["initial"]["background"]["vel"] == [0.5, 0.0, 0.0]
    message, _ = load_error(tmp_path, case_text(), ["grid.cells.1=5"])
    assert message == "<overrides>: 'grid.cells' has 1 entries, so there is no index 1 in --set 'grid.cells.1=5'"


def test_unknown_key_via_set(tmp_path):
    message, path = load_error(tmp_path, case_text(), ["grid.cels=[800]"])
    assert message == (f"{path}: unknown key 'grid.cels' (did you mean 'cells'?) "
                       "(from --set 'grid.cels=[800]')")


def test_bad_value_via_set(tmp_path):
    message, path = load_error(tmp_path, case_text(), ["scheme.cfl=2"])
    assert message.startswith(f"{path}: [scheme] cfl: out of range")
    assert message.endswith("(from --set 'scheme.cfl=2')")


# --- dump and reload ---------------------------------------------------------------------

RICH = case_text(
    case='name = "rich"\ndescription = "quotes \\" and \\\\ and unicode \u00e9"',
    model='name = "models/euler.py"\nparams = {gamma = 1.4, "odd key" = 2}',
    run='precision = "f64"\nfast_math = true',
    grid="cells = [32, 16]\nlower = [-1.0, 0.0]\nupper = [1.0, 0.1]",
    scheme='reconstruction = "plm"\nlimiter = "minmod"\ncfl = 0.123456789012345678',
    time="end = 1e-3\nmax_steps = 7",
    boundary='x = ["inflow", "outflow"]\ny = "periodic"',
    initial="background = {rho = 1.0, vel = [0.0, 0.0], p = 1e5}",
    output='interval = 0.1\nfields = ["rho", "p"]\ndiagnostics_every = 3',
    extra=("[boundary.inflow]\nx_lower = {rho = 1.0, vel = [3.0], p = 1.0}\n"
           '[[initial.regions]]\nshape = "half_space"\npoint = [0.0, 0.0]\nnormal = [1.0, 1.0]\n'
           "state = {rho = 0.125}\nsmoothing = 0.01\n"
           '[[initial.regions]]\nshape = "box"\nlower = [0.1, 0.02]\nupper = [0.2, 0.08]\nstate = {p = 2.0}\n'
           '[[initial.regions]]\nshape = "sphere"\ncenter = [0.0, 0.05]\nradius = 0.03\nstate = {p = 9.0}\n'
           '[[initial.regions]]\nshape = "cylinder"\ncenter = [0.5, 0.05]\nradius = 0.02\n'
           'state = {rho = 3.0}\n'))


def test_dump_round_trip(tmp_path):
    case = load_case(write(tmp_path, RICH))
    text = dump_toml(case)
    assert "_source" not in text
    assert "[[initial.regions]]" in text and "[boundary.inflow]" in text
    assert "cfl = 0.12345678901234568" in text
    without_source = {k: v for k, v in case.items() if k != "_source"}
    assert tomllib.loads(text) == without_source
    reloaded = load_case(write(tmp_path, text, name="again.toml"))  # dumped cases are valid cases
    assert {k: v for k, v in reloaded.items() if k != "_source"} == without_source


def test_dump_skips_private_keys_and_writes_floats_exactly():
    data = {"_source": "x", "a": {"_hidden": 1, "f": [0.1, 1e-300, 1e300, -0.0, 3], "b": True},
            "c": {"d": {"e": {"s": "x\ny\tz"}}}}
    text = dump_toml(data)
    assert "_hidden" not in text and "_source" not in text
    assert tomllib.loads(text) == {"a": {"f": [0.1, 1e-300, 1e300, -0.0, 3], "b": True},
                                   "c": {"d": {"e": {"s": "x\ny\tz"}}}}


# --- model-dependent state checks --------------------------------------------------------

def test_validate_state_pads_and_orders():
    state = validate_state({"p": 2, "vel": [1], "rho": 1}, EULER, "f.toml: [initial] background")
    assert list(state) == ["rho", "vel", "p"]
    assert state == {"rho": 1.0, "vel": [1.0, 0.0, 0.0], "p": 2.0}


@pytest.mark.parametrize("table, partial, expected", [
    ({"rhoo": 1.0, "vel": [0.0], "p": 1.0}, False,
     "f.toml: [initial] background: unknown variable 'rhoo' (did you mean 'rho'?); "
     "the model's primitive variables are rho, vel, p"),
    ({"rho": 1.0, "vel": [0.0]}, False,
     "f.toml: [initial] background: missing variable p; a full state needs rho, vel, p"),
    ({"rho": 1.0}, False, "missing variables vel, p"),
    ({"rho": 1.0, "vel": [0.0, 0.0, 0.0, 1.0], "p": 1.0}, False,
     "f.toml: [initial] background.vel: expected a list of 1 to 3 numbers, got [0.0, 0.0, 0.0, 1.0]"),
    ({"rho": [1.0]}, True, "f.toml: [initial] background.rho: expected a number, got [1.0]"),
    ({"vel": 1.0}, True, "background.vel: expected a list of 1 to 3 numbers, got 1.0"),
    ({"p": True}, True, "background.p: expected a number, got true"),
    ("dense", True, "background: expected a table of primitive variables (rho, vel, p)"),
])
def test_validate_state_errors(table, partial, expected):
    with pytest.raises(CaseError) as info:
        validate_state(table, EULER, "f.toml: [initial] background", partial=partial)
    assert expected in str(info.value)


def test_validate_state_partial():
    assert validate_state({"p": 3}, EULER, "here", partial=True) == {"p": 3.0}


def validate_states(case):
    """The model-dependent half of validation, as a run does it (taichiflow.run.states)."""
    initial, _, _ = resolve_states(case, load_model("euler"), {"gamma": 1.4})
    return {**case, "initial": initial}


def test_resolve_states_checks_every_state(tmp_path):
    case = load_case(write(tmp_path, RICH))
    checked = validate_states(case)
    assert checked["initial"]["regions"][0]["state"] == {"rho": 0.125}
    bad = load_case(write(tmp_path, case_text(boundary='x = "inflow"', extra=(
        "[boundary.inflow]\nx_lower = {rho = 1.0, vel = [1.0], p = 1.0}\n"
        "x_upper = {rho = 1.0, vel = [1.0]}\n"))))
    with pytest.raises(CaseError, match=re.escape(": [boundary] inflow.x_upper: missing variable p")):
        validate_states(bad)
    bad = load_case(write(tmp_path, case_text(extra=SPHERE.replace("rho =", "rh ="))))
    with pytest.raises(CaseError, match=re.escape("[initial] regions.0.state: unknown variable 'rh'")):
        validate_states(bad)


def test_suggest():
    assert suggest("hlcc", ["rusanov", "hll", "hllc"]) == " (did you mean 'hllc'?)"
    assert suggest("WENO5", ["plm", "weno5"]) == " (did you mean 'weno5'?)"
    assert suggest("zzz", ["plm", "weno5"]) == ""


# --- initial conditions -------------------------------------------------------------------

def test_cell_centers():
    x, y, z = cell_centers([4, 2], [0.0, -1.0], [1.0, 1.0])
    assert x.shape == y.shape == z.shape == (4, 2)
    np.testing.assert_allclose(x[:, 0], [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(y[0, :], [-0.5, 0.5])
    assert not z.any()


def test_sod_half_space_splits_at_the_right_cell():
    initial = {"background": {"rho": 1.0, "vel": [0.0], "p": 1.0},
               "regions": [{"shape": "half_space", "point": [0.5, 0.0, 0.0], "normal": [1.0, 0.0, 0.0],
                            "state": {"rho": 0.125, "p": 0.1}, "smoothing": 0.0}]}
    W = initial_primitive(initial, EULER, [400], [0.0], [1.0])
    assert W.shape == (400, 5) and W.dtype == np.float64
    assert (W[:200] == [1.0, 0.0, 0.0, 0.0, 1.0]).all()
    assert (W[200:] == [0.125, 0.0, 0.0, 0.0, 0.1]).all()


def test_sphere_volume_3d():
    r, n = 0.3, 64
    region = {"shape": "sphere", "center": [0.5, 0.5, 0.5], "radius": r, "state": {"rho": 2.0},
              "smoothing": 0.0}
    W = initial_primitive({"background": {"rho": 1.0, "vel": [0.0], "p": 1.0}, "regions": [region]},
                          EULER, [n, n, n], [0.0] * 3, [1.0] * 3)
    volume = np.count_nonzero(W[..., 0] == 2.0) / n ** 3
    assert volume == pytest.approx(4.0 / 3.0 * math.pi * r ** 3, rel=0.02)
    assert (W[..., 4] == 1.0).all()  # pressure kept from the background


def test_smoothing_blends_with_exact_tanh_weight():
    w = 0.02
    region = {"shape": "half_space", "point": [0.5, 0, 0], "normal": [1.0, 0, 0],
              "state": {"rho": 0.125, "p": 0.1}, "smoothing": w}
    initial = {"background": {"rho": 1.0, "vel": [0.0, 0, 0], "p": 1.0}, "regions": [region]}
    W = initial_primitive(initial, EULER, [400], [0.0], [1.0])
    rho = W[:, 0]
    near = slice(190, 210)
    assert ((rho[near] > 0.125) & (rho[near] < 1.0)).all()
    assert (np.diff(rho[near]) < 0).all()  # strictly monotone across the interface
    x = (205 + 0.5) / 400  # a chosen cell: distance -(x - 0.5) inside the region
    s = 0.5 * (1.0 - math.tanh(-(x - 0.5) / w))
    assert rho[205] == pytest.approx((1 - s) * 1.0 + s * 0.125, rel=1e-12)


def test_regions_apply_in_order_and_missing_variables_come_from_background():
    background = {"rho": 1.0, "vel": [0.0], "p": 1.0}
    big = {"shape": "box", "lower": [0.0, 0.0, 0], "upper": [1.0, 1.0, 0], "state": {"rho": 5.0, "p": 5.0},
           "smoothing": 0.0}
    small = {"shape": "cylinder", "center": [0.5, 0.5, 0], "axis": [0, 0, 1.0], "radius": 0.2,
             "state": {"rho": 7.0}, "smoothing": 0.0}
    W = initial_primitive({"background": background, "regions": [big, small]}, EULER,
                          [10, 10], [0, 0], [1, 1])
    assert W[5, 5, 0] == 7.0 and W[5, 5, 4] == 1.0  # p from the background, not from the box
    assert W[0, 0, 0] == 5.0 and W[0, 0, 4] == 5.0


def test_region_distances():
    x, y, z = np.array([0.0, 2.0]), np.array([0.0, 0.0]), np.array([0.0, 0.0])
    box = {"shape": "box", "lower": [-1.0, -1.0, 0.0], "upper": [1.0, 1.0, 0.0]}
    np.testing.assert_allclose(region_distance(box, x, y, z, dim=2), [-1.0, 1.0])
    sphere = {"shape": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.5}
    np.testing.assert_allclose(region_distance(sphere, x, y, z), [-0.5, 1.5])
    half = {"shape": "half_space", "point": [1.0, 0, 0], "normal": [2.0, 0, 0]}
    np.testing.assert_allclose(region_distance(half, x, y, z), [1.0, -1.0])
    cyl = {"shape": "cylinder", "center": [0.0, 0.0, 0.0], "axis": [0.0, 1.0, 0.0], "radius": 1.0}
    X, Y, Z = np.array([3.0]), np.array([100.0]), np.array([4.0])
    np.testing.assert_allclose(region_distance(cyl, X, Y, Z, dim=3), [4.0])


def test_state_vector():
    np.testing.assert_array_equal(state_vector({"rho": 1.0, "vel": [2.0, 3.0], "p": 4.0}, EULER),
                                  [1.0, 2.0, 3.0, 0.0, 4.0])


# --- docs can't drift ---------------------------------------------------------------------

def test_every_schema_key_and_choice_is_documented():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "cases.md").read_text()
    sections = {}
    for chunk in re.split(r"^## ", docs, flags=re.M)[1:]:
        heading = re.match(r"\[(\w+)\]", chunk)
        if heading:
            sections[heading.group(1)] = chunk
    entries = schema_entries()
    assert entries, "schema_entries found nothing"
    for path, spec in entries.items():
        section = sections.get(path[0])
        assert section is not None, f"docs/cases.md has no '## [{path[0]}]' section"
        if len(path) > 1:
            assert f"`{path[-1]}`" in section, f"`{'.'.join(path)}` is not documented under [{path[0]}]"
        if isinstance(spec, Choice):
            for option in spec.options:
                spelt = f'"{option}"' if isinstance(option, str) else str(option).lower()
                assert spelt in section, f"{spelt} (a value of {'.'.join(path)}) is not documented"


def test_docs_examples_are_valid_cases(tmp_path):
    docs = (Path(__file__).resolve().parents[1] / "docs" / "cases.md").read_text()
    examples = [block for block in re.findall(r"```toml\n(.*?)```", docs, flags=re.S) if "[model]" in block]
    assert len(examples) >= 2
    for i, text in enumerate(examples):
        case = validate_states(load_case(write(tmp_path, text, name=f"example{i}.toml")))
        grid = case["grid"]
        W = initial_primitive(case["initial"], EULER, grid["cells"], grid["lower"], grid["upper"])
        assert W.shape == tuple(grid["cells"]) + (5,)


# --- formula and raster perturbations --------------------------------------------------------

GRID_2D = "cells = [8, 4]\nupper = [2.0, 1.0]"
BACKGROUND_2D = "background = {rho = 1.0, vel = [0.0, 0.0], p = 1.0}"


def perturbation(**keys):
    """A [[initial.perturbations]] table of these keys (values as TOML text)."""
    return "[[initial.perturbations]]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())


def formula_error(tmp_path, expression):
    text = case_text(perturbation(kind='"formula"', variable='"rho"', expression=expression))
    message, path = load_error(tmp_path, text)
    assert message.startswith(f"{path}: [initial] perturbations.0.expression: ") and "\n" not in message, message
    return message


@pytest.mark.parametrize("expression, fragment", [
    ('"foo(x)"', "unknown function 'foo'; the functions are min, max, abs, sqrt"),
    ('"mx(x, 1)"', "unknown function 'mx' (did you mean 'max'?)"),
    ('"max(0, x"', "invalid syntax at column"),
    ('"x +"', "invalid syntax"),
    ('"sin + 2"', "the function 'sin' needs its arguments in parentheses"),
    ('"np.sin(x)"', "calling `np.sin` is not allowed"),
    ('"x.real"', "attribute access `x.real` is not allowed"),
    ('"x[0]"', "a subscript `x[0]` is not allowed"),
    ('"(lambda: 1)()"', "calling `lambda: 1` is not allowed"),
    ('"lambda: 1"', "a lambda `lambda: 1` is not allowed"),
    ('"__import__(\'os\')"', "unknown function '__import__'"),
    ('"x if x > 0 else 0"', "if/else `x if x > 0 else 0` is not allowed"),
    ('"2 ^ x"', "the operator `2 ^ x` is not allowed (use ** for powers)"),
    ('"sqrt(x, 2)"', "sqrt() takes 1 argument, got 2"),
    ('"atan2(x)"', "atan2() takes 2 arguments, got 1"),
    ('"\\"text\\""', "the constant `'text'` is not allowed"),
])
def test_formula_errors_name_the_key_and_what_is_not_allowed(tmp_path, expression, fragment):
    assert fragment in formula_error(tmp_path, expression)


def test_formula_keys_resolve(tmp_path):
    case = load_case(write(tmp_path, case_text(perturbation(kind='"formula"', variable='"rho"',
                                                            expression='"1 + max(0, 0.2 - 0.05*(x - 10)**2)"'))))
    assert case["initial"]["perturbations"] == [{"kind": "formula", "variable": "rho", "operation": "set",
                                                  "expression": "1 + max(0, 0.2 - 0.05*(x - 10)**2)"}]
    message, _ = load_error(tmp_path, case_text(perturbation(kind='"formula"', variable='"rho"', expression='"x"',
                                                             operation='"mul"')))
    assert '[initial] perturbations.0.operation: expected one of "set", "add", got "mul"' in message


def raster_case(tmp_path, values, name="bed.npy", extent=None, grid=GRID_2D, **keys):
    """A 2D case reading `values` (saved as `name` in tmp_path/data) through a relative path."""
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / "data" / name
    if name.endswith(".npz"):
        np.savez(path, values=values, **({} if extent is None else {"extent": np.asarray(extent)}))
        extent = None
    elif values is not None:
        np.save(path, values)
    keys = {"kind": '"raster"', "variable": '"p"', "file": f'"data/{name}"', **keys}
    if extent is not None:
        keys["extent"] = str(list(extent))
    background = BACKGROUND_2D if grid == GRID_2D else MINIMAL["initial"]
    return case_text(perturbation(**keys), grid=grid, initial=background)


def raster_error(tmp_path, text, key):
    message, path = load_error(tmp_path, text)
    assert message.startswith(f"{path}: [initial] perturbations.0.{key}: ") and "\n" not in message, message
    return message


def test_raster_path_is_relative_to_the_case_and_resolved_absolute(tmp_path, monkeypatch):
    """Read from the case file's folder whatever the current folder is; the resolved case keeps
    the absolute path (so the saved case.toml finds it), and dumping and loading it again gives
    the same case; an .npz file's extent needs no key."""
    monkeypatch.chdir(tmp_path.parent)
    text = raster_case(tmp_path, np.ones((3, 2)), name="bed.npz", extent=[0.0, 2.0, 0.0, 1.0], operation='"add"')
    case = load_case(write(tmp_path, text))
    p = case["initial"]["perturbations"][0]
    assert p == {"kind": "raster", "variable": "p", "file": str((tmp_path / "data" / "bed.npz").resolve()),
                 "operation": "add"}
    again = load_case(write(tmp_path / "data", dump_toml(case), name="again.toml"))
    assert {**again, "_source": None} == {**case, "_source": None}
    text = raster_case(tmp_path, np.ones((3, 2)), extent=[0.0, 2.0, -1.0, 1.5])
    assert load_case(write(tmp_path, text))["initial"]["perturbations"][0]["extent"] == [0.0, 2.0, -1.0, 1.5]


def test_raster_errors_name_the_key(tmp_path):
    assert "no file 'data/none.npy' in the case file's folder" in raster_error(
        tmp_path, raster_case(tmp_path, None, name="none.npy", extent=[0, 1, 0, 1]), "file")
    assert "expected a .npy or .npz file, got 'data/bed.csv'" in raster_error(
        tmp_path, raster_case(tmp_path, None, name="bed.csv", extent=[0, 1, 0, 1]), "file")
    assert "bed.npy holds an array of shape (2, 2, 2); a 2D grid needs a 2D array" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((2, 2, 2)), extent=[0, 1, 0, 1]), "file")
    assert "bed.npy holds an array of shape (1, 5); a 2D grid needs a 2D array" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((1, 5)), extent=[0, 1, 0, 1]), "file")
    assert "a 1D grid needs a 1D array" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((3, 3)), extent=[0, 1], grid=MINIMAL["grid"]), "file")
    nan = np.ones((4, 3))
    nan[2, 1] = np.nan
    assert "bed.npy has a value that is NaN or infinite, the first at index (2, 1)" in raster_error(
        tmp_path, raster_case(tmp_path, nan, extent=[0, 1, 0, 1]), "file")
    assert "must increase along each axis, got y_min = 1.0 >= y_max = 1.0" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((3, 3)), extent=[0, 1, 1, 1]), "extent")
    assert "expected [x_min, x_max, y_min, y_max] (4 numbers), got [0, 1]" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((3, 3)), extent=[0, 1]), "extent")
    assert "missing: bed.npy holds no extent" in raster_error(
        tmp_path, raster_case(tmp_path, np.ones((3, 3))), "extent")
    assert "the 'extent' array in bed.npz: must increase along each axis, got x_min = 2.0 >= x_max = 0.0" in \
        raster_error(tmp_path, raster_case(tmp_path, np.ones((3, 3)), name="bed.npz", extent=[2, 0, 0, 1]), "file")
    (tmp_path / "data" / "bad.npy").write_text("not numpy")
    assert "cannot read" in raster_error(
        tmp_path, raster_case(tmp_path, None, name="bad.npy", extent=[0, 1, 0, 1]), "file")
