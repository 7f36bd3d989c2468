"""The model DSL: what a model file declares, and how it is loaded and checked.

A model file builds one `Model`, declares the conserved (U) and primitive (W) layouts by
name, its parameters with defaults, and registers Taichi functions written in the normal
frame (local x is the face normal). The framework rotates declared 3-vectors, so one flux
serves every axis. See docs/models.md.
"""
from __future__ import annotations

import importlib.util
import inspect
import keyword
from pathlib import Path

import taichi as ti
from taichi.lang.struct import Struct

from . import registry
from .errors import ModelError, did_you_mean  # noqa: F401  (both importable from here, as before)
from .layout import Layout
from .param_ranges import check_params, parse_ranges

# Role -> names of the leading state arguments the function receives.
ROLES = {
    "to_primitive": ("U",),
    "to_conserved": ("W",),
    "flux": ("W", "U"),
    "sound_speed": ("W",),
    "wave_speeds": ("W",),
    "hllc_star": ("W", "U", "s", "s_star"),
    "source": ("U", "W", "x", "t"),
    "admissible": ("W",),
    "repair": ("U", "W"),           # optional: U moved back into the admissible set (floors)
    "roe_speeds": ("WL", "WR"),     # optional: Einfeldt speeds (wave_speeds = "einfeldt")
    "eigenvectors": ("W",),         # optional: (L, R) of the primitive Jacobian, L R = I
    "jacobians": ("W",),            # optional: (dU/dW, dW/dU), for finite-difference characteristics
    "eigenvalues": ("W",),          # optional: the wave speeds in the order of eigenvectors' columns
    "face_states": ("WL", "WR"),    # optional: the pair of face states every Riemann solver then sees
    "after_step": ("U", "dt", "h"),  # optional: U after each step (a split source), h the least cell width
    "splitting_speeds": ("W",),     # optional: per conserved component, the speed flux splitting uses
    "to_reconstructed": ("W",),     # optional, with from_reconstructed: the variables reconstructed in
    "from_reconstructed": ("W",),   #   (W-shaped; e.g. the free surface h + bed instead of the bed)
    "face_balance": ("W", "W_solved"),  # optional, with cell_balance: per side of a face, Model(balance=m) values
    "cell_balance": ("lower", "upper"),  # optional: a cell's non-conservative term from its two faces' values
    "refinement": ("W",),           # optional: a cell's own AMR indicator, on Löhner's scale ([amr] refine_above)
    "idle": ("U",),                 # optional: nothing here can move while the neighbours are idle too (dry bed)
}
REDUCTIONS = ("max", "min", "sum", "rms")
REQUIRED = ("to_primitive", "to_conserved", "flux")


class Model:
    """Declaration of a hyperbolic system; see docs/models.md for the full API."""

    def __init__(self, name: str, *, conserved: dict, primitive: dict, params: dict | None = None,
                 velocity: str | None = None, density: str | None = None,
                 pressure: str | None = None, positive=(), advected=(), globals=None,
                 sample: dict | None = None, description: str = "", exact_wave_speeds: bool = False,
                 static=(), balance: int = 0, dimensions=(1, 2, 3), ranges: dict | None = None):
        self.name = name
        self.description = description
        self._check_layout(conserved, "conserved")
        self._check_layout(primitive, "primitive")
        self.conserved = Layout(conserved, "U")
        self.primitive = Layout(primitive, "W")
        self.params = {k: float(v) for k, v in (params or {}).items()}
        # each parameter's valid range, checked where a case sets it (param_ranges.py)
        self.ranges = parse_ranges(ranges, self.params, f"model '{name}'")
        self.velocity, self.density, self.pressure = velocity, density, pressure
        self.positive = tuple(positive)
        self.advected = tuple(advected)
        self.globals = dict(globals or {})
        self.sample = dict(sample or {})
        # wave_speeds are the extreme eigenvalues of dF/dU (`taichiflow check` verifies that), not
        # bounds only: like sound_speed's u_n -/+ c
        self.exact_wave_speeds = bool(exact_wave_speeds)
        # conserved scalars no step changes (a bed elevation, a friction coefficient): per-cell
        # data the model's functions read, set by the case and written out like any variable
        self.static = tuple(static)
        self.balance = balance          # values per face side that face_balance hands cell_balance
        self.dimensions = tuple(dimensions)  # the grid dimensions the model is written for
        self.functions: dict[str, object] = {}
        self.signatures: dict[str, list[str]] = {}
        self.derived: dict[str, object] = {}
        self.reductions: dict[str, tuple] = {}  # derived field -> its reductions, of REDUCTIONS
        self.gradient_fields: set[str] = set()  # derived fields that read the gradients of W
        self.solvers: dict[str, object] = {}    # Riemann solvers the model provides, by name
        self.solver_docs: dict[str, str] = {}
        self.setup: dict[str, object] = {}     # plain-Python set-up hooks (material, shock_state, linear_waves)
        self.source_file = "<unknown>"
        # unit vectors: in flux functions the normal frame's (ex the face normal), in `source`
        # and the other state functions the global frame's (the grid's x, y, z)
        self.ex = ti.Vector([1.0, 0.0, 0.0])
        self.ey = ti.Vector([0.0, 1.0, 0.0])
        self.ez = ti.Vector([0.0, 0.0, 1.0])

    @staticmethod
    def _check_layout(spec, what):
        if not isinstance(spec, dict) or not spec:
            raise ModelError(f"{what}: expected a non-empty dict name -> 1 or 3")
        for key, size in spec.items():
            if not key.isidentifier() or keyword.iskeyword(key):
                raise ModelError(f"{what}: '{key}' is not a valid Python identifier")
            if size not in (1, 3):
                raise ModelError(f"{what}: '{key}' has size {size}; sizes are 1 (scalar) or 3 (vector)")

    # --- state constructors, used inside model functions --------------------------------
    def U(self, **components):
        """A conserved state from its named components (call inside a model function)."""
        return Struct(components)

    def W(self, **components):
        """A primitive state from its named components (call inside a model function)."""
        return Struct(components)

    # --- registration decorators --------------------------------------------------------
    def _register(self, role):
        def decorate(fn):
            self.signatures[role] = list(inspect.signature(fn).parameters)
            self.functions[role] = ti.func(fn)
            self.functions[role].__name__ = fn.__name__
            return self.functions[role]  # (other model functions may call it, as a Taichi function)
        return decorate

    def __getattr__(self, role):
        if role in ROLES:
            return self._register(role)
        raise AttributeError(f"Model has no attribute '{role}'{did_you_mean(role, [*ROLES, 'derive'])}")

    def derive(self, name: str, reduce=None, gradients: bool = False):
        """Register a derived output field `name` computed from W (and params). With
        reduce = "max", "min", "sum" (sum times cell volume) or "rms" (root mean square over
        the cells), or a tuple of them, it is also a column of diagnostics.csv per reduction,
        reduced on the device every diagnostics step. With gradients=True the function takes
        (W, grad, h, ...): grad the centred differences (W[i+1] - W[i-1]) / (2 dx_d), by name
        (grad.rho a 3-vector, grad.vel the 3 x 3 matrix d vel_i / dx_j; zero along axes the grid
        lacks), h the least cell width (div B, vorticity, current density)."""
        hows = () if reduce is None else (reduce,) if isinstance(reduce, str) else tuple(reduce)
        bad = [how for how in hows if how not in REDUCTIONS]
        if bad or len(set(hows)) != len(hows):
            raise ModelError(f"derive('{name}'): reduce must be one of {', '.join(map(repr, REDUCTIONS))} or a "
                             f"tuple of different ones, got {reduce!r}")

        def decorate(fn):
            self.signatures[f"derived:{name}"] = list(inspect.signature(fn).parameters)
            self.derived[name] = ti.func(fn)
            if gradients:
                self.gradient_fields.add(name)
            if hows:
                self.reductions[name] = hows
            return self.derived[name]
        return decorate

    def riemann_solver(self, name: str, doc: str = ""):
        """Register a Riemann solver this model provides: fn(WL, WR, params...) -> the flux
        model.U(...) through the face (normal frame, face normal = local x). A case selects it
        as `riemann = "name"` like the solvers of the numerics (registry.py)."""
        if not (isinstance(name, str) and name.isidentifier()):
            raise ModelError(f"riemann_solver({name!r}): the name must be an identifier")

        def decorate(fn):
            self.signatures[f"solver:{name}"] = list(inspect.signature(fn).parameters)
            self.solvers[name] = ti.func(fn)
            self.solver_docs[name] = doc or (fn.__doc__ or "").strip().split("\n")[0]
            return self.solvers[name]
        return decorate

    def material(self, fn):
        """Plain-Python hook: (gamma, pc, params) -> dict of primitive values that a case's
        `material = "name"` stands for (e.g. the two-phase Gamma and Pi)."""
        self.setup["material"] = fn
        return fn

    def shock_state(self, fn):
        """Plain-Python hook: (pre: dict of primitives, p_post, direction, params) -> dict:
        the post-shock state of a shock of pressure p_post running along `direction` into
        `pre` (Rankine-Hugoniot of the model's equation of state)."""
        self.setup["shock_state"] = fn
        return fn

    def linear_waves(self, fn):
        """Plain-Python hook: (state, params) -> {wave name: (perturbation, phase speed)}: right
        eigenvectors of the primitive system along x, for `linear_wave` perturbations. state and
        each perturbation are dicts of primitives whose 3-vectors are in the wave frame (x' the
        wave normal); variables left out of a perturbation are not perturbed."""
        self.setup["linear_waves"] = fn
        return fn

    # --- parameters ------------------------------------------------------------------------
    def resolve_params(self, overrides: dict, where: str) -> dict:
        values = dict(self.params)
        for key, value in overrides.items():
            if key not in values:
                raise ModelError(f"{where}: model '{self.name}' has no parameter '{key}'"
                                 f"{did_you_mean(key, values)}; it has {sorted(values) or 'none'}")
            values[key] = float(value)
        check_params(values, self.ranges, self.name, where)
        return values

    def leading_args(self, role: str) -> tuple:
        """The state arguments a function of this role takes before parameters."""
        if role.startswith("derived:"):
            return ("W", "grad", "h") if role.split(":", 1)[1] in self.gradient_fields else ("W",)
        if role.startswith("solver:"):
            return ("WL", "WR")
        return ("W",) if role.startswith("global:") else ROLES[role]

    def extra_args(self, role: str) -> list[str]:
        """Names of the parameters/globals a registered function takes after its states."""
        return self.signatures[role][len(self.leading_args(role)):]

    def validate(self):
        """Static checks of the declaration; raises ModelError naming what is wrong."""
        where = self.source_file
        missing = [r for r in REQUIRED if r not in self.functions]
        if "sound_speed" not in self.functions and "wave_speeds" not in self.functions:
            missing.append("sound_speed or wave_speeds")
        if missing:
            raise ModelError(f"{where}: model '{self.name}' does not define {', '.join(missing)}")
        for role, names in self.signatures.items():
            fname = role.split(":", 1)[-1]
            lead = self.leading_args(role)
            if len(names) < len(lead):
                raise ModelError(f"{where}: {fname}(): takes {names}, but must take {list(lead)} "
                                 "first, then parameters")
            for arg in names[len(lead):]:
                if arg not in self.params and arg not in self.globals:
                    raise ModelError(f"{where}: {fname}(): argument '{arg}' is neither a parameter "
                                     f"nor a global value{did_you_mean(arg, [*self.params, *self.globals])}")
        self._check_role_name("velocity", self.velocity, self.primitive, 3, where)
        self._check_role_name("density", self.density, self.primitive, 1, where)
        self._check_role_name("pressure", self.pressure, self.primitive, 1, where)
        for name in self.positive:
            self._check_role_name("positive", name, self.primitive, 1, where)
        for name in self.advected:
            self._check_role_name("advected", name, self.conserved, 1, where)
        if "sound_speed" in self.functions and "wave_speeds" not in self.functions and not self.velocity:
            raise ModelError(f"{where}: sound_speed needs Model(velocity=...) naming the primitive velocity")
        for name in self.static:
            self._check_role_name("static", name, self.conserved, 1, where)
        self._check_balance(where)
        if self.advected and not self.velocity:
            raise ModelError(f"{where}: advected variables need Model(velocity=...)")
        for key in self.sample:
            if key not in self.primitive.sizes:
                raise ModelError(f"{where}: sample: unknown primitive '{key}'"
                                 f"{did_you_mean(key, self.primitive.names)}")
        for name, how in self.globals.items():
            if how != "max" or f"global:{name}" not in self.signatures:
                raise ModelError(f"{where}: global '{name}' needs a reduction 'max' and a "
                                 f"@model.global_value('{name}') function")

    def _check_balance(self, where):
        """The hooks that come in pairs come in pairs, and balance counts face_balance's values."""
        for a, b in (("to_reconstructed", "from_reconstructed"), ("face_balance", "cell_balance")):
            if (a in self.functions) != (b in self.functions):
                have, lack = (a, b) if a in self.functions else (b, a)
                raise ModelError(f"{where}: {have} needs {lack} as well")
        if ("face_balance" in self.functions) != (isinstance(self.balance, int) and self.balance > 0):
            raise ModelError(f"{where}: face_balance returns Model(balance=m) values per face side, m >= 1; "
                             f"balance = {self.balance!r} with{'' if 'face_balance' in self.functions else 'out'} "
                             "a face_balance function")
        if not self.dimensions or not set(self.dimensions) <= {1, 2, 3}:
            raise ModelError(f"{where}: dimensions must list some of 1, 2, 3, got {self.dimensions!r}")

    @staticmethod
    def _check_role_name(role, name, layout, size, where):
        if name is None:
            return
        if name not in layout.sizes:
            raise ModelError(f"{where}: {role}='{name}' is not a {layout.role} variable"
                             f"{did_you_mean(name, layout.names)}")
        if layout.sizes[name] != size:
            raise ModelError(f"{where}: {role}='{name}' must be a {'scalar' if size == 1 else '3-vector'}")

    def global_value(self, name: str):
        """Register the per-cell value whose maximum over the grid is global `name` each step."""
        def decorate(fn):
            self.signatures[f"global:{name}"] = list(inspect.signature(fn).parameters)
            self.functions[f"global:{name}"] = ti.func(fn)
            return self.functions[f"global:{name}"]
        return decorate

    def sample_state(self) -> list[float]:
        """A primitive state for load-time checks: the model's `sample`, else 1 and 0.1s."""
        flat = []
        for name in self.primitive.names:
            value = self.sample.get(name, 1.0 if self.primitive.sizes[name] == 1 else [0.1, 0.2, 0.3])
            flat += [float(value)] if self.primitive.sizes[name] == 1 else [float(v) for v in value]
        return flat


def find_model_file(name: str, search_dirs=(), base_dir=None) -> Path:
    """Resolve a model name ("euler") or path ("models/euler.py") to an existing file, as an
    absolute path (what a run records, so that its saved case finds the same file again).

    A relative path is read from `base_dir` (the case file's folder: a case names its model
    where the case is, whichever folder it is run from) and then from the current folder (as
    before, e.g. a path given with --set); a name is looked for in `search_dirs`, ./models and
    the shipped models."""
    candidate = Path(name)
    if candidate.suffix == ".py":
        return _find_model_path(name, base_dir)
    dirs = [Path(d) for d in search_dirs] + [Path.cwd() / "models", shipped_models_dir()]
    for folder in dirs:
        path = folder / f"{name}.py"
        if path.is_file():
            return path.resolve()
    known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.py")})
    raise ModelError(f"unknown model '{name}'{did_you_mean(name, known)}; known models: {known}")


def _find_model_path(name: str, base_dir) -> Path:
    """A model file's path: as given if absolute, else relative to the case file's folder,
    then to the current folder."""
    path = Path(name)
    if path.is_absolute():
        if path.is_file():
            return path.resolve()
        raise ModelError(f"model file '{name}' not found")
    folders = ({f"the case file's folder ({base_dir})": Path(base_dir)} if base_dir is not None else {})
    folders[f"the current folder ({Path.cwd()})"] = Path.cwd()
    for folder in folders.values():
        if (folder / path).is_file():
            return (folder / path).resolve()
    raise ModelError(f"model file '{name}' not found relative to {' or to '.join(folders)}")


def shipped_models_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "models"


def load_model(name: str, search_dirs=(), base_dir=None) -> Model:
    """Import a model file and check its declaration (not its kernels: see loadcheck.check_model);
    a relative path is read from base_dir first (find_model_file)."""
    path = find_model_file(name, search_dirs, base_dir)
    module_name = f"taichiflow_model_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModelError as err:
        raise ModelError(f"{path}: {err}") from None
    except Exception as err:  # the user's file failed to import: say where and why
        raise ModelError(f"{path}: failed to import: {type(err).__name__}: {err}") from err
    model = getattr(module, "model", None)
    if not isinstance(model, Model):
        raise ModelError(f"{path}: defines no `model = Model(...)`")
    model.source_file = str(path)
    model.validate()
    registry.register_model_solvers(model)
    return model
