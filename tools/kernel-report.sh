#!/usr/bin/env bash
# Nsight Compute on the step's kernels, on the GPU machine (project root, wheels in .whl/):
#   bash tools/kernel-report.sh [bench arguments, e.g. --precision f64]
# Profiles 12 launches of the sweeps and primitives (a whole step: 9 in f32, 12 in f64, 4 for
# PLM + SSP-RK2) of a 256^3 benchmark (skipping the first steps): duration, registers per
# thread, occupancy, instructions issued per cycle, throughput against the memory and compute
# roofs, warp stall reasons. The whole report lands in $OUT/ncu.txt; a digest is printed.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
out=${OUT:-/tmp}
ncu --clock-control none --kernel-name regex:'sweep|walk|primitives' --launch-skip 36 --launch-count 12 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats \
    python3 -m taichiflow.cli bench --arch cuda --cells 256 --steps 2 --repeats 1 "$@" > "$out/ncu.txt" 2>&1
grep -E '^  [a-z_0-9]+_kernel|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Compute \(SM\) Throughput|Issued Ipc|Executed Instructions  |L1/TEX Hit|L2 Hit' \
    "$out/ncu.txt"
