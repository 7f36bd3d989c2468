"""SHASTA flux-corrected transport (Boris & Book 1973) as one conservative face flux.

SHASTA advances cell averages u_j by a diffusive transport and a limited anti-diffusion. In
the form Rischke, Bernard & Maruhn (1995) use for systems, with centred fluxes
F_{j+1/2} = (F(u_j) + F(u_{j+1})) / 2 and e = dt/dx:

    transport + diffusion:  ~u_j = u_j - e (F_{j+1/2} - F_{j-1/2}) + eta (u_{j+1} - 2 u_j + u_{j-1})
    raw anti-diffusion:      A_{j+1/2} = a D_{j+1/2},   D_{j+1/2} = ~u_{j+1} - ~u_j
    strong limiter:          f_{j+1/2} = s max(0, min(s D_{j-1/2}, |A_{j+1/2}|, s D_{j+3/2})),
                             s = sign(D_{j+1/2})    (component by component)
    new values:              u_j <- ~u_j - (f_{j+1/2} - f_{j-1/2})

so no new extremum of ~u appears: f_{j+1/2} never exceeds the difference on either side of
the face it flattens. The three steps are one conservative flux through face j + 1/2,

    G_{j+1/2} = F_{j+1/2} - eta (u_{j+1} - u_j) / e + f_{j+1/2} / e,

read from the six cells j-2 .. j+3: each face recomputes the four ~u it needs (j-1 .. j+2). A
sweep then updates u_j - e (G_{j+1/2} - G_{j-1/2}), which is the SHASTA step exactly, and the
integrator's stages each take such a step with their dt (forward Euler is the classical form).
In several dimensions each axis adds its own flux with the same dt (unsplit). No Riemann
solver, no reconstruction: only the model's flux and its map between W and U. Everything is
resolved while the kernels compile; nothing here names a model.
"""

import taichi as ti

REACH = 3        # cells the face flux reads on each side of its face (the ghost layers)
MIDDLE = REACH - 1      # the stencil's cell j, below the face
DIFFUSION = 0.125       # eta: Boris & Book's 1/8
ANTIDIFFUSION = 0.125   # a: 1/8 restores what eta took where the limiter lets it


@ti.func
def _limited(below, here, above, a):
    """Boris & Book's strong limiter of the anti-diffusive flux a * here through a face whose
    neighbouring faces carry the differences below and above (vectors, component-wise)."""
    s = ti.select(here < 0.0, -1.0, 1.0)
    return s * ti.max(0.0, ti.min(s * below, a * ti.abs(here), s * above))


def make_shasta_flux(phys, scheme: dict):
    """Taichi function (stencil of 2 REACH primitive states in the normal frame, dt_dx) -> the
    normal-frame SHASTA flux through the face in the stencil's middle (between cells 2 and 3)."""
    eta = float(scheme.get("shasta_diffusion", DIFFUSION))
    a = float(scheme.get("shasta_antidiffusion", ANTIDIFFUSION))

    @ti.func
    def shasta_flux(stencil: ti.template(), dt_dx):
        states = [phys.state_and_flux(w) for w in stencil]
        u = [state[0] for state in states]
        centred = [0.5 * (states[k][1] + states[k + 1][1]) for k in range(2 * REACH - 1)]  # faces k + 1/2
        # transported and diffused values of cells 1 .. 4 (j - 1 .. j + 2)
        smooth = [u[k] - dt_dx * (centred[k] - centred[k - 1]) + eta * (u[k + 1] - 2.0 * u[k] + u[k - 1])
                  for k in range(1, 2 * REACH - 1)]
        differences = [smooth[k + 1] - smooth[k] for k in range(3)]  # faces j - 1/2, j + 1/2, j + 3/2
        corrected = _limited(differences[0], differences[1], differences[2], a)
        return centred[MIDDLE] + (corrected - eta * (u[MIDDLE + 1] - u[MIDDLE])) / dt_dx

    return shasta_flux
