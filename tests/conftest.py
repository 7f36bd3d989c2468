"""Test options: `pytest --arch cuda` runs the suite on an NVIDIA GPU (CPU by default).

Tests marked `cuda` compare the GPU with the CPU; they are deselected (not skipped) on
machines run with the default `--arch cpu`, such as CI.

The solver tests compile their kernels without Taichi's advanced IR optimisations
(TI_ADVANCED_OPTIMIZATION=0, unless the environment sets it): on these small grids the
compile is most of a test's time, and it is a third shorter (two SHASTA and MHD tests, cold
cache, 2-core CPU: 73 s against 48 s). The same arithmetic is compiled: the regression
references and every bit-for-bit comparison pass either way. The kernel fingerprints, which
check the kernels as shipped, run in a process of their own with the optimisations on.
"""
import os

import pytest

os.environ.setdefault("TI_ADVANCED_OPTIMIZATION", "0")  # (read by ti.init, which every test's build calls)


def pytest_addoption(parser):
    parser.addoption("--arch", default="cpu", choices=["cpu", "cuda"], help="Taichi backend for the solver tests")
    parser.addoption("--spread-gpus", type=int, default=0, metavar="N",
                     help="with pytest-xdist: worker k runs on GPU k mod N (CUDA_VISIBLE_DEVICES)")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs an NVIDIA GPU; runs only with --arch cuda")
    gpu = worker_gpu(getattr(config, "workerinput", {}).get("workerid", ""), config.getoption("--spread-gpus"))
    if gpu is not None:  # (before any test starts Taichi: the CUDA backend always uses device 0)
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu


def worker_gpu(worker: str, gpus: int):
    """The GPU (as CUDA_VISIBLE_DEVICES names it) of xdist worker `worker` ("gw3") among `gpus`,
    round robin; None outside xdist or without --spread-gpus. On four H200 the CUDA suite took
    348 s with -n 32 --spread-gpus 4 (2026-11-28); with -n 15 on one it did not finish in 570 s."""
    if gpus < 1 or not worker.startswith("gw"):
        return None
    return str(int(worker[2:]) % gpus)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--arch") == "cuda":
        return
    kept = [item for item in items if "cuda" not in item.keywords]
    deselected = [item for item in items if "cuda" in item.keywords]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def arch(request):
    return request.config.getoption("--arch")
