"""The exponential-race quadrature behind every full-vocabulary "wor" plan (cpp/include/mdsd/race/, docs/theory/race_oracle.md §14).

Each plan's loads are u_y * w_y with w_y = E[1{y in S} prod_{S minus y} h] computed by this
quadrature, so its accuracy is the plan's: checked here against enumeration of the ordered draws
(tests/_support/reference.py) and, at full vocabulary, against sum_y Pr[y in S] = n.
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
        got = _core._testing.race_weights(q, h, n)
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
        w = _core._testing.race_weights(q, np.ones_like(q), n)
        assert abs(w.sum() - n) <= 1e-11, (r, n, w.sum())
        assert np.all(w[q == 0] == 0.0) and np.all(w[q > 0] > 0.0)


def test_race_weights_large_n() -> None:
    # the n-th arrival sharpens in ln t as n grows; the grid's step shrinks with it
    rng = np.random.default_rng(7)
    q = rng.dirichlet(np.ones(200))
    for n in (16, 40, 64):
        w = _core._testing.race_weights(q, np.ones_like(q), n)
        assert abs(w.sum() - n) <= 1e-10, (n, w.sum())


def test_race_weights_rejects_bad_input() -> None:
    q = np.array([0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="h: entries must lie in"):
        _core._testing.race_weights(q, np.array([1.0, 2.0, 1.0]), 2)
    with pytest.raises(ValueError, match="needs at least n = 4"):
        _core._testing.race_weights(q, np.ones(3), 4)
    with pytest.raises(ValueError, match="same length"):
        _core._testing.race_weights(q, np.ones(2), 2)
    with pytest.raises(ValueError, match="h: entries must lie in"):
        _core._testing.race_weights(q, np.array([1.0, np.nan, 1.0]), 2)
    with pytest.raises(ValueError, match="q: entries must be finite"):
        _core._testing.race_weights(np.array([0.5, np.nan, 0.2]), np.ones(3), 2)
    with pytest.raises(ValueError, match="n: must be in 1..64"):
        _core._testing.race_weights(q, np.ones(3), 0)
    assert mf.optimal_acceptance(q, q, 2, "wor") == pytest.approx(1.0)


def _greedy_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    # a few tokens holding most of q and a few tiny ones (q t <= ln 2 on the whole grid: the ones
    # the greedy pass divides out of its running product)
    V = int(rng.integers(5, 9))
    big = int(rng.integers(3, V))
    q = np.concatenate([rng.dirichlet(np.ones(big)), 10.0 ** rng.uniform(-7, -4, V - big)])
    q /= q.sum()
    p = rng.dirichlet(np.full(V, 0.5))
    p[V - 1] = 0.0 if rng.random() < 0.5 else p[V - 1]
    p /= p.sum()
    n = int(rng.integers(2, min(4, V - 1) + 1))
    order = rng.permutation(np.nonzero(p > 0)[0])[: int(rng.integers(2, V + 1))]
    return p, q, n, order


@pytest.mark.parametrize("division", [True, False])
def test_race_greedy_pass_matches_enumeration(division: bool) -> None:
    # Each w_i of the greedy pass is E[1{y in S} prod h] with the tokens before y at their final
    # weights and every other token at weight 1: check it by enumeration, for both evaluations.
    rng = np.random.default_rng(11)
    for it in range(60):
        p, q, n, order = _greedy_case(rng)
        w, h = _core._testing.race_greedy(p, q, n, order.astype(np.int64), division)
        hw = np.ones(len(q))
        for i, y in enumerate(order):
            want = enumerated_w(q, hw, n)[y]
            assert abs(w[i] - want) <= 1e-14 + 1e-12 * want, (it, i, w[i], want)
            assert h[i] == pytest.approx(0.0 if p[y] >= w[i] else 1.0 - p[y] / w[i], abs=1e-15)
            hw[y] = h[i]


@pytest.mark.parametrize("n", [2, 4])
def test_race_greedy_division_equals_checkpointed_pass(shipped, n: int) -> None:
    # On shipped rows (~45,000 tokens, most of them small) the division pass and the checkpointed
    # pass give the same weights: the division's rounding does not drift over the pass.
    ch = next(iter(shipped.iter_chunks(len(shipped))))
    for r in (15, 300):
        p = np.asarray(ch.p[r], dtype=np.float64)
        q = np.asarray(ch.q[r], dtype=np.float64)
        p, q = p / p.sum(), q / q.sum()
        live = np.nonzero((p > 0) & (q > 0))[0]
        order = live[np.argsort(-(p[live] / q[live]), kind="stable")].astype(np.int64)
        w1, h1 = _core._testing.race_greedy(p, q, n, order, True)
        w0, h0 = _core._testing.race_greedy(p, q, n, order, False)
        assert np.max(np.abs(w1 - w0)) <= 1e-12, (r, n, np.max(np.abs(w1 - w0)))
        assert np.sum(np.abs(w1 - w0)) <= 1e-11, (r, n, np.sum(np.abs(w1 - w0)))
        assert np.max(np.abs(h1 - h0)) <= 1e-9, (r, n)
