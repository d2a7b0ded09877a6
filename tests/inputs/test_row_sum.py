"""The row sum every route normalises by (cpp/include/mdsd/inputs/validate.hpp): the exact sum of a row's
entries, rounded once. ``math.fsum`` is the reference (it is correctly rounded too); the rows include
ones where a compensated running sum (the sum before) is one ulp off, a sum exactly at a rounding
midpoint (the lanes' bound cannot decide it: the ExactSum fallback), float32 rows and every order
of the same entries. The fused engine pass (``_core.verifiers.verify_direct``, ``_core.bound.dual_direct``) uses
the same function, so the dense and sparse routes' equality tests cover it too."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdsd_fast import _core


def csr_sum(x: np.ndarray) -> float:
    """The row sum of one row through csr_row_sums (its positive entries)."""
    v = np.ascontiguousarray(x[x > 0], dtype=np.float64)
    return float(_core.inputs.csr_row_sums(v, np.array([0, v.size], dtype=np.int64))[0])


def neumaier(x: np.ndarray) -> float:
    s = c = 0.0
    for v in map(float, x):
        t = s + v
        c += (s - t) + v if abs(s) >= abs(v) else (v - t) + s
        s = t
    return s + c


def adversarial() -> list[np.ndarray]:
    rows = [
        np.array([1.0, 2.0**-53, 2.0**-106]),  # above the midpoint: rounds up (Neumaier: down)
        np.array([1.0, 2.0**-53] + [0.0] * 4000),  # exactly the midpoint, bound too wide: ExactSum
        np.array([1.0] + [2.0**-54] * 2 + [2.0**-110] * 4000),
        np.array([2.0**-1074] * 7 + [2.0**-1060]),  # subnormals
    ]
    rng = np.random.default_rng(11)
    for _ in range(40):  # wide dynamic range, random lengths (tails of 0-3 entries)
        k = int(rng.integers(1, 3000))
        rows.append(np.exp(rng.uniform(-700, 5, size=k)) * rng.integers(0, 2, size=k))
    for _ in range(40):  # LLM-like rows
        lg = rng.standard_normal(int(rng.integers(100, 20000))) * 3
        p = np.exp(lg - lg.max())
        rows.append(p / p.sum())
    return rows


def test_csr_row_sums_are_the_rounded_exact_sum() -> None:
    rows = adversarial()
    got = [csr_sum(x) for x in rows]
    want = [math.fsum(x) for x in rows]
    assert got == want
    # the rows tell the sums apart: the compensated running sum misses on the first one
    assert neumaier(rows[0]) != math.fsum(rows[0]) == 1.0 + 2.0**-52
    assert math.fsum(rows[1]) == 1.0  # the tie goes to even


def test_dense_rows_normalise_by_the_same_sum() -> None:
    rows = adversarial()
    for x in rows:
        out, status, _r, _v = _core.inputs.normalize_rows(x[None, :], 1e300, 1)
        assert status == 0
        np.testing.assert_array_equal(out[0], x / math.fsum(x))


@pytest.mark.parametrize("seed", range(3))
def test_order_and_width_do_not_change_the_sum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lg = rng.standard_normal(4099) * 3
    x = np.exp(lg - lg.max())
    x /= x.sum()
    x32 = x.astype(np.float32)
    s = math.fsum(x32.astype(np.float64))
    for perm in (np.arange(x.size), rng.permutation(x.size), rng.permutation(x.size)):
        out, status, _r, _v = _core.inputs.normalize_rows(np.ascontiguousarray(x32[perm][None, :]), 1e-3, 1)
        assert status == 0
        np.testing.assert_array_equal(out[0], x32[perm].astype(np.float64) / s)
        assert csr_sum(x32[perm].astype(np.float64)) == s


def test_broken_rows_are_named_and_overflow_is_inf() -> None:
    big = np.finfo(np.float64).max
    _out, status, r, value = _core.inputs.normalize_rows(np.array([[0.5, 0.5], [big, big]]), 1e-6, 1)
    assert (status, r, value) == (3, 1, math.inf)
    _out, status, r, value = _core.inputs.normalize_rows(np.array([[0.5, 0.5, 0.0, 0.0, 0.0, -0.25]]), 1e-6, 1)
    assert (status, r, value) == (2, 0, -0.25)
    _out, status, r, _value = _core.inputs.normalize_rows(np.array([[0.5, np.nan, 0.5, 0.0, 0.0]]), 1e-6, 1)
    assert (status, r) == (1, 0)
