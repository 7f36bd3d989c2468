"""taichiflow.Case (docs/api.md): the command line's checks and messages, overrides as
`--set` strings or dicts, immutability. No Taichi run here: a Case is checked in
milliseconds."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import taichiflow
from helpers import CASES, ROOT
from taichiflow import Case, CaseError
from taichiflow.api.case import resolve
from taichiflow.case import load_case

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

SMALL = {
    "model": {"name": "euler"},
    "grid": {"cells": [50], "upper": [1.0]},
    "time": {"end": 0.1},
    "initial": {"background": {"rho": 1.0, "vel": [0.0], "p": 1.0}},
}


def test_a_case_from_a_file_is_what_the_command_line_loads():
    case = Case.from_file(CASES / "sod.toml", ["grid.cells=[64]", "scheme.riemann=hll"])
    assert case.to_dict() == load_case(CASES / "sod.toml", ["grid.cells=[64]", "scheme.riemann=hll"])
    assert case.name == "sod" and case.source == str(CASES / "sod.toml")
    assert case.overrides == ("grid.cells=[64]", "scheme.riemann=hll")


@pytest.mark.parametrize("path", sorted(CASES.glob("*.toml")), ids=lambda p: p.stem)
def test_the_api_checks_every_shipped_case_as_load_case_does(path):
    """api/case.py re-runs load_case's checks on a document already read (for with_ and
    from_dict); this keeps the two from drifting apart."""
    raw = tomllib.loads(path.read_text())
    assert resolve(raw, str(path), ("time.end=0.5",)) == load_case(path, ["time.end=0.5"])


def test_dict_overrides_read_like_set_strings():
    by_strings = Case.from_file(CASES / "sod.toml",
                                ["grid.cells=[80]", "scheme.cfl=0.3", "initial.regions.0.state.p=0.2"])
    by_dict = Case.from_file(CASES / "sod.toml", {"grid.cells": np.array([80]), "scheme": {"cfl": np.float64(0.3)},
                                                  "initial.regions.0.state": {"p": 0.2}})
    assert by_dict == by_strings
    assert by_dict.overrides == ("grid.cells=[80]", "scheme.cfl=0.3", "initial.regions.0.state.p=0.2")


def test_with_gives_a_new_checked_case_and_leaves_the_old_one():
    case = Case.from_file(CASES / "sod.toml")
    finer = case.with_(scheme={"cfl": 0.3}, grid={"cells": [200]})
    assert finer.to_dict()["scheme"]["cfl"] == 0.3 and finer.to_dict()["grid"]["cells"] == [200]
    assert case.to_dict()["scheme"]["cfl"] == 0.4 and case.to_dict()["grid"]["cells"] == [400]
    assert case.with_("grid.cells=[200]", scheme={"cfl": 0.3}) == finer
    two_d = Case.from_dict(SMALL).with_(grid={"cells": [20, 10], "upper": [1.0, 0.5]},
                                        initial={"background": {"vel": [0.0, 0.0]}})
    assert two_d.to_dict()["grid"]["lower"] == [0.0, 0.0]  # (a default that follows the changed grid)


def test_a_case_cannot_be_changed_in_place():
    case = Case.from_dict(SMALL)
    with pytest.raises(AttributeError, match="with_"):
        case.name = "other"
    copy = case.to_dict()
    copy["grid"]["cells"][0] = 7
    assert case.to_dict()["grid"]["cells"] == [50]
    again = pickle.loads(pickle.dumps(case.with_(scheme={"cfl": 0.3})))
    assert again == case.with_(scheme={"cfl": 0.3}) and again.overrides == ("scheme.cfl=0.3",)


def test_mistakes_are_the_command_lines_messages():
    case = Case.from_file(CASES / "sod.toml")
    with pytest.raises(CaseError) as err:
        case.with_(grid={"cels": [10]})
    assert str(err.value) == (f"{CASES / 'sod.toml'}: unknown key 'grid.cels' (did you mean 'cells'?) "
                              f"(from --set 'grid.cels=[10]')")
    with pytest.raises(CaseError, match=r"<overrides>: unknown section 'gird' \(did you mean 'grid'\?\)"):
        case.with_("gird.cells=[800]")
    with pytest.raises(CaseError, match=r"\[scheme\] riemann: expected one of .*got \"hlcc\" \(did you mean "
                                        r"'hllc'\?\)"):
        case.with_(scheme={"riemann": "hlcc"})
    with pytest.raises(CaseError, match="<overrides>: scheme.cfl: cannot write a NoneType as TOML"):
        case.with_(scheme={"cfl": None})
    with pytest.raises(CaseError, match="cannot read case file"):
        Case.from_file(CASES / "no_such_case.toml")


def test_a_case_from_a_dict():
    case = Case.from_dict(SMALL)
    assert case.name == "case" and case.source == "<case>"
    assert case.to_dict()["scheme"]["reconstruction"] == "weno5"  # (defaults filled)
    assert Case.from_dict(case.to_dict()) == case  # (a resolved case checks as it is)
    with pytest.raises(CaseError, match=r"^<case>: \[grid\] cells: expected a list of 1 to 3 positive integers"):
        Case.from_dict({**SMALL, "grid": {"cells": [0], "upper": [1.0]}})
    named = Case.from_dict({**SMALL, "case": {"name": "blast"}}, source=ROOT / "cases" / "x.toml")
    assert named.name == "blast" and named.to_dict()["_source"] == str(ROOT / "cases" / "x.toml")


def test_import_taichiflow_stays_light_until_the_api_is_used():
    check = ("import sys, taichiflow; assert 'taichiflow.api' not in sys.modules; "
             "from taichiflow import Simulation, Case, STOP, Stop; assert 'taichiflow.api' in sys.modules")
    subprocess.run([sys.executable, "-c", check], check=True, cwd=ROOT)
    assert taichiflow.Case is Case and "Simulation" in dir(taichiflow)
