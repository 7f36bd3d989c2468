"""Where a case's model file is found, and that a run's saved case.toml repeats the run from
any folder (issue 20, item 8)."""
from pathlib import Path

import pytest

from helpers import CASES
from taichiflow.case import load_case
from taichiflow.cli import main
from taichiflow.errors import ModelError
from taichiflow.run.build import load_case_model
from test_models import ADVECTION

CASE = """
[model]
name = "{model}"
params = {{ a = 1.0 }}
[run]
arch = "cpu"
precision = "f64"
[grid]
cells = [16]
upper = [1.0]
[scheme]
reconstruction = "first_order"
riemann = "rusanov"
[time]
end = 0.25
[boundary]
x = "periodic"
[initial]
background = {{ q = 1.0 }}
[[initial.perturbations]]
kind = "sine"
variable = "q"
amplitude = 0.5
wavenumber = [6.283185307179586]
"""


def study(tmp_path, model_at: str, name: str) -> Path:
    """A case file in tmp_path/study/ naming its model `name`; the model file at study/model_at."""
    folder = tmp_path / "study"
    (folder / model_at).parent.mkdir(parents=True, exist_ok=True)
    (folder / model_at).write_text(ADVECTION)
    path = folder / "case.toml"
    path.write_text(CASE.format(model=name))
    return path


def elsewhere(tmp_path, monkeypatch, name="elsewhere") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("model_at,name", [("advection.py", "advection.py"),
                                           ("models/advection.py", "models/advection.py"),
                                           ("../shared/advection.py", "../shared/advection.py")])
def test_relative_model_path_resolves_against_the_case_file(tmp_path, monkeypatch, model_at, name):
    case_file = study(tmp_path, model_at, name)
    elsewhere(tmp_path, monkeypatch)
    case = load_case(case_file)
    model = load_case_model(case)
    expected = (case_file.parent / model_at).resolve()
    assert Path(model.source_file).resolve() == expected
    assert case["model"]["name"] == str(expected)      # what the output's case.toml records


def test_relative_model_path_falls_back_to_the_current_folder(tmp_path, monkeypatch):
    """A path that is not beside the case file is looked for from the current folder, as
    before (e.g. one given with --set on the command line)."""
    case_file = study(tmp_path, "unused.py", "advection.py")
    (case_file.parent / "advection.py").unlink(missing_ok=True)
    here = elsewhere(tmp_path, monkeypatch)
    (here / "advection.py").write_text(ADVECTION)
    model = load_case_model(load_case(case_file))
    assert Path(model.source_file).resolve() == (here / "advection.py").resolve()


def test_missing_model_path_names_both_places_looked_in(tmp_path, monkeypatch):
    case_file = study(tmp_path, "unused.py", "nowhere.py")
    here = elsewhere(tmp_path, monkeypatch)
    with pytest.raises(ModelError) as info:
        load_case_model(load_case(case_file))
    message = str(info.value)
    assert message.startswith(f"{case_file}: [model] name: model file 'nowhere.py' not found"), message
    assert str(case_file.parent) in message and str(here) in message, message


def _final_state(out: Path) -> str:
    return (out / "diagnostics.csv").read_text().splitlines()[-1]


def test_saved_case_repeats_the_run_from_any_folder(tmp_path, monkeypatch):
    """Run from the case's own folder (as a user would), then re-run the saved out/case.toml
    from another folder: the model path it records still finds the same file."""
    case_file = study(tmp_path, "advection.py", "advection.py")
    monkeypatch.chdir(case_file.parent)
    first = tmp_path / "study" / "out" / "x"
    assert main(["run", "case.toml", "--out", str(first), "--quiet"]) == 0
    elsewhere(tmp_path, monkeypatch)
    again = tmp_path / "again"
    assert main(["run", str(first / "case.toml"), "--out", str(again), "--quiet"]) == 0
    assert _final_state(again) == _final_state(first)
    saved = load_case(first / "case.toml")
    assert saved["model"]["name"] == str((case_file.parent / "advection.py").resolve())


def test_saved_case_of_a_named_model_records_its_file(tmp_path, monkeypatch):
    """A model given by name ("euler") is recorded as the file that ran, so a folder with
    another models/euler.py cannot change what re-running the saved case does."""
    elsewhere(tmp_path, monkeypatch)
    out = tmp_path / "sod"
    assert main(["run", str(CASES / "sod.toml"), "--out", str(out), "--quiet", "--arch", "cpu",
                 "--set", "grid.cells=[16]", "--set", "time.end=0.01"]) == 0
    recorded = load_case(out / "case.toml")["model"]["name"]
    assert recorded == str((CASES.parent / "models" / "euler.py").resolve())
