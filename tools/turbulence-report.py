"""The figures of a decaying-turbulence run (cases/mhd_turbulence.toml), from its output folder:

    python tools/turbulence-report.py OUT_DIR [--compare OUT_DIR_WITHOUT_GLM] [--pack PACK_DIR]

prints the kinetic-energy decay exponent eta of E_k ~ (t - t0)^-eta (a least-squares fit of
log E_k against log t over the times given, t0 = 0 as Mac Low et al. 1998 fit it after the first
crossing), the magnetic energy and the normalised div B at a few times, and for a second run
(ch_scale = 0: no cleaning) the same div B side by side. --pack writes what pictures need on a
machine without the run: the last snapshot's density and field (npy, float32), a density slice
through the box's middle at every snapshot (npz), the spectra of the snapshots (csv).
numpy only: the GPU machine has no PyVista.
"""
import argparse
import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from taichiflow.io import read_pvd, read_vti  # noqa: E402
from taichiflow.spectra import shell_spectrum  # noqa: E402


def diagnostics(folder: Path) -> dict:
    """Column -> float array of a run's diagnostics.csv."""
    with open(folder / "diagnostics.csv") as f:
        rows = list(csv.DictReader(f))
    return {name: np.array([float(r[name]) for r in rows]) for name in rows[0]}


def decay_exponent(t, energy, start: float, end: float) -> float:
    """eta of E ~ t^-eta, fitted over start <= t <= end."""
    keep = (t >= start) & (t <= end) & (energy > 0)
    slope, _ = np.polyfit(np.log(t[keep]), np.log(energy[keep]), 1)
    return -float(slope)


def at_times(d: dict, column: str, times) -> list:
    return [float(np.interp(t, d["time"], d[column])) for t in times]


def pack(folder: Path, out: Path) -> None:
    """Pictures' inputs of a run, small enough to copy off a GPU machine."""
    out.mkdir(parents=True, exist_ok=True)
    series = read_pvd(folder / "series.pvd")
    slices, times, spectra = [], [], []
    for time, name in series:
        meta, arrays = read_vti(folder / name)
        rho = np.asarray(arrays["rho"], dtype=np.float32)
        slices.append(rho[:, :, rho.shape[2] // 2])
        times.append(time)
        k, energy = shell_spectrum(np.asarray(arrays["vel"], dtype=np.float64)
                                   * np.sqrt(np.asarray(arrays["rho"], dtype=np.float64))[..., None])
        spectra.append(energy)
    np.savez_compressed(out / "slices.npz", times=np.array(times), rho=np.array(slices))
    width = max(len(e) for e in spectra)
    with open(out / "spectra.csv", "w") as f:
        f.write("k," + ",".join(f"t={t:.4g}" for t in times) + "\n")
        for k in range(width):
            f.write(f"{k}," + ",".join(f"{e[k]:.6e}" if k < len(e) else "" for e in spectra) + "\n")
    meta, arrays = read_vti(folder / series[-1][1])
    np.save(out / "rho.npy", np.asarray(arrays["rho"], dtype=np.float32))
    for c, axis in enumerate("xyz"):
        np.save(out / f"B{axis}.npy", np.asarray(arrays["B"][..., c], dtype=np.float32))
    print(f"packed {len(series)} snapshots of {folder} into {out} (last t = {series[-1][0]:.4g})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--compare", help="the same run without cleaning (ch_scale = 0)")
    parser.add_argument("--pack", help="write the pictures' inputs into this folder")
    parser.add_argument("--fit", type=float, nargs=2, default=(0.2, 2.0), help="times of the decay fit")
    args = parser.parse_args()
    folder = Path(args.out)
    d = diagnostics(folder)
    t = d["time"]
    eta = decay_exponent(t, d["sum_kinetic_energy"], *args.fit)
    times = [0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0]
    print(f"{folder}: {len(t)} rows, t = {t[-1]:.4g}, {int(d['step'][-1])} steps, {int(d['retries'].sum())} retried")
    print(f"kinetic energy decay exponent over t in [{args.fit[0]}, {args.fit[1]}]: eta = {eta:.3f}")
    for name in ("sum_kinetic_energy", "sum_magnetic_energy", "rms_mach", "max_div_B", "rms_div_B"):
        print(f"  {name:20s} " + "  ".join(f"t={s:g}: {v:.4g}" for s, v in zip(times, at_times(d, name, times))))
    if args.compare:
        other = diagnostics(Path(args.compare))
        print(f"without cleaning ({args.compare}):")
        for name in ("max_div_B", "rms_div_B", "sum_magnetic_energy"):
            print(f"  {name:20s} " + "  ".join(f"t={s:g}: {v:.4g}" for s, v in zip(times, at_times(other, name, times))))
    if args.pack:
        pack(folder, Path(args.pack))


if __name__ == "__main__":
    main()
