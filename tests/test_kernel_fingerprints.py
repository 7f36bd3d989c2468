"""Every generated kernel of a matrix of configurations is the one recorded in
tests/reference/kernels.json (see tests/kernel_fingerprints.py): structural changes to the
package must leave them all unchanged; a deliberate kernel change records new ones with
`python tests/kernel_fingerprints.py --write tests/reference/kernels.json` and says why."""
import os
import subprocess
import sys

import kernel_fingerprints as fingerprints

REFERENCE = fingerprints.ROOT / "tests" / "reference"


def test_names_that_depend_on_definition_order_are_normalised():
    first = "define void @sweep_c81_0_kernel_0_range_for(%struct.RuntimeContext.7* %ctx) {\n  ret void\n}"
    later = "define void @walk_c412_3_kernel_0_range_for(%struct.RuntimeContext.250* %ctx) {\n  ret void\n}"
    assert fingerprints.normalise(first) == fingerprints.normalise(later)
    assert fingerprints.kernel_name(first) == "sweep"
    other_task = later.replace("kernel_0", "kernel_1")
    assert fingerprints.normalise(first) != fingerprints.normalise(other_task)


def test_every_kernel_is_unchanged(arch):
    """The CPU matrix here; with --arch cuda the CUDA-only paths (warp shuffles, prefetch, f64
    segments) against their own reference, recorded on a GPU. In a process of its own: the
    code of Taichi's own accessor kernels depends on what the process compiled before."""
    reference = REFERENCE / ("kernels.json" if arch == "cpu" else "kernels_cuda.json")
    check = subprocess.run([sys.executable, str(fingerprints.ROOT / "tests" / "kernel_fingerprints.py"),
                            "--arch", arch, "--check", str(reference)], capture_output=True, text=True,
                           env={**os.environ, "TI_ADVANCED_OPTIMIZATION": "1"})  # (the kernels as shipped: conftest)
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-4000:]
    assert "unchanged" in check.stdout.splitlines()[-1]
