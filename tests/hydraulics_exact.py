"""Steady open-channel flows the tests compare with: SWASHES' flows over a bump (Delestre et
al. 2013, sections 3.1.3 to 3.1.5) from Bernoulli's relation, and normal depths of the friction
laws. numpy only; every root by bisection to rounding.

Over a bed b(x) a steady frictionless flow of discharge q keeps the head
    H = q² / (2 g h²) + h + b
constant; for H - b above the critical head 3/2 h_c, h_c = (q² / g)^(1/3), it has a subcritical
root (h > h_c) and a supercritical one (h < h_c). A transcritical flow passes h_c at the bump's
top, so its head is 3/2 h_c + b_top; a stationary hydraulic jump joins a supercritical depth
h1 to a subcritical h2 where the momentum flux q²/h + g h²/2 is the same on both sides
(Rankine-Hugoniot at zero speed).
"""
import numpy as np

G = 9.81
BUMP_TOP = 0.2


def bump(x):
    """SWASHES' bed: 0.2 - 0.05 (x - 10)² on 8 < x < 12, else 0."""
    x = np.asarray(x, dtype=float)
    return np.where((x > 8.0) & (x < 12.0), BUMP_TOP - 0.05 * (x - 10.0) ** 2, 0.0)


def critical_depth(q, g=G):
    return (q * q / g) ** (1.0 / 3.0)


def bernoulli_depth(q, head, bed, subcritical, g=G):
    """The depth of discharge q and head `head` over `bed` (arrays), on the subcritical or the
    supercritical branch (bisection between the critical depth and the branch's end)."""
    bed = np.asarray(bed, dtype=float)
    h_c = critical_depth(q, g)
    if subcritical:
        lo, hi = np.full(bed.shape, h_c), np.maximum(head - bed, h_c)
    else:
        lo, hi = np.full(bed.shape, 1e-12), np.full(bed.shape, h_c)
    excess = lambda h: q * q / (2 * g * h * h) + h + bed - head  # noqa: E731  (> 0 near the branch's end)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = excess(mid) > 0
        if subcritical:  # (excess rises with h on this branch)
            hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
        else:  # (excess falls with h)
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return 0.5 * (lo + hi)


def momentum_flux(q, h, g=G):
    return q * q / h + 0.5 * g * h * h


def bump_subcritical(x, q=4.42, h_out=2.0, g=G):
    """Subcritical everywhere: the head of the outlet's depth (flat bed there)."""
    head = q * q / (2 * g * h_out ** 2) + h_out
    return bernoulli_depth(q, head, bump(x), True, g)


def bump_transcritical(x, q=1.53, g=G):
    """Subcritical upstream of the top (x = 10), critical there, supercritical downstream."""
    x = np.asarray(x, dtype=float)
    head = 1.5 * critical_depth(q, g) + BUMP_TOP
    return np.where(x < 10.0, bernoulli_depth(q, head, bump(x), True, g),
                    bernoulli_depth(q, head, bump(x), False, g))


def jump_position(q=0.18, h_out=0.33, g=G):
    """Where the supercritical flow down the bump jumps to the outlet's subcritical branch."""
    upstream = 1.5 * critical_depth(q, g) + BUMP_TOP
    downstream = q * q / (2 * g * h_out ** 2) + h_out

    def mismatch(x):
        b = bump(np.array([x]))
        return (momentum_flux(q, bernoulli_depth(q, upstream, b, False, g), g)
                - momentum_flux(q, bernoulli_depth(q, downstream, b, True, g), g))[0]

    lo, hi = 10.0, 25.0  # (supercritical first: its momentum flux exceeds the subcritical one)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mismatch(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def bump_transcritical_shock(x, q=0.18, h_out=0.33, g=G):
    """Transcritical over the top, a stationary jump at jump_position, subcritical after it."""
    x = np.asarray(x, dtype=float)
    upstream = 1.5 * critical_depth(q, g) + BUMP_TOP
    downstream = q * q / (2 * g * h_out ** 2) + h_out
    b = bump(x)
    x_jump = jump_position(q, h_out, g)
    return np.where(x < 10.0, bernoulli_depth(q, upstream, b, True, g),
                    np.where(x < x_jump, bernoulli_depth(q, upstream, b, False, g),
                             bernoulli_depth(q, downstream, b, True, g)))


def normal_depth(q, slope, g=G, manning=0.0, chezy=0.0, darcy_weisbach=0.0):
    """The depth of uniform flow of discharge q down a bed of slope `slope` under one law:
    friction slope = bed slope, S_f = n² q² / h^(10/3), q² / (C² h³) or f q² / (8 g h³)."""
    if manning:
        return (manning ** 2 * q * q / slope) ** 0.3
    if chezy:
        return (q * q / (chezy ** 2 * slope)) ** (1.0 / 3.0)
    return (darcy_weisbach * q * q / (8.0 * g * slope)) ** (1.0 / 3.0)
