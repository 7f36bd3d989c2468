"""The host's part of a regrid, phase by phase, on forests like the cloud blast's: 3D, 8^3 root
blocks, six levels, a blast shell kept at level 3 and a cloud's surface at level 6 inside the
box region of cases/cloud_blast_amr.toml (level 4), moving a little between regrids. Each
regrid runs what PackSolver.adapt and moved_to run on the host (the device's indicator codes
made up from the shapes): the flags, Forest.refined_where, plan_regrid, updated_tables, the
regions' levels of the new leaves and the staged upload. No device.

    python3 tools/amr-regrid-profile.py [--size 33k|18k] [--regrids 30] [--step 0.0005]
                                        [--repeat 3] [--clock cpu|wall] [--cprofile [--top 25]]
                                        [--ranks K [--rank R]]

--ranks K: what rank R (default 0) of K does instead (RankPackSolver.moved_to's host work:
the carried-over partition, the touching pairs updated, every rank's held leaves, the routes,
the tables updated in place, the exchange lists and their rows as the refresh takes them).

Prints per regrid the leaves, the changes (leaves added and removed) and the table rows sent,
then per phase the median and mean milliseconds over the regrids after the first two, each
the least of --repeat runs of the same regrids: CPU time of the process by default (other
work on a shared machine stretches the wall time more), --clock wall for the wall time.
--cprofile: cProfile of the first run, by own time. docs/amr.md has the figures of the code
before (its phases timed the same way on the same forests).
"""
import argparse
import sys
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import cProfile  # noqa: E402  (after tools/ left the path: tools/profile.py would shadow the profile cProfile imports)
import pstats  # noqa: E402

import numpy as np  # noqa: E402

from taichiflow.kernels.amr.criteria import Criteria, RegionSlots, coded, decoded, leaf_flags  # noqa: E402
from taichiflow.kernels.amr.staging import FaceLists, staged  # noqa: E402
from taichiflow.mesh.partition import imbalance, split, updated_pairs  # noqa: E402
from taichiflow.parallel.amr_layout import RankLayout, local_tables, updated_local_tables  # noqa: E402
from taichiflow.parallel.amr_routes import RegridRoutes  # noqa: E402
from taichiflow.parallel.amr_slabs import HaloSlabs  # noqa: E402
from taichiflow.mesh import (Forest, Region, RegionLevels, assign_slots, device_tables, plan_regrid,  # noqa: E402
                             updated_tables)

ROOTS, BLOCK_CELLS, MAX_LEVEL = (8, 8, 8), 8, 6
EXTENT = ((-0.5, 0.5),) * 3
CLOUD_BOX = Region.of({"shape": "box", "lower": [0.125, -0.035, -0.035], "upper": [0.23, 0.035, 0.035], "level": 4})
CLOUD_CENTRE = np.array([0.18, 0.0, 0.0])
CRITERIA = Criteria(0.8, 0.2, 0.1, up_to=3)
# (shell radius and half width, cloud radius and half width): 34,600 and 18,700 leaves to start with
SIZES = {"33k": (0.25, 0.004, 0.03, 0.001), "18k": (0.25, 0.001, 0.01, 0.0004)}
CLOCK = time.process_time  # (the process's CPU seconds: the machine is shared; --clock wall for perf_counter)
PHASES = ("flags", "refined_where", "plan_regrid", "updated_tables", "region_levels", "staged", "total")
RANK_PHASES = ("flags", "refined_where", "partition", "pairs", "layout", "routes", "tables", "region_levels",
               "staged", "slabs", "total")
GHOST = 3  # (WENO5's ghost width, as the cloud blast runs)


def shells(forest, shapes) -> np.ndarray:
    """Per leaf 1.0 where its box meets the blast's shell or the cloud's, else 0.0: Löhner's
    indicator as the device would see it (the relative gradient left at 0)."""
    width = (1.0 / ROOTS[0]) * np.ldexp(1.0, -forest.levels)[:, None]
    lower = -0.5 + forest.coords * width
    upper = lower + width
    radius, half, cloud, cloud_half = shapes

    def meets(centre, inner, outer):
        near = np.linalg.norm(np.clip(centre, lower, upper) - centre, axis=1)
        far = np.linalg.norm(np.maximum(np.abs(lower - centre), np.abs(upper - centre)), axis=1)
        return (near <= outer) & (far >= inner)
    return (meets(np.zeros(3), radius - half, radius + half)
            | meets(CLOUD_CENTRE, cloud - cloud_half, cloud + cloud_half)).astype(float)


def initial_forest(shapes, regions: RegionLevels) -> Forest:
    """Refined from the root level a level a pass, as the initial refinement does."""
    forest = Forest.uniform(ROOTS, BLOCK_CELLS, MAX_LEVEL, (False,) * 3)
    for _ in range(MAX_LEVEL + 1):
        second = shells(forest, shapes)
        refine, derefine = leaf_flags(second, np.zeros_like(second), forest.levels,
                                      regions.levels(forest.levels, forest.coords),
                                      regions.levels(forest.levels - 1, forest.coords >> 1), MAX_LEVEL, CRITERIA)
        new = forest.refined_where(refine, derefine)
        if new is forest:
            break
        forest = new
    return forest


class Laps:
    """lap(name): the seconds (CLOCK) since the lap before, kept as times[name]."""

    def __init__(self):
        self.times, self.clock = {}, [CLOCK()]

    def __call__(self, name: str) -> None:
        self.clock.append(CLOCK())
        self.times[name] = self.clock[-1] - self.clock[-2]

    def total(self) -> float:
        return self.clock[-1] - self.clock[0]


class Regrids:
    """The host state of an adaptive run between regrids, and one regrid timed by phase."""

    def __init__(self, forest: Forest, regions: RegionLevels, capacity: int):
        self.forest, self.capacity = forest, capacity
        self.slots = assign_slots(forest, capacity)
        self.tables = device_tables(forest, self.slots, capacity, faces_only=True)
        self.regions = RegionSlots(regions, capacity)
        self.regions.set(forest, self.slots.array)
        self.faces = FaceLists(3, capacity)
        self.faces.set_slots(self.tables, self.slots.array)

    def device_codes(self, shapes) -> np.ndarray:
        """What the device's indicate kernel would send (criteria.leaf_flags, coded)."""
        second, slots = shells(self.forest, shapes), self.slots.array
        return coded(*leaf_flags(second, np.zeros_like(second), self.forest.levels, self.regions.asked[slots],
                                 self.regions.parent_asked[slots], MAX_LEVEL, CRITERIA))

    def regrid(self, codes: np.ndarray) -> dict:
        """adapt() and moved_to()'s host work; seconds per phase and the changes."""
        lap, forest = Laps(), self.forest
        refine, derefine = decoded(codes)
        lap("flags")
        new = forest.refined_where(refine, derefine)
        lap("refined_where")
        if new is forest:
            return lap.times | {"total": lap.total(), "added": 0, "removed": 0}
        counts = self.moved_to(new, lap)
        theirs, ours = new.tiling.matches(forest.tiling)
        return lap.times | {"total": lap.total(), "added": int(np.count_nonzero(theirs < 0)),
                            "removed": int(np.count_nonzero(ours < 0))} | counts

    def moved_to(self, new: Forest, lap) -> dict:
        """One rank's moved_to on the host, each phase timed by `lap`; the table rows sent."""
        forest = self.forest
        plan = plan_regrid(forest, self.slots, new, self.capacity)
        lap("plan_regrid")
        self.tables = updated_tables(self.tables, forest, new, plan.slots, in_place=True)
        lap("updated_tables")
        theirs, _ = new.tiling.matches(forest.tiling)
        self.regions.set(new, plan.slots.array, np.flatnonzero(theirs < 0))
        lap("region_levels")
        update = staged(self.tables, self.faces, self.regions)
        lap("staged")
        self.forest, self.slots = new, plan.slots
        return {"rows": len(update.rows)}


class RankRegrids(Regrids):
    """The host state of rank `rank` of `ranks` between regrids, and its part of one regrid
    (RankPackSolver.moved_to without the device) timed by phase."""

    def __init__(self, forest: Forest, regions: RegionLevels, capacity: int, ranks: int, rank: int):
        self.forest, self.capacity, self.ranks, self.rank = forest, capacity, ranks, rank
        self.region_levels = regions
        self.partition = split(forest, ranks)
        self.layout = RankLayout(forest, self.partition.owners(forest), ranks, rank)
        self.tables = local_tables(forest, self.layout, capacity)
        self.halo = HaloSlabs(self.layout, GHOST)
        self.regions = RegionSlots(regions, capacity)
        self.regions.set(forest, self.layout.slot, self.layout.local)
        self.faces = FaceLists(3, capacity)
        self.faces.set_slots(self.tables, self.layout.local_slots)
        self.slots = type("Slots", (), {"array": np.where(self.layout.slot >= 0, self.layout.slot, capacity - 1)})

    def device_codes(self, shapes) -> np.ndarray:
        """The flags of every leaf, as the ranks' indicate kernels would send them gathered
        (the regions' levels from the whole forest: a rank's pool holds only its leaves')."""
        forest, regions = self.forest, self.region_levels
        second = shells(forest, shapes)
        return coded(*leaf_flags(second, np.zeros_like(second), forest.levels,
                                 regions.levels(forest.levels, forest.coords),
                                 regions.levels(forest.levels - 1, forest.coords >> 1), MAX_LEVEL, CRITERIA))

    def moved_to(self, new: Forest, lap) -> dict:
        """RankPackSolver.moved_to on the host, each phase timed by `lap`; the table rows sent
        and the blocks held."""
        forest = self.forest
        owner = self.partition.owners(new)
        if imbalance(owner, self.ranks) > 1.1:
            self.partition = split(new, self.ranks)
            owner = self.partition.owners(new)
        lap("partition")
        pairs = updated_pairs(self.layout.pairs, forest, new)
        lap("pairs")
        layout = RankLayout(new, owner, self.ranks, self.rank, pairs, previous=self.layout)
        lap("layout")
        routes = RegridRoutes(self.layout, layout, self.capacity)
        layout.place(routes.slots)
        lap("routes")
        self.tables = updated_local_tables(self.tables, self.layout, layout)
        lap("tables")
        self.regions.set(new, layout.slot, routes.placed)
        lap("region_levels")
        update = staged(self.tables, self.faces, self.regions)
        lap("staged")
        slabs = self.halo = HaloSlabs(layout, GHOST, self.halo)
        for lists in (slabs.sends, slabs.receives):
            [HaloSlabs.cells(entries) for entries in lists.values()]
        lap("slabs")
        self.forest, self.layout = new, layout
        self.slots.array = np.where(layout.slot >= 0, layout.slot, self.capacity - 1)
        return {"rows": len(update.rows), "held": len(layout.local), "own": layout.n_owned}


def regrid_sequence(forest: Forest, regions: RegionLevels, shapes: list, args, profile) -> list[dict]:
    """args.regrids regrids from `forest`, the shapes moving args.step a regrid outward (the
    cloud's a quarter of that); per regrid its phases' seconds and changes."""
    shapes = list(shapes)
    state = Regrids(forest, regions, args.capacity) if args.ranks == 1 else \
        RankRegrids(forest, regions, args.capacity, args.ranks, args.rank)
    rows = []
    for _ in range(args.regrids):
        shapes[0] += args.step
        shapes[2] += args.step / 4
        codes = state.device_codes(shapes)
        if profile:
            profile.enable()
        row = state.regrid(codes)
        if profile:
            profile.disable()
        rows.append(row | {"leaves": len(state.forest.levels)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="33k")
    parser.add_argument("--regrids", type=int, default=30)
    parser.add_argument("--step", type=float, default=0.0005, help="how far the shell moves a regrid")
    parser.add_argument("--capacity", type=int, default=49152)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of the same regrids; each phase's least time counts")
    parser.add_argument("--cprofile", action="store_true", help="profile the first run")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--ranks", type=int, default=1, help="many ranks' host work (RankPackSolver.moved_to)")
    parser.add_argument("--rank", type=int, default=0, help="the rank whose work is timed (with --ranks)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    shapes = list(SIZES[args.size])
    regions = RegionLevels([CLOUD_BOX], EXTENT, ROOTS)
    started = time.perf_counter()
    forest = initial_forest(shapes, regions)
    print(f"initial forest: {len(forest.levels)} leaves {forest.leaf_count_per_level()} "
          f"({time.perf_counter() - started:.1f} s)")
    profile = cProfile.Profile() if args.cprofile else None
    runs = [regrid_sequence(forest, regions, shapes, args, profile if repeat == 0 else None)
            for repeat in range(args.repeat)]
    rows = [{key: (min(run[k][key] for run in runs) if isinstance(value, float) else value)
             for key, value in row.items()} for k, row in enumerate(runs[0])]
    for k, row in enumerate(rows):
        print(f"regrid {k}: {row['leaves']} leaves, {row['added']} added, {row['removed']} removed, "
              f"{row.get('rows', 0)} table rows, {1e3 * row['total']:.2f} ms"
              + (f" (held {row['held']}, own {row['own']})" if "held" in row else ""))
    timed = rows[2:] if len(rows) > 2 else rows
    print(f"\nper phase, ms over {len(timed)} regrids (each the least of {args.repeat} runs): median, mean")
    for phase in (PHASES if args.ranks == 1 else RANK_PHASES):
        values = [1e3 * row.get(phase, 0.0) for row in timed]
        print(f"  {phase:15s} {np.median(values):7.2f} {np.mean(values):7.2f}")
    if profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
