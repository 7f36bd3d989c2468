"""The test suite's own options (tests/conftest.py)."""


def test_spread_gpus_gives_each_xdist_worker_a_gpu_round_robin():
    """`pytest --arch cuda -n 32 --spread-gpus 4`: worker k on GPU k mod 4; nothing set outside
    xdist or without the option."""
    from conftest import worker_gpu
    assert [worker_gpu(f"gw{k}", 4) for k in range(6)] == ["0", "1", "2", "3", "0", "1"]
    assert worker_gpu("gw5", 0) is None and worker_gpu("", 4) is None and worker_gpu("master", 2) is None
