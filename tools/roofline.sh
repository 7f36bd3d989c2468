#!/usr/bin/env bash
# Flop, DRAM bytes and instructions per cell-step of the four benchmark workloads, counted by
# Nsight Compute over the kernels of one whole time step (GPU machine, project root, wheels in
# .whl/):   bash tools/roofline.sh [cells]
# The window is one step's launches of the step's kernels, inside the benchmark's warm-up run
# of 3 steps: the check and its combine, and per stage the primitives (not at the first; they
# also fill the ghost layers) and the stage's sweeps (one per axis; two in f32 on CUDA, where the
# last axis is solved inside the walk before it; one where the stage is fused: PLM). flop = add + mul + 2 fma (FP32 and FP64 counted apart);
# reciprocals and square roots (the MUFU unit) are not flop here. Written, not yet run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
n=${1:-256}
out=${OUT:-/tmp}
metrics=$(printf '%s,' smsp__sass_thread_inst_executed_op_{fadd,fmul,ffma,dadd,dmul,dfma}_pred_on.sum \
    dram__bytes_read.sum dram__bytes_write.sum smsp__thread_inst_executed.sum gpu__time_duration.sum)
while read -r label stages sweeps args; do
  per_step=$((2 + (stages - 1) + stages * sweeps))
  # shellcheck disable=SC2086  # args is a list
  ncu --clock-control none --csv --print-units base --metrics "${metrics%,}" \
      --kernel-name regex:'sweep|walk|primitives|combine_check' \
      --launch-skip $((2 * per_step)) --launch-count "$per_step" \
      python3 -m taichiflow.cli bench --arch cuda --cells "$n" --steps 1 --repeats 1 $args \
      > "$out/roofline-$label.csv" 2>/dev/null
  python3 - "$out/roofline-$label.csv" "$label" "$n" <<'PY'
import csv, sys
path, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, body = rows[0], rows[1:]
name, metric, value, kernel = (head.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "ID"))
total, kernels = {}, set()
for r in body:
    kernels.add(r[kernel])
    total[r[metric]] = total.get(r[metric], 0.0) + float(r[value].replace(",", ""))
def op(kind):
    return total.get(f"smsp__sass_thread_inst_executed_op_{kind}_pred_on.sum", 0.0)
cells = n ** 3
sp = op("fadd") + op("fmul") + 2 * op("ffma")
dp = op("dadd") + op("dmul") + 2 * op("dfma")
dram = total.get("dram__bytes_read.sum", 0) + total.get("dram__bytes_write.sum", 0)
time_ns = total.get("gpu__time_duration.sum", 0.0)
print(f"{label:>10}: {len(kernels)} kernels, FP32 {sp / cells:7.0f} flop/cell-step, FP64 {dp / cells:7.0f}, "
      f"DRAM {dram / cells:6.0f} B/cell-step, {total.get('smsp__thread_inst_executed.sum', 0) / cells:6.0f} "
      f"instructions/cell-step, kernels {time_ns / 1e6:.2f} ms per step (under the profiler)")
PY
done <<'EOF2'
euler-f32 3 2
euler-f64 3 3 --precision f64
two-phase 3 2 --model two_phase
plm-f32 2 1 --reconstruction plm --riemann hll --integrator ssprk2
EOF2
