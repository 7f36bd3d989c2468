"""Times of successive pressure peaks in a run's diagnostics (e.g. the collapses of a cavity array).

    python3 tools/peak-times.py OUT_DIR [--window 0.05] [--above 2.0]

A peak is a step whose max_p is the largest within +-window (time units of the case) and
whose p_max/dp (p_amplification) exceeds `above`; dp is the case's shock pressure jump."""
import argparse
import csv
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("out", type=Path)
parser.add_argument("--window", type=float, default=0.05)
parser.add_argument("--above", type=float, default=2.0)
args = parser.parse_args()
rows = list(csv.DictReader(open(args.out / "diagnostics.csv")))
t = [float(r["time"]) for r in rows]
p = [float(r["max_p"]) for r in rows]
amp = [float(r["p_amplification"]) for r in rows]
peaks = []
for k in range(len(t)):
    near = [p[j] for j in range(len(t)) if abs(t[j] - t[k]) <= args.window]
    if p[k] == max(near) and amp[k] > args.above and 0 < k < len(t) - 1:
        peaks.append(k)
print(f"{len(rows)} steps, {len(peaks)} pressure peaks (p_max/dp > {args.above}, window {args.window}):")
for n, k in enumerate(peaks, 1):
    print(f"  peak {n:2d}: t = {t[k]:.4f}  p_max = {p[k]:.4g}  p_max/dp = {amp[k]:.2f}")
