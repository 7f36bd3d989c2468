"""Kinetic energy spectra of snapshots on periodic grids: `taichiflow spectrum` (numpy only).

E(k) is the energy in the shell of integer wave vectors n (periods per box length along each
axis) whose length rounds to k:

    E(k) = sum over round(|n|) = k of |u_hat(n)|^2 / 2,    u_hat = FFT(u) / N,

u the velocity v (or sqrt(rho) v with weight "sqrt_rho", whose energy is the kinetic energy
rho |v|^2 / 2), N the number of cells; by Parseval sum_k E(k) = <|u|^2> / 2, the mean flow in
the k = 0 shell. The FFT takes the grid as periodic. For a cube of side L, k is |k| L / 2 pi;
the `turbulence` perturbation's band n_min <= |n| <= n_max is in the same units.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .io import read_pvd, read_vti

__all__ = ["WEIGHTS", "shell_spectrum", "snapshot_spectrum", "pick_snapshots", "spectrum_command"]

WEIGHTS = ("none", "sqrt_rho")


def shell_spectrum(u: np.ndarray):
    """(k, E) of a vector field u of shape cells + (m,) on a periodic grid: k = 0, 1, ... up to
    the largest shell, E the shell sums of |FFT(u) / N|^2 / 2 over the m components."""
    cells = u.shape[:-1]
    axes = tuple(range(len(cells)))
    power = np.sum(np.abs(np.fft.fftn(u, axes=axes)) ** 2, axis=-1) / (2.0 * float(np.prod(cells)) ** 2)
    n = np.meshgrid(*[np.fft.fftfreq(c, 1.0 / c) for c in cells], indexing="ij")
    shell = np.rint(np.sqrt(sum(ni * ni for ni in n))).astype(np.int64)
    energy = np.bincount(shell.ravel(), weights=power.ravel())
    return np.arange(len(energy)), energy


def snapshot_spectrum(path, field: str = "vel", weight: str = "none", density: str = "rho"):
    """(time, k, E) of a snapshot written by taichiflow (.vti): the spectrum of its vector array
    `field`, weighted by sqrt(density) with weight "sqrt_rho"."""
    if weight not in WEIGHTS:
        raise ValueError(f"--weight: expected one of {', '.join(WEIGHTS)}, got {weight!r}")
    if Path(path).suffix == ".vtu":
        raise ValueError(f"{path}: the leaves of an adaptive run ([amr]): a spectrum needs one uniform periodic grid "
                         f"(resample it yourself, e.g. taichiflow.viz.amr.resampled, knowing that the coarse "
                         f"leaves' values repeated over the finer cells bend the spectrum's tail)")
    meta, arrays = read_vti(path)
    vectors = [name for name, a in arrays.items() if a.ndim == meta["ndim"] + 1]
    if field not in vectors:
        raise ValueError(f"{path}: no vector array '{field}' (its vector arrays: {', '.join(vectors) or 'none'}); "
                         f"choose one with --field")
    u = np.asarray(arrays[field], dtype=np.float64)
    if weight == "sqrt_rho":
        if density not in arrays or arrays[density].ndim != meta["ndim"]:
            raise ValueError(f"{path}: --weight sqrt_rho needs the scalar array '{density}' (--density)")
        u = u * np.sqrt(np.asarray(arrays[density], dtype=np.float64))[..., None]
    k, energy = shell_spectrum(u)
    return meta["time"], k, energy


def pick_snapshots(source, time=None, times=None) -> list:
    """[(time or None, path)]: a .vti file itself, or from a run's output folder (series.pvd)
    the last snapshot, the one nearest `time`, or the one nearest each of `times`."""
    source = Path(source)
    if source.is_file():
        if time is not None or times:
            raise ValueError(f"--time and --times pick snapshots of an output folder, not of the file {source}")
        return [(None, source)]
    if not (source / "series.pvd").is_file():
        raise ValueError(f"{source}: neither a snapshot (.vti) nor a run's output folder (no series.pvd)")
    entries = read_pvd(source / "series.pvd")
    if not entries:
        raise ValueError(f"{source / 'series.pvd'}: the series has no snapshots yet")
    wanted = list(times) if times else [time]
    picked = []
    for t in wanted:
        index = len(entries) - 1 if t is None else int(np.argmin([abs(e[0] - t) for e in entries]))
        picked.append((entries[index][0], source / entries[index][1]))
    return picked


def _csv_text(k, columns: dict) -> str:
    names = list(columns)
    lines = [",".join(["k"] + names)]
    for row, shell in enumerate(k):
        lines.append(",".join([str(int(shell))] + ["%.17g" % columns[name][row] for name in names]))
    return "\n".join(lines) + "\n"


def warn_unless_periodic(source: Path) -> None:
    """A warning on stderr where the run's case (case.toml beside its snapshots) has a boundary
    that is not periodic: the FFT takes the grid as periodic, so the jump at the boundary
    spreads energy over every k."""
    case_file = (source if source.is_dir() else source.parent) / "case.toml"
    if not case_file.is_file():
        return
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    with open(case_file, "rb") as f:
        boundary = tomllib.load(f).get("boundary", {})
    kinds = {axis: [kind] if isinstance(kind, str) else kind for axis, kind in boundary.items() if axis in ("x", "y", "z")}
    others = {axis: sides for axis, sides in kinds.items() if any(side != "periodic" for side in sides)}
    if others:
        listed = ", ".join(f"{axis} = {sides}" for axis, sides in others.items())
        print(f"taichiflow: warning: the spectrum takes the grid as periodic, but this run's [boundary] has {listed}: "
              "the jump across those faces spreads energy over every k", file=sys.stderr)


def spectrum_command(args) -> int:
    """`taichiflow spectrum SOURCE [--time T | --times T ...] [--field F] [--weight W]
    [--csv FILE] [--plot PNG]`: one CSV column per snapshot, and a log-log plot."""
    snapshots = pick_snapshots(args.source, args.time, args.times)
    warn_unless_periodic(Path(args.source))
    curves = []
    for listed_time, path in snapshots:
        time, k, energy = snapshot_spectrum(path, args.field, args.weight, args.density)
        time = time if time is not None else listed_time
        curves.append(("E" if len(snapshots) == 1 else f"E(t={time:.6g})", time, k, energy))
    if any(len(c[2]) != len(curves[0][2]) for c in curves):
        raise ValueError("the snapshots picked have different grids")
    text = _csv_text(curves[0][2], {name: energy for name, _, _, energy in curves})
    if args.csv:
        Path(args.csv).write_text(text)
        print(f"wrote {args.csv}: {len(curves[0][2])} shells, {len(curves)} snapshot(s)")
    else:
        sys.stdout.write(text)
    if args.plot:
        from .viz.spectrum_chart import plot_spectra
        labels = [f"t = {time:.6g}" if time is not None else Path(path).name
                  for (_, time, _, _), (_, path) in zip(curves, snapshots)]
        plot_spectra([(label, k, energy) for label, (_, _, k, energy) in zip(labels, curves)], args.plot,
                     title=f"kinetic energy spectrum of {args.field}" + (" (sqrt(rho) weighted)"
                                                                         if args.weight == "sqrt_rho" else ""))
        print(f"wrote {args.plot}", file=sys.stdout if args.csv else sys.stderr)  # (stdout may hold the CSV)
    return 0
