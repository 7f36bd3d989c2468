#!/usr/bin/env bash
# One call on the GPU machine: the test suite on CUDA, then `taichiflow bench` figures.
# Run from the project root with the wheels of ../shared/tools/device-wheels.sh in .whl/:
#   bash tools/gpu-check.sh            (SKIP_TESTS=1: bench only; SKIP_BENCH=1: tests only;
#                                       BENCH_CELLS=256; SKIP_SWEEP=1; BIG=1: a 1024^3 run;
#                                       GROUP=a|b|c: a third of the suite;
#                                       WORKERS=N: N pytest processes sharing the GPU,
#                                       with pytest-xdist's wheels in .whl/)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import taichi as ti; print('taichi', ti.__version__)" 2>&1 | tail -1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # test_io reads back with pyvista, which GPU nodes lack; io.py itself is numpy-only.
  # test_viz* renders with pyvista too, test_spectra and test_turbulence_pictures plot with it.
  # Open MPI refuses to start as root (test_mpi runs mpirun) unless told to.
  [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 The groups take about 3-4 minutes each on an H100.
  case ${GROUP:-all} in
    a) files="test_case.py test_cases_regression.py test_check.py test_cli.py test_conservation.py test_cuda.py test_sweep.py";;
    b) files="test_exact_riemann.py test_free_stream.py test_initial.py test_model_hooks.py test_models.py
              test_positivity.py test_rayleigh.py test_recovery.py test_reconstruction.py";;
    c) files="test_restart.py test_riemann.py test_sedov.py test_sod.py test_symmetry.py test_toro.py
              test_two_phase.py";;
    none) files="";;  # only the files given as arguments
    *) files="--ignore=test_io.py --ignore=test_viz.py --ignore=test_viz_axes.py --ignore=test_spectra.py
              --ignore=test_turbulence_pictures.py";;
  esac
  workers=${WORKERS:+-n $WORKERS}
  # shellcheck disable=SC2086  # word lists
  (cd tests && python3 -m pytest -q -rfE --arch cuda -p no:cacheprovider $workers $files "$@" 2>&1 \
      | tee "${OUT:-/tmp}/pytest-${GROUP:-all}.log" | tail -40)
fi
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
n=${BENCH_CELLS:-256}
# The four workloads of the GPU-speed targets, then the bytes-per-cell check at 1024^3 (BIG=1).
if [ "${SKIP_SWEEP:-0}" != 1 ]; then
  python3 -m taichiflow.cli bench --sweep --arch cuda --cells "$n" --steps 10 --repeats 5 \
      2>&1 | grep -v '^\[Taichi\]' | tee -a "${OUT:-/tmp}/bench.txt"
fi
if [ "${BIG:-0}" = 1 ]; then
  python3 -m taichiflow.cli bench --arch cuda --cells 1024 --steps 3 --repeats 5 --json --set run.keep_last_good=false \
      2>&1 | grep -v '^\[Taichi\]' | tee -a "${OUT:-/tmp}/bench.txt"
fi
