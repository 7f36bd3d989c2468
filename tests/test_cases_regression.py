"""Every shipped case runs at reduced resolution and reproduces stored reference values.

The references (tests/reference/cases.json) were generated on the CPU in f64 with
`python tests/test_cases_regression.py --regenerate` after the physics of each case had been
checked against exact solutions (test_sod, test_toro, test_sedov). Regenerate only for an
intended change of the numerics, and say why in the commit.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import CASES, precise, simulate  # noqa: E402
from taichiflow.case import load_case  # noqa: E402
from taichiflow.run.adaptive import AdaptiveRun  # noqa: E402

REFERENCE = Path(__file__).resolve().parent / "reference" / "cases.json"

REDUCED = {
    "sod.toml": ["grid.cells=[100]"],
    "riemann2d.toml": ["grid.cells=[32, 32]", "time.end=0.3"],
    "sedov2d.toml": ["grid.cells=[32, 32]", "time.end=0.02"],
    "sedov3d.toml": ["grid.cells=[24, 24, 24]", "time.end=0.01"],
    "toro_123.toml": ["grid.cells=[100]"],
    "toro_blast.toml": ["grid.cells=[100]"],
    "toro_collision.toml": ["grid.cells=[100]"],
    "stationary_contact.toml": ["grid.cells=[50]", "time.end=0.5"],
    "shu_osher.toml": ["grid.cells=[100]", "time.end=0.5"],
    "isentropic_vortex.toml": ["grid.cells=[16, 16]", "time.end=1.0"],
    "kelvin_helmholtz.toml": ["grid.cells=[32, 32]", "time.end=0.3"],
    "gas_water_tube.toml": ["grid.cells=[100]"],
    "rayleigh_collapse.toml": ["grid.cells=[16, 16, 16]", "time.end=1.0"],
    "bubble_collapse.toml": ["grid.cells=[32, 16, 16]", "time.end=0.1"],
    "cavity_array.toml": ["grid.cells=[128, 32, 32]", "time.end=0.05"],
    "cavity_array_quarter.toml": ["grid.cells=[128, 16, 16]", "time.end=0.05"],
    "brio_wu.toml": ["grid.cells=[100]"],
    "ryu_jones_2a.toml": ["grid.cells=[100]"],
    "orszag_tang.toml": ["grid.cells=[32, 32]", "time.end=0.1"],
    "mhd_linear_wave.toml": ["grid.cells=[16, 8, 8]", "time.end=0.1"],
    "mhd_turbulence.toml": ["grid.cells=[16, 16, 16]", "time.end=0.02"],
    "dam_break_wet.toml": ["grid.cells=[100]"],
    "dam_break_dry.toml": ["grid.cells=[100]"],
    "lake_at_rest.toml": ["grid.cells=[50]", "time.end=2.0"],
    "lake_at_rest_emerged.toml": ["grid.cells=[50]", "time.end=2.0"],
    "thacker_1d.toml": ["grid.cells=[100]", "time.end=0.5"],
    "thacker_2d.toml": ["grid.cells=[32, 32]", "time.end=0.5"],
    "circular_dam_break.toml": ["grid.cells=[40, 40]", "time.end=0.3"],
    "valley_dam_break.toml": ["grid.cells=[60, 30]", "time.end=120.0"],
    "bump_subcritical.toml": ["grid.cells=[50]", "time.end=20.0"],
    "bump_transcritical.toml": ["grid.cells=[50]", "time.end=20.0"],
    "bump_transcritical_shock.toml": ["grid.cells=[50]", "time.end=20.0"],
    "sr_marti_muller_1.toml": ["grid.cells=[100]"],
    "sr_marti_muller_2.toml": ["grid.cells=[100]"],
    "sr_expanding_ball.toml": ["grid.cells=[16, 16, 16]", "time.end=0.1"],
    "sr_transverse.toml": ["grid.cells=[100]"],
    "sr_blast_3d.toml": ["grid.cells=[12, 12, 12]", "time.end=0.2"],
    "sr_blast_2d.toml": ["grid.cells=[32, 32]", "time.end=0.2"],
    "sedov3d_amr.toml": ["grid.cells=[16, 16, 16]", "amr.max_level=1", "time.end=0.01"],
    "shock_bubble_amr.toml": ["amr.max_level=1", "time.end=0.15"],
    # (capacity 0: the default pool for these 8 root blocks, 512 slots, not the case's 49152 of
    # its 64^3 top grid, whose allocation was most of this run's time: the same values bit for bit)
    "cloud_blast_amr.toml": ["grid.cells=[16, 16, 16]", "amr.max_level=1", "amr.criteria_max_level=0",
                             "amr.regions.0.level=1", "time.end=0.002", "amr.capacity=0"],
    "bubble_collapse_amr.toml": ["grid.cells=[32, 16, 16]", "amr.max_level=1", "amr.criteria_max_level=0",
                                 "time.end=0.02"],
    "cavity_array_amr.toml": ["grid.cells=[128, 16, 16]", "amr.block_cells=8", "amr.max_level=1",
                              "amr.criteria_max_level=0", "amr.regions.0.level=1", "time.end=0.02"],
}


def final_fields(case_file: str, arch: str) -> tuple:
    """(steps, {name: values}, dimension) of a case run to its end; an adaptive case's on its
    finest level's grid."""
    case = load_case(CASES / case_file, REDUCED[case_file])
    if "amr" not in case:
        sim = simulate(case, arch)
        return sim.step_count, sim.fields(), sim.solver.dim
    run = AdaptiveRun(precise(case, arch))
    run.advance(case["time"]["end"])
    w, layout = run.uniform(), run.model.primitive
    fields = {name: w[..., layout.offsets[name]:layout.offsets[name] + layout.sizes[name]] for name in layout.names}
    return run.step_count, fields, run.solver.dim


def summary(case_file: str, arch: str = "cpu") -> dict:
    """Step count and per-component mean/min/max/RMS of the final primitive fields."""
    steps, fields, dim = final_fields(case_file, arch)
    stats = {"steps": steps}
    for name, values in fields.items():
        columns = values.reshape(values.shape[:dim] + (-1,))
        for c in range(columns.shape[-1]):
            v = columns[..., c]
            stats[f"{name}[{c}]"] = [float(v.mean()), float(v.min()), float(v.max()), float(np.sqrt((v * v).mean()))]
    return stats


def test_every_shipped_case_has_a_regression_entry():
    assert sorted(p.name for p in CASES.glob("*.toml")) == sorted(REDUCED)


@pytest.mark.parametrize("case_file", sorted(REDUCED))
def test_case_matches_reference(case_file, arch):
    reference = json.loads(REFERENCE.read_text())[case_file]
    result = summary(case_file, arch)
    assert result["steps"] == reference["steps"]
    # f64 on the CPU is deterministic; CUDA differs in the last bits (FMA contraction),
    # which short runs of these problems keep far below 1e-8.
    rtol = 1e-10 if arch == "cpu" else 1e-8
    for key, values in reference.items():
        if key != "steps":
            np.testing.assert_allclose(result[key], values, rtol=rtol, atol=1e-12, err_msg=f"{case_file} {key}")


if __name__ == "__main__" and "--regenerate" in sys.argv:
    REFERENCE.write_text(json.dumps({c: summary(c) for c in sorted(REDUCED)}, indent=1) + "\n")
    print(f"wrote {REFERENCE}")
elif __name__ == "__main__" and "--add-missing" in sys.argv:  # a new case: its entry only
    stored = json.loads(REFERENCE.read_text())
    stored.update({c: summary(c) for c in sorted(REDUCED) if c not in stored})
    REFERENCE.write_text(json.dumps(dict(sorted(stored.items())), indent=1) + "\n")
    print(f"wrote {REFERENCE}")
