#!/usr/bin/env bash
# One call on the GPU machine for the adaptive solver: its tests on CUDA, the pack at one level
# against the uniform kernels (same grid, same call), Sedov with AMR against the uniform grid
# of its finest level, and a real adaptive run's rate and regrid share.
#   bash tools/gpu-amr.sh   (wheels of ../shared/tools/device-wheels.sh in .whl/; SKIP_TESTS=1)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  (cd tests && timeout 240 python3 -m pytest -q -rfE --arch cuda -p no:cacheprovider test_amr.py test_amr_criteria.py \
      test_amr_restart.py 2>&1 | tee "$out/pytest-amr.log" | tail -8)
fi
n=${BENCH_CELLS:-256}
bench() { timeout 120 python3 -m taichiflow.cli bench --arch cuda --cells "$n" --steps 10 --repeats 5 --json "$@" \
              2>&1 | grep '^{' | tee -a "$out/bench-amr.jsonl"; }
bench
for b in ${BLOCKS:-16 32}; do bench --amr-blocks "$b"; done
timeout 150 python3 tools/amr-sedov.py --arch cuda --precision f32 --finest 256 --root 32 --block 8 2>&1 \
    | grep '^{' | tee -a "$out/amr-sedov.jsonl"
for every in ${REGRID_EVERY:-4}; do
  timeout 150 python3 tools/amr-run.py cases/sedov3d_amr.toml --arch cuda --precision f32 \
      --set 'grid.cells=[64,64,64]' --set amr.block_cells=16 --set amr.regrid_every=$every 2>&1 \
      | grep -v '^\[Taichi\]' | tee -a "$out/amr-run.log"
done
