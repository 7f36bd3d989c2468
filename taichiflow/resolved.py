"""ResolvedCase: a checked case as typed, frozen values, built once.

case.py checks a case against SCHEMA and returns plain nested data (its messages and
defaults stay there). `ResolvedCase.from_dict` turns that once into frozen dataclasses, one
per table, whose attributes the run layer and the kernel plan read (`case.scheme.cfl`, not
`case["scheme"]["cfl"]`), so a misspelt key is an AttributeError where it is written, not a
KeyError deep in a build. Values keep the Python types the checks gave them (a float stays a
float, an int an int: the kernels compile some of them in), lists become tuples, and the
tables whose keys depend on the data (model parameters, states, regions, perturbations)
become read-only `Record`s, their keys both items and attributes.

The dict form (`as_dict`) stays the case's document: what a run folder's case.toml and a
checkpoint record and what a restart compares, byte for byte. It keeps the order the checks
gave its keys (check_scheme appends the method's defaults), which the TOML text follows, so
it is kept as it came rather than rebuilt from the fields. What building a run settles (the
"auto" arch, precision and fast_math, the model's file and parameters, the initial values)
is `settled(...)`: a new ResolvedCase, never a change to this one.

Stdlib only: no Taichi, no numpy.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Union

from . import registry

__all__ = ["TABLES", "AmrTable", "BoundaryTable", "CaseInfo", "GridTable", "InitialTable", "Material", "ModelTable",
           "OutputTable", "ParallelTable", "Record", "ResolvedCase", "RetryTable", "RunTable", "SchemeTable",
           "TimeTable", "frozen", "thawed"]

NO_FILE = "<case>"  # the source of a case without a file (messages say so)


# --- free-form tables ----------------------------------------------------------------------

class Record(Mapping):
    """A read-only table whose keys depend on the data (a region's shape, a perturbation's
    kind, a state's variables, model parameters): `record["radius"]` and `record.radius`."""
    __slots__ = ("_items",)

    def __init__(self, items: Mapping = ()):
        object.__setattr__(self, "_items", {str(k): frozen(v) for k, v in dict(items).items()})

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getattr__(self, name):
        if name.startswith("_"):  # (not a key: also keeps unpickling from recursing)
            raise AttributeError(name)
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(f"no key '{name}' here (keys: {', '.join(self._items) or 'none'})") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"a resolved case is frozen: cannot set '{name}'")

    def __delattr__(self, name):
        raise AttributeError(f"a resolved case is frozen: cannot delete '{name}'")

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return f"Record({self._items!r})"

    def __reduce__(self):
        return Record, (self._items,)

    def as_dict(self) -> dict:
        """The table as the case file's data: dicts and lists (what host-side code takes)."""
        return thawed(self)


def frozen(value):
    """Tables as Records, lists as tuples, all the way down; other values as they are."""
    if isinstance(value, Record):
        return value
    if isinstance(value, Mapping):
        return Record(value)
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    return value


def thawed(value):
    """frozen's inverse: Records as dicts, tuples as lists (what case.py returns)."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thawed(v) for v in value]
    return value


def _optional(table: Mapping, key: str, convert=lambda v: v):
    """A key the schema may leave out (OMIT): its value converted, or None."""
    return convert(table[key]) if key in table else None


class _Table:
    """What every table dataclass shares: built from its mapping (keys the mapping lacks take
    the field's default: the schema's), and each field by its schema name."""
    __slots__ = ()

    @classmethod
    def of(cls, table):
        """The table itself, or one built from its mapping (as case.py's dict has it)."""
        return table if isinstance(table, cls) else cls.from_mapping(table)

    @classmethod
    def from_mapping(cls, table: Mapping):
        names = {f.name for f in fields(cls)}
        return cls(**{k: frozen(v) for k, v in table.items() if k in names})


# --- the tables ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CaseInfo(_Table):
    """[case]"""
    name: str
    description: str = ""
    units: Record = Record()


@dataclass(frozen=True, slots=True)
class ModelTable(_Table):
    """[model]: its name (after a build: the file that was loaded) and the parameters given
    (after a build: every parameter, the model's defaults filled)."""
    name: str
    params: Record = Record()


@dataclass(frozen=True, slots=True)
class RunTable(_Table):
    """[run]: the backend (after a build: "auto" settled) and performance-only choices."""
    precision: str = "auto"
    arch: str = "auto"
    fast_math: Union[str, bool] = "auto"
    keep_last_good: bool = True
    segment: Union[int, tuple] = ()
    block_dim: int = 0
    reconstruct: str = "auto"
    shuffle: Union[str, bool] = "auto"
    fuse: Union[str, bool] = "auto"
    skip_idle: Union[str, bool] = "auto"
    idle_tile: int = 16


@dataclass(frozen=True, slots=True)
class ParallelTable(_Table):
    """[parallel]: MPI blocks per axis (() chosen from the ranks) and the ghost slabs' staging."""
    ranks: tuple = ()
    exchange: str = "auto"


@dataclass(frozen=True, slots=True)
class Material(_Table):
    """One entry of [materials]: stiffened-gas parameters."""
    gamma: float
    pc: float = 0.0


@dataclass(frozen=True, slots=True)
class GridTable(_Table):
    """[grid]: cells per axis and the box."""
    cells: tuple
    lower: tuple
    upper: tuple

    @property
    def dim(self) -> int:
        return len(self.cells)


@dataclass(frozen=True, slots=True)
class AmrTable(_Table):
    """[amr]: blocks, levels, the pool and the refinement criteria (docs/amr.md)."""
    block_cells: int = 16
    max_level: int = 2
    capacity: int = 0
    grow: bool = True
    rebalance_above: float = 1.1
    regrid_every: int = 4
    refine_above: float = 0.8
    derefine_below: float = 0.2
    gradient_above: float = 0.0
    epsilon: float = 0.01
    fields: tuple = ()
    regions: tuple = ()
    criteria_max_level: Optional[int] = None

    @property
    def criteria_up_to(self) -> int:
        """The finest level the criteria refine to outside the regions: criteria_max_level,
        else max_level (a region's blocks may still go to max_level)."""
        return self.max_level if self.criteria_max_level is None else self.criteria_max_level

    def pool_slots(self, root_blocks: int, ranks: int = 1) -> int:
        """The pool's first size in block slots (each rank's): capacity, else 64 per root block
        of the rank's share, at least 512 (a pool that runs full grows: [amr] grow)."""
        return self.capacity or max(64 * -(-root_blocks // ranks), 512)


@dataclass(frozen=True, slots=True)
class RetryTable(_Table):
    """[scheme.retry]: the keys a retried step changes (None: as the scheme has it)."""
    reconstruction: Optional[str] = None
    limiter: Optional[str] = None
    riemann: Optional[str] = None
    wave_speeds: Optional[str] = None

    def given(self) -> dict:
        """The keys the case sets, in the schema's order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def __bool__(self) -> bool:
        return bool(self.given())


@dataclass(frozen=True, slots=True)
class SchemeTable(_Table):
    """[scheme], with the method's defaults filled (check_scheme). None: a key the case may
    leave out and the numerics then default (weno_epsilon, the SHASTA coefficients)."""
    method: str = registry.FINITE_VOLUME
    reconstruction: str = "weno5"
    limiter: str = "mc"
    theta: float = 1.5
    weno_epsilon: Optional[float] = None
    variables: str = "primitive"
    riemann: str = "hllc"
    wave_speeds: str = "davis"
    musta_stages: int = 3
    force_fallback: bool = False
    shasta_diffusion: Optional[float] = None
    shasta_antidiffusion: Optional[float] = None
    positivity_fallback: bool = True
    density_limiter: bool = False
    positivity_limiter: bool = False
    dimensional_splitting: bool = False
    integrator: str = "lsrk3"
    cfl: float = 0.4
    retry: RetryTable = RetryTable()

    @classmethod
    def from_mapping(cls, table: Mapping):
        given = {k: frozen(v) for k, v in table.items() if k in cls.__dataclass_fields__ and k != "retry"}
        return cls(**given, retry=RetryTable.from_mapping(table.get("retry") or {}))

    def retried(self) -> SchemeTable:
        """The scheme of a retried step: this one with the retry's keys."""
        return replace(self, **self.retry.given())

    def mapping(self) -> dict:
        """The table as the numerics' factories take it (numerics/reconstruction.py, riemann.py,
        the registry's methods): a mapping read with .get, since a registered or model-provided
        reconstruction or Riemann solver is a function of (scheme, phys) and reads what it
        needs. Keys left out stay out; the retry table as the keys it sets."""
        table = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "retry"}
        table = {k: v for k, v in table.items() if v is not None}
        return {**table, "retry": self.retry.given()}


@dataclass(frozen=True, slots=True)
class TimeTable(_Table):
    """[time]"""
    end: float
    max_steps: int = 0


@dataclass(frozen=True, slots=True)
class BoundaryTable(_Table):
    """[boundary]: per axis of the grid its [lower, upper] kinds (None beyond the grid), the
    inflow states and the values hydraulic faces impose (None where no face imposes them)."""
    x: Optional[tuple] = None
    y: Optional[tuple] = None
    z: Optional[tuple] = None
    inflow: Record = Record()
    discharge: Optional[Record] = None
    depth: Optional[Record] = None
    stage: Optional[Record] = None

    def kinds(self, dim: int) -> tuple:
        """Per axis of a dim-dimensional grid, the kinds of its lower and upper face."""
        return tuple(tuple(getattr(self, "xyz"[d])) for d in range(dim))


@dataclass(frozen=True, slots=True)
class InitialTable(_Table):
    """[initial]: the background state, regions and perturbations (Records: their keys follow
    their shape or kind), and how cells hold their values ("auto" until a build settles it)."""
    background: Record
    regions: tuple = ()
    perturbations: tuple = ()
    values: str = "auto"
    quadrature_points: int = 4


@dataclass(frozen=True, slots=True)
class OutputTable(_Table):
    """[output]"""
    interval: float = 0.0
    fields: tuple = ()
    diagnostics_every: int = 1
    checkpoint_interval: float = 0.0
    checkpoint_wall: float = 0.0


# The class of each table of the schema (case.SCHEMA's sections; [materials]: Material per name).
TABLES = {"case": CaseInfo, "model": ModelTable, "run": RunTable, "parallel": ParallelTable, "materials": Material,
          "grid": GridTable, "amr": AmrTable, "scheme": SchemeTable, "time": TimeTable, "boundary": BoundaryTable,
          "initial": InitialTable, "output": OutputTable}


# --- the case ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ResolvedCase:
    """A checked case, every table typed and frozen (see the module docstring). Build it with
    `from_dict` (case.load_case's dict, or Case.resolved); `as_dict()` gives its document."""
    source: str                    # the case file ("<case>" for one without a file): messages name it
    case: CaseInfo
    model: ModelTable
    run: RunTable
    parallel: ParallelTable
    materials: Record              # name -> Material
    grid: GridTable
    amr: Optional[AmrTable]        # None: a uniform grid
    scheme: SchemeTable
    time: TimeTable
    boundary: BoundaryTable
    initial: InitialTable
    output: OutputTable
    warnings: tuple = ()           # what the checks warn about (unused scheme keys, regions covering no cell)
    # the dict form as checked (as_dict), kept in its keys' order; equal documents, equal cases
    _document: Mapping = field(default=None, repr=False, hash=False)

    @classmethod
    def from_dict(cls, case: Mapping) -> ResolvedCase:
        """The resolved case of case.py's checked dict (defaults filled, "_source" naming the
        file); not checked again: that dict is the schema's output. The dict is copied."""
        doc = copy.deepcopy(dict(case))
        materials = doc.get("materials", {})
        return cls(source=str(doc.get("_source", NO_FILE)), case=CaseInfo.from_mapping(doc["case"]),
                   model=ModelTable.from_mapping(doc["model"]), run=RunTable.from_mapping(doc["run"]),
                   parallel=ParallelTable.from_mapping(doc["parallel"]),
                   materials=Record({name: Material.from_mapping(m) for name, m in materials.items()}),
                   grid=GridTable.from_mapping(doc["grid"]),
                   amr=AmrTable.from_mapping(doc["amr"]) if "amr" in doc else None,
                   scheme=SchemeTable.from_mapping(doc["scheme"]), time=TimeTable.from_mapping(doc["time"]),
                   boundary=BoundaryTable.from_mapping(doc["boundary"]),
                   initial=InitialTable.from_mapping(doc["initial"]), output=OutputTable.from_mapping(doc["output"]),
                   warnings=tuple(doc.get("_warnings", ())), _document=doc)

    @classmethod
    def of(cls, case) -> ResolvedCase:
        """A ResolvedCase as it is; a checked dict (case.load_case's) resolved; a taichiflow.Case
        as its resolved case."""
        if isinstance(case, ResolvedCase):
            return case
        resolved = getattr(case, "resolved", None)
        if isinstance(resolved, ResolvedCase):
            return resolved
        return cls.from_dict(case)

    def as_dict(self) -> dict:
        """The dict form (with "_source", and "_warnings" if any): a copy, free to change. What
        a run folder's case.toml and a checkpoint record (toml_text.dump_toml of it)."""
        return copy.deepcopy(self._document)

    def __deepcopy__(self, memo) -> ResolvedCase:
        return self  # (frozen all the way down)

    # --- derived values ----------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self.grid.dim

    @property
    def boundary_kinds(self) -> tuple:
        """Per axis of the grid, the kinds of its lower and upper face."""
        return self.boundary.kinds(self.dim)

    @property
    def initial_values(self) -> str:
        """[initial] values settled: "point" for finite differences, else "average" (auto)."""
        chosen = self.initial.values
        if chosen == "auto":
            chosen = "point" if self.scheme.method == registry.FINITE_DIFFERENCE else "average"
        return chosen

    def settled(self, *, arch: str, precision: str, fast_math: bool, model_file: str, params: Mapping) -> ResolvedCase:
        """The case as a build runs it, a new ResolvedCase: [run] arch, precision and fast_math as
        Taichi started, [model] name the model file loaded (its absolute path: the saved case
        repeats the run from any folder) and params every parameter, [initial] values settled.
        Its document is what the run folder's case.toml records."""
        doc = self.as_dict()
        doc["run"].update(arch=arch, precision=precision, fast_math=fast_math)
        doc["model"]["name"] = model_file
        doc["model"]["params"] = dict(params)
        doc["initial"]["values"] = self.initial_values
        return ResolvedCase.from_dict(doc)
