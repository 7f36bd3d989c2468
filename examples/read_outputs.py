"""Reading a finished run's outputs: series.pvd (the snapshots, one per output time) and
diagnostics.csv (a row per step), from any run folder, `taichiflow run`'s or a Simulation's.

    python examples/read_outputs.py            # runs Sod into a temporary folder first
    python examples/read_outputs.py out/sod    # reads a run made with `taichiflow run cases/sod.toml`
"""
import csv
import sys
import tempfile
from pathlib import Path

import pyvista as pv

import taichiflow as tf

CASES = Path(__file__).resolve().parent.parent / "cases"


def read_run(folder: Path) -> dict:
    """The density range of every snapshot and the mass drift of the diagnostics rows."""
    series = pv.get_reader(str(folder / "series.pvd"))  # (pyvista.read would give the first time only)
    print(f"{'t':>8} {'min rho':>9} {'max rho':>9}")
    for t in series.time_values:
        series.set_active_time_value(t)
        rho = series.read()[0].cell_data["rho"]
        print(f"{t:>8.4f} {rho.min():>9.4f} {rho.max():>9.4f}")
    with open(folder / "diagnostics.csv", newline="") as f:
        rows = list(csv.DictReader(f))  # (or pandas.read_csv)
    mass = [float(row["total_rho"]) for row in rows]
    drift = max(abs(m - mass[0]) for m in mass)
    print(f"{len(rows)} diagnostics rows, steps {rows[0]['step']} to {rows[-1]['step']}; mass drift {drift:.1e}")
    return {"times": list(series.time_values), "rows": len(rows), "drift": drift}


def main(folder: Path | None = None) -> dict:
    if folder is not None:
        return read_run(folder)
    with tempfile.TemporaryDirectory() as tmp:
        case = tf.Case.from_file(CASES / "sod.toml", {"grid.cells": [100], "run.arch": "cpu"})
        tf.Simulation(case, out=Path(tmp) / "sod").run()  # (the files of `taichiflow run`)
        found = read_run(Path(tmp) / "sod")
    assert found["times"][-1] == 0.2 and found["drift"] < 1e-12
    return found


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
