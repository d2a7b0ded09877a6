"""The chord scan of alpha*_wor (race/chord_scan.hpp, docs/theory/sorted_prefix.md §4.4.1) against references.

The race route of alpha*_wor integrates Q_wor only at the ends of runs of prefixes and at the split
points its chord bounds (Q is q-convex along the ratio order) cannot rule out: tens of prefixes on an
LLM row instead of thousands. Checked on rows generated here (seeded; never the shipped data alone):

* exact values: every token set by brute force (V <= 8, reference.random_case: ties and zeros,
  n = 2..5), uniform q in exact rational arithmetic (n = 2..8, K up to 400), the n = 2 closed form
  and the exact n = 3 evaluator (K <= 2,048) on heavy-tailed rows;
* a fine-grid reference ("fine": every prefix integrated, every token laid one by one, 4x the nodes
  per doubling) on heavy-tailed rows with ties and zeros (test_wor_tiny_batch.heavy_row) and on
  held-out rows (heldout.py), n = 2..8: tolerance 1e-9, the package's claim; the p99 / max of
  |chord - reference| is printed (measured ~1e-13, the quadrature's own error at n = 8);
* the scan integrates far fewer prefixes than the scan of every prefix, and never falls back; forced
  to fall back, it returns that scan's answer bit for bit;
* negative control: the same scan without splitting runs ("ends") misses the minimum by more than
  1e-9 on most of these rows, so they discriminate;
* the hypothesis behind the chords, q-convexity of Q_wor, in exact arithmetic on small random cases;
* the argmin check ("isolated", what OptimalWor::prepare scans): its H* is the scan of
  every prefix's on every row tried, and where it cannot rule out another prefix it is that scan, bit
  for bit; negative control: the chord scan alone picks another H* on some of these rows.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from test_wor_integral_accuracy import exact_alpha_uniform
from test_wor_tiny_batch import heavy_row

import mdsd_fast as mf
from heldout import heldout_row
from mdsd_fast import _core
from reference import brute_alpha, random_case, set_law, tuple_law

TOL = 1e-9


def scan(p: np.ndarray, q: np.ndarray, n: int, how: str) -> tuple[float, int, int, bool]:
    a, k, evaluated, fallback = _core._testing.wor_alpha_scan(p, q, n, how)
    return float(a), int(k), int(evaluated), bool(fallback)


def test_chord_scan_bruteforce_small_rows() -> None:
    rng = np.random.default_rng(31)
    checked = 0
    worst = 0.0
    for _ in range(120):
        V = int(rng.integers(4, 9))
        p, q = random_case(rng, V)
        K = int((q > 0).sum())
        for n in range(2, min(5, K) + 1):
            if V == 8 and n == 5 and rng.random() < 0.5:
                continue  # 6,720 tuples each: half of them keep the test short
            want, _ = brute_alpha(p, set_law(tuple_law(q, n, "wor")))
            got, _, _, fallback = scan(p, q, n, "chord")
            assert not fallback
            worst = max(worst, abs(got - want))
            assert abs(got - want) <= TOL, (V, n, p, q, got, want)
            checked += 1
    assert checked >= 250, checked
    print(f"brute force: {checked} (row, n), max |error| {worst:.1e}")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 8])
def test_chord_scan_uniform_q_exact(n: int) -> None:
    """Uniform q: Q(H) = C(|H|, n) / C(K, n), alpha* in exact arithmetic (any n)."""
    rng = np.random.default_rng(400 + n)
    for K in (n + 3, 40, 150, 400):
        for rep in range(3):
            q = np.full(K, 1.0 / K)
            p = rng.dirichlet(np.full(K, rng.uniform(0.2, 3.0)))
            if rep == 1:
                p[rng.choice(K, size=K // 4, replace=False)] = 0.0  # ratio 0: first in the order
            elif rep == 2:
                p = np.round(p * K / 4) + 1.0  # tied ratios
            p /= p.sum()
            got, _, _, _ = scan(p, q, n, "chord")
            want = exact_alpha_uniform(p, np.ones(K, dtype=bool), n)
            assert abs(got - want) <= TOL, (n, K, rep, got, want)


def test_chord_scan_exact_n2_n3() -> None:
    """The closed forms of wor.hpp (n = 2 at any K, n = 3 up to K = 2,048) as exact references."""
    rng = np.random.default_rng(32)
    for rep in range(10):
        p, q = heavy_row(rng, 2000, rep % 5)
        for n in (2, 3):
            want = mf.optimal_acceptance(p, q, n, "wor", wor_method="exact")
            got, _, _, _ = scan(p, q, n, "chord")
            assert abs(got - want) <= TOL, (rep, n, got, want)


def fine_rows() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(33)
    rows = [("heavy", *heavy_row(rng, int(rng.integers(2000, 6000)), k % 5)) for k in range(10)]
    # held-out rows at V = 49,152 (seed 5): full drafts and top-1000 drafts, T = 0.6 / 1.0 / 1.3
    for i in (0, 3, 4, 7, 8, 11):
        p, q, _ = heldout_row(5, i)
        rows.append(("heldout", p, q))
    return rows


@pytest.mark.parametrize("n", [2, 4, 8])
def test_chord_scan_against_fine_grid(n: int) -> None:
    errs: list[float] = []
    misses = 0
    evaluated_chord = evaluated_every = 0
    for kind, p, q in fine_rows():
        if kind == "heldout" and n == 2:
            continue  # n = 2 at full vocabulary: covered by the closed form above
        ref, _, _, _ = scan(p, q, n, "fine")
        got, _, ev_c, fallback = scan(p, q, n, "chord")
        every, _, ev_e, _ = scan(p, q, n, "every")
        ends, _, _, _ = scan(p, q, n, "ends")
        assert not fallback
        errs.append(abs(got - ref))
        assert abs(got - ref) <= TOL, (kind, n, got, ref)
        assert abs(got - every) <= 1e-12, (kind, n, got, every)
        misses += abs(ends - ref) > TOL
        evaluated_chord += ev_c
        evaluated_every += ev_e
    e = np.array(errs)
    print(
        f"n={n}: |chord - fine| p99 {np.quantile(e, 0.99):.1e} max {e.max():.1e} over {e.size} rows; "
        f"prefixes integrated {evaluated_chord} (every-prefix scan {evaluated_every}); "
        f"no-split control off by > 1e-9 on {misses} rows"
    )
    assert evaluated_chord * 5 < evaluated_every, (evaluated_chord, evaluated_every)
    assert misses >= e.size // 2, misses  # negative control: the rows need the splits


def test_fallback_is_the_scan_of_every_prefix() -> None:
    """A split point above its chord sends the row to the scan of every prefix: forced here ('fallback':
    every split taken as non-convex), the result is that scan's, bit for bit, and flagged."""
    rng = np.random.default_rng(35)
    fell = 0
    for rep in range(6):
        p, q = heavy_row(rng, 3000, rep % 5)
        for n in (3, 4, 8):
            a_f, k_f, _, fallback = scan(p, q, n, "fallback")
            a_e, k_e, _, _ = scan(p, q, n, "every")
            fell += fallback
            if fallback:
                assert (a_f, k_f) == (a_e, k_e)
            else:  # no run needed a split: the chord scan's own answer
                assert abs(a_f - a_e) <= 1e-12
    assert fell >= 12, fell


def test_isolated_scan_has_the_every_prefix_argmin() -> None:
    """The chord scan with its argmin check returns the H* of the scan of every prefix (on F near-ties,
    alpha* ~ 1, the chord scan alone may pick another prefix whose F differs by rounding): on held-out
    rows (full and top-k drafts) and heavy-tailed rows with ties and zeros, n = 3, 4, 8."""
    rng = np.random.default_rng(36)
    rows = [heldout_row(0, i) for i in (0, 1, 3, 4, 12, 24, 27, 36)]
    rows += [(*heavy_row(rng, 3000, rep % 5), None) for rep in range(5)]
    chord_differs = fell = kept = 0
    for p, q, _ in rows:
        for n in (3, 4, 8):
            a_i, k_i, _, fallback = scan(p, q, n, "isolated")
            a_e, k_e, _, _ = scan(p, q, n, "every")
            _, k_c, _, _ = scan(p, q, n, "chord")
            assert k_i == k_e, (n, k_i, k_e)
            if fallback:
                assert a_i == a_e
                fell += 1
            else:
                assert abs(a_i - a_e) <= 1e-12
                kept += 1
            chord_differs += k_c != k_e
    assert chord_differs >= 2, chord_differs  # negative control: the rows need the check
    assert kept >= len(rows), (kept, fell)  # and it keeps the chord scan's H* on most of them


def wor_q_exact(q: list[Fraction], H: frozenset[int], n: int) -> Fraction:
    """Pr[all n without-replacement drafts in H], by the first-draw recursion."""

    def rec(drawn: frozenset[int], mass: Fraction, depth: int) -> Fraction:
        if depth == n:
            return Fraction(1)
        return sum(
            (q[a] / (1 - mass) * rec(drawn | {a}, mass + q[a], depth + 1) for a in H if a not in drawn),
            Fraction(0),
        )

    return rec(frozenset(), Fraction(0), 0)


def test_q_convexity_exact() -> None:
    """[Q(H+i) - Q(H)] / q_i <= [Q(H+i+j) - Q(H+i)] / q_j for all H and i, j outside it (docs §4.1)."""
    rng = np.random.default_rng(34)
    cases = 0
    for _ in range(12):
        V = int(rng.integers(4, 6))
        n = int(rng.integers(2, V))
        w = [int(rng.choice([1, 1, 2, 3, 7, 40, int(rng.integers(1, 60))])) for _ in range(V)]
        q = [Fraction(x, sum(w)) for x in w]
        sets = (frozenset(H) for r in range(V + 1) for H in itertools.combinations(range(V), r))
        Q = {H: wor_q_exact(q, H, n) for H in sets}
        for r in range(V - 1):
            for Ht in itertools.combinations(range(V), r):
                H = frozenset(Ht)
                for i, j in itertools.permutations([x for x in range(V) if x not in H], 2):
                    lhs = (Q[H | {i}] - Q[H]) / q[i]
                    rhs = (Q[H | {i, j}] - Q[H | {i}]) / q[j]
                    assert lhs <= rhs, (q, n, sorted(H), i, j)
                    cases += 1
    assert cases >= 1000, cases


def test_scan_argument_errors() -> None:
    p = np.ones(4) / 4
    with pytest.raises(ValueError, match="scan:"):
        _core._testing.wor_alpha_scan(p, p, 2, "sideways")
    with pytest.raises(ValueError, match="fine:"):
        _core._testing.wor_alpha_scan(p, p, 2, "fine", 0)
    with pytest.raises(ValueError, match="n:"):
        _core._testing.wor_alpha_scan(p, p, 1, "chord")
