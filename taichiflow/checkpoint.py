"""Checkpoints: the full state of a run, written atomically and verified on load.

A checkpoint is one `.npz` file: the conserved field at run precision plus a JSON header
(time, step, last dt, output counters, the resolved case, the model file's hash, grid and
precision) and a SHA-256 checksum over both. It is written to a temporary file, flushed,
fsynced and renamed, so a crash mid-write leaves the previous checkpoint intact; the last
two are kept.

A run on several MPI ranks writes one `.npy` piece per rank (its block of U) and, once every
piece is on disk, the `.npz` as their manifest: an empty state and a header listing each
piece's file, first cell, cells and SHA-256. A restart on any number of ranks reads from the
pieces the cells of its own block (block_state), so no rank holds the whole grid.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .errors import CheckpointError, OutputError
from .io import fsync_dir

KEEP = 2
PATTERN = "checkpoint_*.npz"


def file_hash(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _digest(state: np.ndarray, header: dict) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(state).tobytes())
    h.update(json.dumps(header, sort_keys=True).encode())
    return h.hexdigest()


def piece_name(step: int, rank: int) -> str:
    return f"checkpoint_{step:09d}_r{rank:04d}.npy"


def write_piece(out_dir: Path, step: int, rank: int, block: np.ndarray) -> str:
    """One rank's block of a checkpoint, atomically; returns its SHA-256 (the manifest's)."""
    path = Path(out_dir) / piece_name(step, rank)
    tmp = path.with_suffix(".npy.tmp")
    block = np.ascontiguousarray(block)
    try:
        with open(tmp, "wb") as f:
            np.save(f, block)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write checkpoint piece {path}: {err.strerror or err}") from None
    return hashlib.sha256(block.tobytes()).hexdigest()


def write(out_dir: Path, state: np.ndarray, header: dict) -> Path:
    """Write checkpoint_<step>.npz atomically; delete all but the newest KEEP (and the pieces
    of those that were manifests)."""
    out_dir = Path(out_dir)
    path = out_dir / f"checkpoint_{header['step']:09d}.npz"
    buffer = io.BytesIO()
    np.savez(buffer, state=state, header=np.frombuffer(json.dumps(header, sort_keys=True).encode(), np.uint8),
             checksum=np.frombuffer(_digest(state, header).encode(), np.uint8))
    data = buffer.getvalue()
    tmp = path.with_suffix(".npz.tmp")
    try:
        with open(tmp, "wb") as f:
            half = len(data) // 2
            f.write(data[:half])
            pause = os.environ.get("TAICHIFLOW_TEST_PAUSE_IN_CHECKPOINT")
            if pause:  # test hook: a window in which the process can be killed mid-write
                f.flush()
                time.sleep(float(pause))
            f.write(data[half:])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:  # a full disk, a read-only folder: no partial file stays, older ones do
        tmp.unlink(missing_ok=True)
        kept = sorted(p.name for p in out_dir.glob(PATTERN))
        raise OutputError(f"cannot write checkpoint {path}: {err.strerror or err}; "
                          f"{'the checkpoints kept: ' + ', '.join(kept) if kept else 'no earlier checkpoint'}") from None
    fsync_dir(out_dir)
    for old in sorted(out_dir.glob(PATTERN))[:-KEEP]:
        for piece in out_dir.glob(old.stem + "_r*.npy"):
            piece.unlink()
        old.unlink()
    return path


def block_state(loaded: "Loaded", offset, cells) -> np.ndarray:
    """The cells of a block (first cell `offset`, `cells` per axis; () and the whole grid for one
    rank) of a checkpoint: from its state, or from the pieces that overlap the block, each
    verified against its checksum in the manifest."""
    header = loaded.header
    whole = tuple(header["cells"])
    offset = tuple(offset) or (0,) * len(whole)
    cells = tuple(cells)
    if "pieces" not in header:
        return np.ascontiguousarray(loaded.state[tuple(slice(o, o + n) for o, n in zip(offset, cells))])
    out = None
    for piece in header["pieces"]:
        lo = [max(a, b) for a, b in zip(offset, piece["offset"])]
        hi = [min(a + n, b + m) for a, n, b, m in zip(offset, cells, piece["offset"], piece["cells"])]
        if any(a >= b for a, b in zip(lo, hi)):
            continue
        path = loaded.path.parent / piece["file"]
        try:
            values = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as err:
            raise CheckpointError(f"{loaded.path}: piece {path.name} unreadable ({err})") from None
        if hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest() != piece["sha256"]:
            raise CheckpointError(f"{loaded.path}: piece {path.name}: checksum mismatch: the checkpoint is corrupt")
        if out is None:
            out = np.empty(cells + values.shape[len(cells):], dtype=values.dtype)
        out[tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offset))] = \
            values[tuple(slice(a - p, b - p) for a, b, p in zip(lo, hi, piece["offset"]))]
    return out


def read(path) -> tuple[np.ndarray, dict]:
    """Load and verify a checkpoint; raises CheckpointError naming what is wrong."""
    path = Path(path)
    if path.is_file() and not zipfile.is_zipfile(path):  # (np.load would read a text file as pickled data)
        raise CheckpointError(f"{path}: not a checkpoint: taichiflow's checkpoints are .npz files "
                              "(checkpoint_*.npz in a run's folder)")
    try:
        with np.load(path) as data:
            state = data["state"]
            header = json.loads(bytes(data["header"]).decode())
            checksum = bytes(data["checksum"]).decode()
    except Exception as err:  # zip, npy or JSON damage
        raise CheckpointError(f"{path}: unreadable checkpoint ({type(err).__name__}: {err})") from None
    if _digest(state, header) != checksum:
        raise CheckpointError(f"{path}: checksum mismatch: the checkpoint is corrupt")
    return state, header


class Loaded(NamedTuple):
    """A checkpoint read and verified once (a large state is read only once per restart), with
    the newer checkpoints of its folder that could not be used and why."""
    path: Path
    state: np.ndarray
    header: dict
    skipped: tuple = ()   # (path, why) pairs, newest first


def load(path) -> Loaded:
    """Read and verify one checkpoint (CheckpointError naming what is wrong)."""
    state, header = read(path)
    return Loaded(Path(path), state, header)


def load_newest(out_dir) -> Loaded:
    """The newest checkpoint in a run folder that loads and verifies; those skipped on the way
    are kept with their reasons, so that a fall-back to an older one is never silent."""
    skipped = []
    for path in sorted(Path(out_dir).glob(PATTERN), reverse=True):
        try:
            state, header = read(path)
        except CheckpointError as err:
            skipped.append((path, str(err).removeprefix(f"{path}: ")))
            continue
        return Loaded(path, state, header, tuple(skipped))
    detail = "; ".join(f"{path}: {why}" for path, why in skipped) if skipped else "none found"
    raise CheckpointError(f"{out_dir}: no valid checkpoint ({detail})")


def newest_valid(out_dir) -> Path:
    """The path of the newest checkpoint in a run folder that loads and verifies."""
    return load_newest(out_dir).path


def check_compatible(header: dict, expected: dict, path) -> None:
    """Refuse a checkpoint whose model, grid or precision differ from the run's."""
    for key, what in (("model", "model"), ("model_hash", "model file"), ("cells", "grid cells"),
                      ("lower", "grid lower"), ("upper", "grid upper"), ("precision", "precision")):
        if header.get(key) != expected[key]:
            raise CheckpointError(f"{path}: checkpoint {what} {header.get(key)!r} does not match "
                                  f"this run's {expected[key]!r}")
