"""Host <-> device copies of the state, in slabs of x planes: Taichi stages a whole array on
the device, which a 1024^3 grid has no room for. Also the model's derived fields, computed
slab by slab as they are read."""
import numpy as np
import taichi as ti

from ..layout import component
from .indexing import array_vector, centred_gradients, numpy_dtype, with_axis0

SLAB_BYTES = 1 << 28    # largest host array sent to or read from the device at once


class StateTransfer:
    """Reads and writes U and W (interior cells) and derived fields as numpy arrays."""

    def __init__(self, phys, cells, dtype, U, W, dx=None):
        self.phys, self.cells, self.dtype = phys, tuple(cells), dtype
        self.dx = tuple(dx) if dx is not None else (1.0,) * len(self.cells)
        self.U, self.W = U, W
        dim = len(self.cells)
        n_conserved, n_primitive = phys.U.n, phys.W.n
        self._write_primitive_slab = self._slab_writer(W, n_primitive)
        self._write_conserved_slab = self._slab_writer(U, n_conserved)
        self._read_primitive_slab = self._slab_reader(W, n_primitive)
        self._read_conserved_slab = self._slab_reader(U, n_conserved)
        self._derive = {}   # name: kernel writing a slab of that derived field
        cells = self.cells

        @ti.kernel
        def conserve():
            for I in ti.grouped(ti.ndrange(*cells)):
                U[I] = phys.cons(W[I])

        self.conserve = conserve
        self._dim = dim

    def _slab_reader(self, field, n):
        """Kernel copying x planes start .. start + len(rows) of field (interior cells)."""
        cells, dim = self.cells, len(self.cells)

        @ti.kernel
        def read(rows: ti.types.ndarray(dtype=ti.types.vector(n, self.dtype), ndim=dim), start: int):
            for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                rows[J] = field[with_axis0(J, component(J, 0) + start, dim)]

        return read

    def _slab_writer(self, field, n):
        """Kernel setting x planes start .. start + len(rows) of field (interior cells)."""
        cells, dim = self.cells, len(self.cells)

        @ti.kernel
        def write(rows: ti.types.ndarray(dtype=self.dtype, ndim=dim + 1), start: int):
            for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                field[with_axis0(J, component(J, 0) + start, dim)] = array_vector(rows, J, dim, n)

        return write

    def primitive_array(self) -> np.ndarray:
        """Interior primitive state as a numpy array (W must be current)."""
        return self._read_slabs(self._read_primitive_slab, self.phys.W.n)

    def conserved_array(self) -> np.ndarray:
        """The conserved state U as a numpy array (cells + (nU,))."""
        return self._read_slabs(self._read_conserved_slab, self.phys.U.n)

    def set_primitive(self, w: np.ndarray):
        """U from interior primitive values (cells + (nW,)), through the model's to_conserved."""
        self._write_slabs(self._write_primitive_slab, w)
        self.conserve()

    def set_conserved(self, u: np.ndarray):
        """U from conserved values (cells + (nU,)), e.g. a checkpoint's."""
        self._write_slabs(self._write_conserved_slab, u)

    def derived_array(self, name: str) -> np.ndarray:
        """A model-derived field (e.g. Mach number) on the interior, from the current W (with
        its ghost layers, for the fields of gradients)."""
        if name not in self._derive:
            phys, W, cells, dim, dx, dtype = self.phys, self.W, self.cells, self._dim, self.dx, self.dtype
            gradients, least_width = name in phys.model.gradient_fields, min(dx)  # (min: Python's, not Taichi's)

            @ti.kernel
            def derive(rows: ti.types.ndarray(dtype=ti.types.vector(1, self.dtype), ndim=dim), start: int):
                for J in ti.grouped(ti.ndrange(rows.shape[0], *cells[1:])):
                    if ti.static(gradients):
                        I = with_axis0(J, component(J, 0) + start, dim)
                        grad = centred_gradients(W, I, dx, phys.W.n, dtype)
                        rows[J] = ti.Vector([phys.derived(name, W[I], grad, least_width)])
                    else:
                        rows[J] = ti.Vector([phys.derived(name, W[with_axis0(J, component(J, 0) + start, dim)])])

            self._derive[name] = derive
        return self._read_slabs(self._derive[name], 1)[..., 0]

    def _slab_rows(self, components: int) -> int:
        """x planes per slab: SLAB_BYTES of them, at least one."""
        plane = int(np.prod(self.cells[1:])) * components * np.dtype(numpy_dtype(self.dtype)).itemsize
        return max(1, SLAB_BYTES // max(1, plane))

    def _write_slabs(self, write, values: np.ndarray):
        rows = self._slab_rows(values.shape[-1])
        for start in range(0, self.cells[0], rows):
            write(np.ascontiguousarray(values[start:start + rows], dtype=numpy_dtype(self.dtype)), start)

    def _read_slabs(self, read, components: int) -> np.ndarray:
        """cells + (components,) values on the host, filled slab by slab by read(rows, start)."""
        out = np.empty(self.cells + (components,), dtype=numpy_dtype(self.dtype))
        rows = self._slab_rows(components)
        for start in range(0, self.cells[0], rows):
            read(out[start:start + rows], start)  # x planes of a C-ordered array: contiguous
        return out
