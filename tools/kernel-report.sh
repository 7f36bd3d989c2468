#!/usr/bin/env bash
# Registers, spills and hardware counters of the step's kernels, on the GPU machine:
#   bash tools/kernel-report.sh [bench arguments, e.g. --precision f64]
# 1. Taichi writes the PTX of every kernel it compiles (print_kernel_asm); ptxas -v reports
#    each entry's registers, stack frame and spill bytes for sm_90.
# 2. Nsight Compute profiles a few sweep and primitive launches of a 256^3 benchmark
#    (occupancy, throughput against the roofs, warp stall reasons) if it can read counters.
# Files land in $OUT: ptxas.txt, ncu.txt, ptx.tar.gz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
ptxas=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)
work=$(mktemp -d)
(cd "$work" && python3 "$OLDPWD/tools/dump-ptx.py" "$@" 2>&1 | grep -v '^\[Taichi\]' | tail -3)
for f in "$work"/*.ptx; do "$ptxas" -arch=sm_90 -v "$f" -o /dev/null 2>&1; done > "$out/ptxas.txt"
# One line per kernel: name, registers, stack frame, spills.
python3 - "$out/ptxas.txt" <<'PY'
import re, sys
entry = None
for line in open(sys.argv[1]):
    m = re.search(r"Compiling entry function '(\w+)'", line)
    if m:
        entry = m.group(1)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and entry:
        frame = m.groups()
    m = re.search(r"Used (\d+) registers", line)
    if m and entry:
        if re.search("sweep|primitives|fill_ghosts|save_state|check", entry):
            print(f"{entry:60s} regs {m.group(1):>4}  stack {frame[0]:>5}  spill st/ld {frame[1]}/{frame[2]}")
        entry = None
PY
tar -czf "$out/ptx.tar.gz" -C "$work" .
if command -v ncu >/dev/null; then
  ncu --clock-control none --kernel-name regex:'sweep|primitives|fill_ghosts' --launch-skip 45 --launch-count 15 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      python3 -m taichiflow.cli bench --arch cuda --cells 256 --steps 2 --repeats 1 "$@" > "$out/ncu.txt" 2>&1
  grep -E '^  [a-z_0-9]+_kernel|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Local Memory|Block Size|Waves Per SM|Stall|Issued Ipc|L1/TEX Hit|L2 Hit' \
      "$out/ncu.txt" | head -150
fi
