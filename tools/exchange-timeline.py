"""Where a many-rank step's time goes on each rank: the halo exchanges against the rest.

    mpirun -n 4 python3 tools/exchange-timeline.py --model two_phase --grid 384 384 192 --split 2 2 1

Steps the bench's state (taichiflow/bench.py) on its blocks and records CUDA events around
every exchange of ghost layers on every rank (its begin: pack and post; its completion: wait
and unpack); prints, per rank and repeat of 20 steps, the wall time, the GPU time inside those
calls and between them, and the host time spent in them. A completion whose GPU time is long
on one rank and short on the others is waiting for a slower neighbour; GPU gaps that grow with
the host time say that the host, not the GPU, sets the pace. On the CPU backend host clocks
stand in for the events.
"""
import argparse
import os
import statistics
import time

if "OMPI_COMM_WORLD_LOCAL_RANK" in os.environ:  # (a GPU per rank, chosen before CUDA starts)
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])

import taichi as ti  # noqa: E402

from taichiflow import bench  # noqa: E402
from taichiflow.kernels.exchange import BlockExchange  # noqa: E402
from taichiflow.parallel.comm import world  # noqa: E402
from taichiflow.run import Simulation  # noqa: E402


class HostEvent:
    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def event_maker():
    try:
        import torch
        if torch.cuda.is_available():
            return lambda: torch.cuda.Event(enable_timing=True)
    except ImportError:
        pass
    return HostEvent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="two_phase")
    parser.add_argument("--grid", type=int, nargs=3, default=[384, 384, 192])
    parser.add_argument("--split", type=int, nargs=3, help="[parallel] ranks (else the automatic split)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    make_event = event_maker()
    cuda = make_event is not HostEvent
    records, recording = [], [False]

    def timed(method, kind):
        def timed_call(self, W, *args):
            if not recording[0]:
                return method(self, W, *args)
            events = make_event(), make_event()
            start = time.perf_counter()
            events[0].record()
            done = method(self, W, *args)
            events[1].record()
            if done is not False:  # (a completion call with nothing to complete is not counted)
                records.append((events, time.perf_counter() - start, kind))
            return done
        return timed_call

    # (an exchange is begun after each kernel that writes W and finished before the first sweep
    # that reads a shared axis: both are timed, packing and posting, waiting and unpacking)
    BlockExchange.begin_exchange = timed(BlockExchange.begin_exchange, "begun")
    BlockExchange.complete_exchange = timed(BlockExchange.complete_exchange, "completed")
    comm = world()
    overrides = [f"parallel.ranks={args.split}"] if args.split else []
    case = bench.benchmark_case(args.model, "weno5", "mc", "hllc", "lsrk3", args.grid[0], 3, "f32",
                                "cuda" if cuda else "cpu", overrides, grid=args.grid)
    sim = Simulation(case)
    bench.set_smooth_wave(sim.solver, sim.model.primitive, sim.model.velocity, whole=args.grid)
    sim.advance(1.0, max_steps=4)
    ti.sync()
    for repeat in range(args.repeats):
        records.clear()
        recording[0] = True
        comm.barrier()
        start = time.perf_counter()
        sim.advance(1e30, max_steps=sim.step_count + args.steps)
        ti.sync()
        wall = time.perf_counter() - start
        recording[0] = False
        inside = [a.elapsed_time(b) for (a, b), _, _ in records]
        begun = sum(kind == "begun" for _, _, kind in records)
        between = [records[i][0][1].elapsed_time(records[i + 1][0][0]) for i in range(len(records) - 1)]
        host = 1e3 * sum(seconds for _, seconds, _ in records)
        line = (f"rank {comm.rank} repeat {repeat}: {wall * 1e3:.1f} ms for {args.steps} steps | {begun} exchanges "
                f"begun, {len(records) - begun} completed, GPU {sum(inside):.2f} ms in them "
                f"(median {statistics.median(inside):.3f}), "
                f"{sum(between):.2f} ms between (median {statistics.median(between):.3f}) | host "
                f"{host:.1f} ms in the exchange calls ({host / len(records):.3f} each)")
        lines = comm.gather(line)
        if comm.rank == 0:
            print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
