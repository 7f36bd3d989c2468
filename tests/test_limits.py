"""Runs that cannot fit, or would flood their folder, end with one line naming the numbers
before anything is allocated (issue 8, item 6)."""
import pytest

from helpers import CASES, precise
from taichiflow.case import CaseError, load_case
from taichiflow.cli import _seconds
from taichiflow.run import Simulation
from taichiflow.run import limits


def test_a_grid_past_32_bit_kernel_ranges_is_refused():
    case = precise(load_case(CASES / "sedov3d.toml", ["grid.cells=[1300, 1300, 1300]"]))
    with pytest.raises(CaseError, match=r"2,197,000,000 cells.*32-bit"):
        Simulation(case)


def test_a_grid_larger_than_the_memory_is_refused_with_the_numbers(monkeypatch):
    monkeypatch.setattr(limits, "available_host_memory", lambda: 8 * 10**9)
    case = precise(load_case(CASES / "sedov3d.toml", ["grid.cells=[400, 400, 400]"]))
    with pytest.raises(CaseError, match=r"need about 14.5 GB of memory \(226 bytes per cell, f64\); 8 GB is "
                                        r"available"):
        Simulation(case)
    device, host = limits.memory_needed(Simulation(precise(load_case(CASES / "sod.toml"))).plan, 5, 5, 5)
    # Sod: 400 cells, WENO5 (3 ghost layers), U0 kept: (3 * 5 * 400 + 5 * 406) f64 values; a snapshot of 10
    assert (device, host) == (8 * (3 * 5 * 400 + 5 * 406), 8 * 400 * 10)


def test_too_many_snapshots_are_refused():
    case = precise(load_case(CASES / "sod.toml", ["output.interval=1e-6"]))
    with pytest.raises(CaseError, match=r"200,000 snapshots.*at most 10,000.*at least 2e-05"):
        Simulation(case)


def test_wall_time_fields_are_checked():
    assert _seconds("01:30:00") == 5400 and _seconds("90") == 90 and _seconds("2:30") == 150
    assert _seconds("1:02:03.5") == 3723.5 and _seconds(None) == 0.0
    for bad in ("00:99:00", "1:2:3:4", "00:10:60", "abc", "1:2", "10:5", ""):  # (1:2 is a typo, not 62 s)
        with pytest.raises(ValueError, match="--max-wall-time.*two digits"):
            _seconds(bad)
    for zero in ("00:00:00", "0", "0:00"):  # a limit that stops at once is not "no limit"
        with pytest.raises(ValueError, match="limit of zero"):
            _seconds(zero)
