#!/usr/bin/env bash
# One call on the GPU machine: the test suite on CUDA, then `taichiflow bench` figures.
# Run from the project root with the wheels of ../shared/tools/device-wheels.sh in .whl/:
#   bash tools/gpu-check.sh            (SKIP_TESTS=1: bench only; SKIP_BENCH=1: tests only;
#                                       BENCH_CELLS=256)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import taichi as ti; print('taichi', ti.__version__)" 2>&1 | tail -1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # test_io reads back with pyvista, which GPU nodes lack; io.py itself is numpy-only.
  (cd tests && python3 -m pytest -q --arch cuda -p no:cacheprovider --ignore=test_io.py "$@" 2>&1 | tail -25)
fi
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
n=${BENCH_CELLS:-256}
while read -r recon limiter riemann integrator precision; do
  [ -z "$recon" ] && continue
  python3 -m taichiflow.cli bench --arch cuda --cells "$n" --reconstruction "$recon" --limiter "$limiter" \
      --riemann "$riemann" --integrator "$integrator" --precision "$precision" --steps 10 --repeats 5 --json \
      2>&1 | grep '^{' | tee -a "${OUT:-/tmp}/bench.jsonl"
done <<'LIST'
weno5 mc hllc lsrk3 f32
weno5 mc hllc lsrk3 f64
plm mc hll ssprk2 f32
LIST
