"""What a device has free (run/device_memory.py: nvidia-smi's and /proc/meminfo's text, the
cgroup's limit, the margin, the bytes of Taichi's fields) and how far a full adaptive pool
grows on it (run/build_amr.py: grown_capacity, memory_fit). The runs that stop and resume are
in tests/test_amr_restart.py."""
import subprocess

import pytest
import taichi as ti

from taichiflow.run import build_amr, device_memory
from taichiflow.run.build_amr import Fit, PoolBeyondMemory, grown_capacity, memory_fit
from taichiflow.run.device_memory import GIB, MIB, Memory

MEMINFO = """MemTotal:       16318480 kB
MemFree:         1203324 kB
MemAvailable:    9876544 kB
Buffers:          402120 kB
Cached:          8123880 kB
"""


def test_nvidia_smi_answers_are_read_in_mebibytes():
    assert device_memory.parse_nvidia_smi("80614, 81559\n") == (80614 * MIB, 81559 * MIB)
    assert device_memory.parse_nvidia_smi("\n 1024 , 2048 \n512, 4096\n") == (1024 * MIB, 2048 * MIB)  # (the first)
    for unknown in ("", "[N/A], [N/A]", "No devices were found", "80614", "80614, 81559, 3"):
        assert device_memory.parse_nvidia_smi(unknown) is None


def test_nvidia_smi_is_asked_for_the_visible_device(monkeypatch):
    asked = []

    def smi(command, **kwargs):
        asked.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="1000, 2000\n", stderr="")

    monkeypatch.setattr(subprocess, "run", smi)
    monkeypatch.setattr(device_memory, "_driver_memory", lambda: None)  # (no current CUDA context)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5e2f,GPU-77aa")
    assert device_memory.available("cuda") == Memory(1000 * MIB, 2000 * MIB, "GPU GPU-5e2f (nvidia-smi)")
    assert asked[0][-2:] == ["-i", "GPU-5e2f"] and "--query-gpu=memory.free,memory.total" in asked[0]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert device_memory.visible_device() == "0"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 9, "", "failed"))
    assert device_memory.cuda_memory() is None


def test_host_memory_from_meminfo_and_the_cgroup(tmp_path):
    assert device_memory.parse_meminfo(MEMINFO) == (9876544 * 1024, 16318480 * 1024)
    assert device_memory.parse_meminfo(MEMINFO.replace("MemAvailable", "MemSomething")) is None
    meminfo, cgroup = tmp_path / "meminfo", tmp_path / "cgroup"
    meminfo.write_text(MEMINFO)
    cgroup.mkdir()
    assert device_memory.host_memory(meminfo, cgroup) == Memory(9876544 * 1024, 16318480 * 1024, "host memory")
    (cgroup / "memory.max").write_text("max\n")
    (cgroup / "memory.current").write_text(f"{GIB}\n")
    assert device_memory.host_memory(meminfo, cgroup).free == 9876544 * 1024  # (no limit)
    (cgroup / "memory.max").write_text(f"{4 * GIB}\n")
    assert device_memory.host_memory(meminfo, cgroup) == Memory(3 * GIB, 4 * GIB, "host memory")
    (cgroup / "memory.max").unlink()
    (cgroup / "memory").mkdir()
    (cgroup / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # (v1: no limit)
    (cgroup / "memory" / "memory.usage_in_bytes").write_text("0\n")
    assert device_memory.cgroup_room(cgroup) is None
    assert device_memory.host_memory(tmp_path / "absent", cgroup) is None


def test_the_margin_is_a_tenth_of_the_total_at_least_1_gib_at_most_half():
    assert Memory(0, 80 * GIB, "").margin == 8 * GIB
    assert Memory(0, 4 * GIB, "").margin == GIB
    assert Memory(0, GIB, "").margin == GIB // 2


def test_taichi_field_bytes_are_the_fields_as_laid_out():
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    a = ti.field(ti.f64, shape=(100, 3))
    b = ti.Vector.field(4, ti.f32, shape=50)
    builder = ti.FieldsBuilder()
    builder.dense(ti.i, 1000).place(ti.field(ti.i64))
    builder.finalize()
    assert device_memory.taichi_field_bytes() == 100 * 3 * 8 + 50 * 4 * 4 + 1000 * 8  # (the default tree placed too)
    assert a.shape and b.shape


def fit(slots: int, **given) -> Fit:
    numbers = dict(free=GIB, pool=10**6, staged=0, margin=GIB // 2, per_slot=10**4, sharing=1, where="a device")
    return Fit(slots, **{**numbers, **given})


@pytest.mark.parametrize("slots,grown,said", [
    (1000, 200, None),            # twice the pool of 100
    (150, 150, "a pool of 200"),  # what fits, at least the 130 needed
    (130, 130, "a pool of 200"),
])
def test_a_pool_grows_twice_as_large_or_to_what_fits(monkeypatch, slots, grown, said):
    notes = []
    monkeypatch.setattr(build_amr, "memory_fit", lambda capacity, staged: fit(slots))
    assert grown_capacity(100, 130, 0, notes.append, "step 8") == grown
    assert notes == ([] if said is None else [f"step 8: {said} block slots would not fit, {fit(slots).describe()}"])


def test_a_pool_beyond_the_memory_stops_with_the_numbers(monkeypatch):
    monkeypatch.setattr(build_amr, "memory_fit", lambda capacity, staged: fit(120, staged=2 * 10**5))
    with pytest.raises(PoolBeyondMemory) as stop:
        grown_capacity(100, 130, 2 * 10**5, lambda line: None, "step 8")
    assert str(stop.value) == (
        "the forest needs 130 block slots and the pool has 100, but a device holds at most 120 slots: 1.07 GB free "
        "and the pool's 1 MB, less a margin of 537 MB and the 200 kB the move stages, at 10,000 bytes a slot: raise "
        "[amr] capacity to 130 or more where 100 kB more is free (a larger device)")
    assert (stop.value.needed, stop.value.capacity, stop.value.resume_capacity) == (130, 100, 162)
    monkeypatch.setattr(build_amr, "memory_fit", lambda capacity, staged: None)
    notes = []
    assert grown_capacity(100, 130, 0, notes.append, "step 8") == 200 and notes == [build_amr.UNKNOWN_MEMORY]


def test_the_most_constrained_rank_decides(monkeypatch):
    """Three ranks, two sharing a GPU: each of those takes half of what it has free; a rank
    whose memory is unknown does not bound the others."""
    monkeypatch.setattr(ti.lang.impl, "current_cfg", lambda: type("Config", (), {"arch": ti.cuda})())
    pool = 100 * 10**4 + 50  # (a pool of 100 slots and 50 fixed bytes: 10,001 bytes a slot)
    monkeypatch.setattr(device_memory, "taichi_field_bytes", lambda: pool)
    gpu0, gpu1 = Memory(3 * 10**6, 2 * 10**6, "GPU 0"), Memory(25 * 10**5, 2 * 10**6, "GPU 1")  # (margins 1e6)
    ranks = [("node-a:0", gpu0, pool, 0), ("node-a:0", gpu0, pool, 0), ("node-b:0", None, pool, 0)]
    monkeypatch.setattr(build_amr, "_every_rank", lambda mine: ranks)
    shared = memory_fit(100, 0)  # (3e6 - 1e6) / 2 + 1,000,050 bytes
    assert shared == Fit(199, gpu0.free, pool, 0, 10**6, 10001, 2, "GPU 0")
    assert "(shared by 2 ranks)" in shared.describe()
    ranks[1] = ("node-a:1", gpu1, pool, 0)
    assert memory_fit(100, 0) == Fit(249, gpu1.free, pool, 0, 10**6, 10001, 1, "GPU 1")  # (rank 0: 299)
    ranks[:] = [("node-a:0", None, pool, 0), ("node-b:0", gpu1, pool, 10 * 10001)]
    assert memory_fit(100, 10 * 10001).slots == 239
    ranks[:] = [("node-a:0", None, pool, 0)]
    assert memory_fit(100, 0) is None
