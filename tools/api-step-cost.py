"""What stepping from Python costs per step, against the command line's batches (GPU machine,
project root, wheels in .whl/):

    PYTHONPATH=/tmp/site:$PWD python3 tools/api-step-cost.py [--cells 256] [--steps 40]

The benchmark's case (taichiflow/bench.py: a periodic box, a smooth wave on every axis) is
built once through the public API (taichiflow.Simulation) and timed per step, minimum of three
runs of --steps steps each, four ways:

- `advance(steps=N)`: one call, the driver's batches between read backs of the device clock,
  what `taichiflow run` does between output times;
- N calls of `advance()` (one step each), as a script that steps by hand;
- the same with `sim.t` read after each step (a value the script asks for);
- the same with `sim.primitive["rho"]` read after each step (a whole field copied to the host).

The issue's bar (docs/performance.md): the second is no slower per step than the first beyond
the read backs the script asks for, which the third and fourth price.
"""
import argparse
import time

import numpy as np
import taichi as ti

import taichiflow as tf
from taichiflow.bench import benchmark_case, set_smooth_wave


def per_step_ms(work, steps: int) -> float:
    """The least of three timings of work(steps), per step, the device drained after each."""
    best = float("inf")
    for _ in range(3):
        ti.sync()
        start = time.perf_counter()
        work(steps)
        ti.sync()
        best = min(best, (time.perf_counter() - start) / steps)
    return 1e3 * best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--arch", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--precision", default="f32", choices=["f32", "f64"])
    args = parser.parse_args()
    case = benchmark_case("euler", cells=args.cells, arch=args.arch, precision=args.precision,
                          overrides=["time.end=1e9", "output.interval=1e9"])
    sim = tf.Simulation(tf.Case.from_dict(case))
    solver = sim._driver.solver
    set_smooth_wave(solver, sim._driver.model.primitive, sim._driver.model.velocity)
    sim.advance(steps=4)  # (compiled and warm)

    def batched(n):
        sim.advance(steps=n)

    def by_hand(n):
        for _ in range(n):
            sim.advance()

    def by_hand_reading_t(n):
        for _ in range(n):
            sim.advance()
            float(sim.t)

    def by_hand_reading_rho(n):
        for _ in range(n):
            sim.advance()
            np.asarray(sim.primitive["rho"])

    cells = args.cells ** 3
    rows = [("advance(steps=N), one call", batched), ("advance() N times", by_hand),
            ("advance() N times, sim.t read each step", by_hand_reading_t),
            ("advance() N times, primitive['rho'] read each step", by_hand_reading_rho)]
    first = None
    print(f"Euler WENO5 + HLLC + LSRK3, {args.cells}^3, {args.precision}, {args.arch}, {args.steps} steps x 3")
    print("| how | ms a step | cell-updates/s | of one call |")
    print("| --- | ---: | ---: | ---: |")
    for label, work in rows:
        ms = per_step_ms(work, args.steps)
        first = first or ms
        print(f"| {label} | {ms:.3f} | {cells / ms * 1e3:.3e} | {first / ms:.2f} |", flush=True)


if __name__ == "__main__":
    main()
