#!/usr/bin/env bash
# The two-phase runs of issue 4 on the GPU machine, in one call (run from the project root
# with the wheels of ../shared/tools/device-wheels.sh in .whl/). Writes diagnostics and
# reports under $OUT (default /tmp/two-phase); the large snapshots stay in /tmp.
#   BUBBLE_CELLS=384,192,192 ARRAY_CELLS='256,64,64 512,128,128' RAYLEIGH_CELLS=96 bash tools/gpu-two-phase.sh
# (space-separated lists; empty to skip)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/two-phase}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

run() {  # name case cells precision report [extra --set ...]
  local name=$1 case=$2 cells=$3 precision=$4 report=$5; shift 5
  name=$name-${cells//,/x}
  local dir=/tmp/runs/$name
  local start=$(date +%s.%N)
  python3 -m taichiflow.cli run "cases/$case.toml" --arch cuda --quiet \
      --precision "$precision" --set "grid.cells=[$cells]" --set 'output.fields=["p", "alpha"]' --out "$dir" "$@" \
      2>&1 | tail -2
  echo "$name: $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s wall"
  mkdir -p "$OUT/$name" && cp "$dir"/diagnostics.csv "$dir"/run.log "$dir"/case.toml "$OUT/$name/"
  python3 "tools/$report" "$dir" 2>&1 | grep -v '^\[Taichi\]' | tee "$OUT/$name/report.txt"
}

for cells in ${BUBBLE_CELLS-384,192,192}; do
  run bubble bubble_collapse "$cells" f32 bubble-report.py --set output.interval=0.9
done
for cells in ${ARRAY_CELLS-512,128,128}; do
  run array cavity_array "$cells" f32 peak-times.py --set output.interval=3.0
done
for r in ${RAYLEIGH_CELLS-96}; do
  run rayleigh rayleigh_collapse "$r,$r,$r" f64 rayleigh-report.py --set output.interval=11.0
done
