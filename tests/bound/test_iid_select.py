"""alpha*_iid by bucket selection (cpp/include/mdsd/bound/iid_select.hpp, iid_exact.hpp) against the
full-sort route.

F(k) = [P_k] - [S_k]^n with [.] the exact prefix mass rounded once, so F depends on the prefix's
token set, and the selection sorts only the window of buckets that provably holds the minimiser;
alpha* and the certificate must be the same bits as the sorted route's, not merely close. Each test
compares the two routes of the same C++ kernel (``_core.bound.dual_batch`` and
``_core._testing.dual_batch_sorted``) on the same validated arrays, and the forced ExactSum path
(``iid_select_kept(..., force_exact=True)``) where it says so. Controls: a one-ulp change is caught;
the rows are ones where the summation order changes the bits of a plain sum (so equal bits are
evidence); the non-unimodal rows really have two local minima.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_bound import CASES, _llm_like

from mdsd_fast import _core
from mdsd_fast.inputs.pairs import as_pair
from reference import random_case


def _routes(p: np.ndarray, q: np.ndarray, n: int, scheme: str = "iid", threads: int = 1):
    p2, q2, _ = as_pair(p, q)
    sel = _core.bound.dual_batch(p2, q2, n, scheme, "auto", True, threads)
    srt = _core._testing.dual_batch_sorted(p2, q2, n, scheme, "auto", True, 1)
    return p2, q2, sel, srt


def _same(sel: tuple, srt: tuple) -> bool:
    a1, c1 = sel
    a2, c2 = srt
    if not np.array_equal(np.asarray(a1).view(np.int64), np.asarray(a2).view(np.int64)):
        return False
    return len(c1) == len(c2) and all(np.array_equal(x, y) for x, y in zip(c1, c2, strict=True))


def _tied_rows(rng: np.random.Generator, B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    """B rows of one size: Dirichlet / LLM-like pairs with zeros in p and q and tied ratios."""
    P = np.empty((B, V))
    Q = np.empty((B, V))
    for b in range(B):
        kind = b % 4
        if kind == 0:  # the reference suite's generator (zeros, ties, tied values)
            p, q = random_case(rng, V)
        elif kind == 1:  # ratios from a handful of values: many exact ties
            q = rng.dirichlet(np.full(V, rng.uniform(0.2, 2.0)))
            p = q * rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], V)
            if p.sum() == 0.0:
                p[0] = 1.0
        elif kind == 2:  # LLM-like with zeros in both and a block of q proportional to p
            logits = rng.standard_normal(V) * 3.0
            p = np.exp(logits - logits.max())
            q = np.exp(logits + rng.standard_normal(V) - logits.max())
            p[rng.random(V) < 0.2] = 0.0
            q[rng.random(V) < 0.2] = 0.0
            blk = rng.random(V) < 0.3
            q[blk] = p[blk] * 1.5
            if q.sum() == 0.0:
                q[0] = 1.0
            if p.sum() == 0.0:
                p[0] = 1.0
        else:  # integer-valued (exact ties of values and of ratios)
            p = rng.integers(0, 4, V).astype(float)
            q = rng.integers(0, 4, V).astype(float)
            p[0] += p.sum() == 0.0
            q[-1] += q.sum() == 0.0
        P[b] = p / p.sum()
        Q[b] = q / q.sum()
    return P, Q


def test_the_existing_random_suite() -> None:
    """test_bound's 600 small cases (zeros, ties), at their n and n = 1..6: the same bits."""
    checked = 0
    for p, q, n0 in CASES:
        for n in {n0, 1, 2, 3, 6}:
            _, _, sel, srt = _routes(p, q, n)
            assert _same(sel, srt), (p, q, n)
            checked += 1
    assert checked >= 2400


def test_ten_thousand_rows_with_ties_and_zeros() -> None:
    """10,240 new rows (V = 2..400) x n in {1, 2, 3, 5, 8}, iid, wor at n = 1 and top1+iid."""
    rng = np.random.default_rng(2026_12_01)
    sizes = np.unique(np.concatenate([np.arange(2, 33), rng.integers(33, 401, 9)]))
    rows = 0
    for V in sizes:
        B = 10_240 // len(sizes) + 1
        P, Q = _tied_rows(rng, B, int(V))
        rows += B
        for n in (1, 2, 3, 5, 8):
            _, _, sel, srt = _routes(P, Q, n)
            assert _same(sel, srt), (V, n)
        _, _, sel, srt = _routes(P, Q, 1, "wor")  # wor at n = 1 is the iid scan
        assert _same(sel, srt), V
        if V >= 4:
            ok = (Q > 0).sum(axis=1) >= 3
            _, _, sel, srt = _routes(P[ok], Q[ok], 3, "top1+iid")
            assert _same(sel, srt), V
    assert rows >= 10_000


@pytest.mark.parametrize("V", [49_152, 151_936])
def test_large_rows(V: int) -> None:
    """LLM-like rows at real vocabulary sizes, with and without zeros and ties, n = 2 / 4 / 8."""
    rng = np.random.default_rng(V)
    p, q = _llm_like(rng, V)
    pz, qz = p.copy(), q.copy()
    pz[rng.random(V) < 0.3] = 0.0
    qz[rng.random(V) < 0.1] = 0.0
    blk = rng.random(V) < 0.2
    qz[blk] = pz[blk] * 0.75  # tied ratios
    pz, qz = pz / pz.sum(), qz / qz.sum()
    P, Q = np.stack([p, pz]), np.stack([q, qz])
    for n in (2, 4, 8):
        _, _, sel, srt = _routes(P, Q, n, threads=2)
        assert _same(sel, srt), n
    _, _, sel, srt = _routes(P, Q, 4, "top2+iid")
    assert _same(sel, srt)


def _two_minima(rng: np.random.Generator, V: int, off_support: float) -> tuple[np.ndarray, np.ndarray]:
    """n = 2 rows whose F has a local minimum near S = 0.3 and another at the whole support.

    Three groups of tokens by ratio (about 0.1, 1.0 and r3): F falls, rises, then falls again;
    `off_support` is p's mass where q = 0, which sets F at the last prefix to -off_support."""
    k = (V - 3) // 3  # and at least 3 tokens off the support of q
    q = np.zeros(V)
    q[:k] = 0.3 / k
    q[k : 2 * k] = 0.2 / k
    q[2 * k : 3 * k] = 0.5 / k
    r3 = (1.0 - off_support - 0.03 - 0.2) / 0.5
    ratio = np.concatenate([np.full(k, 0.1), np.full(k, 1.0), np.full(k, r3), np.zeros(V - 3 * k)])
    ratio[: 3 * k] *= 1.0 + 0.01 * rng.standard_normal(3 * k)
    p = q * ratio
    p[3 * k :] = off_support / (V - 3 * k)
    perm = rng.permutation(V)
    return p[perm] / p.sum(), q[perm] / q.sum()


def _prefix_F(p: np.ndarray, q: np.ndarray, n: int) -> np.ndarray:
    """F on every prefix of the ratio order, an independent numpy reference (argsort, cumsum)."""
    sup = np.flatnonzero(q > 0)
    order = sup[np.argsort(p[sup] / q[sup], kind="stable")]
    return np.concatenate([[0.0], np.cumsum(p[order]) - np.cumsum(q[order]) ** n])


@pytest.mark.parametrize("off_support", [0.3, 0.03])
def test_non_unimodal_rows(off_support: float) -> None:
    """F with two local minima (the later one global for 0.3, the earlier for 0.03): the selection
    bounds every bucket, so it finds the global one, and agrees with the sorted route."""
    rng = np.random.default_rng(17)
    for V in (99, 3001, 60_001):
        p, q = _two_minima(rng, V, off_support)
        F = _prefix_F(p, q, 2)
        inner = (F[1:-1] < F[:-2]) & (F[1:-1] <= F[2:])
        assert inner.sum() + (F[-1] < F[-2]) >= 2  # control: two local minima
        p2, q2, sel, srt = _routes(p, q, 2)
        assert _same(sel, srt)
        assert abs(sel[0][0] - (1.0 + F.min())) < 1e-12
        kept, support, _, window, _, _, _ = _core._testing.iid_select_kept(p2, q2, 2)
        late = off_support > 0.1
        assert (kept[0] == support[0]) == late  # the later minimum is the whole support
        assert window[0] < support[0] // 2  # and only a window of it was sorted


def test_controls_one_ulp_and_summation_order() -> None:
    """The comparison is strict enough: one ulp of alpha* fails it, and on these rows a plain sum of
    the certificate's p in token order differs from one in ratio order (the bits the exact sums make
    order-free)."""
    rng = np.random.default_rng(5)
    p, q = _llm_like(rng, 20_000)
    p2, q2, sel, srt = _routes(p, q, 4)
    assert _same(sel, srt)
    bumped = (np.nextafter(sel[0], 2.0), sel[1])
    assert not _same(bumped, srt)
    cert = sel[1][0]
    # the scan's P_k at the certificate, in ratio order, vs the same terms summed in token order
    ratio_ord = cert[np.argsort(p2[0, cert] / q2[0, cert], kind="stable")]
    seq = np.cumsum(p2[0, ratio_ord])[-1]
    tok = np.cumsum(p2[0, cert])[-1]
    assert seq != tok


def test_fallback_on_overflowing_ratios_and_how_often() -> None:
    """p / q overflows for subnormal q: the selection hands the row to the sorted route (which
    rescales the ratios). It fires there and on no row of the random suites."""
    rng = np.random.default_rng(9)
    P, Q = _tied_rows(rng, 400, 50)
    _, _, fb, _, _, _, _ = _core._testing.iid_select_kept(*as_pair(P, Q)[:2], 2)
    assert fb.sum() == 0
    p, q = _llm_like(rng, 5000)
    q[:10] = 5e-324  # the smallest subnormal: p / q = inf
    q = q / q.sum()
    p2, q2, sel, srt = _routes(p, q, 3)
    kept, support, fb, _, _, _, _ = _core._testing.iid_select_kept(p2, q2, 3)
    assert fb[0] and support[0] == 5000
    assert _same(sel, srt)


def test_window_is_a_small_part_of_the_support_on_llm_rows() -> None:
    """What the selection saves: on LLM-like rows at V = 49,152 the sorted window is under 5 % of the
    support at n = 2 / 4 / 8, order[0, kept) holds the certificate, and no row needs ExactSum."""
    rng = np.random.default_rng(21)
    P = np.empty((8, 49_152))
    Q = np.empty_like(P)
    for b in range(8):
        P[b], Q[b] = _llm_like(rng, 49_152)
    p2, q2, _ = as_pair(P, Q)
    for n in (2, 4, 8):
        kept, support, fb, window, exact, _, _ = _core._testing.iid_select_kept(p2, q2, n)
        _, certs = _core.bound.dual_batch(p2, q2, n, "iid", "auto", True, 1)
        assert not fb.any() and not exact.any()
        assert all(len(c) <= k for c, k in zip(certs, kept, strict=True))
        assert (window < 0.05 * support).all()


def test_forced_exact_sums_give_the_same_bits() -> None:
    """The ExactSum path (the fast sums' fallback) forced on every row: the same alpha* and
    certificate as the fast path and the sorted route, on tied rows and LLM-like rows; and the fast
    path falls back by itself on at most 1 % of the tied rows, none of the LLM-like ones."""
    rng = np.random.default_rng(33)
    P, Q = _tied_rows(rng, 2_000, 24)
    p2, q2, _ = as_pair(P, Q)
    big = np.stack([_llm_like(rng, 20_000)[0], _llm_like(rng, 20_000)[1]])
    pb, qb, _ = as_pair(big[:1], big[1:])
    for p_, q_ in ((p2, q2), (pb, qb)):
        for n in (1, 2, 5):
            fast = _core._testing.iid_select_kept(p_, q_, n)
            forced = _core._testing.iid_select_kept(p_, q_, n, True)
            srt = _core._testing.dual_batch_sorted(p_, q_, n, "iid", "auto", True, 1)
            ok = ~fast[2]
            assert forced[4][ok].all()  # it did take ExactSum
            assert np.array_equal(fast[5][ok].view(np.int64), forced[5][ok].view(np.int64))
            assert np.array_equal(fast[5][ok].view(np.int64), np.asarray(srt[0])[ok].view(np.int64))
            for r in np.flatnonzero(ok):
                assert np.array_equal(fast[6][r], forced[6][r]) and np.array_equal(fast[6][r], srt[1][r])
            assert fast[4].mean() <= (0.0 if p_ is pb else 0.01)


def _ipow(x: float, n: int) -> float:
    """bits.hpp's ipow (repeated squaring), in Python floats: the same IEEE products."""
    r = 1.0
    while n > 0:
        if n & 1:
            r *= x
        x *= x
        n >>= 1
    return r


def test_shipped_rows_against_fsum_at_the_certificate() -> None:
    """An independent reference for the definition: at the returned certificate H, alpha* is
    1 + (fsum(p(H)) - ipow(fsum(q(H)), n)) bit for bit (math.fsum is correctly rounded, like
    ExactSum, by another algorithm), on shipped SmolLM2 rows. Control: the plain cumulative sum in
    ratio order (the previous definition) misses those bits on most of these rows."""
    import math

    from mdsd_fast.data import load_dataset

    ds = load_dataset()
    p = np.asarray(ds.p[:40], dtype=np.float64)
    q = np.asarray(ds.q[:40], dtype=np.float64)
    p2, q2, _ = as_pair(p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True))
    differ = 0
    for n in (1, 4, 8):
        a, certs = _core.bound.dual_batch(p2, q2, n, "iid", "auto", True, 1)
        for r, H in enumerate(certs):
            ref = min(1.0, 1.0 + (math.fsum(p2[r, H]) - _ipow(math.fsum(q2[r, H]), n)))
            assert np.float64(ref).view(np.int64) == np.float64(a[r]).view(np.int64), (r, n)
            ratio_ord = H[np.argsort(p2[r, H] / q2[r, H], kind="stable")]
            plain = min(1.0, 1.0 + (np.cumsum(p2[r, ratio_ord])[-1] - _ipow(np.cumsum(q2[r, ratio_ord])[-1], n)))
            differ += plain != ref
    assert differ >= 40
