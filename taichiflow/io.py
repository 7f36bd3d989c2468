"""File output for taichiflow: VTK ImageData snapshots, ParaView series, CSV diagnostics.

Deliberately depends only on numpy and the standard library: the GPU nodes
that run the solver do not have VTK/pyvista installed, yet the files must open
in ParaView (and round-trip exactly through :func:`read_vti` for tests and
restarts).

Public API
----------
write_vti(path, cells, lower, spacing, arrays, time=None)
read_vti(path) -> (meta, arrays)
map_vti_arrays(path) -> {name: memory-mapped cell array in VTK order}
read_pvd(path) -> [(time, file)]
PvdSeries(path, resume=False)
DiagnosticsCSV(path, columns, resume=False)
"""

from __future__ import annotations

import csv
import io
import numbers
import os
import tempfile
from contextlib import contextmanager
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

import numpy as np

__all__ = ["write_vti", "read_vti", "map_vti_arrays", "read_pvd", "PvdSeries", "DiagnosticsCSV"]

# Name of the FieldData array holding the number of spatial dimensions the
# caller used, so read_vti can return (nx,) / (nx, ny) arrays exactly even
# when a genuine 3D grid happens to have nz == 1.
NDIM_FIELD = "TAICHIFLOW_NDIM"
# ParaView picks up a FieldData array named TIME as the dataset's time.
TIME_FIELD = "TIME"

_VTK_TYPES = {
    np.dtype("<f4"): "Float32",
    np.dtype("<f8"): "Float64",
    np.dtype("<i4"): "Int32",
    np.dtype("<i8"): "Int64",
    np.dtype("u1"): "UInt8",
}
_NP_TYPES = {
    "Float32": "<f4", "Float64": "<f8",
    "Int8": "i1", "UInt8": "u1", "Int16": "<i2", "UInt16": "<u2",
    "Int32": "<i4", "UInt32": "<u4", "Int64": "<i8", "UInt64": "<u8",
}


# --------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------

def named(err: OSError, path) -> OSError:
    """`err` with `path` as its file name where it has none: a full disk reports ENOSPC from
    write() or fsync(), which know no name, and the user must learn which file failed."""
    if err.filename is not None:
        return err
    return type(err)(err.errno, err.strerror or str(err), os.fspath(path))


@contextmanager
def naming(path):
    """OSErrors raised inside name `path` (see `named`)."""
    try:
        yield
    except OSError as err:
        renamed = named(err, path)
        if renamed is err:
            raise
        raise renamed from None


def _new_file_mode() -> int:
    """Permission bits a plain open() would give a new file (mkstemp uses 0600)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    return 0o644


class _AtomicWriter:
    """Context manager yielding a binary file that replaces `path` only on success.

    Readers (ParaView polling a running case, a restart after a crash) must
    never see a half-written file, so we write a sibling temp file, fsync it
    and os.replace() it over the target.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.dir = os.path.dirname(os.path.abspath(self.path))

    def __enter__(self):
        with naming(self.path):
            fd, self.tmp = tempfile.mkstemp(
                dir=self.dir, prefix="." + os.path.basename(self.path) + ".", suffix=".tmp")
        self.f = os.fdopen(fd, "wb")
        return self.f

    def __exit__(self, exc_type, exc, tb):
        with naming(self.path):
            return self._finish(exc_type, exc)

    def _finish(self, exc_type, exc):
        """Replace the target by the temporary file, or remove it after an error (an OSError
        of the caller's writes raised again with the target's name)."""
        try:
            if exc_type is None:
                self.f.flush()
                os.fsync(self.f.fileno())
            self.f.close()
            if exc_type is not None:
                os.unlink(self.tmp)
                if isinstance(exc, OSError) and named(exc, self.path) is not exc:
                    raise named(exc, self.path) from None
                return False
            try:
                mode = os.stat(self.path).st_mode & 0o7777
            except FileNotFoundError:
                mode = _new_file_mode()
            os.chmod(self.tmp, mode)
            os.replace(self.tmp, self.path)
        except BaseException:
            if os.path.exists(self.tmp):
                os.unlink(self.tmp)
            raise
        fsync_dir(self.dir)
        return False


def fsync_dir(d):
    """Persist the rename itself (best effort; not all filesystems allow it)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write_bytes(path, data: bytes):
    with _AtomicWriter(path) as f:
        f.write(data)


# --------------------------------------------------------------------------
# VTK ImageData (.vti)
# --------------------------------------------------------------------------

def _pad3(values, fill, name):
    values = tuple(values)
    if not 1 <= len(values) <= 3:
        raise ValueError(f"{name} must have 1 to 3 entries, got {values!r}")
    return values + tuple(fill for _ in range(3 - len(values)))


def _vtk_dtype(a: np.ndarray, name: str) -> np.dtype:
    """Little-endian dtype to store `a` as: floats kept, ints widened to Int32/Int64."""
    k = a.dtype.kind
    if k == "f":
        return np.dtype("<f8") if a.dtype.itemsize > 4 else np.dtype("<f4")
    if k == "b":
        return np.dtype("u1")
    if k == "i":
        return np.dtype("<i8") if a.dtype.itemsize > 4 else np.dtype("<i4")
    if k == "u":
        if a.dtype.itemsize <= 2:
            return np.dtype("<i4")
        if a.dtype.itemsize == 4:
            return np.dtype("<i8")
        if a.size and a.max() > np.iinfo(np.int64).max:
            raise ValueError(f"array {name!r}: uint64 values exceed Int64 range")
        return np.dtype("<i8")
    raise TypeError(f"array {name!r}: unsupported dtype {a.dtype} for VTK output")


def _fmt_float(x) -> str:
    return repr(float(x))


def write_vti(path, cells, lower, spacing, arrays, time=None, first=None):
    """Write cell-centred fields on a uniform grid as a VTK XML ImageData file.

    Raw appended binary keeps files compact and exact (no ASCII rounding) while
    remaining readable by stock ParaView/VTK.  `arrays` maps name -> array of
    shape `cells` (scalar) or `cells + (m,)` (m-component vector, m >= 2),
    indexed [i, j, k] = [x, y, z]; it is written x-fastest as VTK requires.
    Floats keep Float32/Float64, bools become UInt8, other integers Int32/Int64.
    `time`, if given, is stored as FieldData "TIME" (shown by ParaView). `first`: the
    index of the first cell where the file is one piece of a larger grid (a rank's block,
    listed in a .pvti, write_pvti); `lower` is then the whole grid's.
    The file is replaced atomically.
    """
    ndim = len(tuple(cells))
    cells_nd = tuple(int(c) for c in cells)
    if ndim < 1 or ndim > 3:
        raise ValueError(f"cells must have 1 to 3 entries, got {cells!r}")
    if any(c < 1 for c in cells_nd):
        raise ValueError(f"cells must be positive, got {cells!r}")
    lower = tuple(float(x) for x in lower)
    spacing = tuple(float(x) for x in spacing)
    if len(lower) != ndim or len(spacing) != ndim:
        raise ValueError(f"lower {lower!r} and spacing {spacing!r} must have "
                         f"{ndim} entries like cells {cells!r}")
    if not all(s > 0 and np.isfinite(s) for s in spacing):
        raise ValueError(f"spacing must be positive and finite, got {spacing!r}")
    c3 = _pad3(cells_nd, 1, "cells")
    o3 = _pad3(lower, 0.0, "lower")
    # Padded directions get the x spacing so the 1-cell-thick slab looks sane.
    s3 = _pad3(spacing, spacing[0], "spacing")

    def field(name, value, dtype):
        data = np.asarray([value], dtype=dtype)
        xml = (f'<DataArray type="{_VTK_TYPES[data.dtype]}" Name={quoteattr(name)} '
               f'NumberOfTuples="1" format="appended" offset="')
        return xml, data

    field_blocks = []  # (XML up to the offset value, C-contiguous little-endian data)
    if time is not None:
        field_blocks.append(field(TIME_FIELD, float(time), "<f8"))
    field_blocks.append(field(NDIM_FIELD, ndim, "<i4"))

    cell_blocks = []
    for name, arr in arrays.items():
        name = str(name)
        a = np.asarray(arr)
        if a.shape == cells_nd:
            ncomp = 1
            # C order of the (z, y, x) transpose == x fastest, as VTK wants.
            vtk_order = a.reshape(c3).transpose(2, 1, 0)
        elif a.ndim == ndim + 1 and a.shape[:ndim] == cells_nd and a.shape[-1] >= 2:
            ncomp = a.shape[-1]
            # components fastest, then x, y, z
            vtk_order = a.reshape(c3 + (ncomp,)).transpose(2, 1, 0, 3)
        else:
            raise ValueError(f"array {name!r} has shape {a.shape}; expected {cells_nd} "
                             f"or {cells_nd} + (m,) with m >= 2")
        dt = _vtk_dtype(a, name)
        data = np.ascontiguousarray(vtk_order, dtype=dt)
        xml = (f'<DataArray type="{_VTK_TYPES[dt]}" Name={quoteattr(name)} '
               f'NumberOfComponents="{ncomp}" format="appended" offset="')
        cell_blocks.append((xml, data))

    offset = 0
    field_xml, cell_xml = [], []
    for blocks, out in ((field_blocks, field_xml), (cell_blocks, cell_xml)):
        for xml, data in blocks:
            out.append(f'{xml}{offset}"/>')  # offset from the "_" marker
            offset += 8 + data.nbytes  # UInt64 byte-count header + payload

    f3 = _pad3(tuple(int(i) for i in first), 0, "first") if first is not None else (0, 0, 0)
    extent = " ".join(f"{i} {i + n}" for i, n in zip(f3, c3))
    head = [
        '<?xml version="1.0"?>',
        '<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" '
        'header_type="UInt64">',
        f'  <ImageData WholeExtent="{extent}" '
        f'Origin="{" ".join(_fmt_float(x) for x in o3)}" '
        f'Spacing="{" ".join(_fmt_float(x) for x in s3)}">',
        "    <FieldData>",
        *("      " + x for x in field_xml),
        "    </FieldData>",
        f'    <Piece Extent="{extent}">',
        "      <PointData>",
        "      </PointData>",
        "      <CellData>",
        *("        " + x for x in cell_xml),
        "      </CellData>",
        "    </Piece>",
        "  </ImageData>",
        '  <AppendedData encoding="raw">',
        "   _",
    ]
    with _AtomicWriter(path) as f:
        f.write(("\n".join(head)).encode("utf-8"))
        for _, data in field_blocks + cell_blocks:
            f.write(np.uint64(data.nbytes).astype("<u8").tobytes())
            f.write(memoryview(data).cast("B"))
        f.write(b"\n  </AppendedData>\n</VTKFile>\n")


def _parse_header(head: bytes, path):
    """(the XML up to <AppendedData> as an element tree, the offset of the appended data, the
    dtype of its byte counts) of a file's first bytes; ValueError for what read_vti cannot read."""
    start = head.find(b"<AppendedData")
    if start < 0:
        raise ValueError(_without_appended_data(head, path))
    tag_end = head.find(b">", start)
    marker = head.find(b"_", tag_end)
    if tag_end < 0 or marker < 0:
        raise ValueError(f"{path}: damaged snapshot: the file ends at byte {len(head):,}, inside its "
                         "<AppendedData> tag (cut off while written?)")
    try:
        root = ET.fromstring(head[:tag_end + 1] + b"</AppendedData></VTKFile>")
    except ET.ParseError as err:
        raise ValueError(f"{path}: not a valid VTK file: its XML header has a {err}") from None
    appended = root.find("AppendedData")
    if appended.get("encoding") != "raw":
        raise ValueError(f"{path}: only raw appended encoding is supported")
    if root.get("type") != "ImageData":
        raise ValueError(f"{path}: VTKFile type is {root.get('type')!r}, not ImageData")
    if root.get("byte_order", "LittleEndian") != "LittleEndian":
        raise ValueError(f"{path}: only LittleEndian files are supported")
    if root.get("compressor"):
        raise ValueError(f"{path}: compressed files are not supported")
    htype = np.dtype("<u8" if root.get("header_type", "UInt32") == "UInt64" else "<u4")
    return root, marker + 1, htype


def _without_appended_data(head: bytes, path) -> str:
    """Why a file has no <AppendedData>: empty or cut off in its XML header (a kill or a full
    disk while it was written), or not a file of write_vti's."""
    if not head:
        return f"{path}: damaged snapshot: the file is empty (cut off while written?)"
    if head.lstrip().startswith((b"<?xml", b"<VTKFile")) and b"</VTKFile>" not in head:
        return (f"{path}: damaged snapshot: the file ends at byte {len(head):,}, in its XML header, before "
                "its data (cut off while written?)")
    return f"{path}: no <AppendedData> section (not written by write_vti?)"


def require_complete_vti(path) -> None:
    """ValueError naming the file where a .vti (or a .pvti's piece) written by write_vti is
    shorter than its arrays need: a snapshot cut off by a kill or a full disk (VTK would read
    it as one without arrays, numpy as a too small buffer)."""
    if os.fspath(path).endswith(".pvti"):
        for piece, _ in _pvti_pieces(path):
            require_complete_vti(piece)
        return
    size = os.path.getsize(path)
    root, base, htype = _parse_header(_read_head(path), path)
    with open(path, "rb") as f:
        for el in root.iter("DataArray"):
            offset = base + int(el.get("offset"))
            f.seek(offset)
            count = f.read(htype.itemsize)
            needed = offset + htype.itemsize + (int(np.frombuffer(count, htype)[0]) if len(count) == htype.itemsize
                                                else 0)
            if len(count) < htype.itemsize or needed > size:
                raise ValueError(f"{path}: damaged snapshot: the file ends at byte {size:,}, but its array "
                                 f"{el.get('Name')!r} needs {max(needed, offset + htype.itemsize):,} (cut off while "
                                 "written?)")


def _read_head(path, chunk=1 << 16) -> bytes:
    """The first bytes of a file, through the "_" that starts its appended data."""
    head = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            head += block
            start = head.find(b"<AppendedData")
            if not block or (start >= 0 and head.find(b"_", head.find(b">", start)) >= 0):
                return head


def map_vti_arrays(path) -> dict:
    """The cell arrays of a file written by write_vti, memory-mapped read-only in VTK order
    (x fastest; one row per cell, components in columns): a range over a whole series then
    reads only the array it needs from each file, without VTK. Of a .pvti, each array is its
    pieces' one after the other (cells in no grid order: for ranges, not for pictures)."""
    if os.fspath(path).endswith(".pvti"):
        pieces = [map_vti_arrays(piece) for piece, _ in _pvti_pieces(path)]
        return {name: np.concatenate([p[name] for p in pieces]) for name in pieces[0]}
    require_complete_vti(path)
    root, base, htype = _parse_header(_read_head(path), path)
    img = root.find("ImageData")
    ext = [int(v) for v in img.get("WholeExtent").split()]
    ncells = int(np.prod([max(1, ext[2 * d + 1] - ext[2 * d]) for d in range(3)]))
    piece = img.find("Piece")
    cd = piece.find("CellData") if piece is not None else None
    arrays = {}
    for el in (cd.findall("DataArray") if cd is not None else []):
        m = int(el.get("NumberOfComponents", "1"))
        dt = np.dtype(_NP_TYPES[el.get("type")])
        off = base + int(el.get("offset"))
        nbytes = int(np.memmap(path, htype, mode="r", offset=off, shape=(1,))[0])
        if nbytes != ncells * m * dt.itemsize:
            raise ValueError(f"{path}: array {el.get('Name')!r} has {nbytes} bytes, expected "
                             f"{ncells * m * dt.itemsize}")
        arrays[el.get("Name")] = np.memmap(path, dt, mode="r", offset=off + htype.itemsize,
                                           shape=(ncells, m) if m > 1 else (ncells,))
    return arrays


def read_vti(path):
    """Read a file written by write_vti without VTK (for restarts and tests).

    Returns (meta, arrays).  meta has 'cells' (3-tuple), 'origin', 'spacing'
    (3-tuples), 'time' (float or None) and 'ndim'; arrays are returned with
    exactly the shapes given to write_vti ((nx,), (nx, ny) or (nx, ny, nz),
    plus a trailing component axis for vectors), C-contiguous.
    Only raw appended encoding (what write_vti produces) is supported.
    """
    if os.fspath(path).endswith(".pvti"):
        return read_pvti(path)
    require_complete_vti(path)
    with open(path, "rb") as f:
        raw = f.read()
    root, base, htype = _parse_header(raw, path)

    def load(el, count):
        off = base + int(el.get("offset"))
        nbytes = int(np.frombuffer(raw, htype, 1, off)[0])
        dt = np.dtype(_NP_TYPES[el.get("type")])
        if nbytes != count * dt.itemsize:
            raise ValueError(f"{path}: array {el.get('Name')!r} has {nbytes} bytes, "
                             f"expected {count * dt.itemsize}")
        return np.frombuffer(raw, dt, count, off + htype.itemsize)

    img = root.find("ImageData")
    ext = [int(v) for v in img.get("WholeExtent").split()]
    c3 = tuple(ext[2 * d + 1] - ext[2 * d] for d in range(3))
    origin = tuple(float(v) for v in img.get("Origin", "0 0 0").split())
    spacing = tuple(float(v) for v in img.get("Spacing", "1 1 1").split())

    time, ndim = None, None
    fd = img.find("FieldData")
    if fd is not None:
        for el in fd.findall("DataArray"):
            n = int(el.get("NumberOfTuples", "1"))
            if el.get("Name") == TIME_FIELD:
                time = float(load(el, n)[0])
            elif el.get("Name") == NDIM_FIELD:
                ndim = int(load(el, n)[0])
    if ndim is None:  # foreign file: infer from trailing singleton extents
        ndim = 3
        while ndim > 1 and c3[ndim - 1] == 1:
            ndim -= 1
    cells_nd = c3[:ndim]
    ncells = c3[0] * c3[1] * c3[2]

    arrays = {}
    piece = img.find("Piece")
    cd = piece.find("CellData") if piece is not None else None
    for el in (cd.findall("DataArray") if cd is not None else []):
        m = int(el.get("NumberOfComponents", "1"))
        flat = load(el, ncells * m)
        dt = flat.dtype.newbyteorder("=")
        if m == 1:
            a = flat.reshape(c3[::-1]).transpose(2, 1, 0).reshape(cells_nd)
        else:
            a = flat.reshape(c3[::-1] + (m,)).transpose(2, 1, 0, 3).reshape(cells_nd + (m,))
        arrays[el.get("Name")] = np.ascontiguousarray(a, dtype=dt)
    meta = {"cells": c3, "origin": origin, "spacing": spacing, "time": time, "ndim": ndim,
            "first": tuple(ext[2 * d] for d in range(3))}
    return meta, arrays


# --------------------------------------------------------------------------
# Parallel ImageData (.pvti): the pieces of a grid split over MPI ranks
# --------------------------------------------------------------------------

def array_spec(name, array, ndim: int) -> tuple:
    """(numpy dtype, components) in which write_vti stores `array` on a grid of ndim axes."""
    a = np.asarray(array)
    return _vtk_dtype(a, str(name)), (a.shape[-1] if a.ndim == ndim + 1 else 1)


def write_pvti(path, cells, lower, spacing, pieces, arrays, time=None):
    """A .pvti over pieces written by write_vti: pieces are (first cell, cells, file name
    relative to the .pvti's folder), arrays name -> (numpy dtype, components) as the pieces
    hold them. ParaView and PyVista read the whole grid through it; read_vti too."""
    ndim = len(tuple(cells))
    c3 = _pad3(tuple(int(c) for c in cells), 1, "cells")
    o3 = _pad3(tuple(float(x) for x in lower), 0.0, "lower")
    s3 = _pad3(tuple(float(x) for x in spacing), float(spacing[0]), "spacing")
    whole = " ".join(f"0 {n}" for n in c3)
    declared = [f'      <PDataArray type="{_VTK_TYPES[np.dtype(dt).newbyteorder("<")]}" Name={quoteattr(name)} '
                f'NumberOfComponents="{m}"/>' for name, (dt, m) in arrays.items()]
    listed = []
    for first, piece_cells, source in pieces:
        f3 = _pad3(tuple(int(i) for i in first), 0, "first")
        n3 = _pad3(tuple(int(n) for n in piece_cells), 1, "cells")
        extent = " ".join(f"{i} {i + n}" for i, n in zip(f3, n3))
        listed.append(f'    <Piece Extent="{extent}" Source={quoteattr(str(source))}/>')
    text = "\n".join([
        '<?xml version="1.0"?>',
        '<VTKFile type="PImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        f'  <PImageData WholeExtent="{whole}" GhostLevel="0" Origin="{" ".join(_fmt_float(x) for x in o3)}" '
        f'Spacing="{" ".join(_fmt_float(x) for x in s3)}">',
        f'    <!-- taichiflow: ndim {ndim}, time {"" if time is None else _fmt_float(time)} -->',
        "    <PCellData>", *declared, "    </PCellData>", *listed,
        "  </PImageData>", "</VTKFile>", ""])
    with _AtomicWriter(path) as f:
        f.write(text.encode("utf-8"))


def _pvti_pieces(path) -> list:
    """[(piece path, its first cell)] of a .pvti."""
    root = ET.parse(os.fspath(path)).getroot()
    image = root.find("PImageData")
    if root.get("type") != "PImageData" or image is None:
        raise ValueError(f"{path}: not a PImageData file")
    folder = os.path.dirname(os.fspath(path))
    return [(os.path.join(folder, p.get("Source")), tuple(int(v) for v in p.get("Extent").split()[::2]))
            for p in image.findall("Piece")]


def read_pvti(path):
    """(meta, arrays) of the whole grid of a .pvti, its pieces put in place (read_vti's form)."""
    root = ET.parse(os.fspath(path)).getroot()
    ext = [int(v) for v in root.find("PImageData").get("WholeExtent").split()]
    c3 = tuple(ext[2 * d + 1] - ext[2 * d] for d in range(3))
    meta, arrays = None, {}
    for piece, first in _pvti_pieces(path):
        piece_meta, piece_arrays = read_vti(piece)
        if meta is None:
            meta = {**piece_meta, "cells": c3, "first": (0, 0, 0)}
            cells_nd = c3[:meta["ndim"]]
        window = tuple(slice(f, f + n) for f, n in zip(first, piece_meta["cells"]))[:meta["ndim"]]
        for name, values in piece_arrays.items():
            if name not in arrays:
                arrays[name] = np.empty(cells_nd + values.shape[meta["ndim"]:], dtype=values.dtype)
            arrays[name][window] = values
    if meta is None:
        raise ValueError(f"{path}: no pieces")
    return meta, arrays


# --------------------------------------------------------------------------
# ParaView collection (.pvd)
# --------------------------------------------------------------------------

def read_pvd(path) -> list:
    """(time, file) entries of a .pvd collection, sorted by time; each file as the collection
    names it (relative to the .pvd's folder). Reads only: a run's folder may be read-only."""
    path = os.fspath(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ValueError(f"{path}: not a valid PVD file: {e}") from None
    coll = root.find("Collection")
    if root.get("type") != "Collection" or coll is None:
        raise ValueError(f"{path}: not a VTK Collection file")
    entries = [(float(ds.get("timestep")), ds.get("file"))
               for ds in coll.findall("DataSet")]
    entries.sort(key=lambda e: e[0])
    return entries


class PvdSeries:
    """A ParaView .pvd collection listing snapshot files by simulation time.

    ParaView opens the .pvd as one time series.  The file is rewritten
    atomically after every change so it is always valid while a run is live.
    With resume=True an existing file's entries are kept so a restarted run
    continues the same series; use truncate_after(restart_time) to drop the
    entries the restarted run will overwrite.  Without resume an empty
    collection is written immediately (a fresh run must not list stale files).
    """

    def __init__(self, path, resume=False):
        self.path = os.fspath(path)
        self.dir = os.path.dirname(os.path.abspath(self.path))
        self._entries: list[tuple[float, str]] = []
        if resume and os.path.exists(self.path):
            self._entries = self._load()
        self._save()

    def _load(self):
        return read_pvd(self.path)

    def _save(self):
        lines = ['<?xml version="1.0"?>',
                 '<VTKFile type="Collection" version="1.0" byte_order="LittleEndian" '
                 'header_type="UInt64">',
                 "  <Collection>"]
        for t, fn in self._entries:
            lines.append(f'    <DataSet timestep="{_fmt_float(t)}" group="" part="0" '
                         f'file={quoteattr(fn)}/>')
        lines += ["  </Collection>", "</VTKFile>", ""]
        _atomic_write_bytes(self.path, "\n".join(lines).encode("utf-8"))

    @property
    def entries(self):
        """List of (time, filename) sorted by time; filenames relative to the pvd."""
        return list(self._entries)

    def __len__(self):
        return len(self._entries)

    def add(self, time, filename):
        """Record `filename` at `time`; an entry with an equal time is replaced.

        `filename` should be relative to the pvd's folder (absolute paths are
        converted) so the case directory can be moved as a whole.
        """
        time = float(time)
        if not np.isfinite(time):
            raise ValueError(f"time must be finite, got {time!r}")
        filename = os.fspath(filename)
        if os.path.isabs(filename):
            filename = os.path.relpath(filename, self.dir)
        filename = filename.replace(os.sep, "/")
        self._entries = [e for e in self._entries if e[0] != time]
        self._entries.append((time, filename))
        self._entries.sort(key=lambda e: e[0])  # stable; ParaView wants ascending
        self._save()

    def truncate_after(self, time):
        """Drop entries with timestep > time (restart from a checkpoint at `time`)."""
        time = float(time)
        self._entries = [e for e in self._entries if e[0] <= time]
        self._save()


# --------------------------------------------------------------------------
# CSV diagnostics
# --------------------------------------------------------------------------

def _fmt_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return "%.17g" % float(v)  # round-trips exactly through float()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return _fmt_cell(v.item())
    return str(v)


class DiagnosticsCSV:
    """Append-only CSV of per-step diagnostics (one column per quantity).

    Floats are written with 17 significant digits so float(text) reproduces
    the value exactly (regression tests compare diagnostics bit for bit).
    With resume=True an existing file is kept and appended to, after checking
    that its header equals `columns` (ValueError otherwise); a partial last
    line left by a crash is dropped.
    """

    def __init__(self, path, columns, resume=False):
        self.path = os.fspath(path)
        self.columns = [str(c) for c in columns]
        if not self.columns:
            raise ValueError("columns must not be empty")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"duplicate column names in {self.columns!r}")
        need_header = True
        if resume and os.path.exists(self.path) and os.path.getsize(self.path) > 0:
            self._check_and_repair()
            need_header = False
        with naming(self.path):  # (a full disk's write errors know no file name)
            self._f = open(self.path, "a" if not need_header else "w",
                           newline="", encoding="utf-8")
            self._w = csv.writer(self._f, lineterminator="\n")
            if need_header:
                self._w.writerow(self.columns)

    def _check_and_repair(self):
        with open(self.path, "rb") as f:
            data = f.read()
        first = data.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
        header = next(csv.reader([first]), [])
        if header != self.columns:
            missing = [c for c in self.columns if c not in header]
            extra = [c for c in header if c not in self.columns]
            parts = []
            if missing:
                parts.append(f"missing columns {missing}")
            if extra:
                parts.append(f"unexpected columns {extra}")
            if not parts:
                parts.append(f"column order differs: file has {header}, "
                             f"expected {self.columns}")
            raise ValueError(f"{self.path}: header mismatch: " + "; ".join(parts) + " (written by another "
                             "version of taichiflow or another case: continue into another folder, "
                             "--restart CHECKPOINT --out NEW_FOLDER, to keep these rows as they are)")
        if not data.endswith(b"\n"):
            # crash mid-row: keep only complete lines
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            if cut == 0:  # only an unterminated (but matching) header: rewrite it
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerow(self.columns)
                _atomic_write_bytes(self.path, buf.getvalue().encode("utf-8"))

    def write(self, row):
        """Append one row: a dict keyed by column name, or a sequence in column order."""
        if self._f is None:
            raise ValueError(f"{self.path}: write() on closed DiagnosticsCSV")
        if isinstance(row, dict):
            missing = [c for c in self.columns if c not in row]
            extra = [k for k in row if k not in self.columns]
            if missing or extra:
                raise ValueError(f"row keys do not match columns: missing {missing}, "
                                 f"unexpected {extra}")
            values = [row[c] for c in self.columns]
        else:
            values = list(row)
            if len(values) != len(self.columns):
                raise ValueError(f"row has {len(values)} values, expected "
                                 f"{len(self.columns)} ({self.columns})")
        with naming(self.path):
            self._w.writerow([_fmt_cell(v) for v in values])

    def flush(self, sync=True):
        """Push buffered rows to the OS (and to disk if sync) so tail -f / crashes see them."""
        if self._f is not None:
            with naming(self.path):
                self._f.flush()
                if sync:
                    os.fsync(self._f.fileno())

    def close(self):
        """Flush, fsync and close; safe to call twice."""
        if self._f is not None:
            try:
                self.flush()
            finally:  # (closed even on a full disk: the error is raised once, not again at exit)
                f, self._f = self._f, None
                with naming(self.path):
                    f.close()

    @property
    def closed(self):
        return self._f is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
