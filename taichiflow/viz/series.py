"""A run's snapshots as the viewer reads them: series.pvd, the saved case, cached VTK grids."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from .env import pv, require_pyvista

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

NDIM_FIELD = "TAICHIFLOW_NDIM"


class Series:
    """Snapshots of one run: (time, file) entries, the resolved case, cached VTK grids."""

    def __init__(self, entries, case=None, name=None, cache=3):
        self.entries = [(float(t), Path(f)) for t, f in entries]
        self.case = case or {}
        self.name = name or self.case.get("case", {}).get("name", "")
        self._cache = OrderedDict()
        self._cache_size = max(1, cache)

    @classmethod
    def open(cls, out_dir):
        """Read OUT_DIR/series.pvd (with pyvista's PVD reader) and OUT_DIR/case.toml."""
        require_pyvista()
        out = Path(out_dir)
        pvd = out / "series.pvd"
        if not pvd.is_file():
            raise ValueError(f"{out}: no series.pvd here; give the output folder of a `taichiflow run`")
        reader = pv.get_reader(str(pvd))
        entries = [(d.time, out / d.path) for d in reader.datasets]
        if not entries:
            raise ValueError(f"{pvd}: the series has no snapshots yet")
        case = {}
        if (out / "case.toml").is_file():
            with open(out / "case.toml", "rb") as f:
                case = tomllib.load(f)
        return cls(entries, case, name=case.get("case", {}).get("name", out.name))

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
        """The snapshot as read by VTK's XML ImageData reader (cell data as written)."""
        index = index % len(self)
        path = self.entries[index][1]
        key = (index, str(path))
        if key not in self._cache:
            self._cache[key] = pv.read(str(path))
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return self._cache[key]

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

