"""Times of successive pressure peaks in a run's diagnostics (e.g. the collapses of a cavity array).

    python3 tools/peak-times.py OUT_DIR [--window 0.05] [--above 2.0]

A peak is a step whose max_p is the largest within +-window (time units of the case) and
whose p_max/dp (p_amplification) exceeds `above`; dp is the case's shock pressure jump.
Without a p_amplification column, dp is taken from the run's case.toml (the shock_pressure
region's jump over its pre-shock pressure). Adaptive ([amr]) runs' rows have max_p since
2026-11-28; for older ones the tool says why it cannot find their peaks and stops."""
import argparse
import bisect
import csv
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

parser = argparse.ArgumentParser()
parser.add_argument("out", type=Path)
parser.add_argument("--window", type=float, default=0.05)
parser.add_argument("--above", type=float, default=2.0)
args = parser.parse_args()
rows = list(csv.DictReader(open(args.out / "diagnostics.csv")))
columns = list(rows[0]) if rows else []
if "max_p" not in columns:
    adaptive = any(name.startswith("leaf_blocks_") for name in columns)
    sys.exit(f"{args.out / 'diagnostics.csv'} has no max_p column"
             + (": an adaptive ([amr]) run written before 2026-11-28 has totals, leaf blocks per level, leaf cells and "
                "regrid seconds only, so its pressure peaks cannot be found from them"
                if adaptive else f" (its columns: {', '.join(columns)})"))


def shock_jump(folder: Path) -> float:
    """The case's shock pressure jump, from the run's case.toml (as run/build.py's shock_jump:
    the shock_pressure region's pressure over its pre-shock state's)."""
    case = tomllib.loads((folder / "case.toml").read_text())
    background = case.get("initial", {}).get("background", {})
    for region in case.get("initial", {}).get("regions", []):
        if "shock_pressure" in region:
            return region["shock_pressure"] - region.get("state", {}).get("p", background.get("p", 0.0))
    sys.exit(f"{folder / 'diagnostics.csv'} has no p_amplification column and {folder / 'case.toml'} no "
             f"shock_pressure region: no pressure jump to scale max_p by")


t = [float(r["time"]) for r in rows]
p = [float(r["max_p"]) for r in rows]
if "p_amplification" in columns:
    amp = [float(r["p_amplification"]) for r in rows]
else:
    dp = shock_jump(args.out)
    amp = [value / dp for value in p]
peaks = []
for k in range(1, len(t) - 1):  # (the rows are in time order: the window is a slice)
    lo, hi = bisect.bisect_left(t, t[k] - args.window), bisect.bisect_right(t, t[k] + args.window)
    if p[k] == max(p[lo:hi]) and amp[k] > args.above:
        peaks.append(k)
print(f"{len(rows)} steps, {len(peaks)} pressure peaks (p_max/dp > {args.above}, window {args.window}):")
for n, k in enumerate(peaks, 1):
    print(f"  peak {n:2d}: t = {t[k]:.4f}  p_max = {p[k]:.4g}  p_max/dp = {amp[k]:.2f}")
