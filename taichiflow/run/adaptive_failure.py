"""What an adaptive run's failed step says: what a uniform run's says (run/failure.py), the bad
cell's variable, the model function at fault (run/model_blame.py) or the scheme's advice.

`explain` and the model's blame read a uniform solver; here they read the leaves as the uniform
grid of the bad block's level (`LevelView`), a leaf at a time: the whole grid of the finest
level would not fit in memory where a run needs blocks."""
from __future__ import annotations

import numpy as np

from .failure import bad_variable, explain
from .model_blame import blame_of_state


def step_failure(run, bad, dt: float, retried: bool = False) -> str:
    """The message of a step of dt that left the bad cell `bad` = (leaf, cell in it), after
    stepping back to the last good state where it was kept (run.state_good says); retried:
    the step was already redone with the [scheme] retry fluxes."""
    block, cell = bad
    at = _in_level_grid(run, block, cell)
    view = LevelView(run, block.level, dt)
    w = view.solver.primitive_at(at)
    after = view.with_step(run.step_count + 1, run.t + dt)
    own = blame_of_state(after, w, at, f"cell {at} of level {block.level}'s grid, its state after step "
                                       f"{run.step_count + 1}")
    run.state_good = run.solver.restore_last_good()
    view.solver.refresh_primitives()
    kept = ("; the state before it is kept" if run.state_good else
            " ([run] keep_last_good = false: the state before it is lost)")
    redone = " redone with the retry scheme" if retried else ""
    return (f"step {run.step_count + 1} (t = {run.t:.6g}, dt = {dt:.3g}){redone} left an inadmissible state in "
            f"the block at level {block.level}, {block.coords}, cell {cell}{kept}: "
            f"{bad_variable(run.model, w, own and own[0])} at cell {at} of level {block.level}'s grid. "
            + explain(view, int(np.ravel_multi_index(at, view.solver.cells)), own and own[1], w))


def retry_note(run, bad, dt: float) -> str:
    """run.log's line for a step of dt redone with the retry scheme: the bad cell `bad` =
    (leaf, cell in it) and its state after the step, as a uniform run says them, for studying
    where and why a case's steps fail (W current: the step's check made it; collective on many
    ranks: every rank reads the leaf)."""
    block, cell = bad
    at = _in_level_grid(run, block, cell)
    w = run.solver.primitive_blocks([block])[block][cell]
    state = ", ".join(f"{n} = {v:.6g}" for n, v in zip(run.model.primitive.component_names(), w))
    return (f"step {run.step_count + 1} (t = {run.t + dt:.9g}, dt = {dt:.4g}) redone with the retry scheme: first "
            f"bad cell in the block at level {block.level}, {block.coords}, cell {cell} (cell {at} of level "
            f"{block.level}'s grid): {state}")


def _in_level_grid(run, block, cell) -> tuple:
    """The index of a block's cell in its level's uniform grid."""
    return tuple(c * run.solver.N + i for c, i in zip(block.coords, cell))


def initial_failure(run, bad) -> str:
    """The message of an initial state with the bad cell `bad` = (leaf, cell in it)."""
    block, cell = bad
    at = _in_level_grid(run, block, cell)
    view = LevelView(run, block.level, 0.0)
    w = view.solver.primitive_at(at)
    own = blame_of_state(view, w, at, f"cell {at} of level {block.level}'s grid, its initial state")
    return (f"inadmissible initial state at cell {at} of level {block.level}'s grid (the block at level "
            f"{block.level}, {block.coords}, cell {cell}): {bad_variable(run.model, w, own and own[0])}"
            + (f". {own[1]}" if own else "; check [initial] in the case file"))


class LevelView:
    """An adaptive run as explain() and model_blame() read a uniform run (driver.Simulation):
    the grid of one level, on one rank; `last_dt` the failed step's dt."""

    def __init__(self, run, level: int, dt: float):
        self.model, self.params, self.resolved = run.model, run.solver.phys.params, run.resolved
        self.stages, self.lower, self.out_dir = run.plan.stages, run.lower, None
        self.t, self.step_count, self.last_dt = run.t, run.step_count, dt
        self.solver = LevelGrid(run, level)
        self.share = _OneBlock()

    def with_step(self, step: int, t: float) -> LevelView:
        """This view as of a later step (the bad state's)."""
        later = object.__new__(LevelView)
        later.__dict__.update(self.__dict__, step_count=step, t=t)
        return later


class LevelGrid:
    """The leaves' W (current after a check) as the uniform grid of one level: a coarser leaf's
    value at each cell it covers, a finer leaf's averaged; read a leaf at a time."""

    def __init__(self, run, level: int):
        solver = run.solver
        self.forest, self.N, self.level, self.source = solver.forest, solver.N, level, solver
        self.cells = tuple(r * solver.N * 2 ** level for r in solver.forest.roots)
        self.ghost, self.dx, self.offset = run.plan.ghost, solver.cell_width(level), ()
        self.phys, self.halo = solver.phys, _OneBlock()
        self._read = {}

    def primitive_at(self, cell: tuple, level: int | None = None) -> np.ndarray:
        """W of a cell of `level`'s grid (by default this grid's)."""
        level = self.level if level is None else level
        coords = tuple(int(i) // self.N for i in cell)
        leaf = self.forest.covering_leaf(level, coords)
        if leaf is None:  # (refined further: the mean of its children's cells)
            dim = len(cell)
            finer = [tuple(2 * i + (o >> d & 1) for d, i in enumerate(cell)) for o in range(2 ** dim)]
            return np.mean([self.primitive_at(c, level + 1) for c in finer], axis=0)
        if leaf not in self._read:
            self._read[leaf] = self.source.primitive_blocks([leaf])[leaf]
        shift = level - leaf.level
        return np.array(self._read[leaf][tuple((int(i) >> shift) - c * self.N for i, c in zip(cell, leaf.coords))])

    def refresh_primitives(self) -> None:
        """Forget what was read (the state changed)."""
        self._read.clear()

    def cell(self, linear: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(linear, self.cells))


class _OneBlock:
    """The block layout and halo of a run on one rank: every cell is rank 0's."""
    rank, ranks = 0, 1

    @staticmethod
    def owner(linear_index: int, rank: int) -> tuple:
        return 0, linear_index

    @staticmethod
    def bcast(value, root: int = 0):
        return value
