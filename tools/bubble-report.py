"""Collapse figures of a bubble_collapse run: shock impact, minimum gas volume, peak pressure.

    python3 tools/bubble-report.py OUT_DIR
"""
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from taichiflow.case import load_case  # noqa: E402

out = Path(sys.argv[1])
case = load_case(out / "case.toml")
rows = list(csv.DictReader(open(out / "diagnostics.csv")))
t = [float(r["time"]) for r in rows]
gas = [float(r["sum_alpha"]) for r in rows]
amp = [float(r["p_amplification"]) for r in rows]
bubble, shock = case["initial"]["regions"][0], case["initial"]["regions"][1]
pre_rho, post_p = shock["state"]["rho"], shock["shock_pressure"]
# shock speed from the jump conditions: U = rho1 u1 / (rho1 - rho0) for gas at rest ahead
rho1, u1 = float(rows[0]["max_rho"]), float(rows[0]["max_vel_x"])
speed = rho1 * u1 / (rho1 - pre_rho)
impact = (bubble["center"][0] - bubble["radius"] - shock["point"][0]) / speed
k = min(range(len(gas)), key=gas.__getitem__)
j = max(range(len(amp)), key=amp.__getitem__)
print(f"cells {case['grid']['cells']}, steps {rows[-1]['step']}, shock speed {speed:.4f} mm/us, "
      f"impact t = {impact:.4f} us")
print(f"minimum gas volume {gas[k] / gas[0]:.4f} V0 at t = {t[k]:.4f} us: collapse time "
      f"{t[k] - impact:.4f} us after impact; peak p_max/dp = {amp[j]:.2f} at t = {t[j]:.4f} us")
