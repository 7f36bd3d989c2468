"""The table of observed orders in docs/numerics.md: every method x reconstruction x
variables x integrator on the isentropic wave (tests/smooth_problems.py) along x (1D) and
along the diagonal of a square (2D) and a cube (3D), f64, fast-math off.

    python tools/orders.py                       # CPU: 1D and 2D, 3D up to 32^3
    python tools/orders.py --arch cuda --dims 3  # the GPU machine: 3D up to 128^3

Errors are mean |rho - reference|: point values for finite differences, cell averages for
finite volumes (whose initial data are exact cell averages of U).
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from smooth_problems import is_finite_difference, observed_order, run_wave, wave_error  # noqa: E402

FV, FD = 'scheme.method="finite_volume"', 'scheme.method="finite_difference"'
ROWS = {  # label: overrides
    "FV weno5 primitive hllc lsrk3 (the former default)": [FV, 'scheme.riemann="hllc"'],
    "FV weno5 primitive hllc lsrk4": [FV, 'scheme.riemann="hllc"', 'scheme.integrator="lsrk4"'],
    "FV weno5 conserved hllc lsrk4": [FV, 'scheme.riemann="hllc"', 'scheme.variables="conserved"',
                                      'scheme.integrator="lsrk4"'],
    "FV weno5 characteristic hllc lsrk4": [FV, 'scheme.riemann="hllc"', 'scheme.variables="characteristic"',
                                           'scheme.integrator="lsrk4"'],
    "FV weno5 conserved_characteristic hllc lsrk4": [FV, 'scheme.riemann="hllc"',
                                                     'scheme.variables="conserved_characteristic"',
                                                     'scheme.integrator="lsrk4"'],
    "FV weno5z primitive hllc lsrk4": [FV, 'scheme.riemann="hllc"', 'scheme.reconstruction="weno5z"',
                                       'scheme.integrator="lsrk4"'],
    "FD weno5 conserved lsrk3": [FD],
    "FD weno5 conserved lsrk4": [FD, 'scheme.integrator="lsrk4"'],
    "FD weno5 characteristic lsrk4": [FD, 'scheme.variables="characteristic"', 'scheme.integrator="lsrk4"'],
    "FD weno5z conserved lsrk4": [FD, 'scheme.reconstruction="weno5z"', 'scheme.integrator="lsrk4"'],
    "FD weno5z characteristic lsrk4": [FD, 'scheme.reconstruction="weno5z"', 'scheme.variables="characteristic"',
                                       'scheme.integrator="lsrk4"'],
    "FD weno3 conserved lsrk4": [FD, 'scheme.reconstruction="weno3"', 'scheme.integrator="lsrk4"'],
}
GRIDS = {1: (32, 64, 128), 2: (32, 64, 128), 3: (16, 32, 64)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rows", nargs="+", default=[], help="only rows whose label contains one of these")
    parser.add_argument("--largest", type=int, default=0, help="add this many cells per axis as a finer level")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="taichiflow-orders-"))
    for dim in args.dims:
        sizes = GRIDS[dim] + ((args.largest,) if args.largest else ())
        if args.arch != "cpu" and dim == 3:
            sizes = (32, 64, 128)
        print(f"\n{dim}D, cells per axis {sizes}, arch {args.arch}\n")
        print("| path | " + " | ".join(str(n) for n in sizes) + " | observed orders |")
        print("| --- | " + " | ".join("---" for _ in sizes) + " | --- |")
        normal = tuple([1.0] * dim)
        for label, overrides in ROWS.items():
            if args.rows and not any(r in label for r in args.rows):
                continue
            errors = [wave_error(run_wave(scratch, (n,) * dim, normal, overrides, arch=args.arch), (n,) * dim, normal,
                                 is_finite_difference(overrides), args.arch) for n in sizes]
            orders = ", ".join(f"{p:.2f}" for p in observed_order(errors))
            print(f"| {label} | " + " | ".join(f"{e:.2e}" for e in errors) + f" | {orders} |", flush=True)


if __name__ == "__main__":
    main()
