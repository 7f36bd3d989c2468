"""Conservative finite differences with flux splitting (Shu & Osher 1988, 1989).

The finite-difference method holds point values of U at cell centres. The flux through face
i + 1/2 is a reconstruction of the point values of the physical flux, treated as if they were
cell averages of a function h whose differences are exactly dF/dx:

    f+-_j = (F(U_j) +- alpha U_j) / 2                      (Lax-Friedrichs splitting)
    F_{i+1/2} = left state of reconstruct(f+) + right state of reconstruct(f-)

so a fifth-order reconstruction gives a fifth-order scheme in 1D, 2D and 3D alike, one flux
per face, dimension by dimension. A finite-volume scheme with one flux point per face is
second order in multi-D on nonlinear flow, and reconstructing W from cell averages of U
pointwise costs another O(h^2) (docs/numerics.md measures both).

alpha is the largest signal speed over the face's stencil (local Lax-Friedrichs: the
Rusanov speed). Any reconstruction serves: its left state of f+ is upwind for the right-going
part, its right state of f- for the left-going part. The reconstructed variables are the
split fluxes themselves ("conserved"), or their projections on the left eigenvectors of the
conserved system at the face ("characteristic": sharper shocks without oscillations), which
the model provides through its eigenvectors and the Jacobian dU/dW of its variables.
Everything is resolved while the kernels compile; nothing here names a model.
"""

import taichi as ti


@ti.func
def _apply(matrix, vector):
    """matrix @ vector, in Taichi scope."""
    return matrix @ vector


class ComponentWise:
    """The split fluxes reconstructed component by component, with one speed for all: the
    largest signal speed over the stencil."""

    def __init__(self, phys):
        self.phys = phys

    def forward(self, stencil_w, g):
        return None

    def project(self, vector, basis):
        return vector

    def back(self, vector, basis):
        return vector

    def speeds(self, stencil_w):
        """The largest signal speed over the stencil; per conserved component where the model
        gives its splitting_speeds (GLM: B_n and psi split exactly with the cleaning speed)."""
        if "splitting_speeds" in self.phys.model.functions:
            alpha = ti.abs(self.phys.splitting_speeds(stencil_w[0]))
            for k in ti.static(range(1, len(stencil_w))):
                alpha = ti.max(alpha, ti.abs(self.phys.splitting_speeds(stencil_w[k])))
            return alpha
        alpha = 0.0
        for w in ti.static(stencil_w):
            smin, smax = self.phys.signal_speeds(w)
            alpha = ti.max(alpha, ti.abs(smin), ti.abs(smax))
        return alpha


class ConservedCharacteristic(ComponentWise):
    """Projected on the eigenvectors of dF/dU at the mean of the two cells beside the face:
    L_U = L_W (dU/dW)^-1 and R_U = (dU/dW) R_W from the model's primitive eigenvectors. With
    the model's eigenvalues each field is split with its own largest speed over the stencil
    (a contact moving at u then gets the dissipation of u, not of u + c), else with one."""

    def __init__(self, phys, per_field: bool):
        super().__init__(phys)
        self.per_field = per_field

    def forward(self, stencil_w, g):
        mean = 0.5 * (stencil_w[g - 1] + stencil_w[g])
        left_vectors, right_vectors = self.phys.eigenvectors(mean)
        to_conserved, to_primitive = self.phys.jacobians(mean)
        return _apply(left_vectors, to_primitive), _apply(to_conserved, right_vectors)

    def project(self, vector, basis):
        return _apply(basis[0], vector)

    def back(self, vector, basis):
        return _apply(basis[1], vector)

    def speeds(self, stencil_w):
        if ti.static(not self.per_field):
            return super().speeds(stencil_w)
        alpha = ti.abs(self.phys.eigenvalues(stencil_w[0]))
        for k in ti.static(range(1, len(stencil_w))):
            alpha = ti.max(alpha, ti.abs(self.phys.eigenvalues(stencil_w[k])))
        return alpha


def make_split_flux(phys, recon, characteristic: bool):
    """Taichi function (stencil of 2g primitive states in the normal frame, dt_dx) -> the
    normal-frame flux through the face in the stencil's middle."""
    g = recon.ghost
    if characteristic:
        variables = ConservedCharacteristic(phys, per_field="eigenvalues" in phys.model.functions)
    else:
        variables = ComponentWise(phys)

    @ti.func
    def split_flux(stencil: ti.template(), dt_dx):
        basis = variables.forward(stencil, g)
        alpha = variables.speeds(stencil)
        states = [phys.state_and_flux(w) for w in stencil]
        projected = [(variables.project(u, basis), variables.project(f, basis)) for u, f in states]
        plus = [0.5 * (f + alpha * u) for u, f in projected]
        minus = [0.5 * (f - alpha * u) for u, f in projected]
        right_going, _ = recon.face_states(plus, dt_dx)
        _, left_going = recon.face_states(minus, dt_dx)
        return variables.back(right_going + left_going, basis)

    return split_flux
