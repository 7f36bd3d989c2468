"""Kernel fingerprints: a hash of every generated kernel of a matrix of configurations.

A structural change (moving code, renaming, splitting modules) must not change a single
generated kernel. This module builds each configuration, launches every kernel the solver
has once (Taichi compiles a kernel at its first launch), has Taichi dump the code it
generated — LLVM IR before LLVM's optimisation on the CPU, PTX on CUDA — normalises the
names that depend on the order kernels were defined in, and hashes each kernel. The CPU's
IR is taken before LLVM optimises it for the host: the optimised IR depends on the host's
vector units (AVX-512 machines vectorise other loops than AVX2 ones), so a reference
recorded on one CPU failed on another with every kernel "changed"; Taichi's own passes,
which a change to taichiflow can alter, have all run by then. tests/test_kernel_fingerprints.py
compares the CPU matrix with tests/reference/kernels.json; on a GPU machine

    python tests/kernel_fingerprints.py --arch cuda --check tests/reference/kernels_cuda.json

compares the CUDA-only paths (warp shuffles, prefetch, f64 segments) with theirs.
`--write FILE` records a new reference: only for a deliberate kernel change, whose commit
says why and carries `taichiflow bench --sweep` figures before and after from one GPU call.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import taichi as ti  # noqa: E402

from taichiflow.case import load_case  # noqa: E402

CASES = ROOT / "cases"

# name: (case file, overrides). Small grids: the grid's size is compiled in, not its shape's
# effect on the code, and CI compiles every kernel of the matrix in well under two minutes.
_1D = ["grid.cells=[24]", "time.end=1.0"]
_2D = ["grid.cells=[12,10]", "time.end=1.0"]
_3D = ["grid.cells=[8,7,6]", "time.end=1.0"]
CPU_MATRIX = {
    "1d-weno5-hllc-lsrk3-f64-cell-retry": ("sod.toml", _1D + [
        'run.precision="f64"', 'scheme.retry={reconstruction="plm", riemann="hll"}']),
    "1d-first_order-hll-euler-f32-face": ("sod.toml", _1D + [
        'run.precision="f32"', 'scheme.reconstruction="first_order"', 'scheme.riemann="hll"',
        'scheme.integrator="euler"', 'run.reconstruct="face"']),
    "1d-muscl_hancock-rusanov-ssprk2-f64-conserved-inflow": ("shu_osher.toml", _1D + [
        'run.precision="f64"', 'scheme.reconstruction="muscl_hancock"', 'scheme.riemann="rusanov"',
        'scheme.integrator="ssprk2"', 'scheme.variables="conserved"']),
    "1d-weno5z-musta-ssprk3-f32-characteristic": ("sod.toml", _1D + [
        'run.precision="f32"', 'scheme.reconstruction="weno5z"', 'scheme.riemann="musta"',
        'scheme.integrator="ssprk3"', 'scheme.variables="characteristic"']),
    "2d-plm-hll-ssprk2-f32-fused-periodic": ("kelvin_helmholtz.toml", _2D + [
        'run.precision="f32"', 'scheme.reconstruction="plm"', 'scheme.riemann="hll"',
        'scheme.integrator="ssprk2"']),
    "2d-weno5-hllc-lsrk3-f64-face-outflow": ("riemann2d.toml", _2D + [
        'run.precision="f64"', 'run.reconstruct="face"', 'run.keep_last_good=false']),
    "2d-weno3-force-lsrk3-f64-unfused": ("riemann2d.toml", _2D + [
        'run.precision="f64"', 'scheme.reconstruction="weno3"', 'scheme.riemann="force"', 'run.fuse=false']),
    "3d-plm-hll-ssprk2-f64-fused-wall": ("sedov3d.toml", _3D + [
        'run.precision="f64"', 'scheme.reconstruction="plm"', 'scheme.riemann="hll"',
        'scheme.integrator="ssprk2"', 'boundary.y="wall"']),
    "3d-weno5-hllc-lsrk3-f32-face": ("sedov3d.toml", _3D + ['run.precision="f32"']),
    "1d-two_phase-weno5-hllc-lsrk3-f64-retry": ("gas_water_tube.toml", _1D + [
        'run.precision="f64"', 'scheme.retry={reconstruction="first_order", riemann="hll"}']),
    "3d-two_phase-plm-hllc-ssprk2-f32-inflow-absorbing-wall": ("bubble_collapse.toml", _3D + [
        'run.precision="f32"', 'scheme.reconstruction="plm"', 'scheme.integrator="ssprk2"',
        'grid.upper=[8.0,7.0,6.0]']),
}
# The CUDA-only paths: warp-shuffle walks and sweeps, loads a step ahead, f64 segments of 32.
CUDA_MATRIX = {
    "3d-weno5-hllc-lsrk3-f32-shufflewalk": ("sedov3d.toml", _3D + ['run.precision="f32"']),
    "3d-weno5-hllc-lsrk3-f64-shufflesweep-segment32": ("sedov3d.toml", _3D + [
        'run.precision="f64"', 'run.segment=[32,32,2]']),  # (the default on grids that fill a GPU)
    "3d-plm-hll-ssprk2-f32-fused-shufflewalk-cell": ("sedov3d.toml", _3D + [
        'run.precision="f32"', 'scheme.reconstruction="plm"', 'scheme.riemann="hll"',
        'scheme.integrator="ssprk2"']),
    "3d-first_order-hll-ssprk2-f32-fused-noshuffle": ("sedov3d.toml", _3D + [
        'run.precision="f32"', 'scheme.reconstruction="first_order"', 'scheme.riemann="hll"',
        'scheme.integrator="ssprk2"']),
    "2d-weno5-hllc-lsrk3-f32-cell-walk-retry": ("riemann2d.toml", _2D + [
        'run.precision="f32"', 'run.reconstruct="cell"', 'scheme.retry={reconstruction="plm", riemann="hll"}']),
    "3d-two_phase-weno5-hllc-lsrk3-f32-shufflewalk": ("bubble_collapse.toml", _3D + [
        'run.precision="f32"', 'grid.upper=[8.0,7.0,6.0]']),
}
MATRICES = {"cpu": CPU_MATRIX, "cuda": CUDA_MATRIX}
DUMPS = {"cpu": "taichi_kernel_generic_llvm_ir_*.ll", "cuda": "taichi_kernel_nvptx_*.ptx"}
DUMP_OPTION = {"cpu": "print_kernel_llvm_ir", "cuda": "print_kernel_asm"}

# Names that depend on how many kernels the process defined before (the _cN_M counter),
# numbered type names of the linked runtime module, and the host's target attributes.
_KERNEL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)_c\d+_\d+_kernel_(\d+)")
_ACCESSOR = re.compile(r"(snode_(?:reader|writer))_\d+_kernel_(\d+)")  # a field element set or read from Python
_NUMBERED_TYPE = re.compile(r"(%\"?(?:struct|class|union)\.[^\s\"*,)]*?)\.\d+(?=[\"\s*,)])")
_DROPPED = re.compile(r"^(attributes #|target triple|target datalayout|source_filename|!llvm\.ident|!\d+ = "
                      r"!\{!\"[^\"]*clang|//)")


def normalise(code: str) -> str:
    """The generated code with its order-dependent names replaced (see above)."""
    code = _KERNEL_NAME.sub(r"kernel_\2", code)
    code = _ACCESSOR.sub(r"\1_kernel_\2", code)
    code = _NUMBERED_TYPE.sub(r"\1", code)
    return "\n".join(line for line in code.splitlines() if not _DROPPED.match(line))


_ENTRY = re.compile(r"(?:\.entry|define [^@\n]*@)\s*([A-Za-z_][\w.$]*)")


def kernel_name(code: str) -> str:
    """The kernel's Python name, Taichi's accessor's, else the first function the code defines."""
    match = _KERNEL_NAME.search(code) or _ACCESSOR.search(code)
    if match:
        return match.group(1)
    entry = _ENTRY.search(code)
    return f"?{entry.group(1)}" if entry else "?"


@contextlib.contextmanager
def dumping_kernels(arch: str):
    """ti.init as the run calls it, with the offline cache off (a cached kernel is not
    compiled, so nothing would be dumped) and the generated code written to the current
    folder."""
    original = ti.init

    def init(*args, **kwargs):
        kwargs["offline_cache"] = False
        kwargs[DUMP_OPTION[arch]] = True
        return original(*args, **kwargs)

    ti.init = init
    try:
        yield
    finally:
        ti.init = original


def launch_every_kernel(sim) -> None:
    """Launch each kernel a run can use at least once: steps, checks, reductions, counters,
    retries, transfers in both directions and every derived field (the initial state's fill ran
    when the run was built)."""
    solver = sim.solver
    sim.advance(sim.end_time, max_steps=2, on_step=lambda s: None)
    sim.advance(sim.end_time, max_steps=4)
    if solver.plan.has_retry:
        solver.restore_last_good()
        solver.check_state()
        solver.step(sim.last_dt, sim.t, retry=True)
    solver.restore_last_good()
    solver.reductions()
    solver.take_fallback_count()
    solver.take_repair_count()
    solver.set_conserved(solver.conserved_array())
    solver.refresh_primitives()
    solver.set_primitive(solver.primitive_array())
    for name in sim.model.derived:
        solver.derived_array(name)


def fingerprint(case_file: str, overrides, arch: str) -> list[dict]:
    """[{kernel, hash}] of every kernel of one configuration, sorted by hash."""
    from taichiflow.run import Simulation

    case = load_case(CASES / case_file, [f'run.arch="{arch}"', 'run.fast_math="auto"', *overrides])
    previous = os.getcwd()
    with tempfile.TemporaryDirectory() as folder, dumping_kernels(arch):
        os.chdir(folder)
        try:
            launch_every_kernel(Simulation(case))
            ti.sync()
        finally:
            os.chdir(previous)
        kernels = []
        for path in sorted(Path(folder).glob(DUMPS[arch])):
            code = path.read_text()
            kernels.append({"kernel": kernel_name(code),
                            "hash": hashlib.sha256(normalise(code).encode()).hexdigest()[:16]})
    return sorted(kernels, key=lambda k: (k["hash"], k["kernel"]))


def fingerprints(arch: str, names=None) -> dict:
    """Each configuration's fingerprints, each in a process of its own: Taichi numbers what it
    compiles per process, and the code of a kernel (combine_check was seen to) can depend on
    what the process compiled before it, so one configuration's change would show in others."""
    import subprocess
    matrix = MATRICES[arch]
    found = {}
    for name in names or matrix:
        one = subprocess.run([sys.executable, __file__, "--arch", arch, "--one", name], capture_output=True,
                             text=True)
        if one.returncode != 0:
            raise RuntimeError(f"{name}: {one.stdout[-2000:]}{one.stderr[-2000:]}")
        found[name] = json.loads(one.stdout.strip().splitlines()[-1])
    return found


def compare(found: dict, reference: dict) -> list[str]:
    """Lines naming every configuration whose kernels differ from the reference."""
    problems = []
    for name, kernels in found.items():
        expected = reference.get(name)
        if expected is None:
            problems.append(f"{name}: not in the reference")
            continue
        have, want = [k["hash"] for k in kernels], [k["hash"] for k in expected]
        if have != want:
            new = [f"{k['kernel']} {k['hash']}" for k in kernels if k["hash"] not in want]
            gone = [f"{k['kernel']} {k['hash']}" for k in expected if k["hash"] not in have]
            problems.append(f"{name}: {len(kernels)} kernels against {len(expected)}; new {new}; gone {gone}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=sorted(MATRICES), default="cpu")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="record the fingerprints as the new reference")
    group.add_argument("--check", metavar="FILE", help="compare with a stored reference")
    group.add_argument("--one", metavar="NAME", help="print one configuration's fingerprints as JSON")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(fingerprint(*MATRICES[args.arch][args.one], args.arch)))
        return 0
    found = fingerprints(args.arch)
    count = sum(len(k) for k in found.values())
    if args.write:
        Path(args.write).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {count} kernel fingerprints of {len(found)} configurations to {args.write}")
        return 0
    problems = compare(found, json.loads(Path(args.check).read_text()))
    print("\n".join(problems) or f"all {count} kernel fingerprints of {len(found)} configurations unchanged")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
