"""The integrators' coefficient tables against the Runge-Kutta order conditions.

Each table drives R = a R + dt L(U); U = c0 U0 + c1 U + c2 R (numerics/integrators.py).
Applied to a linear combination of stage derivatives, that recurrence is a Butcher tableau;
the order conditions (Butcher's trees up to order 4) are checked on it exactly as published.
"""
import numpy as np
import pytest

from taichiflow.numerics.integrators import INTEGRATORS

CLAIMED_ORDER = {"euler": 1, "ssprk2": 2, "ssprk3": 3, "lsrk3": 3, "lsrk4": 4}


def butcher(stages):
    """(A, b, c) of a table: every stage value as U0 + sum_j A_ij dt k_j."""
    s = len(stages)
    u = np.zeros(s)          # the coefficients of U (in k) before stage i
    r = np.zeros(s)          # of R
    A = np.zeros((s, s))
    for i, stage in enumerate(stages):
        A[i] = u
        r = stage.a * r
        r[i] += 1.0
        # U0 has zero coefficients in k (it is the start of the step)
        u = stage.c1 * u + stage.c2 * r
    return A, u, A.sum(axis=1)


def order_conditions(A, b, c) -> dict:
    """Residuals of the conditions of order 1 to 4."""
    return {1: [b.sum() - 1.0],
            2: [b @ c - 1 / 2],
            3: [b @ c ** 2 - 1 / 3, b @ A @ c - 1 / 6],
            4: [b @ c ** 3 - 1 / 4, (b * c) @ A @ c - 1 / 8, b @ A @ c ** 2 - 1 / 12, b @ A @ A @ c - 1 / 24]}


@pytest.mark.parametrize("name", sorted(CLAIMED_ORDER))
def test_integrator_has_its_order(name):
    stages = INTEGRATORS[name]
    assert all(abs(stage.c0 + stage.c1 - 1.0) < 1e-15 for stage in stages)  # U0's weights sum to one
    A, b, c = butcher(stages)
    residuals = order_conditions(A, b, c)
    order = CLAIMED_ORDER[name]
    for p in range(1, order + 1):
        assert np.abs(residuals[p]).max() < 1e-12, (p, residuals[p])
    if order < 4:  # and not the next one: the check can tell orders apart
        assert np.abs(residuals[order + 1]).max() > 1e-3


def test_stage_times_are_the_tableau_row_sums():
    for name in CLAIMED_ORDER:
        stages = INTEGRATORS[name]
        _, _, c = butcher(stages)
        assert np.allclose([stage.time for stage in stages], c, atol=1e-12), name


def test_every_registered_integrator_has_a_claimed_order():
    assert set(INTEGRATORS) == set(CLAIMED_ORDER)
