"""From a resolved case to a solver holding its initial state: Taichi started, the model loaded
and bound to its parameters, the case checked against it and settled (a new ResolvedCase: the
"auto" settings and the model as built, never a change to the case given), the kernel plan
resolved, the solver built and the initial state set on the device."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import taichi as ti

from ..errors import CaseError, ModelError
from ..initial import state_vector
from ..kernels import plan as kernel_plan
from ..kernels.initial import CellAverage, make_initial_fill
from ..kernels.solver import Boundaries, Grid, Solver
from ..loadcheck import check_model
from ..model import load_model
from ..bound_model import BoundModel
from ..requirements import check_case_against_model
from ..resolved import NO_FILE, ResolvedCase
from ..parallel.comm import world
from .backend import init_taichi
from .blocks import halo_of, share_of
from .limits import check_limits
from .states import imposed_values, resolve_states


class Built(NamedTuple):
    """What a run is made of (see build)."""
    arch: str
    precision: str
    fast_math: bool
    model: object
    params: dict
    plan: object
    solver: Solver
    shock_jump: object     # the pressure jump of the case's shock (p_max / jump is a diagnostic), or None
    share: object = None   # this rank's block of the grid and the layout of all (run/blocks.RankShare)
    case: ResolvedCase = None  # the case as built: its "auto" settings, model file and parameters settled


def boundary_kinds(case) -> tuple:
    """Per axis of the grid, the kinds of its lower and upper face (ResolvedCase.boundary_kinds)."""
    return ResolvedCase.of(case).boundary_kinds


def plan_for(case, arch: str, precision: str, cells=None, kinds=None, model=None):
    """The kernel plan of a resolved case ([scheme], [run], the grid and its boundaries), or of a
    block of its grid (cells, and its faces' kinds), for its model."""
    case = ResolvedCase.of(case)
    try:
        idle_model = model is not None and "idle" in model.functions
        return kernel_plan.resolve(case.scheme, case.run, arch, precision, cells or case.grid.cells,
                                   kinds or case.boundary_kinds, idle_model=idle_model)
    except ValueError as err:
        raise CaseError(f"{case.source}: {err}") from None


def find_case_model(case: ResolvedCase):
    """The case's model: a relative path from the case file's folder (then the current one),
    a name from models/ beside that folder first (model.find_model_file). Its source_file, the
    absolute path of the file loaded, is what the settled case records (ResolvedCase.settled),
    so that the case.toml a run saves repeats the run from any folder."""
    where = case.source
    case_dir = Path(where).resolve().parent if where != NO_FILE else None
    search = [case_dir.parent / "models"] if case_dir else []
    try:
        return load_model(case.model.name, search, base_dir=case_dir)
    except ModelError as err:
        if str(err).startswith(("unknown model", "model file")):
            raise ModelError(f"{where}: [model] name: {err}") from None
        raise


def load_case_model(case: dict):
    """find_case_model for a case in its dict form, whose [model] name then records the file
    loaded, as a run's case.toml does (for scripts holding the dict; the build settles a new
    ResolvedCase instead)."""
    model = find_case_model(ResolvedCase.of(case))
    case["model"]["name"] = model.source_file
    return model


def initial_values(case) -> str:
    """[initial] values resolved: what the scheme holds, cell averages of U (finite volumes)
    or point values (finite differences)."""
    return ResolvedCase.of(case).initial_values


def cell_average(case, phys):
    """The fill's CellAverage where the case's initial values are cell averages, else None."""
    case = ResolvedCase.of(case)
    if case.initial_values != "average":
        return None
    exact = BoundModel(phys.model, phys.params, ti.f64, globals_field=phys.globals_field)  # (no new field)
    return CellAverage(case.initial.quadrature_points, phys.U.n, exact.cons, exact.prim)


class Prepared(NamedTuple):
    """What every build starts from: Taichi started, the model loaded, bound and checked."""
    arch: str
    precision: str
    fast_math: bool
    dtype: object
    model: object
    params: dict
    initial: dict          # [initial] resolved against the model
    inflow: dict           # {(axis, side): primitive vector} of the inflow faces
    shock_jump: object
    case: ResolvedCase     # the case settled (ResolvedCase.settled): what the run records


def prepare(case, comm) -> Prepared:
    """Taichi started, the case's model loaded, bound to its parameters and checked against
    the case, and the case settled: its "auto" run settings, model file and parameters as
    built (a new ResolvedCase in Prepared.case; `case` is not changed)."""
    case = ResolvedCase.of(case)
    where, run = case.source, case.run
    arch, precision, fast_math = init_taichi(run.arch, run.precision, run.fast_math, comm.local_rank, comm.size)
    dtype = ti.f32 if precision == "f32" else ti.f64
    model = find_case_model(case)
    params = model.resolve_params(case.model.params, f"{where}: [model] params")
    case = case.settled(arch=arch, precision=precision, fast_math=fast_math, model_file=model.source_file,
                        params=params)
    check_model(model, params, dtype)
    check_case_against_model(case.as_dict(), model, where)  # (requirements.py reads the dict form: its tests do)
    initial, inflow_states, shock_jump = resolve_states(case, model, params)
    inflow = {("xyz".index(face[0]), 0 if face.endswith("lower") else 1): state_vector(state, model.primitive)
              for face, state in inflow_states.items()}
    return Prepared(arch, precision, fast_math, dtype, model, params, initial, inflow, shock_jump, case)


def build(case) -> Built:
    """Everything a run of `case` (a ResolvedCase, or case.load_case's dict) needs; Built.case
    is the case settled (Prepared.case): what the output folder records."""
    case = ResolvedCase.of(case)
    where = case.source
    if case.amr is not None:
        raise CaseError(f"{where}: [amr]: an adaptive case runs on the block forest (taichiflow run, or "
                        f"taichiflow.run.adaptive.AdaptiveRun), not on the uniform solver")
    comm = world()
    prepared = prepare(case, comm)
    arch, precision, dtype, model, params, case = (prepared.arch, prepared.precision, prepared.dtype, prepared.model,
                                                   prepared.params, prepared.case)
    layout = model.primitive
    plan = plan_for(case, arch, precision, model=model)
    share = share_of(case, comm, case.boundary_kinds, plan.ghost, plan.axes_read_first)
    if share.decomposition is not None:  # (the kernels of this rank's block)
        plan = plan_for(case, arch, precision, share.cells, share.kinds, model=model)
    check_limits(case, plan, model, where)
    whole, lower, upper = case.grid.cells, case.grid.lower, case.grid.upper
    grid = Grid(share.cells, lower, upper, share.offset, whole if share.offset else ())
    phys = BoundModel(model, params, dtype)
    try:  # (before the solver: a bad [initial] table fails before anything compiles)
        fill = make_initial_fill(prepared.initial, layout, whole, lower, upper, params, dtype,
                                 block_offset=share.offset or None, block_cells=share.cells,
                                 average=cell_average(case, phys))
    except ValueError as err:
        raise ModelError(f"{where}: {err}") from None
    halo = halo_of(share, comm, plan.ghost, layout.n, dtype, arch, case.parallel.exchange)
    solver = Solver(phys, plan, grid, Boundaries(share.kinds, prepared.inflow, imposed_values(case)), halo=halo)
    fill(solver.W)
    solver.transfer.conserve()
    return Built(arch, precision, prepared.fast_math, model, params, plan, solver, prepared.shock_jump, share, case)
