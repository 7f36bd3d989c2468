"""A synthetic valley terrain for dam-break floods: cases/data/valley.npz, the raster that a
shallow-water case reads as its bathymetry (`kind = "raster"`, docs/cases.md).

    python tools/make-valley.py                  # writes cases/data/valley.npz
    python tools/make-valley.py --out other.npz

Heights in metres over a 6 km x 3 km box (x down the valley, y across it), 241 x 121 nodes
(25 m apart), float32: a valley floor falling 0.6% down the valley, a meandering river channel
3 m deep, a flat floodplain that narrows into a gorge 1.5 km down (where a dam would stand),
hillsides rising 150-200 m on both sides, and smooth noise from a fixed seed, so the file is
the same on every machine. The .npz holds `values` (index [i, j] = [x, y]) and `extent`
([x_min, x_max, y_min, y_max]).
"""
import argparse
from pathlib import Path

import numpy as np

LENGTH, WIDTH = 6000.0, 3000.0     # m, down and across the valley
NODES = (241, 121)                 # 25 m apart
SEED = 20240611

FLOOR_TOP, FLOOR_SLOPE = 80.0, 0.006             # m at x = 0, and its fall per metre down the valley
CHANNEL_DEPTH, CHANNEL_HALF_WIDTH = 3.0, 30.0    # m
PLAIN_HALF_WIDTH, GORGE_AT, GORGE_LENGTH = 450.0, 1500.0, 350.0   # m
HILL_HEIGHT, HILL_WIDTH = 170.0, 900.0           # m: how high, and over what distance they rise


def centre_line(x):
    """y of the river's thalweg: two meanders of different wavelengths about the middle."""
    return 0.5 * WIDTH + 260.0 * np.sin(2 * np.pi * x / 2600.0) + 90.0 * np.sin(2 * np.pi * x / 1150.0 + 1.0)


def plain_half_width(x):
    """Half-width of the flat floodplain: narrowed to a gorge around GORGE_AT."""
    return PLAIN_HALF_WIDTH - 330.0 * np.exp(-((x - GORGE_AT) / GORGE_LENGTH) ** 2)


def smooth_noise(x, y, rng, modes=24):
    """A sum of random plane waves with wavelengths of 300-1500 m (a smooth, unit-rms field):
    hummocks on the hillsides, a little relief on the plain."""
    total, power = np.zeros(np.broadcast(x, y).shape), 0.0
    for _ in range(modes):
        wavelength = rng.uniform(300.0, 1500.0)
        angle = rng.uniform(0.0, np.pi)
        phase = rng.uniform(0.0, 2 * np.pi)
        amplitude, k = wavelength / 1500.0, 2 * np.pi / wavelength   # longer waves stand higher
        total += amplitude * np.cos(k * (np.cos(angle) * x + np.sin(angle) * y) + phase)
        power += 0.5 * amplitude ** 2
    return total / np.sqrt(power)


def terrain(x, y, rng):
    """Height in metres at points (x, y)."""
    floor = FLOOR_TOP - FLOOR_SLOPE * x
    across = np.abs(y - centre_line(x))
    channel = -CHANNEL_DEPTH * np.exp(-(across / CHANNEL_HALF_WIDTH) ** 2)
    beyond = np.maximum(across - plain_half_width(x), 0.0) / HILL_WIDTH
    hills = HILL_HEIGHT * (1.0 - np.exp(-2.5 * beyond ** 1.6))       # steep, then levelling off
    roughness = (0.4 + 6.0 * np.minimum(beyond, 1.0)) * smooth_noise(x, y, rng)
    return floor + channel + hills + roughness


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent.parent / "cases" / "data" / "valley.npz")
    args = parser.parse_args()
    x = np.linspace(0.0, LENGTH, NODES[0])[:, None]
    y = np.linspace(0.0, WIDTH, NODES[1])[None, :]
    values = terrain(x, y, np.random.default_rng(SEED)).astype(np.float32)
    extent = np.array([0.0, LENGTH, 0.0, WIDTH])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, values=values, extent=extent)
    print(f"{args.out}: {values.shape[0]} x {values.shape[1]} nodes over {LENGTH:g} m x {WIDTH:g} m, "
          f"heights {values.min():.1f} to {values.max():.1f} m, {args.out.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
