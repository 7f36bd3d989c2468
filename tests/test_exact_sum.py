"""taichiflow.exact_sum.column_sums: the correctly rounded sums of an adaptive run's per-leaf
totals, bit for bit those of math.fsum (which the diagnostics rows were written with), for
values of any sign, magnitude and order."""
import math

import numpy as np
import pytest

from taichiflow.exact_sum import column_sums


def fsums(table):
    return np.array([math.fsum(column) for column in np.asarray(table).T])


def same_bits(a, b) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def tables(rng):
    """Tables that round differently in every order: wide magnitudes, exact cancellation,
    integers past 2^53 with fractions, subnormals and signed zeros."""
    for rows in (1, 2, 7, 300, 5000):
        yield rng.normal(size=(rows, 4))
        yield rng.normal(size=(rows, 3)) * 10.0 ** rng.integers(-300, 300, size=(rows, 3))
        half = rng.normal(size=(rows, 2)) * 10.0 ** rng.integers(-20, 20, size=(rows, 2))
        yield rng.permutation(np.concatenate([half, -half, [[1e-17, -3e-300]]]))
        yield (rng.normal(size=(rows, 2)) * 1e17).round() + rng.normal(size=(rows, 2))
        yield rng.choice([0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1.0, -1.0], size=(rows, 5))


def test_the_sums_are_math_fsum_bit_for_bit():
    rng = np.random.default_rng(7)
    compared = 0
    for table in tables(rng):
        assert same_bits(column_sums(table), fsums(table)), table
        compared += table.shape[1]
    assert compared == 5 * (4 + 3 + 2 + 2 + 5)


def test_subnormal_values_in_a_process_that_started_taichi():
    """Taichi's CPU backend turns flush-to-zero on for the process (numpy then reads 2.2e-308 as
    0: the suite found it), so subnormal values and sums are left to fsum, bit for bit."""
    import taichi as ti
    ti.init(arch=ti.cpu)
    assert np.array([2.2e-308])[0] * 1.0 == 0.0  # (the flush this test is about)
    subnormal = np.array([[2.2e-308, 1.0, 5e-324], [1e-310, -1.0, 5e-324]])
    assert same_bits(column_sums(subnormal), fsums(subnormal))
    cancelling = np.array([[3e-308, 1e-300], [-2.9e-308, 2e-300]])  # (a subnormal sum of normal values)
    assert same_bits(column_sums(cancelling), fsums(cancelling))
    for table in tables(np.random.default_rng(7)):
        assert same_bits(column_sums(table), fsums(table)), table


def test_the_order_of_the_rows_does_not_matter():
    rng = np.random.default_rng(3)
    table = rng.normal(size=(4000, 6)) * 10.0 ** rng.integers(-8, 8, size=(4000, 6))
    sums = column_sums(table)
    assert same_bits(column_sums(table[::-1]), sums) and same_bits(column_sums(rng.permutation(table)), sums)
    assert not np.array_equal(table.sum(axis=0), table[::-1].sum(axis=0))  # (as numpy's own sum is not)


def test_zeros_empty_tables_and_non_finite_values_as_fsum_has_them():
    assert same_bits(column_sums(np.full((3, 2), -0.0)), fsums(np.full((3, 2), -0.0)))
    assert same_bits(column_sums(np.array([[1.0, -0.0], [-1.0, 0.0]])), np.array([0.0, 0.0]))
    assert same_bits(column_sums(np.zeros((0, 3))), np.zeros(3))
    assert np.isnan(column_sums(np.array([[np.nan], [1.0]]))[0])
    assert column_sums(np.array([[np.inf], [1.0]]))[0] == np.inf
    with pytest.raises(ValueError):  # (fsum's own error)
        column_sums(np.array([[np.inf], [-np.inf]]))
    with pytest.raises(OverflowError):
        column_sums(np.array([[1.7e308], [1.7e308]]))
