"""Initial conditions from a case's [initial] table, computed on the host with numpy.

Kept free of taichi so it can be tested, and reused for plots or exact solutions,
without a device; the solver copies the result into its fields once.
"""
from __future__ import annotations

import numpy as np

from .case import _sizes, validate_state
from .formula import FormulaError, check_variable_names, evaluate_numpy, parse_formula
from .rasters import RasterError, find_raster, read_raster, sample
from .turbulence import draw_modes, velocity_at_cell_centres

__all__ = ["cell_centers", "initial_primitive", "region_distance", "region_weight", "state_vector"]


def cell_centers(cells, lower, upper):
    """(x, y, z) cell-centre coordinates, each of shape `cells` (index [i, j, k] = [x, y, z]);
    axes the grid lacks are zeros, so 1D/2D/3D code looks the same."""
    cells = tuple(int(n) for n in cells)
    axes = [lower[d] + (upper[d] - lower[d]) * (np.arange(n) + 0.5) / n for d, n in enumerate(cells)]
    coords = list(np.meshgrid(*axes, indexing="ij"))
    coords += [np.zeros(cells) for _ in range(3 - len(cells))]
    return tuple(coords)


def _half_space(region, X):
    normal = np.asarray(region["normal"][:len(X)], dtype=float)
    return -sum((x - p) * n for x, p, n in zip(X, region["point"], normal)) / np.linalg.norm(normal)


def _box(region, X):
    q = np.stack([np.abs(x - 0.5 * (lo + hi)) - 0.5 * (hi - lo)
                  for x, lo, hi in zip(X, region["lower"], region["upper"])])
    outside = np.sqrt(np.sum(np.maximum(q, 0.0) ** 2, axis=0))
    inside = np.minimum(np.max(q, axis=0), 0.0)
    return outside + inside


def _sphere(region, X):
    return np.sqrt(sum((x - c) ** 2 for x, c in zip(X, region["center"]))) - region["radius"]


def _cylinder(region, X):
    axis = np.asarray(region["axis"], dtype=float)
    axis /= np.linalg.norm(axis)
    d = [x - c for x, c in zip(X, region["center"])] + [0.0] * (3 - len(X))
    along = sum(di * ai for di, ai in zip(d, axis))
    return np.sqrt(sum((di - along * ai) ** 2 for di, ai in zip(d, axis))) - region["radius"]


_DISTANCE = {"half_space": _half_space, "box": _box, "sphere": _sphere, "cylinder": _cylinder}


def region_distance(region, x, y, z, dim=None) -> np.ndarray:
    """Signed distance to a region's surface, negative inside.

    Only the first `dim` coordinates are used (default: x.ndim, the grid dimension for
    arrays from cell_centers), so the zero padding of 3-vectors never matters.
    """
    dim = np.ndim(x) if dim is None else dim
    X = [np.asarray(c, dtype=float) for c in (x, y, z)[:dim]]
    return np.asarray(_DISTANCE[region["shape"]](region, X), dtype=float)


def region_weight(region, x, y, z, dim=None) -> np.ndarray:
    """How much of the region's state each point takes: 1 inside and 0 outside when sharp,
    else 0.5 (1 - tanh(distance / smoothing))."""
    distance = region_distance(region, x, y, z, dim)
    width = region.get("smoothing", 0.0)
    if width > 0:
        return 0.5 * (1.0 - np.tanh(distance / width))
    return (distance < 0).astype(float)


def state_vector(table, primitive_layout) -> np.ndarray:
    """A full state table as a flat float64 primitive vector, in layout order (a 3-vector
    takes 3 slots). Re-validates, which is idempotent, so a skipped check still fails clearly."""
    sizes = _sizes(primitive_layout)
    state = validate_state(table, sizes, "state")
    return np.array([v for name in sizes for v in (state[name] if sizes[name] == 3 else [state[name]])],
                    dtype=np.float64)


def initial_primitive(initial, primitive_layout, cells, lower, upper, params=None) -> np.ndarray:
    """Primitive variables in every cell, shape cells + (nW,): the background, then each
    region blended on top in order, W = (1 - s) W + s W_region. A region's missing
    variables come from the background."""
    x, y, z = cell_centers(cells, lower, upper)
    background = initial["background"]
    base = state_vector(background, primitive_layout)
    W = np.empty(tuple(int(n) for n in cells) + base.shape, dtype=np.float64)
    W[...] = base
    for region in initial.get("regions", ()):
        inside = state_vector({**background, **region["state"]}, primitive_layout)
        s = region_weight(region, x, y, z)[..., None]
        W = (1.0 - s) * W + s * inside
    for n, perturbation in enumerate(initial.get("perturbations", ())):
        where = f"[[initial.perturbations]] #{n + 1}"
        PERTURB[perturbation["kind"]](W, perturbation, _offsets(primitive_layout), initial, (x, y, z),
                                      params or {}, where, (lower, upper))
    return W


def _offsets(primitive_layout) -> dict:
    """Flat index of every scalar and vector component: rho, vel_x, vel_y, vel_z, p..."""
    sizes = getattr(primitive_layout, "sizes", primitive_layout)
    index, offsets = 0, {}
    for name, size in sizes.items():
        offsets[name] = index
        for axis, label in enumerate("xyz"[:size] if size == 3 else ""):
            offsets[f"{name}_{label}"] = index + axis
        index += size
    return offsets


def variable_slot(p, offsets, where) -> int:
    """Flat index of the primitive scalar or vector component a perturbation names (rho, vel_x)."""
    if p["variable"] not in offsets:
        raise ValueError(f"{where}: unknown variable '{p['variable']}'; choose from {sorted(offsets)}")
    return offsets[p["variable"]]


def named_region(p, initial, where):
    """The [[initial.regions]] entry a perturbation is restricted to, or None when it has no `region`."""
    if "region" not in p:
        return None
    regions = initial.get("regions", ())
    if p["region"] >= len(regions):
        raise ValueError(f"{where}: region {p['region']} does not exist (there are {len(regions)})")
    return regions[p["region"]]


def _sine(W, p, offsets, initial, coords, params, where, box):
    """W[variable] += amplitude sin(k . x + phase), optionally only inside a region."""
    slot = variable_slot(p, offsets, where)
    region = named_region(p, initial, where)
    phase = sum(k * c for k, c in zip(p["wavenumber"], coords)) + p["phase"]
    bump = p["amplitude"] * np.sin(phase)
    if region is not None:
        bump = bump * region_weight(region, *coords)
    W[..., slot] += bump


def _set_or_add(W, slot, value, p, initial, coords, where):
    """W[slot] = value ("set") or W[slot] += value ("add"); inside a named region with its weight
    s, as a region blends: W = (1 - s) W + s value, or W += s value."""
    region = named_region(p, initial, where)
    s = None if region is None else region_weight(region, *coords)
    if p.get("operation", "set") == "add":
        W[..., slot] += value if s is None else value * s
    else:
        W[..., slot] = value if s is None else (1.0 - s) * W[..., slot] + s * value


def _formula(W, p, offsets, initial, coords, params, where, box):
    """A variable set to, or increased by, a formula of the coordinates (formula.py)."""
    slot = variable_slot(p, offsets, where)
    formula = parse_formula(p["expression"])
    try:
        check_variable_names(formula, [n for n in offsets if n + '_x' not in offsets])
    except FormulaError as err:
        raise ValueError(f"{where}: expression: {err}") from None
    value = evaluate_numpy(formula, *coords, variables=lambda name: W[..., offsets[name]].copy())
    _set_or_add(W, slot, value, p, initial, coords, where)


def load_raster(p, dim: int, where):
    """A raster perturbation's data, read again from its file (the case check read it once and
    made its path absolute; a relative path here is the current folder's)."""
    try:
        return read_raster(find_raster(p["file"]), p.get("extent"), dim)
    except RasterError as err:
        raise ValueError(f"{where}: {err}") from None


def _raster(W, p, offsets, initial, coords, params, where, box):
    """A variable set to, or increased by, a raster file's values, sampled bilinearly at the
    cell centres (rasters.py)."""
    slot = variable_slot(p, offsets, where)
    raster = load_raster(p, W.ndim - 1, where)
    _set_or_add(W, slot, sample(raster, coords[0], coords[1]), p, initial, coords, where)


def _isentropic_vortex(W, p, offsets, initial, coords, params, where, box):
    """Shu's isentropic vortex (ideal gas) superposed on the state: velocity and temperature
    perturbations of strength beta, entropy p / rho^gamma kept at its background value."""
    missing = [k for k in ("rho", "vel_x", "vel_y", "p") if k not in offsets] + (
        [] if "gamma" in params else ["parameter gamma"])
    if missing:
        raise ValueError(f"{where}: isentropic_vortex needs a model with rho, vel, p and gamma; missing {missing}")
    gamma, beta = params["gamma"], p["strength"]
    dx, dy = coords[0] - p["center"][0], coords[1] - p["center"][1]
    bump = np.exp(0.5 * (1.0 - dx * dx - dy * dy))
    rho, pressure = W[..., offsets["rho"]], W[..., offsets["p"]]
    entropy = pressure / rho ** gamma
    temperature = pressure / rho - (gamma - 1.0) * beta ** 2 / (8.0 * gamma * np.pi ** 2) * bump ** 2
    W[..., offsets["vel_x"]] -= beta / (2.0 * np.pi) * bump * dy
    W[..., offsets["vel_y"]] += beta / (2.0 * np.pi) * bump * dx
    new_rho = (temperature / entropy) ** (1.0 / (gamma - 1.0))
    W[..., offsets["rho"]] = new_rho
    W[..., offsets["p"]] = new_rho * temperature


def velocity_slots(p, offsets, dim: int, where) -> list:
    """Flat indices of the velocity components along the grid's axes that a turbulence
    perturbation adds to: the model's velocity role, which run/states.py resolves into
    p["_velocity"]."""
    velocity = p.get("_velocity")
    if velocity is None:
        raise ValueError(f"{where}: turbulence needs the model's velocity (Model(velocity=...)), "
                         f"resolved into the perturbation by run.states.resolve_states")
    slots = [offsets.get(f"{velocity}_{axis}") for axis in "xyz"[:dim]]
    if None in slots:
        raise ValueError(f"{where}: turbulence adds to '{velocity}', which is not a 3-vector primitive variable")
    return slots


def wave_terms(p, offsets, where) -> list:
    """(flat index, amplitude times eigenvector component) of a linear wave's nonzero
    components: the eigenvector run/states.py resolves into p["_eigenvector"] with the model's
    linear_waves hook."""
    eigenvector = p.get("_eigenvector")
    if eigenvector is None:
        raise ValueError(f"{where}: linear_wave needs the model's eigenvector, resolved into the perturbation "
                         f"by run.states.resolve_states")
    if len(eigenvector) != len({v for v in offsets.values()}):
        raise ValueError(f"{where}: the eigenvector has {len(eigenvector)} components, the state "
                         f"{len(set(offsets.values()))}")
    return [(slot, float(p["amplitude"]) * float(value)) for slot, value in enumerate(eigenvector) if value != 0.0]


def _turbulence(W, p, offsets, initial, coords, params, where, box):
    """W[velocity] += the random field of the perturbation's modes at the cell centres."""
    cells = W.shape[:-1]
    slots = velocity_slots(p, offsets, len(cells), where)
    modes = draw_modes(p, len(cells), *box, where)
    v = velocity_at_cell_centres(modes, cells, *box)
    for d, slot in enumerate(slots):
        W[..., slot] += v[..., d]


def _linear_wave(W, p, offsets, initial, coords, params, where, box):
    """W += amplitude R_W cos(k . x + phase), R_W the model's eigenvector in the lab frame."""
    dim = W.ndim - 1
    terms = wave_terms(p, offsets, where)
    phase = sum(p["wavenumber"][d] * coords[d] for d in range(dim)) + p["phase"]
    wave = np.cos(phase)
    for slot, value in terms:
        W[..., slot] += value * wave


PERTURB = {"sine": _sine, "isentropic_vortex": _isentropic_vortex, "turbulence": _turbulence,
           "linear_wave": _linear_wave, "formula": _formula, "raster": _raster}
