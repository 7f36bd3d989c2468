"""The time step on the device (taichiflow/clock.py): batches of steps without a read back
between them must take the steps the host would (same dt, same t, same state, bit for bit),
stop exactly at the target time and step limit, and call back on the multiples asked for."""
import numpy as np

from helpers import CASES, precise
from taichiflow.case import load_case
from taichiflow.run import Simulation
from taichiflow.run.driver import STEPS_PER_READ_BACK


def sod(arch):
    case = precise(load_case(CASES / "sod.toml", ["grid.cells=[64]"]), arch)
    return Simulation(case)


def test_batches_take_the_steps_of_one_step_at_a_time(arch):
    steps = STEPS_PER_READ_BACK + 5  # a full batch, then 5
    batched = sod(arch)  # (each Simulation starts Taichi afresh: one at a time)
    batched.advance(1.0, max_steps=steps)
    batched_t, batched_count, batched_u = batched.t, batched.step_count, batched.solver.conserved_array()
    single, times = sod(arch), []
    for k in range(1, steps + 1):
        single.advance(1.0, max_steps=k)  # each call: its own check and read back
        times.append(single.t)
    assert batched_count == single.step_count == steps
    assert batched_t == single.t and len(set(times)) == steps  # dt from the CFL rate, every step new
    np.testing.assert_array_equal(batched_u, single.solver.conserved_array())


def test_the_clock_stops_at_the_target_time_and_calls_back_on_multiples(arch):
    sim = sod(arch)
    seen = []
    sim.advance(0.05, on_step=lambda s: seen.append(s.step_count), every=5)
    assert sim.t == 0.05                                  # the last dt shortened to land on it
    assert seen[0] == 1 and all(k % 5 == 0 for k in seen[1:-1]) and seen[-1] == sim.step_count
    assert np.diff(seen).max() <= 5
    before = sim.step_count
    sim.advance(0.05, on_step=lambda s: seen.append(-1))  # already there: no step, no call
    assert sim.step_count == before and seen[-1] != -1
