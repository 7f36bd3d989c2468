"""An adaptive run's failed step says what a uniform run's does (issue 43): the bad cell's
variable, then the model function at fault with the state it got (run/model_blame.py) or the
scheme's advice (run/failure.py's explain, through run/adaptive_failure.py)."""
import re

import pytest

from helpers import ROOT, case_from_text, precise
from taichiflow.cli import main
from taichiflow.errors import SimulationError
from taichiflow.run.adaptive import AdaptiveRun
from test_model_failures import NAN_ABOVE_1_5, euler_with_sound_speed

STREAMS_2D = """
[case]
name = "streams_amr"
[model]
name = "MODEL"
params = { gamma = 1.4 }
[run]
arch = "cpu"
precision = "f64"
[grid]
cells = [32, 8]
upper = [1.0, 0.25]
[amr]
block_cells = 8
max_level = 1
[scheme]
reconstruction = "plm"
riemann = "RIEMANN"
integrator = "ssprk2"
[time]
end = 0.2
[boundary]
x = "outflow"
y = "periodic"
[initial]
background = { rho = 1.0, vel = [1.0, 0.0, 0.0], p = 1.0 }
[[initial.regions]]
shape = "half_space"
point = [0.5, 0.0]
normal = [1.0, 0.0]
state = { rho = 1.0, vel = [-1.0, 0.0, 0.0], p = 1.0 }
[output]
interval = 0.1
"""


@pytest.mark.parametrize("riemann", ["hllc", "hll"])
def test_a_nan_signal_speed_names_the_model_function(tmp_path, capsys, riemann):
    """Two streams meet: where rho passes 1.5 the model's sound speed is NaN; HLLC drops it in
    its min/max, so only the check's test of the signal speeds (kernels/amr/cells.py) stops it."""
    model = euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler")
    case = tmp_path / "streams.toml"
    case.write_text(STREAMS_2D.replace("MODEL", str(model)).replace("RIEMANN", riemann))
    assert main(["run", str(case), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"left an inadmissible state in the block at level \d, \(\d+, \d+\), cell \(\d+, \d+\); the "
                     r"state before it is kept: .* at cell \(\d+, \d+\) of level \d's grid\. The model's "
                     r"sound_speed\(\) \(.*nan_euler\.py\) returned nan for the finite, admissible state rho = 1\.5",
                     err), err
    assert "Try a lower" not in err


def test_a_blow_up_names_the_variable_and_advises_the_scheme(tmp_path):
    """Euler with a source that drains the energy from t = 0.02 on (no model function returns
    NaN from a finite state): the variable, then the scheme's advice, as a uniform run says."""
    (tmp_path / "draining.py").write_text((ROOT / "models" / "euler.py").read_text() + """

@model.source
def source(U, W, x, t):
    return model.U(rho=0.0, mom=ti.Vector([0.0, 0.0, 0.0]), E=-1.0e4 * ti.cast(t > 0.02, ti.f64))
""")
    text = STREAMS_2D.replace("MODEL", "draining.py").replace("RIEMANN", "hllc")
    run = AdaptiveRun(precise(case_from_text(tmp_path, text)))
    with pytest.raises(SimulationError) as failure:
        run.advance(0.1)
    said = str(failure.value)
    assert re.search(r"; the state before it is kept: p = -[\d.e+-]+ \(must be > 0\) at cell \(\d+, \d+\) of level "
                     r"\d's grid\. Try a lower \[scheme\] cfl \(now 0\.4\)", said), said
    assert run.state_good and run.solver.check_state()[1] is None


def test_an_initial_state_with_a_nan_signal_speed_names_the_function(tmp_path):
    """It said 'the initial state is inadmissible in block Block(level=1, ...) at cell (7, 7)'."""
    model = euler_with_sound_speed(tmp_path, NAN_ABOVE_1_5, "nan_euler")
    text = STREAMS_2D.replace("MODEL", str(model)).replace("RIEMANN", "hllc").replace(
        "rho = 1.0, vel = [-1.0", "rho = 2.0, vel = [-1.0")
    with pytest.raises(SimulationError) as failure:
        AdaptiveRun(precise(case_from_text(tmp_path, text)))
    said = str(failure.value)
    assert re.match(r"inadmissible initial state at cell \(\d+, \d+\) of level 1's grid \(the block at level 1, "
                    r"\(\d+, \d+\), cell \(\d+, \d+\)\): a signal speed is not finite \(the model's sound_speed\(\) "
                    r"returned nan\)\. The model's sound_speed\(\) .* returned nan for the finite, admissible state "
                    r"rho = 2, vel = \[-1, 0, 0\], p = 1, gamma = 1\.4", said), said
