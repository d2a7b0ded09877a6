"""Accuracy of the exponential-race integral (wor_method="integral") against exact values of alpha*_wor.

For uniform q on K tokens, Q(H) = C(|H|, n) / C(K, n) exactly, the ratio order is the order of p,
and alpha*_wor = 1 + min_k [p(H_k) - C(k, n) / C(K, n)] over the prefixes H_k of ascending p
(k = 0 included, so alpha* <= 1). The reference is computed in exact rational arithmetic. Tokens
with q = 0 are never drafted and never belong to a useful H (docs/theory/sorted_prefix.md §4.2): the reference leaves them
out, whatever their p.

"Probe" rows isolate Q on one prefix: p_j = (1 - eps) d_j for the first k tokens and (1 + eps') d_j
after, with d_j = Q(H_j) - Q(H_{j-1}), make H_k the strict minimiser, so alpha* = 1 - eps Q(H_k)
and the computed alpha is off by exactly the integral's error on Q(H_k).

Measured worst |error| (uniform q, K = n + 5 .. 1000; probes over the whole range of k):
    n           4        8        16       32       48       64       128
    M = 3       8e-15    8e-13    1e-9     1e-4     6e+0     4e+3     1e+9   (before)
    now         8e-15    8e-13    9e-15    6e-15    7e-15    3e-15    2e-15
("before": 3 nodes per doubling, and the lower grid end t_lo grew past the range of its closed-form
tail for n >= ~20; now M = ceil(3 sqrt(n / 8)) nodes per doubling and t_lo <= 0.1.) Non-uniform q
by brute-force enumeration (n <= 4, V <= 9): 3e-16.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import mdsd_fast as mf
from reference import brute_alpha, random_case, set_law, tuple_law

TOL = 1e-11


def exact_alpha_uniform(p: np.ndarray, support: np.ndarray, n: int) -> float:
    """alpha*_wor for q uniform on `support` (a bool mask), exact up to the final rounding."""
    ps = np.sort(p[support])
    K = ps.shape[0]
    tot = math.comb(K, n)
    P = Fraction(0)
    best = Fraction(0)  # k = 0
    for k in range(1, K + 1):
        P += Fraction(float(ps[k - 1]))
        best = min(best, P - Fraction(math.comb(k, n), tot))
    return float(min(Fraction(1), 1 + best))


def probe_row(K: int, n: int, k: int, eps: Fraction = Fraction(1, 10)) -> tuple[np.ndarray, float]:
    """p (ascending) on K uniform-q tokens whose unique minimising prefix is H_k; exact alpha*."""
    tot = math.comb(K, n)
    d = [Fraction(math.comb(j - 1, n - 1), tot) for j in range(1, K + 1)]  # Q(H_j) - Q(H_{j-1})
    Qk = Fraction(math.comb(k, n), tot)
    eps2 = eps * Qk / (1 - Qk)
    p = [(1 - eps) * dj if j < k else (1 + eps2) * dj for j, dj in enumerate(d)]
    assert sum(p) == 1
    return np.array([float(x) for x in p]), float(1 - eps * Qk)


def sizes(n: int) -> list[int]:
    return sorted({n + 5, n + 17, 2 * n + 3, 60, 150, 400, 1000} - set(range(n + 5)))


@pytest.mark.parametrize("n", [4, 8, 16, 32, 64])
def test_integral_uniform_q_random_p(n: int) -> None:
    rng = np.random.default_rng(1000 + n)
    worst = 0.0
    for K in sizes(n):
        for rep in range(3):
            extra = 3 if rep == 2 else 0  # tokens with q = 0 (and p > 0): outside every useful H
            V = K + extra
            support = np.ones(V, dtype=bool)
            support[rng.choice(V, size=extra, replace=False)] = False
            q = np.where(support, 1.0, 0.0)
            q /= q.sum()
            p = rng.dirichlet(np.full(V, rng.uniform(0.2, 3.0)))
            if rep == 1:  # zeros in p: ratio 0, first in the order
                p[rng.choice(V, size=V // 4, replace=False)] = 0.0
            p /= p.sum()
            got = mf.optimal_acceptance(p, q, n, "wor", wor_method="integral")
            err = abs(got - exact_alpha_uniform(p, support, n))
            worst = max(worst, err)
            assert err <= TOL, (n, K, rep, got, err)
    print(f"n={n}: worst |error| {worst:.1e}")


@pytest.mark.parametrize("n", [4, 8, 16, 32, 64])
def test_integral_uniform_q_probe_each_prefix(n: int) -> None:
    """Q itself on prefixes spread over the whole range of k, through alpha* = 1 - eps Q(H_k)."""
    rng = np.random.default_rng(2000 + n)
    worst = 0.0
    for K in sizes(n):
        q = np.full(K, 1.0 / K)
        for k in sorted({int(x) for x in np.linspace(n, K - 1, 10)}):
            p, want = probe_row(K, n, k)
            perm = rng.permutation(K)  # token ids in any order
            got = mf.optimal_acceptance(p[perm], q, n, "wor", wor_method="integral")
            err = abs(got - want)
            worst = max(worst, err)
            assert err <= TOL, (n, K, k, got, want, err)
    print(f"n={n}: worst |error| {worst:.1e}")


def test_integral_nonuniform_q_bruteforce() -> None:
    """Arbitrary q (zeros, ties, skew: reference.random_case) against enumeration of all ordered tuples."""
    rng = np.random.default_rng(7)
    worst = 0.0
    checked = 0
    for V in range(5, 10):
        for n in (2, 3, 4):
            for _ in range(6 if V < 9 else 3):
                p, q = random_case(rng, V)
                if int((q > 0).sum()) < n:
                    continue
                want, _ = brute_alpha(p, set_law(tuple_law(q, n, "wor")))
                got = mf.optimal_acceptance(p, q, n, "wor", wor_method="integral")
                err = abs(got - want)
                worst = max(worst, err)
                checked += 1
                assert err <= TOL, (V, n, p, q, got, want)
    assert checked >= 60
    print(f"worst |error| {worst:.1e} over {checked} rows")
