"""An adaptive run ([amr]): the time loop over a PackSolver, with a regrid every
`regrid_every` steps, and its state on a uniform grid of one level for whoever needs one."""
from __future__ import annotations

import time as wallclock
from pathlib import Path

import numpy as np

from ..errors import SimulationError
from ..kernels.amr.solver import Criteria
from .adaptive_outputs import AdaptiveOutputs
from .build_amr import build_pack
from .stopping import output_times


class AdaptiveRun:
    """Builds a case with [amr] (its initial state refined); `advance` integrates it."""

    def __init__(self, case: dict):
        self.case = case
        built = build_pack(case)
        self.solver, self.model, self.plan = built.solver, built.model, built.plan
        self.precision = built.precision
        self.t, self.step_count = 0.0, 0
        self.regrid_seconds = 0.0
        self.rate, bad = self.solver.check_state()
        if bad is not None:
            raise SimulationError(f"the initial state is inadmissible in block {bad[0]} at cell {bad[1]}")

    def advance(self, until: float, max_steps: int = 0, after_step=None) -> None:
        """Steps of the global time step (the CFL limit of the finest cells) up to `until`;
        after_step(dt) after each. A step that leaves an inadmissible cell is undone (where
        the last good state is kept) and raises SimulationError naming the block and cell."""
        amr, cfl = self.case["amr"], self.case["scheme"]["cfl"]
        taken = 0
        while self.t < until * (1 - 1e-14) and not (max_steps and taken >= max_steps):
            dt = min(cfl / self.rate, until - self.t)
            rate, bad = self.solver.step(dt, self.t)
            if bad is not None:
                kept = self.solver.restore_last_good()
                block, cell = bad
                raise SimulationError(f"step {self.step_count + 1} (t = {self.t:.6g}, dt = {dt:.3g}) left an "
                                      f"inadmissible state in the block at level {block.level}, {block.coords}, "
                                      f"cell {cell}" + ("; the state before it is kept" if kept else ""))
            self.t += dt
            self.step_count += 1
            taken += 1
            self.rate = rate
            if after_step:
                after_step(dt)
            if self.step_count % amr["regrid_every"] == 0:
                started = wallclock.perf_counter()
                if self.solver.adapt(Criteria.of(amr)):
                    self.rate, _ = self.solver.check_state()
                self.regrid_seconds += wallclock.perf_counter() - started

    def uniform(self, level: int | None = None) -> np.ndarray:
        """The primitive state on the uniform grid of `level` (default: the finest allowed): a
        coarser leaf's value repeated over the cells it covers, a finer leaf's averaged."""
        solver = self.solver
        forest, N, dim = solver.forest, solver.N, solver.dim
        level = forest.max_level if level is None else level
        blocks = solver.primitive_blocks()
        n = next(iter(blocks.values())).shape[-1]
        shape = tuple(r * N * 2 ** level for r in forest.roots)
        out = np.zeros(shape + (n,))
        for block, values in blocks.items():
            scale = 2 ** (level - block.level) if level >= block.level else None
            if scale is not None:
                for d in range(dim):
                    values = np.repeat(values, scale, axis=d)
                where = tuple(slice(c * N * scale, (c + 1) * N * scale) for c in block.coords)
            else:
                shrink = 2 ** (block.level - level)
                values = values.reshape(sum(((N // shrink, shrink) for _ in range(dim)), ()) + (n,))
                values = values.mean(axis=tuple(range(1, 2 * dim, 2)))
                where = tuple(slice(c * N // shrink, (c + 1) * N // shrink) for c in block.coords)
            out[where] = values
        return out

    def leaf_cells(self) -> int:
        return self.solver.leaf_cells()

    def run(self, folder: Path, quiet: bool = True, log=lambda line: None) -> dict:
        """To the end time, writing snapshots at the output times and a diagnostics row every
        [output] diagnostics_every steps into `folder`; a failed step still writes the last
        good state's snapshot before its error propagates."""
        outputs = AdaptiveOutputs(self, folder)
        every, end = self.case["output"]["diagnostics_every"], self.case["time"]["end"]
        started = wallclock.perf_counter()
        updates = 0

        def after_step(dt):
            nonlocal updates
            updates += self.leaf_cells()
            if self.step_count % every == 0:
                outputs.row(dt)
            if not quiet and self.step_count % 50 == 0:
                print(f"step {self.step_count}, t = {self.t:.6g}, {self.leaf_cells()} leaf cells "
                      f"{list(self.solver.forest.leaf_count_per_level())} blocks per level", flush=True)

        outputs.row(0.0)
        outputs.snapshot()
        try:
            cap = self.case["time"]["max_steps"]
            for t_out in output_times(end, self.case["output"]["interval"]):
                if cap and self.step_count >= cap:
                    break
                self.advance(t_out, cap - self.step_count if cap else 0, after_step)
                outputs.snapshot()
        except SimulationError:
            log(f"the last good state: {outputs.snapshot().name}")
            raise
        finally:
            outputs.close()
        wall = wallclock.perf_counter() - started
        return {"steps": self.step_count, "time": self.t, "wall_s": wall, "leaf_cell_updates_per_s": updates / wall,
                "regrid_s": self.regrid_seconds, "snapshots": outputs.count}
