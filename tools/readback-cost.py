"""What the per-step read back of the check costs, on the GPU machine (project root, wheels in .whl/):

    PYTHONPATH=/tmp/site:$PWD python3 tools/readback-cost.py [--cells 256]

`advance` checks every new state and reads the result back (the CFL rate for the next dt,
a bad cell): a synchronisation that drains the GPU's queue once per step. This times, per
step and for three workloads, the time loop as it runs, the same kernels without the read back
(step + check kernel), and with the check's combine kernel and its read back but without the
rest of the host's time loop (minimum of three repetitions of 20 steps each).
"""
import argparse
import time

import taichi as ti

from taichiflow.bench import benchmark_case, set_smooth_wave
from taichiflow.simulation import Simulation


def per_step_ms(run_steps, steps: int) -> float:
    start = time.perf_counter()
    run_steps(steps)
    ti.sync()
    return 1e3 * (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=256)
    parser.add_argument("--arch", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    for model, precision in [("euler", "f32"), ("two_phase", "f32"), ("euler", "f64")]:
        sim = Simulation(benchmark_case(model, cells=args.cells, arch=args.arch, precision=precision))
        set_smooth_wave(sim.solver, sim.model.primitive)
        sim.advance(1.0, max_steps=4)
        solver, steps = sim.solver, 20
        dt = 0.1 * sim.case["scheme"]["cfl"] / solver.check_state()[0]  # a stable step for the timings

        def kernels_only(n):
            for _ in range(n):
                solver.step(dt, 0.0, sim.stages)
                solver._check_and_primitives()

        def with_read_back(n):
            for _ in range(n):
                solver.step(dt, 0.0, sim.stages)
                solver._check_and_primitives()
                solver._combine_check()

        variants = {"time loop (advance)": lambda n: sim.advance(1e30, max_steps=sim.step_count + n),
                    "step + check, no read back": kernels_only,
                    "step + check + its read back": with_read_back}
        best = {name: min(per_step_ms(run, steps) for _ in range(3)) for name, run in variants.items()}
        print(f"{model} {precision}: " + ", ".join(f"{name} {ms:.3f} ms" for name, ms in best.items()), flush=True)


if __name__ == "__main__":
    main()
