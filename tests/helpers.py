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


def self_similar_window(cells: int, factor: int, x0: float, lower: float = 0.0, upper: float = 1.0) -> slice:
    """The cells of a run of a Riemann problem on `cells` cells to t / factor that hold the run
    of the same problem on cells / factor cells to t (factor a power of 2).

    The solution depends on (x - x0) / t alone, and the scheme's on the cells' states and on
    dt / dx, with dt a CFL number times dx: on the fine grid the window of 1/factor of the
    domain, x0 at the same fraction of it, steps as the coarse grid does (dx, dt and the time
    left are divided by a power of 2, which is exact in binary floating point). Outside the
    window the fine run keeps the initial states where the coarse run's waves stay off its
    outflow faces; the window then holds the coarse run bit for bit (measured: SHASTA's Sod
    and Marti & Mueller 1, Brio-Wu and Ryu-Jones 2a's shipped scheme at factor 2) or to
    rounding (Brio-Wu at factor 4: 7e-17). Where they reach the faces it differs by what
    reached them (callers say by how much). A convergence test then compiles one grid's
    kernels, not one per grid."""
    coarse = cells // factor
    start = (x0 - lower) / (upper - lower) * (cells - coarse)
    assert cells % factor == 0 and factor & (factor - 1) == 0 and start == int(start), (cells, factor, x0)
    return slice(int(start), int(start) + coarse)
