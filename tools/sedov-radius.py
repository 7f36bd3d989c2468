"""Shock radius of a Sedov run's final snapshot against the similarity solution.

    python3 tools/sedov-radius.py OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_sedov import XI0, shock_radius  # noqa: E402
from taichiflow.io import PvdSeries, read_vti  # noqa: E402

out = Path(sys.argv[1])
time, name = PvdSeries(out / "series.pvd", resume=True).entries[-1]
meta, fields = read_vti(out / name)
rho = fields["rho"].astype(np.float64)
dim = rho.ndim
axes = [meta["origin"][d] + (np.arange(rho.shape[d]) + 0.5) * meta["spacing"][d] for d in range(dim)]
first = np.loadtxt(out / "diagnostics.csv", delimiter=",", skiprows=1, max_rows=1)
header = (out / "diagnostics.csv").read_text().splitlines()[0].split(",")
energy = first[header.index("total_E")]
measured = shock_radius(rho, np.meshgrid(*axes, indexing="ij"))
expected = XI0[dim] * (energy * time ** 2) ** (1.0 / (dim + 2))
print(f"t = {time}, E = {energy:.6f}, shock radius {measured:.5f}, similarity {expected:.5f}, "
      f"ratio {measured / expected:.4f}")
