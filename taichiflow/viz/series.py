"""A run's snapshots as the viewer reads them: series.pvd, the saved case, cached VTK grids
mirrored across the case's symmetry faces, and the range of a field over the whole series."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..io import map_vti_arrays, read_pvd, require_complete_vti
from .env import pv, require_pyvista
from .fields import scalar_values, value_range
from .mirror import mirrored_across, plane_of, symmetry_faces

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

NDIM_FIELD = "TAICHIFLOW_NDIM"


class Series:
    """Snapshots of one run: (time, file) entries, the resolved case, cached VTK grids.

    With `mirror` (the default) the grids are mirrored across the symmetry faces the case
    declares (boundary kind "symmetry"), so that a quarter-domain run is shown whole.
    """

    def __init__(self, entries, case=None, name=None, cache=3, mirror=True):
        self.entries = [(float(t), Path(f)) for t, f in entries]
        self.case = case or {}
        self.name = name or self.case.get("case", {}).get("name", "")
        self.mirror_faces = symmetry_faces(self.case) if mirror else []
        self._cache = OrderedDict()
        self._cache_size = max(1, cache)
        self._ranges = {}
        self._mirror_note = None

    @classmethod
    def open(cls, out_dir, mirror=True):
        """Read OUT_DIR/series.pvd (with pyvista's PVD reader) and OUT_DIR/case.toml (the run's
        resolved case: its name, model and symmetry faces)."""
        require_pyvista()
        out = Path(out_dir)
        pvd = out / "series.pvd"
        if not pvd.is_file():
            raise ValueError(f"{out}: no series.pvd here; give the output folder of a `taichiflow run`")
        read_pvd(pvd)  # (a damaged file named as such: VTK's reader raises a bare XML ParseError)
        reader = pv.get_reader(str(pvd))
        entries = [(d.time, out / d.path) for d in reader.datasets]
        if not entries:
            raise ValueError(f"{pvd}: the series has no snapshots yet")
        case = {}
        if (out / "case.toml").is_file():
            with open(out / "case.toml", "rb") as f:
                case = tomllib.load(f)
        return cls(entries, case, name=case.get("case", {}).get("name", out.name), mirror=mirror)

    def append(self, time, path):
        self.entries.append((float(time), Path(path)))

    def __len__(self):
        return len(self.entries)

    @property
    def times(self):
        return [t for t, _ in self.entries]

    def nearest(self, time) -> int:
        """Index of the snapshot nearest `time` (the last one for None)."""
        if time is None:
            return len(self) - 1
        return int(np.argmin([abs(t - float(time)) for t in self.times]))

    def grid(self, index) -> "pv.ImageData":
        """The snapshot as read by VTK's XML ImageData reader (cell data as written), mirrored
        across the symmetry faces."""
        index = index % len(self)
        path = self.entries[index][1]
        key = (index, str(path))
        if key not in self._cache:
            self._cache[key] = mirrored_across(_read(path), self.mirror_faces)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return self._cache[key]

    def leaves(self, index):
        """An adaptive run's snapshot as written (its leaves, unresampled); None for a uniform one."""
        path = self.entries[index % len(self)][1]
        return pv.read(str(path)) if path.suffix == ".vtu" else None

    @property
    def ndim(self) -> int:
        grid = self.grid(0)
        if NDIM_FIELD in grid.field_data:
            return int(grid.field_data[NDIM_FIELD][0])
        cells = [n - 1 for n in grid.dimensions]
        return max(1, max((d + 1 for d in range(3) if cells[d] > 1), default=1))

    @property
    def model(self) -> str:
        name = str(self.case.get("model", {}).get("name", ""))
        return Path(name).stem if name.endswith(".py") else name

    @property
    def arrays(self) -> list:
        return list(self.grid(0).cell_data.keys())

    @property
    def two_phase(self) -> bool:
        return "alpha" in self.arrays or self.model == "two_phase"

    def mirror_note(self) -> str:
        """Where the pictures are mirrored, in words ("" where they are not)."""
        if self._mirror_note is None:
            self._mirror_note = ""
            if self.mirror_faces:
                raw = _read(self.entries[0][1])
                planes = [f"{'xyz'[axis]} = {plane_of(raw, axis, side):.4g}" for axis, side in self.mirror_faces]
                self._mirror_note = f"mirrored across {', '.join(planes)}"
        return self._mirror_note

    def field_range(self, name: str, ndim: int) -> tuple:
        """(low, high) of field `name` (as scalar_values reads it) over every snapshot, mirror
        images included: one colour range for a whole movie. Reads only that array of each
        file, memory-mapped."""
        key = (name, ndim, len(self))
        if key not in self._ranges:
            lows, highs = [], []
            for index, (_, path) in enumerate(self.entries):
                arrays = map_vti_arrays(path) if path.suffix == ".vti" else dict(self.grid(index).cell_data)
                values, title = scalar_values(_Arrays(arrays), name, ndim)
                lows.append(np.nanmin(values))
                highs.append(np.nanmax(values))
            lo, hi = float(min(lows)), float(max(highs))
            if self._negated_by_mirror(title):
                lo, hi = min(lo, -hi), max(hi, -lo)
            self._ranges[key] = value_range(np.array([lo, hi]))
        return self._ranges[key]

    def _negated_by_mirror(self, title: str) -> bool:
        """Whether the mirror images negate this field: a vector component normal to a mirror."""
        base, _, component = title.rpartition("_")
        mirrored_axes = {"xyz"[axis] for axis, _ in self.mirror_faces}
        data = self.grid(0).cell_data
        return component in mirrored_axes and base in data and np.asarray(data[base]).ndim == 2


def _read(path: Path):
    """A snapshot as VTK reads it; an adaptive run's leaves (.vtu) resampled on a uniform grid."""
    if path.suffix == ".vtu":
        from .amr import resampled
        return resampled(pv.read(str(path)))
    require_complete_vti(path)  # (VTK reads a cut-off file as one without arrays)
    return pv.read(str(path))


class _Arrays:
    """A snapshot's cell arrays where scalar_values expects a grid (grid.cell_data[name])."""

    def __init__(self, cell_data: dict):
        self.cell_data = cell_data
