"""A callback that stops the run at a condition: Sod's shock reaching x = 0.8.

`sim.every(1, fn)` calls fn(sim) after every step; returning `taichiflow.STOP` (or raising
`taichiflow.Stop("why")`) ends `run()` cleanly after that step: the last diagnostics row and,
with an output folder, the last snapshot are those of the stopped state, and `run()` called
again goes on from there.

    python examples/stop_on_condition.py
"""
from pathlib import Path

import numpy as np

import taichiflow as tf

CASES = Path(__file__).resolve().parent.parent / "cases"
SHOCK_SPEED = 1.7522  # Sod's shock, from the exact solution (gamma = 1.4)


def shock_position(sim) -> float:
    """The right-most cell centre where the pressure is 10% above the gas ahead of the shock."""
    x, p = sim.coordinates()[0], sim.primitive["p"]
    return float(x[np.nonzero(p > 0.11)[0][-1]])


def main(cells: int = 200, where: float = 0.8):
    sim = tf.Simulation(tf.Case.from_file(CASES / "sod.toml", {"grid.cells": [cells], "run.arch": "cpu"}))

    def shock_arrived(sim):
        if shock_position(sim) >= where:
            return tf.STOP

    sim.every(1, shock_arrived)
    result = sim.run()
    expected = (where - 0.5) / SHOCK_SPEED
    print(f"stopped: {result.stopped}\nthe shock reached x = {where} at t = {sim.t:.4f} (step {sim.step}); "
          f"exact: t = {expected:.4f}")
    assert result.stopped and abs(sim.t - expected) < 3 * sim.dx[0] / SHOCK_SPEED
    return sim.t


if __name__ == "__main__":
    main()
