"""Test options: `pytest --arch cuda` runs the suite on an NVIDIA GPU (CPU by default).

Tests marked `cuda` compare the GPU with the CPU; they are deselected (not skipped) on
machines run with the default `--arch cpu`, such as CI.
"""
import pytest


def pytest_addoption(parser):
    parser.addoption("--arch", default="cpu", choices=["cpu", "cuda"], help="Taichi backend for the solver tests")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs an NVIDIA GPU; runs only with --arch cuda")


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
