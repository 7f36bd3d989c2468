"""The leaves of an adaptive run as one VTK XML UnstructuredGrid file (.vtu): every leaf cell a
voxel (3D), pixel (2D) or line (1D) with its own width, cell data per field plus each cell's
level and block. One file a snapshot (not one per block), which ParaView and PyVista open as
they are (`pyvista.read`), slice and contour (after cell_data_to_point_data), and `series.pvd`
lists like the uniform runs' .vti. Raw appended binary, as io.write_vti; numpy only.
"""
from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from .io import NDIM_FIELD, TIME_FIELD, _AtomicWriter, _VTK_TYPES, _vtk_dtype

# VTK cell types of a leaf cell by dimension: line, pixel, voxel
_CELL_TYPES = {1: 3, 2: 8, 3: 11}


def _block_template(cells: int, dim: int):
    """(point offsets (n_points, dim) of a block's lattice in cells, connectivity (n_cells,
    2^dim) into those points): cells x-fastest, each cell's corners in VTK's pixel/voxel order
    (x fastest, then y, then z)."""
    lattice = np.stack(np.meshgrid(*[np.arange(cells + 1)] * dim, indexing="ij"), axis=-1)
    points = lattice.transpose(*reversed(range(dim)), dim).reshape(-1, dim)  # (x fastest)
    stride = [(cells + 1) ** d for d in range(dim)]
    corner = np.stack(np.meshgrid(*[np.arange(cells)] * dim, indexing="ij"), axis=-1)
    first = (corner.transpose(*reversed(range(dim)), dim).reshape(-1, dim) * stride).sum(axis=1)
    bits = [[(k >> d) & 1 for d in range(dim)] for k in range(2 ** dim)]
    connectivity = first[:, None] + np.array([sum(b[d] * stride[d] for d in range(dim)) for b in bits])[None, :]
    return points, connectivity


ROOT_CELLS_FIELD = "TAICHIFLOW_ROOT_CELLS"  # the root level's cells per axis (viz/amr.py resamples by it)


def write_leaves_vtu(path, blocks, root_cells, time=None):
    """blocks: a list of (lower corner (dim,), cell width (dim,), level, {name: array (N,)*dim
    or (N,)*dim + (m,)}) of equal N; root_cells: the root level's cells per axis. The file is
    replaced atomically."""
    if not blocks:
        raise ValueError("no blocks to write")
    dim = len(blocks[0][0])
    first_arrays = blocks[0][3]
    cells = next(iter(first_arrays.values())).shape[0]
    template_points, template_cells = _block_template(cells, dim)
    per_block = cells ** dim
    names = list(first_arrays)
    lowers = np.array([lower for lower, _, _, _ in blocks], np.float64)
    widths = np.array([width for _, width, _, _ in blocks], np.float64)
    xyz = np.zeros((len(blocks) * len(template_points), 3))
    xyz[:, :dim] = (lowers[:, None, :] + template_points[None] * widths[:, None, :]).reshape(-1, dim)
    n_cells = len(blocks) * per_block
    # Int32 indices where they fit (every snapshot short of 2^31 points and corners): the
    # connectivity is most of a file's bytes (64 of about 135 a cell as Int64)
    index = np.int32 if max(len(xyz), n_cells * 2 ** dim) < 2 ** 31 else np.int64
    first_points = np.arange(len(blocks), dtype=index)[:, None, None] * index(len(template_points))
    connectivity = (template_cells.astype(index)[None] + first_points).reshape(-1)
    cell_arrays = {}
    for name in names:
        values = np.stack([np.asarray(arrays[name]) for _, _, _, arrays in blocks])  # (blocks, cells..., m)
        ncomp = values.shape[1 + dim] if values.ndim > 1 + dim else 1
        in_vtk_order = values.transpose(0, *reversed(range(1, 1 + dim)), *range(1 + dim, values.ndim))
        cell_arrays[name] = (in_vtk_order.reshape(n_cells, ncomp), ncomp)
    cell_arrays["level"] = (np.repeat([level for _, _, level, _ in blocks], per_block).astype(np.int32)[:, None], 1)
    cell_arrays["block"] = (np.repeat(np.arange(len(blocks)), per_block).astype(np.int32)[:, None], 1)
    field_data = {TIME_FIELD: np.asarray([float(time)], "<f8")} if time is not None else {}
    field_data[NDIM_FIELD] = np.asarray([dim], "<i4")
    field_data[ROOT_CELLS_FIELD] = np.asarray(root_cells, "<i4")
    _write(path, xyz, connectivity, 2 ** dim, _CELL_TYPES[dim], n_cells, cell_arrays, field_data)


def _write(path, xyz, connectivity, corners, cell_type, n_cells, cell_arrays, field_data):
    blocks, offset = [], 0

    def array(name, data, ncomp=1, tuples=""):
        nonlocal offset
        data = np.ascontiguousarray(data)
        xml = (f'<DataArray type="{_VTK_TYPES[data.dtype]}" Name={quoteattr(name)} {tuples}'
               f'NumberOfComponents="{ncomp}" format="appended" offset="{offset}"/>')
        blocks.append(data)
        offset += 8 + data.nbytes
        return xml

    fields = []
    for name, values in field_data.items():
        fields.append(array(name, values, tuples=f'NumberOfTuples="{len(values)}" '))
    point_xml = array("Points", xyz.astype("<f8", copy=False), 3)
    index = connectivity.dtype.newbyteorder("<")
    cell_xml = [array("connectivity", connectivity.astype(index, copy=False)),
                array("offsets", np.arange(1, n_cells + 1, dtype=index) * index.type(corners)),
                array("types", np.full(n_cells, cell_type, np.uint8))]
    data_xml = []
    for name, (values, ncomp) in cell_arrays.items():
        dtype = _vtk_dtype(values, name)
        data_xml.append(array(name, values.astype(dtype, copy=False), ncomp))
    head = [
        '<?xml version="1.0"?>',
        '<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        "  <UnstructuredGrid>",
        "    <FieldData>", *("      " + x for x in fields), "    </FieldData>",
        f'    <Piece NumberOfPoints="{len(xyz)}" NumberOfCells="{n_cells}">',
        "      <Points>", "        " + point_xml, "      </Points>",
        "      <Cells>", *("        " + x for x in cell_xml), "      </Cells>",
        "      <CellData>", *("        " + x for x in data_xml), "      </CellData>",
        "    </Piece>",
        "  </UnstructuredGrid>",
        '  <AppendedData encoding="raw">',
        "   _",
    ]
    with _AtomicWriter(path) as f:
        f.write("\n".join(head).encode("utf-8"))
        for data in blocks:
            f.write(np.uint64(data.nbytes).astype("<u8").tobytes())
            f.write(memoryview(data).cast("B"))
        f.write(b"\n  </AppendedData>\n</VTKFile>\n")
