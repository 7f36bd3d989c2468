"""Special-relativistic kinematics for model files (c = 1): the Lorentz factor, the extreme
characteristic speeds of a relativistic fluid, and the spatial four-velocity the relativistic
models are reconstructed in (models/srhd.py, models/srhd_ultra.py). Taichi functions of the
velocity 3-vector; no scheme here."""
import taichi as ti


@ti.func
def lorentz(vel):
    """W = 1 / sqrt(1 - |v|^2)."""
    return 1.0 / ti.sqrt(1.0 - vel.dot(vel))


@ti.func
def extreme_speeds(vel, cs2):
    """The slowest and fastest characteristic speeds along x of a fluid moving at vel with sound
    speed squared cs2 (Marti & Mueller 2003, eq. 46):
    (v_x (1 - c^2) -/+ c sqrt((1 - v^2)(1 - v_x^2 - (v^2 - v_x^2) c^2))) / (1 - v^2 c^2)."""
    vx = vel[0]
    v2 = vel.dot(vel)
    root = ti.sqrt(cs2 * (1.0 - v2) * ti.max(1.0 - vx * vx - (v2 - vx * vx) * cs2, 0.0))
    inv = 1.0 / (1.0 - v2 * cs2)
    return ti.Vector([(vx * (1.0 - cs2) - root) * inv, (vx * (1.0 - cs2) + root) * inv])


@ti.func
def four_velocity(vel):
    """u = W v: any u maps back to |v| < 1 (velocity_of), unlike v itself."""
    return vel * lorentz(vel)


@ti.func
def velocity_of(u):
    """v = u / sqrt(1 + |u|^2), the inverse of four_velocity."""
    return u * (1.0 / ti.sqrt(1.0 + u.dot(u)))  # (one division, not one a component)
