"""What an adaptive run writes into its folder: snapshots of the leaves (one .vtu each, listed
in series.pvd), diagnostics rows (time, step, dt, fallbacks, retries, repairs, totals of the conserved
variables, leaf blocks per level, leaf cells, regrid seconds) and the resolved case."""
from __future__ import annotations

from pathlib import Path

from .. import case as case_mod
from ..errors import CaseError
from ..io import DiagnosticsCSV, PvdSeries
from ..io_vtu import write_leaves_vtu
from ..parallel.comm import world
from ..resolved import ResolvedCase
from .folder import remove_snapshots_after
from .restart import truncate_diagnostics


def snapshot_fields(case: ResolvedCase, model) -> list:
    """The [output] fields a snapshot of the leaves holds: the primitive variables named (all
    by default); derived fields (gradients across level jumps) are not written yet."""
    layout = model.primitive
    names = case.output.fields or layout.names
    derived = [name for name in names if name not in layout.sizes]
    if derived:
        raise CaseError(f"{case.source}: [output] fields: {', '.join(derived)}: derived fields are not written by "
                        f"[amr] runs yet (primitive variables: {', '.join(layout.names)})")
    return list(names)


class Nowhere:
    """The series and diagnostics file of a rank other than 0 (rank 0 writes them)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class AdaptiveOutputs:
    """The files of one adaptive run in `folder` (on many ranks, rank 0 writes them; every
    rank takes part in what they gather)."""

    def __init__(self, run, folder: Path, resume: dict | None = None):
        """resume: the header of the checkpoint a restarted run continues from (the snapshots
        and diagnostics rows written after it, by the run that went on, are dropped)."""
        self.run, self.folder = run, Path(folder)
        self.writes = world().rank == 0
        self.fields = snapshot_fields(run.resolved, run.model)
        self.count, self.last_time = 0, 0.0
        if resume:
            self.count, self.last_time = resume["snapshot_index"], resume["last_snapshot_time"]
        conserved = run.model.conserved
        totals = [f"total_{name}" if conserved.sizes[name] == 1 else f"total_{name}_{'xyz'[c]}"
                  for name in conserved.names for c in range(conserved.sizes[name])]
        levels = [f"leaf_blocks_{level}" for level in range(run.solver.forest.max_level + 1)]
        extrema = [f"{how}_{c}" for c in run.model.primitive.component_names() for how in ("min", "max")]
        jump = ["p_amplification"] if run.shock_jump else []  # (max pressure over the case's shock jump)
        self.columns = ["time", "step", "dt", "fallbacks", "retries", "repairs", *totals, *extrema, *jump, *levels, "leaf_cells",
                        "regrid_s"]
        self.series = self.csv = Nowhere()
        if not self.writes:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.series = PvdSeries(self.folder / "series.pvd", resume=resume is not None)
        if resume:
            self.series.truncate_after(self.last_time)
            truncate_diagnostics(self.folder / "diagnostics.csv", resume["step"])
            remove_snapshots_after(self.folder, self.count - 1)  # (series.pvd lists none of them)
        self.csv = DiagnosticsCSV(self.folder / "diagnostics.csv", self.columns, resume=resume is not None)
        (self.folder / "case.toml").write_text(case_mod.dump_toml(run.case))  # (the dict form: the run's document)

    def row(self, dt: float) -> None:
        run = self.run
        forest = run.solver.forest
        low, high = run.solver.extrema()
        extrema = [float(value) for pair in zip(low, high) for value in pair]
        jump = []
        if run.shock_jump:
            jump = [float(high[run.model.primitive.component_names().index(run.model.pressure)]) / run.shock_jump]
        fallbacks = run.solver.take_fallback_count()  # (face states replaced since the last row)
        repairs = run.solver.take_repair_count()  # (cells the model's repair() changed since the last row)
        retries = run.take_retry_count()  # (steps redone with the retry scheme since the last row)
        self.csv.write([run.t, run.step_count, dt, fallbacks, retries, repairs, *run.solver.totals(), *extrema, *jump,
                        *forest.leaf_count_per_level(), run.leaf_cells(), run.regrid_seconds])

    def snapshot(self) -> Path:
        """The leaves' primitive state at the run's time as snapshot_NNNN.vtu."""
        run = self.run
        blocks = []
        for block, w in run.solver.primitive_blocks().items():  # (gathered on rank 0)
            lower, width = block_corner(run.solver, block)
            blocks.append((lower, width, block.level, named_fields(run.model.primitive, self.fields, w)))
        name = f"snapshot_{self.count:04d}.vtu"
        if self.writes:
            write_leaves_vtu(self.folder / name, blocks, list(run.resolved.grid.cells), time=run.t)
        self.series.add(run.t, name)
        self.count, self.last_time = self.count + 1, run.t
        return self.folder / name

    def close(self) -> None:
        self.csv.close()



def block_corner(solver, block) -> tuple:
    """(its lower corner, its cell widths) per axis."""
    width = solver.cell_width(block.level)
    return [a + c * solver.N * h for (a, _), c, h in zip(solver.extent, block.coords, width)], width


def named_fields(layout, names, w) -> dict:
    """{name: the component(s) of W (cells..., nW) it names}."""
    return {name: w[..., layout.offsets[name]] if layout.sizes[name] == 1
            else w[..., layout.offsets[name]:layout.offsets[name] + 3] for name in names}


def write_plane(run, path: Path, z: float, fields=None) -> int:
    """The cells of a 3D adaptive run's leaves on the plane z (the layer of each leaf the plane
    crosses) as a 2D adaptive snapshot (.vtu: `taichiflow view --blocks` draws it). Only
    those leaves leave the device, so a deep forest's plane stays small. Returns the leaves cut."""
    solver = run.solver
    if solver.dim != 3:
        raise ValueError(f"a plane of the leaves needs a 3D run, not {solver.dim}D")
    (low, high) = solver.extent[2]
    if not low <= z < high:
        raise ValueError(f"the plane z = {z} misses the grid's z range [{low}, {high})")
    names = list(fields or run.model.primitive.names)
    crossed = {}
    for block in solver.forest.leaves:
        lower, width = block_corner(solver, block)
        layer = int((z - lower[2]) // width[2])
        if 0 <= layer < solver.N:
            crossed[block] = layer
    blocks = []
    for block, w in solver.primitive_blocks(crossed).items():
        lower, width = block_corner(solver, block)
        blocks.append((lower[:2], width[:2], block.level, named_fields(run.model.primitive, names, w[:, :, crossed[block]])))
    write_leaves_vtu(path, blocks, list(run.resolved.grid.cells[:2]), time=run.t)
    return len(blocks)
