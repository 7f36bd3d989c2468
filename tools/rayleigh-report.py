"""Collapse time of a rayleigh_collapse run against Rayleigh's 0.915 R sqrt(rho_l / dp).

    python3 tools/rayleigh-report.py OUT_DIR

Reads the case (bubble radius, liquid density, far-field and bubble pressures) and
diagnostics.csv (the gas volume sum_alpha every step)."""
import csv
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from taichiflow.case import load_case  # noqa: E402

out = Path(sys.argv[1])
case = load_case(out / "case.toml")
rows = list(csv.DictReader(open(out / "diagnostics.csv")))
t = [float(r["time"]) for r in rows]
gas = [float(r["sum_alpha"]) for r in rows]
liquid, bubble = case["initial"]["background"], case["initial"]["regions"][0]
dp = liquid["p"] - bubble["state"]["p"]
t_c = 0.915 * bubble["radius"] * math.sqrt(liquid["rho"] / dp)
k = min(range(len(gas)), key=gas.__getitem__)
cells = case["grid"]["cells"]
per_radius = bubble["radius"] / ((case["grid"]["upper"][0] - case["grid"]["lower"][0]) / cells[0])
print(f"cells {cells} (R = {per_radius:.1f} cells), {case['run']['precision']}, steps {rows[-1]['step']}: "
      f"minimum gas volume {gas[k] / gas[0]:.4f} V0 at t = {t[k]:.4f}, t_c = {t_c:.4f}, "
      f"t_min / t_c = {t[k] / t_c:.4f}")
