"""The race integral of alpha*_wor with its tiny tokens laid as one batch (race/tiny_batch.hpp).

The scan of alpha*_wor defers every token with q t <= 2^-8 on the nodes still in use and lays the
waiting ones at the next evaluated prefix, from power sums when there are >= 16 of them. That must
give the alpha* and the certificate prefix of laying every token one by one (the route before it),
within the integral's own error: on heavy-tailed rows (thousands of tiny tokens) with zeros in p and
q, tied masses and tied ratios, n = 2 .. 8, both routes forced onto the integral
(``_core._testing.wor_alpha_race``). Tolerance 1e-12 absolute: both routes are within ~3e-14 of
the exact n = 2 value on the shipped rows, and the integral is checked to 1e-11 against exact
values in tests/bound/test_wor_integral_accuracy.py. At least a quarter of the rows are checked to have gone
through a batch (the comparison is not vacuous), and a row too small to batch lays none.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core

TOL = 1e-12


def heavy_row(rng: np.random.Generator, V: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """LLM-like pair: Zipf-ish logits with noise; kind 1: zeros in p, 2: zeros in q, 3: tied
    q masses (rounded logits), 4: tied ratios (q proportional to p on a subset)."""
    rank = rng.permutation(V) + 1.0
    s = rng.uniform(0.9, 1.6)
    lp = -s * np.log(rank) + rng.normal(0.0, rng.uniform(0.3, 1.5), V)
    lq = lp * rng.uniform(0.8, 1.2) + rng.normal(0.0, rng.uniform(0.5, 2.0), V)
    if kind == 3:
        lq = np.round(lq)
    p = np.exp(lp - lp.max())
    q = np.exp(lq - lq.max())
    if kind == 1:
        p[rng.choice(V, size=V // 5, replace=False)] = 0.0
    elif kind == 2:
        q[rng.choice(V, size=V // 5, replace=False)] = 0.0
    elif kind == 4:
        idx = rng.choice(V, size=V // 3, replace=False)
        q[idx] = p[idx] * (q.sum() / p.sum())
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_batched_equals_one_by_one(n: int) -> None:
    rng = np.random.default_rng(2100 + n)
    worst = 0.0
    rows_batched = 0
    reps = 12
    for rep in range(reps):
        p, q = heavy_row(rng, int(rng.integers(3000, 9000)), rep % 5)
        a_b, k_b, batched = _core._testing.wor_alpha_race(p, q, n, True)
        a_1, k_1, none = _core._testing.wor_alpha_race(p, q, n, False)
        assert none == 0
        rows_batched += batched > 0
        worst = max(worst, abs(a_b - a_1))
        # The certificate prefix: the same, or an equally good one (F within TOL at both).
        assert k_b == k_1 or abs(a_b - a_1) <= TOL
        # The public entry point runs the batched route (the integral for n >= 4).
        if n >= 4:
            assert mf.optimal_acceptance(p, q, n, "wor", wor_method="integral") == pytest.approx(a_b, abs=1e-15)
    assert worst <= TOL, worst
    # Rows whose first evaluated prefix comes early batch nothing (at n = 2 two thirds of these; at
    # n >= 3 most rows batch hundreds to thousands of tokens): the comparison is not vacuous.
    assert rows_batched >= reps // 4, rows_batched


def test_exact_n2_against_both() -> None:
    """The n = 2 closed form as a third opinion on rows the batch covers."""
    rng = np.random.default_rng(77)
    rows_batched = 0
    for rep in range(10):
        p, q = heavy_row(rng, 6000, rep % 5)
        exact = mf.optimal_acceptance(p, q, 2, "wor", wor_method="exact")
        a_b, _, batched = _core._testing.wor_alpha_race(p, q, 2, True)
        rows_batched += batched > 0
        assert abs(a_b - exact) <= TOL
    assert rows_batched >= 3, rows_batched


def test_small_rows_lay_one_by_one() -> None:
    """Negative control: a support of 12 tokens never reaches a batch of 16, so nothing is batched and
    the two routes agree bit for bit."""
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(12))
    q = rng.dirichlet(np.ones(12))
    a_b, k_b, batched = _core._testing.wor_alpha_race(p, q, 4, True)
    a_1, k_1, _ = _core._testing.wor_alpha_race(p, q, 4, False)
    assert batched == 0
    assert (a_b, k_b) == (a_1, k_1)


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="p, q"):
        _core._testing.wor_alpha_race(np.ones(3) / 3, np.ones(4) / 4, 2, True)
    with pytest.raises(ValueError, match="n:"):
        _core._testing.wor_alpha_race(np.ones(3) / 3, np.ones(3) / 3, 1, True)
    with pytest.raises(ValueError, match="q:"):
        _core._testing.wor_alpha_race(np.ones(3) / 3, np.array([1.0, 0.0, 0.0]), 2, True)
