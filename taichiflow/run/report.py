"""What run.log says about a run once it is built and once it ends: the build's line (model,
backend, grid, scheme, set-up time) and the closing summary with its rates. Shared by the
command line (run/command.py) and the Python API (api/running.py), so neither depends on the
other for its wording."""
from __future__ import annotations

from .. import registry
from ..parallel.comm import world


def faces(scheme) -> str:
    """How the scheme computes its face fluxes: a method of its own (SHASTA: neither a
    reconstruction nor a Riemann solver is used), else reconstruction + Riemann solver."""
    if registry.methods.get(scheme.method).own_flux:
        return scheme.method
    return f"{scheme.reconstruction} + {scheme.riemann}"


def built_line(sim, ready_s: float) -> str:
    """The line of a uniform run built (run/driver.py's Simulation) in `ready_s` seconds."""
    scheme = sim.resolved.scheme
    return (f"model {sim.model.name} ({sim.model.source_file}), arch {sim.arch}, precision {sim.precision}, "
            f"fast_math {sim.fast_math}, cells {sim.cells}, scheme {faces(scheme)} + {scheme.integrator}; set up "
            f"(Taichi started, the initial state filled on the device) in {ready_s:.2f} s")


def adaptive_built_line(run, restarting: bool, ready_s: float) -> str:
    """The line of an adaptive run built (run/adaptive.py's AdaptiveRun): its initial state
    refined in `ready_s` seconds, unless a restart loads its own."""
    case = run.resolved
    ranks = world().size
    return (f"model {run.model.name} ({run.model.source_file}), arch {case.run.arch}, precision {run.precision}, "
            f"root cells {list(case.grid.cells)} in blocks of {case.amr.block_cells}, up to {case.amr.max_level} "
            f"levels more"
            + ("" if restarting else f"; the initial state refined in {ready_s:.2f} s to "
                                     f"{list(run.solver.forest.leaf_count_per_level())} leaf blocks per level")
            + (f"; on {ranks} MPI ranks, each its run of the blocks' Morton order (docs/amr.md)" if ranks > 1 else ""))


def summary(stats: dict) -> str:
    """The last line of a finished run; the rate counts only the steps of this process."""
    if not stats["steps_run"]:
        return (f"no steps left: the checkpoint is at this run's end (t = {stats['time']:.6g}, step "
                f"{stats['steps']}); the final outputs written again")
    first = stats["first_step"]
    steps = f"{stats['steps_run']} steps (from step {first} to {stats['steps']})" if first else f"{stats['steps']} steps"
    initial = f"initial row and snapshot {stats['initial_output_s']:.2f} s; " if stats["initial_output_s"] >= 0.005 else ""
    return (f"{initial}first step (including compile) {stats['first_step_s']:.2f} s; {steps} to t = {stats['time']:.6g} "
            f"in {stats['wall_s']:.2f} s ({stats['cell_updates_per_s']:.3g} cell-updates/s{after_first(stats)})")


def after_first(stats: dict) -> str:
    """The rate of the steps after the first (which compiles), their outputs included but not
    the initial ones: what a long run approaches, to set beside `taichiflow bench`."""
    steps, seconds = stats["steps_run"] - 1, stats["wall_s"] - stats["initial_output_s"] - stats["first_step_s"]
    if steps <= 0 or seconds <= 0:
        return ""
    return f"; {stats['cells'] * steps / seconds:.3g} after the first step"


def adaptive_summary(run, stats: dict) -> str:
    """The last line of a finished adaptive run: as summary()'s, the initial outputs and the
    first step (which compiles) apart, and the rate of the steps after it (leaf cells stepped)."""
    initial = f"initial row and snapshot {stats['initial_output_s']:.2f} s; " if stats["initial_output_s"] >= 0.005 else ""
    later = f"; {stats['after_first_per_s']:.3g} after the first step" if stats["after_first_per_s"] else ""
    return (f"{initial}first step (including compile) {stats['first_step_s']:.2f} s; {stats['steps_run']} steps to "
            f"step {stats['steps']}, t = {stats['time']:.6g} in {stats['wall_s']:.2f} s "
            f"({stats['leaf_cell_updates_per_s']:.3g} leaf cell-updates/s{later}, regrids {stats['regrid_s']:.2f} s in all)"
            + (f"; the leaves shared out anew after {run.solver.rebalances} regrids ([amr] rebalance_above)"
               if world().size > 1 else ""))
