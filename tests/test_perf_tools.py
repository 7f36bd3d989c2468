"""The measuring tools run end to end on the CPU: tools/scaling.py (mpirun launches of
`taichiflow bench`) and tools/seed-speedups.py (one configuration per process, and the table).
No timing is asserted: the tools report numbers, these tests check what they computed from them."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str, *arguments, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / name), *map(str, arguments)], capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_weak_scaling_grows_the_grid_with_the_ranks_and_rates_each_rank():
    done = tool("scaling.py", "weak", "--ranks", 1, 2, "--block", 8, "--arch", "cpu", "--steps", 2, "--repeats", 1)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(r["ranks"], r["grid"], r["block"]) for r in rows] == [(1, "8x8x8", "8x8x8"), (2, "16x8x8", "8x8x8")]
    table = done.stdout.splitlines()[-2:]
    efficiency = rows[1]["cell_updates_per_s_per_rank"] / rows[0]["cell_updates_per_s_per_rank"]
    assert table[0].split()[:2] == ["1", "8x8x8"] and table[0].endswith("100%")
    assert table[1].split()[:2] == ["2", "16x8x8"] and table[1].endswith(f"{efficiency:.0%}")
    along_y = tool("scaling.py", "weak", "--ranks", 2, "--block", 8, "--along-y", "--arch", "cpu", "--steps", 2,
                   "--repeats", 1)
    rows = [json.loads(line) for line in along_y.stdout.splitlines() if line.startswith("{")]
    assert [(r["ranks"], r["grid"], r["block"]) for r in rows] == [(2, "8x16x8", "8x8x8")]


def test_seed_speedups_time_a_run_after_its_first_step_and_divide_like_for_like(tmp_path):
    done = tool("seed-speedups.py", "--one", "marti_muller_1", "cpu", "f64", 0, 5, env={"TI_CPU_MAX_NUM_THREADS": "1"})
    row = json.loads(done.stdout.strip().splitlines()[-1])
    # the whole run to t = 0.4 but its first (compiling) step: 371 steps of 400 cells in all
    assert (row["problem"], row["grid"], row["cells"], row["steps"]) == ("marti_muller_1", "400", 400, 370)
    assert row["cell_updates_per_s"] == pytest.approx(400 * 370 / row["wall_s"], rel=1e-12)
    gpu = {**row, "arch": "cuda", "cell_updates_per_s": 250 * row["cell_updates_per_s"]}
    results = tmp_path / "rows.jsonl"
    results.write_text(json.dumps(row) + "\n" + json.dumps(gpu) + "\n")
    line = tool("seed-speedups.py", "--table", results).stdout.splitlines()[-1].split()
    assert line[:2] == ["marti_muller_1", "400"] and line[-2:] == ["250x", "-"]  # f64 measured; f32 not run
