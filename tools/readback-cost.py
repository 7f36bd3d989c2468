"""What reading the device clock back costs, on the GPU machine (project root, wheels in .whl/):

    PYTHONPATH=/tmp/site:$PWD python3 tools/readback-cost.py [--cells 256]

`advance` checks every new state; the device keeps the time step (taichiflow/clock.py) and the
host reads it back once per batch of steps (STEPS_PER_READ_BACK), each read back a
synchronisation that drains the GPU's queue. This times, per step and for three workloads,
`advance` as it runs, `advance` with a callback after every step (a read back per step, as
before v27), and the same kernels with no read back at all (minimum of three runs of 20 steps).
"""
import argparse
import time

import taichi as ti

from taichiflow.bench import benchmark_case, set_smooth_wave
from taichiflow.run import Simulation


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
        set_smooth_wave(sim.solver, sim.model.primitive, sim.model.velocity)
        sim.advance(1.0, max_steps=4)
        solver, steps = sim.solver, 20

        def no_read_back(n):
            rate, _ = solver.check_state()
            solver.clock.start(sim.t, 1e30, sim.case["scheme"]["cfl"], 0.0, sim.step_count, sim.step_count + n, rate)
            solver.run_steps(n, sim.stages)

        variants = {"advance": lambda n: sim.advance(1e30, max_steps=sim.step_count + n),
                    "read back every step": lambda n: sim.advance(1e30, max_steps=sim.step_count + n,
                                                                  on_step=lambda _: None),
                    "no read back": no_read_back}
        best = {name: min(per_step_ms(run, steps) for _ in range(3)) for name, run in variants.items()}
        print(f"{model} {precision}: " + ", ".join(f"{name} {ms:.3f} ms" for name, ms in best.items()), flush=True)


if __name__ == "__main__":
    main()
