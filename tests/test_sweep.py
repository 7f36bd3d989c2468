"""The fused flux sweeps: results do not depend on how the axes are cut into segments, and a
run without the kept last good state uses less memory and says what it lost on failure."""
import numpy as np
import pytest

from helpers import CASES, case_from_text, precise
from taichiflow.kernels import plan as kernel_plan
from taichiflow import registry
from taichiflow.case import CaseError, load_case
from taichiflow.run import Simulation, SimulationError
from test_symmetry import BLAST


def colliding_blasts_3d(tmp_path, arch, precision="f64", **run):
    """A blast whose periodic images collide: fallbacks fire, every axis does work."""
    text = BLAST.format(cells=[12, 10, 14], lower=[-0.5] * 3, upper=[0.5] * 3, recon="weno5",
                        boundary='x = "periodic"\ny = "periodic"\nz = "periodic"')
    case = precise(case_from_text(tmp_path, text), arch, precision)
    case["run"].update(run)
    sim = Simulation(case)
    fallbacks = []
    sim.advance(1.0, max_steps=25, on_step=lambda s: fallbacks.append(s.solver.take_fallback_count()))
    return sim.fields(), fallbacks


def test_segment_length_block_size_and_reconstruction_per_cell_do_not_change_the_result(tmp_path, arch):
    reference, counted = colliding_blasts_3d(tmp_path, arch, segment=16, reconstruct="cell")
    assert sum(counted) > 0  # the fallback path is exercised too
    # one cell per thread, a length that does not divide any axis, one longer than every axis;
    # each face reconstructed from its own stencil instead of each cell once for two faces;
    # on CUDA (where the last axis is swept with warp shuffles) also walking it in segments
    runs = [{"segment": 1}, {"segment": 5, "block_dim": 64}, {"segment": 100},
            {"segment": 16, "reconstruct": "face"}, {"segment": 1, "reconstruct": "face"},
            {"segment": 16, "fuse": True}, {"segment": 3, "reconstruct": "face", "fuse": True}]
    if arch == "cuda":
        runs += [{"segment": 16, "reconstruct": "cell", "shuffle": False},
                 {"segment": 3, "reconstruct": "face", "shuffle": False},
                 {"segment": 16, "reconstruct": "face", "shuffle": True},
                 {"segment": 16, "reconstruct": "cell", "shuffle": "walk"},
                 {"segment": 5, "reconstruct": "face", "shuffle": "walk", "block_dim": 64},
                 {"segment": 16, "reconstruct": "face", "shuffle": "walk", "fuse": True},
                 {"segment": 3, "reconstruct": "cell", "shuffle": "walk", "fuse": True, "block_dim": 64}]
    for run in runs:
        fields, fallbacks = colliding_blasts_3d(tmp_path, arch, **run)
        assert fallbacks == counted, run
        # CUDA contracts multiply-adds where it sees fit, which differs between the loops of
        # the kernels (the same formulas): equal to rounding there, bit for bit here.
        # (on an H100 within 1e-11 relative, 9.4e-17 apart where velocities are near 0)
        # The fused sweep sums the axes' fluxes before scaling by dt: equal to rounding.
        rounding = 1e-10 if arch == "cuda" or run.get("fuse") else 0.0
        for name in reference:
            atol = rounding * np.abs(reference[name]).max()
            np.testing.assert_allclose(fields[name], reference[name], rtol=0.0, atol=atol, err_msg=str((run, name)))


def test_loading_cells_ahead_gives_the_same_result(tmp_path, arch, monkeypatch):
    """The GPU's early loads of U, R and U0 (kernels.plan.PREFETCH_ARCHS), here forced on and off."""
    results = []
    for archs in ({"cuda", "cpu"}, set()):
        monkeypatch.setattr(kernel_plan, "PREFETCH_ARCHS", archs)
        results.append(colliding_blasts_3d(tmp_path, arch, segment=[5, 3, 2]))
    (early, early_fallbacks), (late, late_fallbacks) = results
    assert early_fallbacks == late_fallbacks and sum(early_fallbacks) > 0
    rounding = 1e-10 if arch == "cuda" else 0.0  # CUDA may contract multiply-adds differently
    for name in early:
        atol = rounding * np.abs(late[name]).max()
        np.testing.assert_allclose(early[name], late[name], rtol=0.0, atol=atol, err_msg=name)


def sod_blowing_up(**run):
    case = precise(load_case(CASES / "sod.toml", ["grid.cells=[400]", "scheme.integrator='euler'", "scheme.cfl=1.0",
                                                 "scheme.positivity_fallback=false"]))
    case["run"].update(run)
    return Simulation(case)


def test_without_the_kept_state_memory_drops_and_a_failure_says_what_is_lost():
    # (one Simulation at a time: each starts Taichi afresh)
    kept = sod_blowing_up()
    kept_bytes = kept.solver.resident_bytes()
    with pytest.raises(SimulationError, match=r"Wrote the last good state \(step \d+"):
        kept.advance(0.2)
    kept_steps = kept.step_count
    lean = sod_blowing_up(keep_last_good=False)
    assert lean.solver.U0 is None
    assert kept_bytes - lean.solver.resident_bytes() == 400 * 5 * 8  # U0: nU f64 values per cell
    with pytest.raises(SimulationError, match=r"was not kept \(\[run\] keep_last_good = false\)") as failure:
        lean.advance(0.2)
    assert "Wrote" not in str(failure.value)
    assert lean.step_count == kept_steps + 1  # the kept run stepped back to its last good state


def test_ssp_stages_keep_the_state_anyway_and_retry_needs_it():
    case = precise(load_case(CASES / "sod.toml", ["scheme.integrator='ssprk2'", "run.keep_last_good=false"]))
    assert Simulation(case).solver.U0 is not None
    with pytest.raises(CaseError, match=r"retry needs \[run\] keep_last_good = true"):
        Simulation(load_case(CASES / "sod.toml", ["scheme.retry.riemann='hll'", "run.keep_last_good=false"]))


def test_states_go_to_and_from_the_device_in_slabs(monkeypatch):
    from taichiflow.kernels import transfer
    case = precise(load_case(CASES / "sod.toml", ["grid.cells=[7, 4, 3]", "grid.lower=[0.0, 0.0, 0.0]",
                                                 "grid.upper=[1.0, 1.0, 1.0]",
                                                 "initial.regions.0.normal=[1.0, 0.0, 0.0]",
                                                 "initial.regions.0.point=[0.5, 0.5, 0.5]",
                                                 "output.fields=['rho', 'mach']"]))
    sim = Simulation(case)
    solver = sim.solver
    slabs = []
    for name in ("_write_primitive_slab", "_read_primitive_slab", "_read_conserved_slab", "_write_conserved_slab"):
        kernel = getattr(solver.transfer, name)
        setattr(solver.transfer, name, lambda rows, start, kernel=kernel, name=name: (slabs.append((name, start, len(rows))),
                                                                             kernel(rows, start)))
    monkeypatch.setattr(transfer, "SLAB_BYTES", 2 * 4 * 3 * 5 * 8)  # two x-rows per slab: 4 slabs
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=(7, 4, 3, 5))
    sim.set_primitive(w)
    solver.refresh_primitives()
    assert np.allclose(solver.primitive_array(), w, rtol=1e-14, atol=0)
    u = solver.conserved_array()
    assert np.allclose(u[..., 0], w[..., 0], rtol=1e-15) and np.allclose(u[..., 1:4], w[..., :1] * w[..., 1:4])
    solver.set_conserved(2.0 * u)
    assert np.array_equal(solver.conserved_array(), 2.0 * u)
    for name in ("_write_primitive_slab", "_read_primitive_slab", "_read_conserved_slab", "_write_conserved_slab"):
        assert [(start, rows) for kernel, start, rows in slabs if kernel == name][:4] == [(0, 2), (2, 2), (4, 2),
                                                                                         (6, 1)], name
    # derived fields too (one value per cell: a slab holds five x-rows here)
    solver.refresh_primitives()
    mach = sim.fields()["mach"]
    w = solver.primitive_array()
    assert np.allclose(mach, np.linalg.norm(w[..., 1:4], axis=-1) / np.sqrt(1.4 * w[..., 4] / w[..., 0]), rtol=1e-13)


def plan_of(case, arch="cpu", precision="f64"):
    """The kernel plan of a loaded case, without building a kernel."""
    kinds = [tuple(case["boundary"]["xyz"[d]]) for d in range(len(case["grid"]["cells"]))]
    return kernel_plan.resolve(case["scheme"], case["run"], arch, precision, case["grid"]["cells"], kinds)


def test_reconstruction_per_cell_needs_variables_local_to_a_cell():
    case = precise(load_case(CASES / "sod.toml", ["scheme.variables='characteristic'", "run.reconstruct='cell'"]))
    with pytest.raises(CaseError, match="reconstruct = 'cell' needs variables whose transform is local"):
        Simulation(case)
    assert plan_of(load_case(CASES / "sod.toml", ["scheme.variables='characteristic'"])).per_cell == (False,)
    assert plan_of(load_case(CASES / "sod.toml")).per_cell == (True,)  # CPU: per cell


def test_auto_reconstructs_per_face_only_for_wide_stencils_in_f32_on_cuda():
    """kernels.plan.RECONSTRUCT_PER_FACE: WENO5 (3 cells a side) per face in f32 on CUDA, narrower
    stencils and every other backend and precision per cell; an explicit choice wins."""
    from taichiflow.numerics.reconstruction import stencil_reach
    reconstructs_per_cell = kernel_plan.reconstructs_per_cell
    reach = {name: stencil_reach(name) for name in ("first_order", "plm", "muscl_hancock", "weno3", "weno5")}
    assert reach == {"first_order": 1, "plm": 2, "muscl_hancock": 2, "weno3": 2, "weno5": 3}
    assert [reconstructs_per_cell("auto", "primitive", "cuda", "f32", g) for g in (1, 2, 3)] == [True, True, False]
    assert reconstructs_per_cell("auto", "primitive", "cuda", "f64", 3)
    assert reconstructs_per_cell("auto", "primitive", "cpu", "f32", 3)
    assert not reconstructs_per_cell("face", "primitive", "cpu", "f64", 2)
    assert reconstructs_per_cell("cell", "primitive", "cuda", "f32", 3)
    plans = [plan_of(load_case(CASES / "sod.toml", [f"scheme.reconstruction='{r}'"]), "cuda", "f32")
             for r in ("plm", "weno5")]
    assert [p.per_cell for p in plans] == [(True,), (False,)]


def test_warp_shuffles_need_cuda_and_whole_warps():
    """The plan of each [run] shuffle choice, asserted without building a kernel (CUDA plans
    too); auto: the shuffle sweep in f64, shuffles in the walk along x in f32."""
    uses_shuffle = kernel_plan.uses_shuffle
    LastAxis = kernel_plan.LastAxis
    assert uses_shuffle("auto", "cuda", "f32", 64) == "walk" and uses_shuffle("auto", "cuda", "f64", 0) is True
    assert uses_shuffle("auto", "cuda", "f32", 48) is False  # auto walks where blocks are not whole warps
    for shuffle in ("true", '"walk"'):
        with pytest.raises(CaseError, match=f"shuffle = {shuffle} needs arch = 'cuda'"):
            Simulation(precise(load_case(CASES / "sod.toml", [f"run.shuffle={shuffle}"])))
    with pytest.raises(ValueError, match="block_dim a multiple of 32, not 48"):
        plan_of(load_case(CASES / "sod.toml", ["run.shuffle=true", "run.block_dim=48"]), "cuda")
    assert plan_of(load_case(CASES / "sod.toml")).last_axis is LastAxis.WALKED  # auto: CPU walks
    sedov = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]"])
    sweep = plan_of(sedov, "cuda", "f64")  # auto: f64 on CUDA, the last axis in a sweep of its own
    assert sweep.last_axis is LastAxis.SHUFFLE_SWEEP and sweep.walked == (0, 1, 2)
    sod_2d = ["grid.cells=[40, 8]", "grid.lower=[0.0, 0.0]", "grid.upper=[1.0, 0.2]",
              "initial.regions.0.normal=[1.0, 0.0]", "initial.regions.0.point=[0.5, 0.1]"]
    walk = plan_of(load_case(CASES / "sod.toml", sod_2d), "cuda", "f32")  # auto: f32 on CUDA
    assert walk.last_axis is LastAxis.SHUFFLE_IN_WALK and walk.walked == (0,)
    # a fused stage (auto: PLM) shuffles in its walk along x, except with first-order faces
    for recon, shuffles in (("plm", True), ("first_order", False)):
        fused = plan_of(load_case(CASES / "sod.toml", sod_2d + [f"scheme.reconstruction='{recon}'"]), "cuda", "f32")
        assert fused.fused and fused.shuffle_in_walk == shuffles and fused.walked == (0,)
    fused_3d = plan_of(load_case(CASES / "sedov3d.toml", ["scheme.reconstruction='plm'"]), "cuda", "f32")
    assert fused_3d.walked == (0,) and fused_3d.across == (1,) and fused_3d.shuffle_in_walk
    assert "warp shuffles inside the walk along x" in fused_3d.describe()


def test_default_segments_shorten_on_grids_too_small_to_fill_the_device():
    """[run] segment = []: the measured lengths (16, 32 in f64 on CUDA, 2 along the last axis)
    where a walk has FILL_THREADS threads, halved down to MIN_SEGMENT where it has fewer (CUDA
    only); a segment the case sets is kept."""
    sedov = lambda n, *more: load_case(CASES / "sedov3d.toml", [f"grid.cells=[{n}, {n}, {n}]", *more])
    assert plan_of(sedov(256), "cuda", "f64").segments == (32, 32, 2)
    assert plan_of(sedov(128), "cuda", "f64").segments == (32, 32, 2)  # 4 x 128^2 threads: enough
    assert plan_of(sedov(128), "cuda", "f32").segments == (16, 16, 2)
    assert plan_of(sedov(64), "cuda", "f64").segments == (4, 4, 2)     # 2 x 64^2 threads: 4 x fewer
    assert plan_of(sedov(64), "cuda", "f32").segments == (4, 4, 2)
    assert plan_of(sedov(32), "cuda", "f32").segments == (4, 4, 2)     # not below MIN_SEGMENT
    assert plan_of(sedov(64)).segments == (16, 16, 2)                  # the CPU's threads are few
    assert plan_of(sedov(64, "run.segment=[8, 16, 2]"), "cuda", "f64").segments == (8, 16, 2)
    assert kernel_plan.sweep_segments([], 2, "cuda", "f32", (512, 512)) == [4, 2]   # 32 x 512 -> 128 x 512
    assert kernel_plan.sweep_segments([], 2, "cuda", "f32", (1024, 1024)) == [16, 2]


def test_auto_fuses_narrow_stencils_unless_the_riemann_solver_is_costly():
    """MUSTA (registry: costly) solves its faces in a sweep per axis under fuse = "auto": solving
    the faces across a fused walk twice measured slower; HLL with the same stencil fuses."""
    blast = load_case(CASES / "sr_blast_3d.toml", ["grid.cells=[16, 16, 16]"])
    for arch, precision in (("cpu", "f64"), ("cuda", "f32"), ("cuda", "f64")):
        assert not plan_of(blast, arch, precision).fused
    assert plan_of(load_case(CASES / "sr_blast_3d.toml", ["grid.cells=[16, 16, 16]", "scheme.riemann='hll'"])).fused
    assert plan_of(load_case(CASES / "sr_blast_3d.toml", ["grid.cells=[16, 16, 16]", "run.fuse=true"])).fused
    assert registry.riemann_solvers.get("musta").costly and not registry.riemann_solvers.get("hllc").costly


def test_each_sweep_names_the_axes_whose_ghost_layers_it_reads():
    """KernelPlan.solved_axes: what a step's exchange of ghost layers waits for before each
    sweep (kernels/exchange.py), the later axes arriving while the earlier sweeps run."""
    sedov = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]"])
    def axes(plan):
        return [plan.solved_axes(k) for k in range(len(plan.walked))]
    assert axes(plan_of(sedov)) == [(0,), (1,), (2,)]  # CPU: three walks
    assert axes(plan_of(sedov, "cuda", "f32")) == [(0, 2), (1,)]  # z through shuffles in the walk along x
    assert axes(plan_of(sedov, "cuda", "f64")) == [(0,), (1,), (2,)]  # z in a shuffle sweep of its own
    plm = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]", "scheme.reconstruction='plm'"])
    assert axes(plan_of(plm)) == [(0, 1, 2)] and axes(plan_of(plm, "cuda", "f32")) == [(0, 1, 2)]  # fused
    assert plan_of(sedov, "cuda", "f32").axes_read_first == (0, 2)
    split = load_case(CASES / "sedov3d.toml", ["grid.cells=[8, 8, 8]", "scheme.dimensional_splitting=true",
                                               "scheme.integrator='euler'"])
    assert plan_of(split).axes_read_first == (0, 1, 2)  # (z first on odd steps)


@pytest.mark.cuda
@pytest.mark.parametrize("shuffle,reconstruct,fuse", [(True, "face", False), ("walk", "face", False),
                                                      ("walk", "cell", False), ("walk", "cell", True)])
def test_warp_shuffles_in_f32_give_the_walking_result(tmp_path, shuffle, reconstruct, fuse):
    """f32 values move through the shuffles whole (f64 ones in two halves, test above); per
    cell, the walk takes each cell's lower neighbour's upper face state from the lane before;
    fused, the walk along x also solves the faces along y."""
    walked, walked_fallbacks = colliding_blasts_3d(tmp_path, "cuda", "f32", shuffle=False, reconstruct=reconstruct,
                                                   fuse=fuse)
    shuffled, shuffled_fallbacks = colliding_blasts_3d(tmp_path, "cuda", "f32", shuffle=shuffle,
                                                       reconstruct=reconstruct, fuse=fuse)
    assert shuffled_fallbacks == walked_fallbacks and sum(walked_fallbacks) > 0
    for name in walked:
        scale = np.abs(walked[name]).max()
        np.testing.assert_allclose(shuffled[name], walked[name], rtol=0.0, atol=1e-4 * scale, err_msg=name)


@pytest.mark.parametrize("integrator", ["ssprk2", "lsrk3"])
@pytest.mark.parametrize("fuse", [False, True])
def test_the_register_is_stored_only_where_a_later_stage_reads_it(tmp_path, arch, integrator, fuse):
    """R poisoned with NaN before the run, here where the stage's only sweep is the last one:
    in 1D, or in 3D with [run] fuse. Its R only a next stage with a != 0 reads
    (kernels.plan.KernelPlan.stage_flags): SSP stages never store it, so it stays NaN; LSRK3 stores it at
    its first two stages only. Either way no stage reads an R it did not store: the state
    matches a run that starts with R = 0 bit for bit."""
    runs = []
    for poison in (False, True):
        if fuse:
            text = BLAST.format(cells=[6, 5, 7], lower=[-0.5] * 3, upper=[0.5] * 3, recon="plm",
                                boundary='x = "periodic"\ny = "periodic"\nz = "periodic"')
            case = precise(case_from_text(tmp_path, text), arch)
            case["scheme"]["integrator"] = integrator
            case["run"]["fuse"] = True
        else:
            case = precise(load_case(CASES / "sod.toml", [f"scheme.integrator='{integrator}'"]), arch)
        sim = Simulation(case)
        if poison:
            sim.solver.R.fill(np.nan)
        sim.advance(1.0, max_steps=6)
        runs.append((sim.solver.conserved_array(), sim.solver.R.to_numpy()))
    (clean, _), (poisoned, register) = runs
    assert np.isfinite(clean).all() and np.array_equal(poisoned, clean)
    if integrator == "ssprk2":
        assert np.isnan(register).all()
    else:
        assert np.isfinite(register).all()


def test_auto_fuses_the_stage_where_the_stencil_is_narrow_and_refuses_it_beside_shuffles(tmp_path):
    def sweeps(recon, **run):
        text = BLAST.format(cells=[6, 5, 7], lower=[-0.5] * 3, upper=[0.5] * 3, recon=recon,
                            boundary='x = "periodic"\ny = "periodic"\nz = "periodic"')
        case = precise(case_from_text(tmp_path, text))
        case["run"].update(run)
        return len(plan_of(case).walked)

    assert [sweeps(recon) for recon in ("first_order", "plm", "weno3", "weno5")] == [1, 1, 1, 3]
    assert sweeps("plm", fuse=False) == 3 and sweeps("weno5", fuse=True) == 1
    with pytest.raises(ValueError, match="shuffle = true solves the last axis in a warp-shuffle sweep of its own"):
        sweeps("plm", fuse=True, shuffle=True)


def test_the_traffic_model_counts_what_each_sweep_moves():
    """Solver.modelled_bytes_per_cell_step against a count by hand (values per cell; the bench's
    memory roof divides by it). LSRK3, three sweeps: the primitives move U and W (10 values)
    each stage; each sweep reads W (5); R is read where the stage keeps it and stored where a
    later sweep reads it; the last sweep reads and writes U, and the first stage keeps U0.
    Stage 1 (its first sweep reads no R): 10 + (5 + 5) + (5 + 5 + 5) + (5 + 5 + 5 + 10 + 5) = 65;
    stage 2: 10 + 15 + 15 + 25 = 65; stage 3 (R not stored at the end): 10 + 15 + 15 + 20 = 60;
    190 values of 8 bytes.
    PLM + SSP-RK2 fused (one sweep, R never leaves registers): 10 + (5 + 10 + 5) per stage,
    the second reading U0 instead of keeping it: 60 values of 4 bytes."""
    from taichiflow.bench import benchmark_case
    weno = plan_of(benchmark_case("euler", "weno5", "mc", "hllc", "lsrk3", 8, 3, "f64", "cpu", ()))
    assert len(weno.walked) == 3 and weno.modelled_bytes_per_cell_step(5, 5, False) == 190 * 8
    plm = plan_of(benchmark_case("euler", "plm", "mc", "hll", "ssprk2", 8, 3, "f32", "cpu", ()), "cpu", "f32")
    assert len(plm.walked) == 1 and plm.modelled_bytes_per_cell_step(5, 5, False) == 60 * 4
    solver = Simulation(benchmark_case("euler", "plm", "mc", "hll", "ssprk2", 8, 3, "f32", "cpu", ())).solver
    assert solver.modelled_bytes_per_cell_step() == 60 * 4
