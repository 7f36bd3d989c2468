"""Which variables are reconstructed: primitive (default), conserved or characteristic.

The face kernel hands the reconstruction a stencil of primitive vectors; a transform maps
it into the reconstructed variables and maps the two face states back to primitive ones.
`per_cell` says whether the transform of a cell depends on that cell alone: then a sweep may
reconstruct each cell once for both of its faces; otherwise (characteristic variables, whose
basis belongs to the face) it reconstructs per face. Everything here is resolved while
compiling. registry.py names each transform (and the model hooks it needs).
"""
from __future__ import annotations

import taichi as ti

from .. import registry
from ..layout import component


@ti.func
def _apply(matrix, vector):
    """matrix @ vector, in Taichi scope (plain Python has no @ for Taichi expressions)."""
    return matrix @ vector


class Primitive:
    """The primitive variables, or the ones the model says it is reconstructed in
    (to_reconstructed: e.g. the free surface in place of the bed, which keeps a lake at rest)."""
    per_cell = True

    def __init__(self, phys=None):
        self.phys = phys
        self.model_variables = phys is not None and "to_reconstructed" in phys.model.functions

    def forward(self, stencil, g):
        if ti.static(self.model_variables):
            return [self.phys.to_reconstructed(w) for w in stencil], None
        return stencil, None

    def backward(self, left, right, context):
        if ti.static(self.model_variables):
            return self.phys.from_reconstructed(left), self.phys.from_reconstructed(right)
        return left, right


class Conserved:
    per_cell = True

    def __init__(self, phys):
        self.phys = phys

    def forward(self, stencil, g):
        return [self.phys.cons(w) for w in stencil], None

    def backward(self, left, right, context):
        return self.phys.prim(left), self.phys.prim(right)


class Characteristic:
    """Project on the left eigenvectors of the mean of the two cells beside the face."""

    per_cell = False

    def __init__(self, phys):
        self.phys = phys

    def forward(self, stencil, g):
        left_vectors, right_vectors = self.phys.eigenvectors(0.5 * (stencil[g - 1] + stencil[g]))
        return [_apply(left_vectors, w) for w in stencil], right_vectors

    def backward(self, left, right, right_vectors):
        return _apply(right_vectors, left), _apply(right_vectors, right)


class CellCharacteristic:
    """Each cell reconstructed in the characteristic variables of its own state: its stencil
    projected on the left eigenvectors of that cell, its two face values mapped back with the
    cell's right eigenvectors (the cell-centred basis of Athena's characteristic PLM and PPM,
    Stone et al. 2008). Characteristic (above) projects on the face's mean state instead, so
    a cell's two face values come from two bases, and that mismatch lets a shock send
    oscillations ahead of it: on Brio-Wu (docs/numerics.md) the total variation of rho still
    grows with resolution on the face's basis, and on the cell's it does not.

    Both sweep paths give the same face values. Per cell (the stencil is 2g - 1 cells, this
    cell in the middle) one basis serves both faces. Per face (2g cells, the face between
    g - 1 and g) each cell is projected on both sides' bases at once, as one vector of twice
    the length whose halves the reconstruction treats component by component: the left state
    is the lower half in cell g - 1's basis, the right state the upper half in cell g's."""

    per_cell = True

    def __init__(self, phys):
        self.phys = phys

    def forward(self, stencil, g):
        if len(stencil) == 2 * g - 1:
            left_vectors, right_vectors = self.phys.eigenvectors(stencil[g - 1])
            return [_apply(left_vectors, w) for w in stencil], right_vectors
        lower_left, lower_right = self.phys.eigenvectors(stencil[g - 1])
        upper_left, upper_right = self.phys.eigenvectors(stencil[g])
        stacked = [_stack(_apply(lower_left, w), _apply(upper_left, w), self.phys.W.n) for w in stencil]
        return stacked, (lower_right, upper_right)

    def backward(self, left, right, context):
        if not isinstance(context, tuple):  # one cell's faces: its own basis
            return _apply(context, left), _apply(context, right)
        n = self.phys.W.n
        lower = ti.Vector([component(left, k) for k in range(n)])
        upper = ti.Vector([component(right, n + k) for k in range(n)])
        return _apply(context[0], lower), _apply(context[1], upper)


def _stack(lower, upper, n: int):
    """One vector of 2n components: lower's, then upper's (plain Python, run while compiling)."""
    return ti.Vector([component(lower, k) for k in range(n)] + [component(upper, k) for k in range(n)])


class ConservedCharacteristic:
    """The conserved variables projected on the eigenvectors of the conserved system at the
    mean of the two cells beside the face: L_U = L_W dW/dU, R_U = dU/dW R_W from the model's
    primitive eigenvectors and Jacobians. From cell averages of U, so high order in 1D (the
    primitive ones lose O(h^2) there), with the characteristic separation near shocks."""

    per_cell = False

    def __init__(self, phys):
        self.phys = phys

    def forward(self, stencil, g):
        mean = 0.5 * (stencil[g - 1] + stencil[g])
        left_vectors, right_vectors = self.phys.eigenvectors(mean)
        to_conserved, to_primitive = self.phys.jacobians(mean)
        project = _apply(left_vectors, to_primitive)
        return [_apply(project, self.phys.cons(w)) for w in stencil], _apply(to_conserved, right_vectors)

    def backward(self, left, right, right_vectors):
        return self.phys.prim(_apply(right_vectors, left)), self.phys.prim(_apply(right_vectors, right))


def make_variables(kind: str, phys):
    """The transform of the reconstructed variables `kind` (phys may be None to ask only
    `per_cell`); an unknown kind raises UnknownNameError naming the choices."""
    return registry.reconstructed_variables.get(kind).load()(phys)
