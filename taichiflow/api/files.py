"""What a Simulation with an output folder writes beside the run's own outputs: the folder
claimed as `taichiflow run` claims it (run/folder.py: one run per folder), the resolved
case.toml, run.log, and the diagnostics rows kept in memory as they are written."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from .. import case as case_mod
from ..io import DiagnosticsCSV
from ..run import folder as run_folder
from ..run.log import append

__all__ = ["Rows", "RunFiles"]


class Rows:
    """The diagnostics rows as they are recorded: in memory (Simulation.diagnostics) and, with
    an output folder, in its diagnostics.csv (opened at the first row, kept open while the
    Simulation lives: advance() may add a row per step). Handed to the run's observers as
    their writer."""

    def __init__(self, columns: list[str], path: Path | None = None):
        self.columns = list(columns)
        self.rows: list[dict[str, Any]] = []
        self.path = path
        self._csv = None

    def write(self, row: list) -> None:
        named = dict(zip(self.columns, (v.item() if hasattr(v, "item") else v for v in row)))
        if self.rows and self.rows[-1]["step"] == named["step"]:  # (a state's row once)
            return
        if self.path is not None:
            if self._csv is None:
                self._csv = DiagnosticsCSV(self.path, self.columns)
            self._csv.write(row)
        self.rows.append(named)

    def flush(self, sync: bool = True) -> None:
        if self._csv is not None:
            self._csv.flush(sync)

    def close(self) -> None:
        """The file complete on disk (the Simulation steps no more)."""
        self.path = None
        if self._csv is not None:
            csv, self._csv = self._csv, None
            csv.close()

    @property
    def last_step(self) -> int | None:
        return self.rows[-1]["step"] if self.rows else None


class RunFiles:
    """The output folder of one Simulation: claimed when the Simulation is made (refused if it
    holds another run's results, unless overwrite), then its log."""

    def __init__(self, out: Path, overwrite: bool, source: str):
        self.out = Path(out)
        if not str(out).strip():
            raise ValueError("Simulation(out=''): an empty folder name (leave out out for no files)")
        run_folder.claim(self.out, None, overwrite)
        self.out.mkdir(parents=True, exist_ok=True)
        self.log(f"python {shlex.join(sys.argv)}: taichiflow.Simulation({source})")

    def log(self, line: str) -> None:
        """A line of run.log (timestamped, as the command line's)."""
        append(self.out / run_folder.LOG, line)

    def record_case(self, resolved: dict, warnings=()) -> None:
        """The resolved case (the "auto" settings as run), as the command line records it."""
        (self.out / "case.toml").write_text(case_mod.dump_toml(resolved))
        for warning in warnings:
            self.log(f"WARNING: {warning}")
