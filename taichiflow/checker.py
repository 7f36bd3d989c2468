"""`taichiflow check models/x.py`: an automatic consistency suite for a model file.

Runs on the CPU in f64 without fast math, over random admissible states drawn around the
model's sample state, so that a mistake in a model shows up as a named failed check with
the worst state, before it costs a GPU run. The checks and their tolerances are explained
in docs/models.md ("taichiflow check"); this module draws the samples, runs the checks of
checks_kernels.py (point-wise, Taichi kernels) and checks_runs.py (short periodic runs),
judges the results and prints the table. Exit status 0 when every check passes, else 1.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import taichi as ti

from .errors import ModelError, ParameterError, model_error_within
from .loadcheck import require_returns
from .model import load_model
from .run.backend import start_taichi

PASS, FAIL, SKIP, WARN = "PASS", "FAIL", "SKIP", "WARN"
AXES = "xyz"

# Tolerances (relative; docs/models.md says to what).
TOL_ROUND_TRIP = 1e-10
TOL_CONSISTENCY = 1e-12
TOL_HLLC = 1e-10
TOL_ROTATION = 1e-12
TOL_BOUND = 1e-6
TOL_EXACT = 1e-5
TOL_IMAG = 1e-8
TOL_FREE_STREAM = 1e-13
TOL_CONSERVATION = 1e-12
CANDIDATES_PER_SAMPLE = 4


@dataclass
class Result:
    name: str
    status: str
    worst: float | None = None
    tol: float | None = None
    note: str = ""
    where: str = ""       # the worst sample, for a failure


# --- sampling ------------------------------------------------------------------------------
def draw_candidates(model, count: int, rng) -> np.ndarray:
    """Random primitive states around the model's sample state; row 0 is the sample itself.

    Nonzero scalars are scaled by a log-uniform factor in [0.5, 2] (sign kept); zero scalars
    become uniform in [-1, 1] (the sample says nothing of their scale or sign, and the
    admissibility filter rejects what the model does not allow); vector components move by
    uniform [-1, 1] times max(|value|, 1)."""
    layout = model.primitive
    base = np.array(model.sample_state())
    out = np.tile(base, (count, 1))
    for name in layout.names:
        off = layout.offsets[name]
        if layout.sizes[name] == 1:
            v = base[off]
            if v != 0.0:
                out[1:, off] = v * np.exp(rng.uniform(np.log(0.5), np.log(2.0), count - 1))
            else:
                out[1:, off] = rng.uniform(-1.0, 1.0, count - 1)
        else:
            for c in range(3):
                v = base[off + c]
                out[1:, off + c] = v + rng.uniform(-1.0, 1.0, count - 1) * max(abs(v), 1.0)
    return out


def describe(layout, w) -> str:
    """A primitive state by name, e.g. rho=1.2, vel=(0.1, -0.3, 0.2), p=0.8."""
    return ", ".join(f"{name}=({', '.join(f'{x:.6g}' for x in v)})" if isinstance(v, list) else f"{name}={v:.6g}"
                     for name, v in layout.split(w).items())


def _finite(err: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(err), err, np.inf)


def _first_line(err: Exception) -> str:
    """One line for a row's note: the framework's own words where a Taichi compile error
    wraps a ModelError (a wrong layout names the file, the function and the layout)."""
    inner = model_error_within(err)
    if inner is not None:
        return str(inner)
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else ''}".rstrip(": ")


def nonzero_scale(scale) -> np.ndarray:
    """Per-sample magnitudes that relative errors are divided by, floored at their typical
    size (the mean over all samples) and at 1 where every sample has 0 (an absolute error
    then): a sample where the quantity vanishes, Burgers at u = 0 or a flux that is zero,
    is judged against the state's usual size instead of giving 0/0 = a false 'inf'."""
    scale = np.abs(np.asarray(scale, dtype=float))
    finite = scale[np.isfinite(scale)]
    typical = float(finite.mean()) if finite.size else 0.0
    return np.maximum(scale, typical if typical > 0.0 else 1.0)


def exact_speeds_claimed(model) -> bool:
    """sound_speed claims exact speeds (u_n -/+ c); wave_speeds are estimates unless the model
    says they are exact (Model(exact_wave_speeds=True))."""
    if "wave_speeds" in model.functions:
        return model.exact_wave_speeds
    return "sound_speed" in model.functions


# --- the suite -----------------------------------------------------------------------------
class Suite:
    def __init__(self, model, params: dict, samples: int, seed: int):
        self.model, self.params = model, params
        self.layout = model.primitive
        self.n_samples, self.seed = samples, seed
        self.rng = np.random.default_rng(seed)
        self.results: list[Result] = []

    # judging helpers ---------------------------------------------------------------------
    def judge(self, name, err, tol, where, note="") -> Result:
        """PASS if max(err) <= tol; `where(index)` describes the worst entry of err."""
        err = _finite(np.asarray(err, dtype=float))
        index = np.unravel_index(int(np.argmax(err)), err.shape)
        worst = float(err[index])
        ok = worst <= tol
        return self.add(Result(name, PASS if ok else FAIL, worst, tol, note, "" if ok else where(index)))

    def add(self, result: Result) -> Result:
        self.results.append(result)
        return result

    def guard(self, name, fn):
        """Run one check; an exception (e.g. a model function that does not compile) is that
        check's failure, not a crash of the suite."""
        try:
            fn()
        except Exception as err:  # noqa: BLE001 - reported as the check's failure
            self.add(Result(name, FAIL, note=f"error: {_first_line(err)}"))

    def at_frame(self, index) -> str:
        """The sample and axis of normal-frame row q (index = (q,) or q)."""
        q = index[0] if isinstance(index, tuple) else index
        i, d = divmod(int(q), 3)
        return f"axis {AXES[d]}, sample {describe(self.layout, self.samples[i])}"

    # --- point-wise checks -------------------------------------------------------------------
    def run_kernel_checks(self):
        from .checks_kernels import KernelChecks, applicable_solvers, uses_hllc_star
        from .checks_runs import CELLS

        count = self.n_samples * CANDIDATES_PER_SAMPLE
        self.kc = kc = KernelChecks(self.model, self.params, capacity=max(count, CELLS ** 3))
        candidates = draw_candidates(self.model, count, self.rng)
        try:
            ok = kc.admissible(candidates)
        except Exception as err:  # noqa: BLE001
            self.add(Result("admissible samples", FAIL, note=f"admissible(): {_first_line(err)}"))
            return False
        fraction = ok.mean()
        self.samples = candidates[ok][:self.n_samples]
        note = f"{len(self.samples)} used; {ok.sum()} of {len(ok)} candidates admissible"
        if not len(self.samples):
            self.add(Result("admissible samples", FAIL, note=note + "; set Model(sample=...) to an "
                            "admissible state"))
            return False
        if fraction < 0.5:
            self.add(Result("admissible samples", WARN, note=note + " (fewer than half: the inferred "
                            "ranges fit the model poorly)"))
        else:
            self.add(Result("admissible samples", PASS, note=note))
        kc.load(self.samples)
        self.guard("round trip", self.check_round_trip)
        physical_ok = True
        try:
            self.U, self.F, self.S = kc.physical()
        except Exception as err:  # noqa: BLE001
            self.add(Result("consistency", FAIL, note=f"physical flux: {_first_line(err)}"))
            physical_ok = False
        if physical_ok:
            solvers = applicable_solvers(self.model)
            for label, scheme in solvers:
                self.guard(f"consistency {label}", lambda l=label, s=scheme: self.check_consistency(l, s))
            if any(uses_hllc_star(scheme) for _, scheme in solvers):
                self.guard("hllc star states", self.check_hllc)
        self.guard("rotation", self.check_rotation)
        try:
            self.check_jacobian()
        except Exception as err:  # noqa: BLE001 - the Jacobian rows fail together
            for name in ("signal speeds", "exact speeds", "hyperbolicity"):
                if name == "exact speeds" and not exact_speeds_claimed(self.model):
                    self.skip_exact_speeds()
                else:
                    self.add(Result(name, FAIL, note=f"flux Jacobian: {_first_line(err)}"))
        return True

    def skip_exact_speeds(self):
        self.add(Result("exact speeds", SKIP, note="n/a: wave_speeds are estimates, not claimed exact"))

    def check_round_trip(self):
        w = self.samples
        back = self.kc.round_trip()
        layout = self.layout
        scale = np.empty_like(w)
        for name in layout.names:
            off, size = layout.offsets[name], layout.sizes[name]
            scale[:, off:off + size] = nonzero_scale(np.abs(w[:, off:off + size]).max(axis=1, keepdims=True))
        scale = np.maximum(scale, 1e-12 * np.abs(w).max(axis=1, keepdims=True))
        err = np.abs(back - w) / scale
        names = layout.component_names()

        def where(index):
            i, k = index
            return (f"sample {describe(layout, w[i])}: {names[k]} came back as {float(back[i, k])!r}")

        self.judge("round trip", err, TOL_ROUND_TRIP, where, "|prim(cons(W)) - W| / max(|W|, typical |W|)")

    def _flux_scale(self):
        """Per normal-frame sample: the largest of |F_k| and |U_k| max|s|."""
        fastest = np.abs(self.S).max(axis=1)
        return nonzero_scale(np.maximum(np.abs(self.F).max(axis=1), np.abs(self.U).max(axis=1) * fastest))

    def check_consistency(self, label, scheme):
        fnum = self.kc.numerical_flux(scheme)
        err = np.abs(fnum - self.F).max(axis=1) / self._flux_scale()

        def where(index):
            q = int(index[0])
            finite = np.isfinite(fnum[q]).all()
            return self.at_frame(q) + ("" if finite else f"; the {label} flux itself is non-finite: {fnum[q].tolist()}")

        self.judge(f"consistency {label}", err, TOL_CONSISTENCY, where, "|F*(W, W) - F(W)| / max(|F|, typical)")

    def check_hllc(self):
        res, scale = self.kc.hllc_integral()
        err = np.abs(res).max(axis=1) / nonzero_scale(scale)
        n = len(self.samples)

        def where(index):
            q = int(index[0])
            return f"{self.at_frame(q)}; right state: sample {describe(self.layout, self.samples[(q // 3 + 1) % n])}"

        self.judge("hllc star states", err, TOL_HLLC, where,
                   "(s*-sL) U*L + (sR-s*) U*R = sR UR - sL UL - (FR - FL)")

    def check_rotation(self):
        ref, turned, s_ref, s_turned = self.kc.rotation()
        f_scale = nonzero_scale(np.abs(ref).max(axis=2))                         # (n, 3)
        s_scale = nonzero_scale(np.abs(s_ref).max(axis=2))
        f_err = np.abs(turned - ref[:, :, None, :]).max(axis=3) / f_scale[:, :, None]   # (n, 3, 3)
        s_err = np.abs(s_turned - s_ref[:, :, None, :]).max(axis=3) / s_scale[:, :, None]
        err = np.stack([f_err, s_err], axis=-1)                                  # (n, 3, 3, 2)

        def where(index):
            i, d, k, what = index
            return (f"axis {AXES[d]}, {'flux' if what == 0 else 'signal speeds'} changes when the frame "
                    f"turns {90 * (k + 1)} degrees about the normal; sample {describe(self.layout, self.samples[i])}")

        self.judge("rotation", err, TOL_ROTATION, where, "flux and speeds invariant under turns about the normal")

    def check_jacobian(self):
        J, speeds, roe = self.kc.jacobian()
        resolved = self.kc.face_resolved()  # (their waves are the face pair's, not the solvers')
        if resolved:
            kept = [k for k in range(J.shape[1]) if k not in resolved]
            J = J[:, kept][:, :, kept]
        finite = np.isfinite(J).all(axis=(1, 2)) & np.isfinite(speeds).all(axis=1)
        eig = np.full(J.shape[:2], np.nan, dtype=complex)   # non-finite rows stay NaN: judged inf
        if finite.any():
            eig[finite] = np.linalg.eigvals(J[finite])
        lo, hi = eig.real.min(axis=1), eig.real.max(axis=1)
        scale = nonzero_scale(np.maximum(np.abs(speeds).max(axis=1), np.abs(eig).max(axis=1)))
        smin, smax = speeds[:, 0], speeds[:, 1]

        def where_eigs(index):
            q = int(index[0])
            eigs = np.array2string(np.sort_complex(eig[q]), precision=6, max_line_width=10**6)
            text = f"{self.at_frame(q)}; eigenvalues {eigs}, speeds [{smin[q]:.9g}, {smax[q]:.9g}]"
            return text + (f", roe_speeds(W, W) [{roe[q, 0]:.9g}, {roe[q, 1]:.9g}]" if roe is not None else "")

        bound = np.stack([(smin - lo) / scale, (hi - smax) / scale], axis=1)
        note = "s_min <= min eig, s_max >= max eig of dF/dU" + self._left_out(resolved, "face_states resolves")
        if roe is not None:
            bound = np.hstack([bound, np.stack([(roe[:, 0] - lo) / scale, (hi - roe[:, 1]) / scale], axis=1)])
            note += " (also roe_speeds(W, W))"
        self.judge("signal speeds", bound, TOL_BOUND, where_eigs, note)
        if exact_speeds_claimed(self.model):
            exact = np.stack([np.abs(smin - lo) / scale, np.abs(smax - hi) / scale], axis=1)
            if roe is not None:
                exact = np.hstack([exact, np.stack([np.abs(roe[:, 0] - lo) / scale,
                                                    np.abs(roe[:, 1] - hi) / scale], axis=1)])
            self.judge("exact speeds", exact, TOL_EXACT, where_eigs, "u_n -/+ c = extreme eigenvalues")
        else:
            self.skip_exact_speeds()
        self.judge("hyperbolicity", np.abs(eig.imag).max(axis=1) / scale, TOL_IMAG, where_eigs,
                   "|Im eig| / max |speed|")

    def _left_out(self, components, why: str) -> str:
        """' (B_x, psi left out: why them)' for a check's note, or ''."""
        if not components:
            return ""
        names = self.model.conserved.component_names()
        return f" ({', '.join(names[k] for k in components)} left out: {why} them)"

    # --- runs --------------------------------------------------------------------------------
    def prepare_smooth_state(self):
        """A periodic smooth admissible field for the conservation run, chosen while the
        admissibility kernel is still alive (each Simulation re-initialises Taichi)."""
        from .checks_runs import smooth_state

        self.smooth = None
        n = len(self.samples)
        for attempt in range(8):
            a, b = self.samples[(attempt + 1) % n], self.samples[(attempt + 2) % n]
            w = smooth_state(a, b, self.rng, shared=attempt >= 4, dim=max(self.model.dimensions),
                             fixed=[self.model.primitive.index(name) for name in self.model.static
                                    if name in self.model.primitive.sizes])
            if self.kc.admissible(w.reshape(-1, w.shape[-1])).all():
                self.smooth = w
                return

    def run_simulation_checks(self, model_path):
        from .checks_runs import build_simulation, conservation_error, free_stream_error

        layout = self.layout
        names = self.model.conserved.component_names()
        has_source = "source" in self.model.functions
        off = "; source switched off" if has_source else ""  # (it changes a uniform state and the totals)
        split = self.kc.changed_after_step()  # (not conserved, not constant in a uniform state)
        runs = [("free stream first_order+rusanov", "first_order", "rusanov", 1),
                ("free stream weno5+hll", "weno5", "hll", 2)]
        sim = None
        for name, recon, riemann, which in runs:
            state = self.samples[which % len(self.samples)]
            try:
                sim = build_simulation(model_path, self.params, layout, state, recon, riemann,
                                       dim=max(self.model.dimensions), without_source=has_source)
                err, cell, comp = free_stream_error(sim, split)
            except ModelError as exc:
                self.load_rejection(name, exc)
                sim = None
                continue
            except Exception as exc:  # noqa: BLE001 - a blow-up or error is this check's failure
                self.add(Result(name, FAIL, note=f"error: {_first_line(exc)}"))
                sim = None
                continue
            self.judge(name, [err], TOL_FREE_STREAM,
                       lambda _: f"{names[comp]} changed in cell {cell}; uniform state {describe(layout, state)}",
                       "one step of a uniform state, |dU| / |U|" + self._left_out(split, "after_step changes") + off)
        name = "conservation"
        if self.smooth is None:
            self.add(Result(name, FAIL, note="no admissible smooth state between the samples"))
            return
        if sim is None:
            rejected = next((r for r in self.results if r.name.startswith("free stream") and r.status == SKIP), None)
            self.add(Result(name, SKIP, note=rejected.note if rejected else "not run: the free-stream run failed"))
            return
        try:
            err, comp, steps = conservation_error(sim, self.smooth, self.model_advected_indices() + split)
        except Exception as exc:  # noqa: BLE001
            self.add(Result(name, FAIL, note=f"error: {_first_line(exc)}"))
            return
        self.judge(name, [err], TOL_CONSERVATION,
                   lambda _: f"total of {names[comp]} drifted over {steps} steps of a smooth periodic state",
                   f"{steps} steps weno5+hll, |d total| / L1, advected left out"
                   + self._left_out(split, "after_step changes") + off)

    def model_advected_indices(self):
        return [self.model.conserved.offsets[n] for n in self.model.advected]

    def load_rejection(self, run_name, err: ModelError):
        """The load-time check (or the case check) refused the model: the run cannot start.
        Report the cause against the suite's check for it (failing it if the suite's own
        samples missed it) and the run as not run."""
        text = str(err)
        target = _loadcheck_target(text)
        consistency = next((r.name for r in self.results if r.name.startswith("consistency")), "consistency")
        target = consistency if target == "consistency" else target
        row = next((r for r in self.results if r.name == target), None)
        if row is None:
            row = self.add(Result(target, FAIL))
        if row.status != FAIL:
            row.status = FAIL
        if "load-time check" not in row.note and text.split(": ", 1)[-1] not in row.note:
            row.note = (row.note + "; " if row.note else "") + f"load-time check: {text}"
        self.add(Result(run_name, SKIP, note=f"not run: the load-time check rejects the model (see '{target}')"))


def _loadcheck_target(message: str) -> str:
    """The suite's check that corresponds to a load-time (loadcheck.py) complaint."""
    if "is not the inverse" in message or "to_conserved()" in message or "to_primitive()" in message:
        return "round trip"
    if "speeds" in message or "sound_speed()" in message or "wave_speeds()" in message:
        return "signal speeds"
    if "flux()" in message:
        return "consistency"
    return "load"


# --- driver --------------------------------------------------------------------------------
def parse_params(items) -> dict:
    params = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ModelError(f"--params: expected key=value, got {item!r}")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            raise ModelError(f"--params: {key.strip()}: not a number: {value!r}") from None
    return params


def run_checks(model_path, samples: int = 64, seed: int = 0, params=None, out=None) -> int:
    """Run the suite on a model file and print the table; returns the exit status."""
    out = out or sys.stdout
    if samples < 1:
        raise ModelError(f"--samples must be >= 1, got {samples}")
    start_taichi(arch=ti.cpu, default_fp=ti.f64, fast_math=False)
    try:
        model = load_model(str(model_path))
        require_returns(model, model.params)
    except ModelError as err:
        results = [Result("load", FAIL, note=str(err))]
        print_table(results, f"taichiflow check {model_path}", out)
        return 1
    resolved = model.resolve_params(params or {}, "--params")
    singular = singular_params_row(model, resolved)
    if singular is not None:
        print_table([singular], f"taichiflow check {model_path}: model '{model.name}'", out)
        return 1
    suite = Suite(model, resolved, samples, seed)
    if suite.run_kernel_checks():
        suite.prepare_smooth_state()
        suite.run_simulation_checks(model.source_file)
    header = (f"taichiflow check {model_path}: model '{model.name}'"
              + (f", params {', '.join(f'{k}={v:g}' for k, v in resolved.items())}" if resolved else "")
              + f"; {samples} samples, seed {seed}; CPU f64, fast_math off")
    print_table(suite.results, header, out)
    return 1 if any(r.status == FAIL for r in suite.results) else 0


def singular_params_row(model, params: dict):
    """A failed `params` row when the --params values (not the model) make its functions fail
    on the sample state, e.g. gamma = 1 for an ideal gas: every check would fail for that one
    cause. None when the values are the defaults or are not what fails (the suite then finds
    and names the failing check)."""
    from .loadcheck import check_model

    if params == model.params:
        return None
    try:
        check_model(model, params, ti.f64, params_from="--params")
    except ParameterError as err:
        return Result("params", FAIL, note=str(err))
    except ModelError:
        return None
    return None


def print_table(results, header: str, out):
    width = max(len(r.name) for r in results) + 2
    print(header, file=out)
    print(f"{'check':<{width}}{'result':<8}{'worst':>11}  {'tolerance':<10} note", file=out)
    for r in results:
        worst = f"{r.worst:.2e}" if r.worst is not None else "-"
        tol = f"{r.tol:.0e}" if r.tol is not None else "-"
        print(f"{r.name:<{width}}{r.status:<8}{worst:>11}  {tol:<10} {r.note}", file=out)
        if r.where:
            print(f"{'':<{width}}  worst: {r.where}", file=out)
    failed = [r.name for r in results if r.status == FAIL]
    print(f"FAILED: {', '.join(failed)}" if failed else "all checks passed", file=out)


def check_command(args) -> int:
    """Entry point of `taichiflow check` (cli.py)."""
    return run_checks(args.model, samples=args.samples, seed=args.seed, params=parse_params(args.params))
