"""The one catalogue of scheme names, with what each choice needs and reads.

Reconstructions, limiters, reconstructed variables, wave-speed estimates, Riemann solvers,
integrators and boundary kinds are listed here and nowhere else in the package: the case
schema takes its choices (and did-you-mean hints) from here, requirements.py what a case
needs from its model, `taichiflow check` the solvers a model supports, the failure advice
which choices are robust, and the numerics' factory tables their entries. So a new Riemann
solver is one function in numerics/ plus one entry below, or one `register_riemann_solver`
call made anywhere at run time (a test file, a plug-in) with no edit to the package.

Taichi-free: a factory is an import path "package.module:attribute" (or a callable), resolved
only when a kernel is built, so a case can be checked without Taichi.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Union

from .errors import UnknownNameError, suggest

__all__ = ["BoundaryKindEntry", "Catalogue", "FINITE_DIFFERENCE", "FINITE_VOLUME", "IntegratorEntry", "SHASTA",
           "LimiterEntry", "MODEL_ROLES", "MethodEntry", "methods",
           "ReconstructionEntry", "RiemannSolverEntry", "VariablesEntry", "WaveSpeedsEntry",
           "boundary_kinds", "integrators", "is_diffusive", "limiters", "reconstructed_variables",
           "reconstructions", "register_integrator", "register_limiter", "register_model_solvers",
           "register_reconstruction",
           "register_riemann_solver", "resolve", "riemann_solvers", "wave_speeds"]

Target = Union[str, Callable]  # "package.module:attribute", or the object itself

# The primitive-variable roles a model may name (Model(velocity=..., density=..., pressure=...)).
MODEL_ROLES = ("velocity", "density", "pressure")


def resolve(target):
    """The object an import path "package.module:attribute" names; anything else is itself."""
    if not isinstance(target, str):
        return target
    module, sep, attribute = target.partition(":")
    if not (sep and module and attribute):
        raise ValueError(f"expected an import path 'package.module:attribute', got {target!r}")
    found = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


# --- entries -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReconstructionEntry:
    """`factory(scheme, phys)` builds a numerics.reconstruction.Reconstruction whose ghost is
    `reach`: the reach is known before anything is built, because kernel-shape choices
    (per cell or per face, fusion, ghost layers) depend on it."""
    name: str
    factory: Target
    reach: int                                # cells read on each side of a face: ghost cells a side
    options: tuple[str, ...] = ()             # [scheme] keys it reads
    needs_model: bool = False                 # built from the model's physics (a time predictor)
    variables: tuple[str, ...] | None = None  # reconstructed variables it works on; None: all
    variables_reason: str = ""                # why not the others, for the error message
    diffusive: bool = False                   # a robust choice, suggested when a run fails
    doc: str = ""
    courant_sum: float | None = None          # stable while the axes' Courant numbers add up to at most this
    #                                           (over the axes a step crosses together: case_rules.check_stable_cfl)

    def load(self) -> Callable:
        return resolve(self.factory)


@dataclass(frozen=True)
class LimiterEntry:
    """`function` is the slope limiter (a, b) -> slope, or, when the limiter reads options,
    a factory that takes them as keyword arguments and returns one."""
    name: str
    function: Target
    options: tuple[str, ...] = ()
    doc: str = ""

    def load(self) -> Callable:
        return resolve(self.function)


@dataclass(frozen=True)
class VariablesEntry:
    """Reconstructed variables: `factory(phys)` builds the transform (numerics/variables.py).
    per_cell: the transform of a cell depends on that cell alone (then a sweep may
    reconstruct each cell once for both of its faces)."""
    name: str
    factory: Target
    per_cell: bool
    needs_hooks: tuple[str, ...] = ()         # model functions it calls, e.g. ("eigenvectors",)
    doc: str = ""

    def load(self) -> Callable:
        return resolve(self.factory)


@dataclass(frozen=True)
class WaveSpeedsEntry:
    """Signal-speed estimate of the HLL family: `function(phys, wL, wR)` -> (sL, sR), plain
    Python inlined into the solver while it compiles."""
    name: str
    function: Target
    needs_hooks: tuple[str, ...] = ()
    doc: str = ""

    def load(self) -> Callable:
        return resolve(self.function)


@dataclass(frozen=True)
class RiemannSolverEntry:
    """`factory(phys, scheme)` returns a Taichi function (wL, wR, dt_dx) -> flux. A solver
    that reads "wave_speeds" (in `options`) also needs the hooks of the chosen estimate."""
    name: str
    factory: Target
    needs_hooks: tuple[str, ...] = ()         # model functions, e.g. ("hllc_star",)
    needs_roles: tuple[str, ...] = ()         # model roles (MODEL_ROLES)
    options: tuple[str, ...] = ()             # [scheme] keys it reads
    diffusive: bool = False                   # a robust choice, suggested when a run fails
    doc: str = ""
    provided_by: str | None = None            # the model that provides it (Model.riemann_solver), else None
    courant_sum: float | None = None          # as ReconstructionEntry's (FORCE's alpha = dimension: every axis)
    # Many flux evaluations a face: solving the faces across a fused walk twice costs more than
    # the memory it saves, so [run] fuse = "auto" keeps a sweep per axis (kernels/plan.py).
    costly: bool = False

    def load(self) -> Callable:
        return resolve(self.factory)


@dataclass(frozen=True)
class IntegratorEntry:
    """`stages`: the tuple of numerics.integrators.Stage that drives the stage update.
    `ssp`: strong-stability preserving (each stage a convex combination of forward Euler
    steps), so it keeps the positivity a forward Euler step keeps; the failure advice reads it."""
    name: str
    stages: Target
    doc: str = ""
    ssp: bool = False
    courant_sum: float | None = None          # as ReconstructionEntry's (one forward Euler step: first-order
    #                                           upwinding's limit, which no reconstruction raises)

    def load(self) -> tuple:
        return tuple(resolve(self.stages))


@dataclass(frozen=True)
class MethodEntry:
    """A discretisation: how a face flux is made, and the [scheme] choices it takes.
    riemann and variables: the choices it accepts (None: all), the first its default."""
    name: str
    riemann: tuple[str, ...] | None
    variables: tuple[str, ...] | None
    default_riemann: str
    default_variables: str
    conservative_only: bool = False           # refuses models with advected (non-conservative) variables
    per_face: bool = False                    # its face fluxes have no per-cell face states
    variables_hooks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # extra hooks of a variables choice
    doc: str = ""
    # A method that makes its own face flux from a stencil, using neither the reconstruction nor
    # the Riemann solver (the case keys stay, ignored): factory(phys, scheme) -> Taichi function
    # (stencil of 2 reach primitive states in the normal frame, dt_dx) -> normal-frame flux.
    face_flux: Target | None = None
    reach: int = 0                            # with face_flux: cells its stencil reads a side (ghost layers)
    options: tuple[tuple[str, object], ...] = ()  # [scheme] keys only it reads, with their defaults

    def hooks_for(self, variables: str) -> tuple[str, ...]:
        return dict(self.variables_hooks).get(variables, ())

    @property
    def own_flux(self) -> bool:
        """Whether its faces use no reconstruction and no Riemann solver (face_flux)."""
        return self.face_flux is not None

    def load(self) -> Callable:
        return resolve(self.face_flux)


@dataclass(frozen=True)
class BoundaryKindEntry:
    """A boundary kind and what it needs; the ghost fill itself lives with the kernels."""
    name: str
    doc: str
    needs_roles: tuple[str, ...] = ()         # model roles, e.g. the velocity a wall reflects
    role_reason: str = ""                     # what the role is for, for the error message
    needs_state: bool = False                 # a state per face in [boundary.inflow]
    both_sides: bool = False                  # must be the kind of both faces of its axis
    time_dependent: bool = False              # ghost values change during the run
    imposes: tuple[str, ...] = ()             # values given per face in [boundary] <name> (an inlet's discharge)
    needs_variables: tuple[str, ...] = ()     # primitive variables the model must have, by name
    needs_params: tuple[str, ...] = ()        # model parameters the ghost fill reads


# --- catalogues ----------------------------------------------------------------------------------

class Catalogue:
    """The entries of one kind, in registration order (the order messages list them in)."""

    def __init__(self, what: str, entries=()):
        self.what = what
        self._entries: dict[str, object] = {}
        for entry in entries:
            self.add(entry)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def entries(self) -> tuple:
        return tuple(self._entries.values())

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name):
        """The entry of `name`; an unknown name raises UnknownNameError naming the choices."""
        if name in self:
            return self._entries[name]
        choices = ", ".join(self._entries)
        raise UnknownNameError(f"unknown {self.what} {name!r}{suggest(name, self._entries)}; "
                               f"choices: {choices}")

    def add(self, entry, replace: bool = False):
        """Register `entry`; a name already taken is refused unless replace=True."""
        if not (isinstance(entry.name, str) and entry.name.strip()):
            raise ValueError(f"a {self.what} needs a non-empty name, got {entry.name!r}")
        if entry.name in self._entries and not replace:
            raise ValueError(f"{self.what} '{entry.name}' is already registered (replace=True replaces it)")
        self._entries[entry.name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Forget `name` (tests undo their registrations with it)."""
        self.get(name)
        del self._entries[name]


FINITE_VOLUME, FINITE_DIFFERENCE, SHASTA = "finite_volume", "finite_difference", "shasta"

methods = Catalogue("method", [
    MethodEntry(FINITE_VOLUME, riemann=None, variables=None, default_riemann="hllc",
                default_variables="primitive",
                doc="cell averages; face states reconstructed from them and a Riemann solver per face. "
                    "Robust and sharp at shocks and material interfaces; second order in multi-D on "
                    "nonlinear flow whatever the reconstruction"),
    MethodEntry(FINITE_DIFFERENCE, riemann=("rusanov",), variables=("conserved", "characteristic"),
                default_riemann="rusanov", default_variables="conserved", conservative_only=True,
                per_face=True, variables_hooks=(("characteristic", ("eigenvectors", "jacobians")),),
                doc="point values; the flux split with the Rusanov speed and its two parts reconstructed "
                    "(Shu & Osher): the reconstruction's order in 1D, 2D and 3D"),
    MethodEntry(SHASTA, riemann=None, variables=("conserved",), default_riemann="rusanov",
                default_variables="conserved", conservative_only=True, per_face=True,
                face_flux="taichiflow.numerics.shasta:make_shasta_flux", reach=7,
                options=(("shasta_diffusion", 0.125), ("shasta_antidiffusion", 0.125)),
                doc="cell averages; the relativistic SHASTA flux-corrected transport of Rischke, Bernard & Maruhn "
                    "1995 (Boris & Book 1973): a half step of dt/2 for the velocity and pressure terms, then "
                    "transport with Boris & Book's moving-grid interpolation, phoenical anti-diffusion (coefficient "
                    "1/8 - eps^2/2) and the strong limiter, component by component on U; a corrected state the model "
                    "rejects keeps its transported value, and a cell whose transported value it rejects takes "
                    "Lax-Friedrichs fluxes on both faces (positivity_fallback). Classical with integrator = "
                    "'euler'. Needs the model's flux, velocity role and map between W and U; reconstruction and "
                    "riemann are ignored"),
])

_RECON = "taichiflow.numerics.reconstruction:"
_RIEMANN = "taichiflow.numerics.riemann:"
_VARIABLES = "taichiflow.numerics.variables:"
_INTEGRATORS = "taichiflow.numerics.integrators:"
_MODEL_SOLVER = "taichiflow.numerics.riemann:make_model_solver"

reconstructions = Catalogue("reconstruction", [
    ReconstructionEntry("first_order", _RECON + "make_first_order", reach=1, diffusive=True,
                        doc="piecewise constant (Godunov): first order"),
    ReconstructionEntry("plm", _RECON + "make_plm_reconstruction", reach=2, options=("limiter", "theta"),
                        diffusive=True, doc="piecewise linear with limited slopes: second order"),
    ReconstructionEntry("weno3", _RECON + "make_weno3_reconstruction", reach=2, options=("weno_epsilon",),
                        doc="WENO, Jiang & Shu, r = 2: third order"),
    ReconstructionEntry("weno5", _RECON + "make_weno5_reconstruction", reach=3, options=("weno_epsilon",),
                        doc="WENO5-JS (Jiang & Shu 1996): fifth order"),
    ReconstructionEntry("weno5z", _RECON + "make_weno5z_reconstruction", reach=3, options=("weno_epsilon",),
                        doc="WENO5-Z (Borges et al. 2008): fifth order, sharper at critical points"),
    ReconstructionEntry("muscl_hancock", _RECON + "make_muscl_hancock_reconstruction", reach=2,
                        options=("limiter", "theta", "variables"), needs_model=True,
                        variables=("primitive", "conserved"),
                        variables_reason="its predictor evolves primitive states", courant_sum=1.0,
                        doc="limited linear profiles evolved by dt/2 with the physical flux: "
                            "second order in time with one stage"),
])

limiters = Catalogue("limiter", [
    LimiterEntry("minmod", _RECON + "minmod", doc="the smaller slope: most diffusive"),
    LimiterEntry("generalized_minmod", _RECON + "generalized_minmod", options=("theta",),
                 doc="minmod(theta a, (a + b) / 2, theta b): theta = 1 is minmod, 2 is MC"),
    LimiterEntry("mc", _RECON + "monotonized_central", doc="monotonized central (van Leer 1977)"),
    LimiterEntry("van_leer", _RECON + "van_leer", doc="harmonic mean of the two slopes"),
    LimiterEntry("superbee", _RECON + "superbee", doc="the most compressive TVD slope"),
    LimiterEntry("minbee", _RECON + "minbee", doc="MINBEE, as a slope the same as minmod"),
])

reconstructed_variables = Catalogue("reconstructed variables", [
    VariablesEntry("primitive", _VARIABLES + "Primitive", per_cell=True,
                   doc="no pressure oscillations at material interfaces"),
    VariablesEntry("conserved", _VARIABLES + "Conserved", per_cell=True),
    VariablesEntry("characteristic", _VARIABLES + "Characteristic", per_cell=False,
                   needs_hooks=("eigenvectors",),
                   doc="projected on the eigenvectors of the face's mean state (its basis belongs "
                       "to the face: reconstructed per face)"),
    VariablesEntry("conserved_characteristic", _VARIABLES + "ConservedCharacteristic", per_cell=False,
                   needs_hooks=("eigenvectors", "jacobians"),
                   doc="the conserved variables projected on the conserved system's eigenvectors at the "
                       "face (reconstructed per face)"),
    VariablesEntry("characteristic_cell", _VARIABLES + "CellCharacteristic", per_cell=True,
                   needs_hooks=("eigenvectors",),
                   doc="each cell reconstructed in the characteristic variables of its own state (one basis for "
                       "both faces of a cell: no post-shock oscillations growing with resolution on Brio-Wu)"),
])

wave_speeds = Catalogue("wave-speed estimate", [
    WaveSpeedsEntry("davis", _RIEMANN + "davis_speeds", doc="min/max of the left and right speeds"),
    WaveSpeedsEntry("einfeldt", _RIEMANN + "einfeldt_speeds", needs_hooks=("roe_speeds",),
                    doc="with the speeds of the Roe-averaged state"),
])

riemann_solvers = Catalogue("Riemann solver", [
    RiemannSolverEntry("rusanov", _RIEMANN + "make_rusanov", diffusive=True,
                       doc="Rusanov / local Lax-Friedrichs"),
    RiemannSolverEntry("hll", _RIEMANN + "make_hll", options=("wave_speeds",), diffusive=True,
                       doc="HLL (Harten, Lax & van Leer)"),
    RiemannSolverEntry("hllc", _RIEMANN + "make_hllc", needs_hooks=("hllc_star",),
                       needs_roles=("velocity", "density", "pressure"), options=("wave_speeds",),
                       doc="HLLC with Batten's contact speed: keeps contacts sharp"),
    RiemannSolverEntry("force", _RIEMANN + "make_force", diffusive=True, courant_sum=1.0,
                       doc="FORCE (Toro & Billett 2000): centred, needs only the flux"),
    RiemannSolverEntry("musta", _RIEMANN + "make_musta", options=("musta_stages",), diffusive=True,
                       courant_sum=1.0, costly=True,
                       doc="MUSTA-FORCE (Toro & Titarev 2006): centred, needs only the flux and the signal speeds "
                           "(its flux limited toward Lax-Friedrichs where a face would leave the admissible set)"),
])

integrators = Catalogue("integrator", [
    IntegratorEntry("lsrk3", _INTEGRATORS + "LSRK3", doc="Williamson (1980) low-storage RK3"),
    IntegratorEntry("ssprk2", _INTEGRATORS + "SSPRK2", doc="strong-stability-preserving RK2", ssp=True),
    IntegratorEntry("ssprk3", _INTEGRATORS + "SSPRK3", doc="Shu & Osher (1988) SSP RK3", ssp=True),
    IntegratorEntry("euler", _INTEGRATORS + "EULER", doc="forward Euler (one stage)", ssp=True, courant_sum=1.0),
    IntegratorEntry("lsrk4", _INTEGRATORS + "LSRK4",
                    doc="Carpenter & Kennedy (1994) low-storage RK4, five stages: does not cap a "
                        "fifth-order space discretisation at third order"),
])

# What the hydraulic kinds read of a depth-averaged model: its depth and bed by these names, its
# velocity role and its gravity parameter.
DEPTH, BED, GRAVITY = "h", "bed", "g"
_DEPTH_AVERAGED = dict(needs_roles=("velocity",), role_reason="to set the discharge", needs_variables=(DEPTH,),
                       needs_params=(GRAVITY,), time_dependent=True)

boundary_kinds = Catalogue("boundary kind", [
    BoundaryKindEntry("periodic", both_sides=True,
                      doc="the grid wraps around: ghost cells copy the cells a period away; "
                          "must be the kind of both faces of its axis"),
    BoundaryKindEntry("outflow", doc="zero gradient: ghost cells copy the boundary cell"),
    BoundaryKindEntry("wall", needs_roles=("velocity",), role_reason="to reflect it",
                      doc="reflecting wall: the mirror image with the normal velocity negated; "
                          "needs the model's velocity role"),
    BoundaryKindEntry("symmetry", needs_roles=("velocity",), role_reason="to reflect it",
                      doc="symmetry plane: numerically a wall (the mirror image with the normal velocity "
                          "negated); `taichiflow view` mirrors the pictures across it"),
    BoundaryKindEntry("inflow", needs_state=True,
                      doc="a constant state, given per face in [boundary.inflow]"),
    BoundaryKindEntry("absorbing", doc="zero gradient, as outflow"),
    # Open boundaries of a depth-averaged model (kernels/hydraulic_boundaries.py): what a hydraulics
    # user imposes, the rest from the characteristic that leaves the domain.
    BoundaryKindEntry("discharge", imposes=("discharge",), **_DEPTH_AVERAGED,
                      doc="subcritical inlet: the discharge per unit width entering (m²/s, [boundary] discharge); "
                          "the depth from the outgoing Riemann invariant"),
    BoundaryKindEntry("depth", imposes=("depth",), **_DEPTH_AVERAGED,
                      doc="subcritical outlet: the depth ([boundary] depth); the velocity from the outgoing "
                          "Riemann invariant"),
    BoundaryKindEntry("stage", imposes=("stage",), **{**_DEPTH_AVERAGED, "needs_variables": (DEPTH, BED)},
                      doc="subcritical outlet: the free-surface elevation depth + bed ([boundary] stage); the "
                          "velocity from the outgoing Riemann invariant"),
    BoundaryKindEntry("supercritical_inflow", imposes=("depth", "discharge"), **_DEPTH_AVERAGED,
                      doc="supercritical inlet: depth and discharge both imposed ([boundary] depth and discharge)"),
])


# --- run-time registration -----------------------------------------------------------------------
# Boundary kinds have no register function: a kind needs its ghost fill in the kernels, so a
# new one is an entry above plus code there (a name the kernels do not know must never be
# accepted and then filled as some other kind).

def _names(values, what: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise TypeError(f"{what}: expected a list of names, got the string {values!r}")
    return tuple(values)


def _roles(values) -> tuple[str, ...]:
    roles = _names(values, "needs_roles")
    for role in roles:
        if role not in MODEL_ROLES:
            raise ValueError(f"needs_roles: unknown model role {role!r}{suggest(role, MODEL_ROLES)}; "
                             f"roles: {', '.join(MODEL_ROLES)}")
    return roles


def register_riemann_solver(name: str, factory: Target, needs_hooks=(), needs_roles=(), options=(),
                            diffusive: bool = False, doc: str = "", replace: bool = False,
                            costly: bool = False) -> RiemannSolverEntry:
    """Make `riemann = "name"` a valid choice: factory(phys, scheme) -> Taichi function
    (wL, wR, dt_dx) -> flux. needs_hooks: model functions it calls ("hllc_star", ...);
    needs_roles: model roles it reads; options: [scheme] keys it reads ("wave_speeds" adds
    the chosen estimate's hooks); costly: many flux evaluations a face ([run] fuse = "auto"
    then keeps a sweep per axis rather than solving faces twice)."""
    return riemann_solvers.add(RiemannSolverEntry(name, factory, _names(needs_hooks, "needs_hooks"),
                                                  _roles(needs_roles), _names(options, "options"),
                                                  bool(diffusive), doc, costly=bool(costly)), replace)


def register_model_solvers(model) -> None:
    """Make the Riemann solvers a model provides (Model.riemann_solver) choices of
    [scheme] riemann, each provided_by the model (requirements.py refuses it for any other
    model). A loaded model file replaces what an earlier load of a model registered under
    that name; a name the numerics own is refused."""
    from .errors import ModelError
    for name, doc in model.solver_docs.items():
        if name in riemann_solvers and riemann_solvers.get(name).provided_by is None:
            raise ModelError(f"{model.source_file}: riemann_solver('{name}'): '{name}' is a Riemann solver of the "
                             f"numerics; give the model's own another name")
        entry = RiemannSolverEntry(name, _MODEL_SOLVER, doc=doc or f"provided by model '{model.name}'",
                                   provided_by=model.name)
        riemann_solvers.add(entry, replace=True)


def register_reconstruction(name: str, factory: Target, reach: int, options=(), needs_model: bool = False,
                            variables=None, variables_reason: str = "", diffusive: bool = False,
                            doc: str = "", replace: bool = False) -> ReconstructionEntry:
    """Make `reconstruction = "name"` a valid choice: factory(scheme, phys) -> Reconstruction
    with ghost == reach (cells read on each side of a face)."""
    if not (isinstance(reach, int) and not isinstance(reach, bool) and reach >= 1):
        raise ValueError(f"reconstruction '{name}': reach must be an integer >= 1, got {reach!r}")
    variables = None if variables is None else _names(variables, "variables")
    return reconstructions.add(ReconstructionEntry(name, factory, reach, _names(options, "options"),
                                                   bool(needs_model), variables, variables_reason,
                                                   bool(diffusive), doc), replace)


def register_limiter(name: str, function: Target, options=(), doc: str = "",
                     replace: bool = False) -> LimiterEntry:
    """Make `limiter = "name"` a valid choice (a limiter, or with options a factory of one)."""
    return limiters.add(LimiterEntry(name, function, _names(options, "options"), doc), replace)


def register_integrator(name: str, stages: Target, doc: str = "", replace: bool = False) -> IntegratorEntry:
    """Make `integrator = "name"` a valid choice: a tuple of numerics.integrators.Stage."""
    return integrators.add(IntegratorEntry(name, stages, doc), replace)


# --- questions asked of several entries ----------------------------------------------------------

def is_diffusive(scheme: dict) -> bool:
    """Whether the scheme's reconstruction and Riemann solver are both robust choices, so
    the failure advice need not suggest a more diffusive scheme."""
    return (reconstructions.get(scheme["reconstruction"]).diffusive
            and riemann_solvers.get(scheme["riemann"]).diffusive)
