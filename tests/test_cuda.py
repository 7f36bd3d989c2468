"""The same Sod run on CUDA agrees with the CPU run (f64, fast-math off).

Marked `cuda`: collected only with `pytest --arch cuda` on a machine with an NVIDIA GPU.
"""
import numpy as np
import pytest

from helpers import CASES, simulate
from taichiflow.case import load_case


@pytest.mark.cuda
def test_sod_cuda_matches_cpu():
    results = {}
    for arch in ("cpu", "cuda"):
        sim = simulate(load_case(CASES / "sod.toml"), arch)
        assert sim.arch == arch
        results[arch] = (sim.step_count, {k: v.copy() for k, v in sim.fields().items()})
    assert results["cpu"][0] == results["cuda"][0]
    for name, cpu in results["cpu"][1].items():
        difference = np.abs(results["cuda"][1][name] - cpu).max()
        assert difference <= 1e-10, (name, difference)
