#!/usr/bin/env bash
# Flop, DRAM bytes and instructions per cell-step of the four benchmark workloads, counted by
# Nsight Compute over the kernels of one whole time step (GPU machine, project root, wheels in
# .whl/):   bash tools/roofline.sh [cells]
# The window is one step's launches, from one check to the next, after the benchmark's first
# step: the check and its combine (four tasks), and per stage the primitives (not at the
# first; they also fill the ghost layers) and the stage's sweeps. flop = add + mul + 2 fma
# (FP32 and FP64 counted apart); reciprocals and square roots (the MUFU unit) are not flop here.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
n=${1:-256}
out=${OUT:-/tmp}
metrics=$(printf '%s,' smsp__sass_thread_inst_executed_op_{fadd,fmul,ffma,dadd,dmul,dfma}_pred_on.sum \
    dram__bytes_read.sum dram__bytes_write.sum smsp__thread_inst_executed.sum gpu__time_duration.sum)
while read -r label args; do
  # shellcheck disable=SC2086  # args is a list
  ncu --clock-control none --csv --print-units base --metrics "${metrics%,}" \
      --launch-skip 24 --launch-count 64 \
      python3 -m taichiflow.cli bench --arch cuda --cells "$n" --steps 4 --repeats 1 $args \
      > "$out/roofline-$label.csv" 2>/dev/null
  python3 - "$out/roofline-$label.csv" "$label" "$n" <<'PY'
import csv, sys
path, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, body = rows[0], rows[1:]
name, metric, value, launch = (head.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "ID"))
# One step: the launches from a check to the next (a Taichi kernel may launch several tasks).
names = {}
for r in body:
    names[int(r[launch])] = r[name].split("_c")[0]  # Taichi appends _c<id>_<n>_kernel_<task>
checks = [i for i in sorted(names) if names[i] == "check_and_primitives"]
if len(checks) < 2:
    sys.exit(f"{label}: fewer than two checks among the profiled launches")
step = set(range(checks[0], checks[1]))
total = {}
for r in body:
    if int(r[launch]) in step:
        total[r[metric]] = total.get(r[metric], 0.0) + float(r[value].replace(",", ""))
def op(kind):
    return total.get(f"smsp__sass_thread_inst_executed_op_{kind}_pred_on.sum", 0.0)
cells = n ** 3
sp = op("fadd") + op("fmul") + 2 * op("ffma")
dp = op("dadd") + op("dmul") + 2 * op("dfma")
dram = total.get("dram__bytes_read.sum", 0) + total.get("dram__bytes_write.sum", 0)
time_ns = total.get("gpu__time_duration.sum", 0.0)
counts = {}
for i in step:
    counts[names[i]] = counts.get(names[i], 0) + 1
print(f"{label:>10}: FP32 {sp / cells:7.0f} flop/cell-step, FP64 {dp / cells:7.0f}, "
      f"DRAM {dram / cells:6.0f} B/cell-step, {total.get('smsp__thread_inst_executed.sum', 0) / cells:6.0f} "
      f"instructions/cell-step, kernels {time_ns / 1e6:.2f} ms per step (under the profiler)")
print(f"{'':>12}launches: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
PY
done <<'EOF2'
euler-f32
euler-f64 --precision f64
two-phase --model two_phase
plm-f32 --reconstruction plm --riemann hll --integrator ssprk2
EOF2
