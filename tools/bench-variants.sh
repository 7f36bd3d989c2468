#!/usr/bin/env bash
# Benchmark variants on the GPU machine, one `taichiflow bench` per line of stdin (its extra
# arguments, e.g. `--set run.segment=8`), printed as a compact table and kept in
# $OUT/variants.jsonl. Run from the project root with the wheels in .whl/:
#   printf '%s\n' '' '--set run.segment=8' | bash tools/bench-variants.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
while IFS= read -r extra; do
  # shellcheck disable=SC2086  # the line is a list of arguments
  python3 -m taichiflow.cli bench --arch cuda --cells "${BENCH_CELLS:-256}" --steps 10 --repeats 5 --json \
      $extra > /tmp/variant.log 2>&1
  line=$(grep '^{' /tmp/variant.log)
  [ -z "$line" ] && { echo "failed: $extra"; grep -v '^\[Taichi\]' /tmp/variant.log | tail -8; continue; }
  echo "$line" >> "${OUT:-/tmp}/variants.jsonl"
  python3 - "$line" "$extra" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print(f"{r['model']:>9} {r['scheme']:>20} {r['precision']} {r['grid']:>14} {r['cell_updates_per_s']:.3e}"
      f" {r['resident_bytes_per_cell']:6.1f} B/cell  first {r['first_step_s']:5.2f} s  {sys.argv[2]}")
PY
done
