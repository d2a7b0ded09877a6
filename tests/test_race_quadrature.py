"""The exponential-race quadrature behind every full-vocabulary "wor" plan (sweep::race, OPTIMAL_WOR.md).

Each plan's loads are u_y * w_y with w_y = E[1{y in S} prod_{S minus y} h] computed by this
quadrature, so its accuracy is the plan's: checked here against enumeration of the ordered draws
(tests/reference.py) and, at full vocabulary, against sum_y Pr[y in S] = n.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core
from reference import random_case, tuple_law


@pytest.fixture(scope="module")
def shipped() -> mf.LMDataset:
    return mf.load_dataset()


def enumerated_w(q: np.ndarray, h: np.ndarray, n: int) -> np.ndarray:
    w = np.zeros(len(q))
    for t, pr in tuple_law(q, n, "wor"):
        for y in t:
            w[y] += pr * float(np.prod([h[j] for j in t if j != y]))
    return w


def test_race_weights_match_enumeration() -> None:
    rng = np.random.default_rng(20261130)
    worst = 0.0
    cases = 0
    for it in range(120):
        V = int(rng.integers(3, 9))
        _, q = random_case(rng, V)
        if it % 5 == 0:  # a skewed row: one token holding nearly everything, tiny others
            q = q**6
            q /= q.sum()
        support = int(np.count_nonzero(q))
        if support < 2:
            continue
        n = int(rng.integers(1, min(4, support) + 1))
        h = rng.uniform(0.0, 1.0, V)
        h[rng.random(V) < 0.2] = 0.0
        h[rng.random(V) < 0.2] = 1.0
        got = _core.race_weights(q, h, n)
        want = enumerated_w(q, h, n)
        err = np.abs(got - want)
        assert np.all(err <= 1e-14 + 1e-12 * want), (it, q, h, n, got, want)
        worst = max(worst, float(np.max(err / np.maximum(want, 1e-300) * (want > 1e-12))))
        cases += 1
    assert cases >= 100
    assert worst < 1e-12, worst


@pytest.mark.parametrize("n", [2, 4, 8])
def test_race_weights_sum_to_n_on_shipped_rows(shipped, n: int) -> None:
    # At weight 1, w_y = Pr[y in S], and the n drafts are distinct: sum_y w_y = n.
    ch = next(iter(shipped.iter_chunks(len(shipped))))
    for r in range(0, len(ch.q), 90):
        q = np.asarray(ch.q[r], dtype=np.float64)
        q = q / q.sum()
        w = _core.race_weights(q, np.ones_like(q), n)
        assert abs(w.sum() - n) <= 1e-11, (r, n, w.sum())
        assert np.all(w[q == 0] == 0.0) and np.all(w[q > 0] > 0.0)


def test_race_weights_large_n() -> None:
    # the n-th arrival sharpens in ln t as n grows; the grid's step shrinks with it
    rng = np.random.default_rng(7)
    q = rng.dirichlet(np.ones(200))
    for n in (16, 40, 64):
        w = _core.race_weights(q, np.ones_like(q), n)
        assert abs(w.sum() - n) <= 1e-10, (n, w.sum())


def test_race_weights_rejects_bad_input() -> None:
    q = np.array([0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="h: entries must lie in"):
        _core.race_weights(q, np.array([1.0, 2.0, 1.0]), 2)
    with pytest.raises(ValueError, match="needs at least n = 4"):
        _core.race_weights(q, np.ones(3), 4)
    with pytest.raises(ValueError, match="same length"):
        _core.race_weights(q, np.ones(2), 2)
    with pytest.raises(ValueError, match="h: entries must lie in"):
        _core.race_weights(q, np.array([1.0, np.nan, 1.0]), 2)
    with pytest.raises(ValueError, match="q: entries must be finite"):
        _core.race_weights(np.array([0.5, np.nan, 0.2]), np.ones(3), 2)
    with pytest.raises(ValueError, match="n: must be in 1..64"):
        _core.race_weights(q, np.ones(3), 0)
    assert mf.optimal_acceptance(q, q, 2, "wor") == pytest.approx(1.0)
