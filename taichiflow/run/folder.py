"""The output folder of a run: one run per folder, and nothing deleted without being asked.

A run writes its results (snapshots, series.pvd, diagnostics.csv, case.toml, checkpoints,
pictures) into a folder of its own. A folder already holding another run's results would mix
the two (series.pvd and diagnostics.csv replaced, older snapshots and checkpoints left behind,
unlisted), so it is refused, unless the run continues the run of that folder (a restart from a
checkpoint in it) or `--overwrite` asks to clear taichiflow's own files first. A folder holding
only run.log (attempts that ended before writing a result) is free: the log goes on.
"""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from ..errors import OutputError

RESULTS = ("snapshot_*_r*.vti", "snapshot_*.vti", "snapshot_*.pvti", "snapshot_*.vtu", "snapshot_*.png", "series.pvd",
           "diagnostics.csv", "case.toml", "checkpoint_*.npz", "checkpoint_*_r*.npy")
# what writing them may leave behind: checkpoint and diagnostics temporaries, atomic-write temporaries
LEFTOVERS = ("checkpoint_*.npz.tmp", "diagnostics.csv.tmp", ".snapshot_*.vti.*.tmp", ".series.pvd.*.tmp",
             ".case.toml.*.tmp")
LOG = "run.log"


def _matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def results_in(folder: Path) -> list[Path]:
    """taichiflow's result files in a folder (not its subfolders, never other files)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and _matches(p.name, RESULTS + LEFTOVERS))


def continues_run_in(folder: Path, restart_path) -> bool:
    """Whether a restart from `restart_path` continues the run whose folder this is."""
    return restart_path is not None and Path(restart_path).resolve().parent == Path(folder).resolve()


def check_is_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder}: not a folder (the output folder of a run; give --out another path)")


def may_write(folder: Path, own: bool) -> bool:
    """Whether a run may write into `folder` now (its log, before claiming it): the run's own
    folder, or one that exists and holds no other run's results."""
    return folder.is_dir() and (own or not results_in(folder))


WORDS = {"snapshot_*_r*.vti": "snapshot pieces", "snapshot_*.vti": "snapshots", "snapshot_*.pvti": "snapshots",
         "snapshot_*.vtu": "snapshots", "snapshot_*.png": "pictures", "checkpoint_*.npz": "checkpoints",
         "checkpoint_*_r*.npy": "checkpoint pieces"}


def _summary(files: list[Path]) -> str:
    """'5 snapshots, series.pvd, 2 checkpoints' for a refusal."""
    counts = {}
    for p in files:
        kind = next((pattern for pattern in RESULTS if fnmatch.fnmatchcase(p.name, pattern)), "temporary files")
        word = WORDS.get(kind, kind)
        counts[word] = counts.get(word, 0) + 1
    return ", ".join(f"{n} {word}" if word in WORDS.values() or word == "temporary files" else word
                     for word, n in counts.items())


def claim(folder: Path, restart_path=None, overwrite: bool = False) -> None:
    """Make `folder` this run's: refuse it when it holds another run's results (OutputError,
    nothing touched), or clear taichiflow's own files there when `overwrite` asks to."""
    folder = Path(folder)
    check_is_folder(folder)
    own = continues_run_in(folder, restart_path)
    if own and overwrite:
        raise OutputError(f"{folder}: --overwrite would delete the run this restart continues (and the checkpoint "
                          f"{Path(restart_path).name}); leave --overwrite out")
    found = results_in(folder)
    if own or not found:
        return
    if not overwrite:
        raise OutputError(f"{folder} holds the results of another run ({_summary(found)}): pass --overwrite to "
                          f"replace them, --resume {folder} to continue that run, or --out another folder")
    for path in found + ([folder / LOG] if (folder / LOG).is_file() else []):
        path.unlink()


# a snapshot's files: one rank's .vti, the .pvti over several ranks' pieces (_rNNNN.vti), an
# adaptive run's .vtu, the picture --render draws of it
SNAPSHOT_FILE = re.compile(r"snapshot_(\d{4,})(_r\d{4,})?\.(vti|pvti|vtu|png)")


def remove_snapshots_after(folder: Path, index: int) -> list[Path]:
    """Delete the snapshots numbered above `index`: a restart from a checkpoint taken after
    snapshot `index` writes them again, possibly on another number of ranks (a .vti where a
    .pvti and its pieces were), so that what the folder holds is what series.pvd lists.
    Returns the files removed."""
    removed = []
    for path in results_in(Path(folder)):
        found = SNAPSHOT_FILE.fullmatch(path.name)
        if found and int(found.group(1)) > index:
            path.unlink()
            removed.append(path)
    return removed
