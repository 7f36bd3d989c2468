#!/usr/bin/env bash
# One call on a GPU node (up to 4 GPUs) for adaptive runs on many ranks: one rank against two
# (the same bytes), weak scaling with AMR, the cloud blast on 4 GPUs against one, where its
# regrids spend their time, and the pool's growth bounded by the GPU's memory.
#   bash tools/gpu-amr-ranks.sh   (wheels of ../shared/tools/device-wheels.sh in .whl/)
#   STEPS="compare weak cloud phases grow"   (the parts to run, in this order)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
gpus=$(nvidia-smi -L | wc -l)

for part in ${STEPS:-compare weak cloud phases grow}; do
  echo "=== $part $(date +%T)"
  case $part in
  compare)  # the same snapshots byte for byte on 1 and 2 ranks (f64, NCCL)
    for n in 1 2; do
      timeout 240 mpirun -n $n --bind-to none python3 -m taichiflow.cli run cases/sedov3d_amr.toml \
          --out /tmp/sedov_n$n --arch cuda --precision f64 --quiet --set 'grid.cells=[64,64,64]' \
          --set amr.block_cells=16 --set "parallel.exchange='nccl'" 2>&1 | grep -v '^\[Taichi\]' | tail -3
      grep -E "steps|regrid" /tmp/sedov_n$n/run.log | tail -3
    done
    for f in /tmp/sedov_n1/snapshot_*.vtu; do cmp "$f" /tmp/sedov_n2/$(basename "$f") && echo "same: $(basename "$f")"; done
    ;;
  weak)
    timeout 300 python3 tools/amr-scaling.py --ranks 1 2 $([ "$gpus" -ge 4 ] && echo 4) --exchange nccl --root 128 \
        --steps ${WEAK_STEPS:-60} --no-phase-timers 2>&1 | grep -v '^\[Taichi\]' | tee "$out/weak.log" | tail -8
    timeout 200 python3 tools/amr-scaling.py --ranks $([ "$gpus" -ge 4 ] && echo 4 || echo 2) --exchange nccl \
        --root 128 --steps ${WEAK_STEPS:-60} 2>&1 | grep -v '^\[Taichi\]' | tee -a "$out/weak.log" | tail -4
    ;;
  cloud)  # seed 003's cloud blast, six levels: 4 GPUs against one
    for n in $([ "$gpus" -ge 4 ] && echo 4) 1; do
      timeout 240 mpirun -n $n --bind-to none python3 tools/amr-run.py cases/cloud_blast_amr.toml --arch cuda \
          --precision f32 --set "parallel.exchange='nccl'" 2>&1 | grep '^{' | head -1 | tee -a "$out/cloud.jsonl"
    done
    ;;
  phases)
    timeout 200 python3 tools/amr-regrid-phases.py cases/cloud_blast_amr.toml --arch cuda --precision f32 \
        --max-steps ${PHASE_STEPS:-800} 2>&1 | grep -v '^\[Taichi\]' | tee "$out/phases.log" | tail -12
    ;;
  grow)  # a pool of 64 slots grown on need, as far as the GPU's free memory allows
    timeout 150 python3 -m taichiflow.cli run cases/sedov3d_amr.toml --out /tmp/grow --arch cuda --precision f32 \
        --quiet --set amr.capacity=64 --set time.end=0.01 2>&1 | grep -v '^\[Taichi\]' | tail -3
    grep -iE "pool|memory|slots" /tmp/grow/run.log | head -8
    ;;
  esac
done
echo "=== done $(date +%T)"
