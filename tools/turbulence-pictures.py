"""The gallery pictures of the decaying MHD turbulence run (cases/mhd_turbulence.toml), from the
pack that tools/turbulence-report.py --pack writes and the diagnostics of the run with and
without cleaning:

    python tools/turbulence-pictures.py PACK_DIR --diagnostics GLM.csv NOGLM.csv [--out docs/gallery]

writes into --out: mhd_turbulence_field_lines.png (the density at the last time with magnetic
field lines), mhd_turbulence_density_slice.png (log10 density on the pack's z slice, last
time), mhd_turbulence_density_slice.gif (that slice at every snapshot, one colour range; .mp4
with --movie mp4), mhd_turbulence_spectra.png (kinetic energy spectra with k^-2) and
mhd_turbulence_energy.png (kinetic and magnetic energy, and rms div B with and without
cleaning, against time). The snapshots are written as .vti files in a scratch folder and drawn
by taichiflow's viewer; it prints the numbers the captions quote.
"""
import argparse
import csv
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from taichiflow.io import PvdSeries, write_vti  # noqa: E402
from taichiflow.viz import Series, Viewer  # noqa: E402
from taichiflow.viz.log_charts import log_chart, write_charts  # noqa: E402
from taichiflow.viz.spectrum_chart import plot_spectra  # noqa: E402

NAME = "mhd_turbulence"
PICTURE = (900, 700)
MOVIE = (560, 460)           # the GIF ships with the repository: small
SPECTRUM_TIMES = (0.0, 0.1, 0.5, 1.0, 2.0)


def write_series(folder: Path, title: str, snapshots) -> Series:
    """A run folder the viewer opens: one .vti per (time, arrays) on the unit box (the first
    array a scalar: its shape is the grid's), the series.pvd and a case.toml that names it."""
    folder.mkdir(parents=True)
    series = PvdSeries(folder / "series.pvd")
    for k, (time, arrays) in enumerate(snapshots):
        cells = np.shape(next(iter(arrays.values())))
        write_vti(folder / f"snapshot_{k:05d}.vti", cells, (0.0,) * len(cells), tuple(1 / n for n in cells),
                  arrays, time=time)
        series.add(time, f"snapshot_{k:05d}.vti")
    (folder / "case.toml").write_text(f'[case]\nname = "{title}"\n\n[model]\nname = "mhd"\n')
    return Series.open(folder)


def field_lines(pack: Path, scratch: Path, png: Path, seeds: int, time: float):
    """The last snapshot's density with magnetic field lines: the viewer's streamlines style."""
    rho = np.load(pack / "rho.npy")
    B = np.stack([np.load(pack / f"B{axis}.npy") for axis in "xyz"], axis=-1)
    series = write_series(scratch / "field_lines", NAME, [(time, {"rho": rho, "B": B})])
    viewer = Viewer(series, style="streamlines", seeds=seeds, size=PICTURE)
    try:
        viewer.screenshot(png)
        lines = viewer.plotter.actors["lines"].mapper.dataset
        size = np.linalg.norm(B, axis=-1)
        print(f"{png}: {viewer.description}; rho {rho.min():.3g} to {rho.max():.3g}, |B| {size.min():.3g} to "
              f"{size.max():.3g}, mean B = ({', '.join(f'{b:.3g}' for b in B.reshape(-1, 3).mean(axis=0))}), "
              f"{lines.n_cells} lines")
    finally:
        viewer.close()


def density_slices(pack: Path, scratch: Path, png: Path, movie: Path):
    """log10 density on the pack's z slice: the last as a picture, all of them as a movie in one
    colour range (the viewer's image style)."""
    slices = np.load(pack / "slices.npz")
    times, rho = slices["times"], slices["rho"]
    nz = np.load(pack / "rho.npy", mmap_mode="r").shape[2]
    z = (nz // 2 + 0.5) / nz              # turbulence-report.py: the middle cell along z
    series = write_series(scratch / "slices", f"{NAME}, z = {z:.3g}",
                          [(t, {"log10_rho": np.log10(r)}) for t, r in zip(times, rho)])
    viewer = Viewer(series, style="image", size=PICTURE)
    try:
        viewer.screenshot(png)
        print(f"{png}: t = {times[-1]:g}, rho {rho[-1].min():.3g} to {rho[-1].max():.3g} ({viewer.description})")
    finally:
        viewer.close()
    viewer = Viewer(series, style="image", size=MOVIE)
    try:
        written, note = viewer.write_movie(movie, fps=4.0)
        low, high = np.unravel_index(rho.argmin(), rho.shape)[0], np.unravel_index(rho.argmax(), rho.shape)[0]
        print(f"{written}: {len(times)} frames, t = {times[0]:g} to {times[-1]:g}, one colour range: rho "
              f"{rho.min():.3g} (t = {times[low]:g}) to {rho.max():.3g} (t = {times[high]:g}) {note}")
    finally:
        viewer.close()


def read_columns(path: Path) -> dict:
    """Column -> float array of a CSV with a header (empty cells as NaN)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {name: np.array([float(r[name]) if r[name] else np.nan for r in rows]) for name in rows[0]}


def spectra(pack: Path, png: Path, nyquist: int):
    """E(k) at SPECTRUM_TIMES up to the grid's Nyquist shell (the shells beyond it are cut by
    the box's corners), with k^-2 through the last spectrum at k = 4."""
    columns = read_columns(pack / "spectra.csv")
    k = columns.pop("k")
    times = {float(name.split("=")[1]): name for name in columns}
    keep = k <= nyquist
    curves = [(f"t = {t:g}", k[keep], columns[times[t]][keep]) for t in SPECTRUM_TIMES]
    line = (k >= 2) & keep
    reference = ("k^-2", k[line], columns[times[max(times)]][4] * (k[line] / 4.0) ** -2.0)
    plot_spectra(curves, png, title="kinetic energy spectrum of sqrt(rho) v", size=PICTURE, references=[reference])
    for t in SPECTRUM_TIMES:
        e = columns[times[t]]
        fit = (k >= 3) & (k <= 20)
        slope = np.polyfit(np.log(k[fit]), np.log(e[fit]), 1)[0]
        print(f"{png}: t = {t:g}: sum E(k) = {np.nansum(e):.4g}, slope over 3 <= k <= 20: {slope:.2f}")


def energy(glm: Path, noglm: Path, png: Path):
    """Kinetic and magnetic energy against time (top), rms normalised div B with and without
    cleaning (bottom), on log axes."""
    d, bare = read_columns(glm), read_columns(noglm)
    top = log_chart([("kinetic", d["time"], d["sum_kinetic_energy"]),
                     ("magnetic", d["time"], d["sum_magnetic_energy"])],
                    "t", "energy in the box", "kinetic and magnetic energy (GLM cleaning)",
                    loc=(0.0, 0.5), size=(1.0, 0.5))
    bottom = log_chart([("GLM cleaning", d["time"], d["rms_div_B"]),
                        (f"no cleaning (p < 0 at t = {bare['time'][-1]:.3g})", bare["time"], bare["rms_div_B"])],
                       "t", "rms of h div B / B magnitude", "normalised divergence of B", size=(1.0, 0.5))
    write_charts([top, bottom], png, PICTURE)
    for name, run in (("GLM", d), ("no cleaning", bare)):
        at = [t for t in (0.01, 0.02, 0.05, 0.5, 1.0, 2.0) if t <= run["time"][-1]]
        print(f"{png}: {name}: " + ", ".join(
            f"t = {t:g}: E_k {np.interp(t, run['time'], run['sum_kinetic_energy']):.4g} "
            f"E_m {np.interp(t, run['time'], run['sum_magnetic_energy']):.4g} "
            f"rms div B {np.interp(t, run['time'], run['rms_div_B']):.3g}" for t in at))
        later = run["time"] > 0        # the row at t = 0 is off log axes
        for column in ("sum_magnetic_energy", "rms_div_B"):
            i = np.flatnonzero(later)[np.argmax(run[column][later])]
            print(f"{png}: {name}: largest {column} {run[column][i]:.3g} at t = {run['time'][i]:.3g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pack", help="the folder turbulence-report.py --pack wrote")
    parser.add_argument("--diagnostics", nargs=2, required=True, metavar=("GLM", "NOGLM"),
                        help="diagnostics.csv of the run and of the same run without cleaning (ch_scale = 0)")
    parser.add_argument("--out", default="docs/gallery", help="where the pictures go (docs/gallery)")
    parser.add_argument("--seeds", type=int, default=150, help="field-line seed points (150)")
    parser.add_argument("--movie", choices=["gif", "mp4"], default="gif", help="the slice movie's format (gif)")
    args = parser.parse_args()
    pack, out = Path(args.pack), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slices = np.load(pack / "slices.npz")
    last_time, nyquist = float(slices["times"][-1]), slices["rho"].shape[-1] // 2
    with tempfile.TemporaryDirectory() as scratch:
        field_lines(pack, Path(scratch), out / f"{NAME}_field_lines.png", args.seeds, last_time)
        density_slices(pack, Path(scratch), out / f"{NAME}_density_slice.png",
                       out / f"{NAME}_density_slice.{args.movie}")
    spectra(pack, out / f"{NAME}_spectra.png", nyquist)
    energy(Path(args.diagnostics[0]), Path(args.diagnostics[1]), out / f"{NAME}_energy.png")


if __name__ == "__main__":
    main()
