"""The Orszag-Tang reference of tests/test_mhd.py: cases/orszag_tang.toml at 512^2 (f64,
fast-math off) to t = 0.5, its density averaged onto 64 x 64 blocks, with the energies.

    python tools/orszag-tang-reference.py --arch cuda OUT.npz     # the GPU machine: ~1 minute

Run it only for an intended change of the MHD numerics, and say why in the commit.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taichiflow.case import load_case  # noqa: E402
from taichiflow.run import Simulation  # noqa: E402

CELLS, BLOCKS = 512, 64


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--arch", default="cuda")
    parser.add_argument("--cells", type=int, default=CELLS)
    args = parser.parse_args()
    case = load_case(ROOT / "cases" / "orszag_tang.toml", [f"grid.cells=[{args.cells}, {args.cells}]",
                                                            "output.interval=0"])
    case["run"].update(arch=args.arch, precision="f64", fast_math=False)
    sim = Simulation(case)
    sim.advance(case["time"]["end"])
    sim.solver.refresh_primitives()
    rho = sim.solver.primitive_array()[..., 0]
    n = args.cells // BLOCKS
    blocks = rho.reshape(BLOCKS, n, BLOCKS, n).mean(axis=(1, 3))
    row = dict(zip(sim.diagnostics_columns(), sim.diagnostics_row()))
    np.savez_compressed(args.out, rho_blocks=blocks, cells=args.cells, steps=sim.step_count,
                        kinetic=row["sum_kinetic_energy"], magnetic=row["sum_magnetic_energy"])
    print(f"wrote {args.out}: {args.cells}^2, {sim.step_count} steps, kinetic {row['sum_kinetic_energy']:.6g}, "
          f"magnetic {row['sum_magnetic_energy']:.6g}")


if __name__ == "__main__":
    main()
