"""Shared test helpers: build and run cases in f64 with fast-math off."""
from pathlib import Path

import numpy as np

from taichiflow.case import load_case
from taichiflow.run import Simulation

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "cases"


def case_from_text(tmp_path, text: str, overrides=(), name="case.toml"):
    path = Path(tmp_path) / name
    path.write_text(text)
    return load_case(path, list(overrides))


def precise(case: dict, arch: str = "cpu", precision: str = "f64") -> dict:
    """Pin the backend and precision of a loaded case; fast-math off for tight comparisons."""
    case["run"].update(arch=arch, precision=precision, fast_math=False)
    return case


def simulate(case: dict, arch: str = "cpu", precision: str = "f64", until=None, max_steps=0) -> Simulation:
    sim = Simulation(precise(case, arch, precision))
    sim.advance(case["time"]["end"] if until is None else until, max_steps=max_steps)
    return sim


def l1(a, b, dx) -> float:
    return float(np.sum(np.abs(np.asarray(a) - np.asarray(b))) * dx)
