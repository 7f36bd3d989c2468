"""The device bytes of an adaptive run's pool: what a block slot costs, known before the pool
is allocated (kernels/amr/solver.py: slot_bytes), and the pool's first size fitted to the
device's free memory (run/build_amr.py: first_capacity)."""
import re

import pytest

from amr_cases import BLOB
from helpers import CASES, case_from_text, precise
from taichiflow.kernels.amr.solver import slot_bytes
from taichiflow.run import device_memory
from taichiflow.run.adaptive import AdaptiveRun
from taichiflow.run.build_amr import build_pack
from test_amr import MODEL_CASES, PERIODIC_2D
from test_amr_restart import BLAST, run_case, same_state, state, table

SEDOV_3D = CASES / "sedov3d_amr.toml"


def field_bytes(case: dict, capacity: int) -> tuple:
    """(Taichi's bytes of every field, the solver) of the case's pool built with `capacity` slots."""
    solver = build_pack(case, initial=False, capacity=capacity).solver
    return device_memory.taichi_field_bytes(), solver


@pytest.mark.parametrize("name", ["blob_f64", "blob_f32", "mhd", "shallow_water", "sedov_3d"])
def test_slot_bytes_are_what_taichi_allocates_for_each_slot(tmp_path, arch, name):
    """Two pools of one case, 64 slots apart: their fields differ by 64 times slot_bytes, to the
    byte (a field added to the pool or to the solver's per-slot passes, and not to slot_bytes,
    fails here). Models with the most per-slot variety: GLM's global (one more check key),
    shallow water's balance values (a wider face register), 3D, both precisions."""
    if name == "sedov_3d":
        case = precise(case_from_text(tmp_path, SEDOV_3D.read_text()), arch)
    elif name.startswith("blob"):
        case = precise(case_from_text(tmp_path, BLOB), arch, name[-3:])
    else:
        case = precise(case_from_text(tmp_path, MODEL_CASES[name][0] + PERIODIC_2D), arch)
    smaller, _ = field_bytes(case, 64)
    larger, solver = field_bytes(case, 128)
    assert larger - smaller == 64 * slot_bytes(solver.phys, solver.plan, solver.dim, solver.N)


def test_the_first_pool_is_fitted_to_the_free_memory(tmp_path, arch, monkeypatch):
    """A device (device_memory.available, replaced) whose free memory holds 300 slots beside its
    margin: the blast's pool starts with 300 instead of the default 1024 (64 a root block; its log says so) and
    ends where a run with a 512-slot pool ends, bit for bit; one that holds fewer slots than the
    root blocks stops before the first step with the numbers and the key."""
    ample = run_case(tmp_path, ["amr.capacity=512"], text=BLAST, arch=arch)
    ample.run(tmp_path / "ample")
    expected = state(ample)
    per_slot = slot_bytes(ample.solver.phys, ample.solver.plan, ample.solver.dim, ample.solver.N)
    device = device_memory.Memory(0, 4 * device_memory.GIB, "a test device")
    monkeypatch.setattr(device_memory, "available", lambda arch: device._replace(free=device.margin + 300 * per_slot))
    fitted = run_case(tmp_path, text=BLAST, arch=arch)
    assert fitted.solver.pool.capacity == 300
    lines = []
    fitted.run(tmp_path / "fitted", log=lines.append)
    assert not fitted.grown and same_state(expected, state(fitted))
    assert table(tmp_path / "fitted" / "diagnostics.csv") == table(tmp_path / "ample" / "diagnostics.csv")
    log = "\n".join(lines)
    assert re.search(rf"the first pool: 1024 block slots would not fit, a test device holds at most 300 slots: "
                     rf".* free, less a margin of .*, at {per_slot:,} bytes a slot", log), log
    holds = device.margin + 10 * per_slot + per_slot // 2  # (what the pool takes of it is not free)
    monkeypatch.setattr(device_memory, "available",
                        lambda arch: device._replace(free=holds - device_memory.taichi_field_bytes()))
    with pytest.raises(Exception, match=r"the forest needs 16 block slots and the pool has 10, but a test device "
                                        r"holds at most 10 slots: .* raise \[amr\] capacity"):
        AdaptiveRun(precise(case_from_text(tmp_path, BLAST), arch))
