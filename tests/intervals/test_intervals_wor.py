"""The without-replacement route of acceptance_bounds (python/mdsd_fast/intervals/wor.py,
cpp/include/mdsd/intervals/unseen_mass.hpp).

* low, the Poisson bucket: checked against the J-phantom route it replaces (alpha*_wor of the
  pair with q's unseen mass on J equal phantoms, through the core's own scan) as J grows: never
  above it, never below it by more than the C(k, 2) / J the coupling allows, and the gap shrinks
  like 1 / J; and against brute force over completions on small V (vertices and mixtures).
* high: the minimum of the cut bound over **every** H (holding T for "top<m>+wor"), checked against an enumeration of all 2^V
  token sets with an independent Q_wor (the first-exit sum over ordered draws); never above the
  candidate search it replaces; and, on rows with 4-8 tokens logged in neither, every count of
  them in H is no better than none or all (the kernel tries only those). Negative controls: the enumeration tells the minimum over every
  H from the minimum over fewer sets (A all or nothing), and the one-phantom "lump" value of q's
  unseen mass is not a lower bound.

Rows are generated here (test_intervals_iid.logs), not taken from the shipped data.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from test_intervals_iid import logs

import mdsd_fast as mf
from interval_reference import sample, vertices
from mdsd_fast import _core
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import wor_capped as wc

sp = pytest.importorskip("scipy.sparse")


def wor_logs(
    seed: int, B: int, V: int, kmin: int, kmax: int, n: int, ties: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``logs``'s rows with at least n logged draft tokens (a wor log needs them)."""
    p, q = logs(seed, B, V, kmin, kmax, ties=ties)
    keep = (q > 0).sum(axis=1) >= n
    return p[keep], q[keep]


def phantom_low(p: np.ndarray, q: np.ndarray, n: int, J: int) -> float:
    """alpha*_wor of the pair: p's unseen mass on a token q never drafts, q's on J equal phantoms
    p never gives (the route before the bucket, docs/guide/intervals.md §2), for one dense row."""
    up, uq = 1 - p.sum(), 1 - q.sum()
    pt = np.concatenate([p, [up], np.zeros(J)])
    qt = np.concatenate([q, [0.0], np.full(J, uq / J)])
    return float(mf.optimal_acceptance(pt, qt, n, "wor"))


def bucket_low(p: np.ndarray, q: np.ndarray, n: int) -> float:
    """The core's bucket value of one dense row (no slack)."""
    return float(_core.intervals.wor_low_end(p[None], q[None], np.array([1 - q.sum()]), n)[0])


@pytest.mark.parametrize("n", [2, 3, 4])
def test_bucket_is_the_limit_of_the_phantoms(n: int) -> None:
    p, q = wor_logs(40 + n, 14, 60, n, 12, n, ties=False)
    p, q = p[:-1], q[:-1]  # rows with unseen mass in q
    pairs = n * (n - 1) / 2
    gaps = []
    for r in range(len(p)):
        b = bucket_low(p[r], q[r], n)
        g = []
        for J in (4, 64, 1024, 16384):
            a = phantom_low(p[r], q[r], n, J)
            assert a - pairs / J - 1e-11 <= b <= a + 1e-11  # the coupling bound, both ways
            g.append(a - b)
        gaps.append(g)
    gap = np.array(gaps)
    assert (gap[:, -1] <= pairs / 16384 + 1e-11).all()
    assert gap[:, 0].max() > 1e-4  # the phantoms' split does cost something at small J ...
    assert (gap[:, -1] <= gap[:, 0] / 64 + 1e-11).all()  # ... and it shrinks at least like 1 / J
    lo, _ = mf.acceptance_bounds(p, q, n, "wor")
    want = np.array([bucket_low(p[r], q[r], n) for r in range(len(p))])
    np.testing.assert_allclose(lo, np.clip(want - iv.BOUND_SLACK, 0, 1), rtol=0, atol=1e-15)  # u summed apart


def test_mixed_bucket_is_the_limit_of_the_phantoms() -> None:
    # "top1+wor": T (q's top token) first, then the split pair's bucket (docs/theory/greedy.md §5.2).
    p, q = logs(9, 14, 60, 4, 12, ties=False)
    p, q = p[:-2], q[:-2]
    lo, _ = mf.acceptance_bounds(p, q, 3, "top1+wor")
    for r in range(len(p)):
        cap = 0.5 * q[r].max()
        for J in (256, 8192):
            J = max(J, int(2 ** np.ceil(np.log2((1 - q[r].sum()) / cap))))
            pt = np.concatenate([p[r], [1 - p[r].sum()], np.zeros(J)])
            qt = np.concatenate([q[r], [0.0], np.full(J, (1 - q[r].sum()) / J)])
            a = float(mf.optimal_acceptance(pt, qt, 3, "top1+wor"))
            assert a - 1 / J - 1e-9 <= lo[r] + iv.BOUND_SLACK <= a + 1e-9


def _instances(seed: int, count: int, n: int, V: int = 7):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        P, Q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        kp, kq = int(rng.integers(3, 6)), int(rng.integers(max(3, n), 6))  # q logs at least n
        p, q = np.zeros(V), np.zeros(V)
        ip, iq = np.argsort(-P)[:kp], np.argsort(-Q)[:kq]
        p[ip], q[iq] = P[ip], Q[iq]
        yield p, q, P, Q, rng


@pytest.mark.parametrize("n", [2, 3, 4])
def test_interval_contains_every_completion(n: int) -> None:
    narrowed_caught = 0
    for p, q, P, Q, rng in _instances(200 + n, 12, n):
        lo, hi = mf.acceptance_bounds(p, q, n, "wor")
        vp, vq = vertices(p), vertices(q)
        pp = np.concatenate([np.repeat(vp, len(vq), 0), sample(vp, 300, rng), P[None]])
        qq = np.concatenate([np.tile(vq, (len(vp), 1)), sample(vq, 300, rng), Q[None]])
        a = mf.optimal_acceptance(pp, qq, n, "wor")
        assert a.min() >= lo - 1e-12 and a.max() <= hi + 1e-12
        narrowed_caught += int(a.min() < lo + 0.005 or a.max() > hi - 0.005)
    assert narrowed_caught >= 8  # negative control: the check rejects an interval narrowed by 0.005


def q_wor(w: np.ndarray, out: float, k: int) -> float:
    """Pr[k draws without replacement from weights (w, out) all land in w's tokens], by the sum
    over ordered draws (docs/theory/sorted_prefix.md §4.4, first exit); independent of the core. Each draw's
    denominator sums the weights still undrawn directly (total minus drawn cancels when the
    drawn tokens hold nearly all of it)."""
    if len(w) < k:
        return 0.0
    idx = np.array(list(itertools.permutations(range(len(w)), k)))
    left = np.ones((len(idx), len(w)), dtype=bool)
    prob = np.ones(len(idx))
    for t in range(k):
        prob *= w[idx[:, t]] / (out + (left * w).sum(axis=1))
        left[np.arange(len(idx)), idx[:, t]] = False
    return float(prob.sum())


def cut_wor(
    p: np.ndarray, q: np.ndarray, H: np.ndarray, k: int, T: np.ndarray | None = None, cap: bool = True
) -> float:
    """1 + p_max(H) - Q_min(H) without replacement, straight from docs/guide/intervals.md §3 and §3.5 (one
    dense row): Q_min is Q of H's logged q plus the unseen q mass H must hold at the cap
    (``wor_capped.pieces``; one lump if not ``cap``), against the rest. With T (q's top m, a
    subset of H) Q is the k random draws' after T, on q off T."""
    up, uq = max(0.0, 1 - p.sum()), max(0.0, 1 - q.sum())
    up, uq = (0.0 if up < 1e-12 else up), (0.0 if uq < 1e-12 else uq)
    tp, tq = p[p > 0].min(), q[q > 0].min()
    p_max = p[H].sum() + min(up, tp * (H & (p == 0)).sum())
    room = tq * (~H & (q == 0)).sum()
    f = max(0.0, uq - room)
    w = np.append(q[H & (q > 0) & (True if T is None else ~T)], wc.pieces(f, tq) if cap and f > 1e-15 else f)
    return float(1 + p_max - q_wor(w[w > 0], q[~H].sum() + min(uq, room), k))


def brute_high_wor(p: np.ndarray, q: np.ndarray, k: int, allowed: Any = None, T: np.ndarray | None = None) -> float:
    """min of ``cut_wor`` over all token sets H (those ``allowed`` passes, default all); small V."""
    sets = (np.array(bits) for bits in itertools.product([False, True], repeat=p.size))
    return min(cut_wor(p, q, H, k, T) for H in sets if allowed is None or allowed(H))


@pytest.mark.parametrize(("n", "V", "B"), [(2, 9, 24), (3, 8, 20), (4, 7, 12)])
def test_high_is_the_minimum_over_every_h(n: int, V: int, B: int) -> None:
    p, q = wor_logs(70 + n, B, V, n, V - 2, n)
    _, hi, _, _, _ = iv._bounds(p, q, n, "wor", 0)
    want = np.array([brute_high_wor(p[r], q[r], n) for r in range(len(p))])
    np.testing.assert_allclose(hi, np.clip(want + iv.BOUND_SLACK, 0, 1), rtol=0, atol=1e-11)


@pytest.mark.parametrize(("n", "m"), [(3, 1), (4, 2)])
def test_mixed_high_is_the_minimum_over_every_h(n: int, m: int) -> None:
    # "top<m>+wor": H holds T (q's top m), the random part's Q is on q off T.
    p, q = determined(*wor_logs(80 + n, 30, 8, 4, 6, n), m)
    _, hi, _, _, _ = iv._bounds(p, q, n, f"top{m}+wor", 0)
    for r in range(len(p)):
        T = np.zeros(p.shape[1], dtype=bool)
        T[np.argsort(-q[r], kind="stable")[:m]] = True
        want = brute_high_wor(p[r], q[r], n - m, lambda H, T=T: bool((H >= T).all()), T)
        # u = 1 - (logged mass) is known to ~1e-16 and summed in another order here; on a row whose
        # last draws fall on tokens of ~1e-6 (q's top token holds 0.9988) Q moves by ~1e-10 with it
        assert abs(hi[r] - min(1.0, want + iv.BOUND_SLACK)) <= 1e-9
    assert len(p) >= 10


def test_every_count_of_d_is_no_better_than_its_ends() -> None:
    # The kernel tries none or all of D (tokens logged in neither); here every count h_D is tried
    # with every set of logged tokens, on rows with 4-8 tokens in D: the minimum must be the same
    # (docs/design/intervals.md §3.2 step 1, checked rather than proven beyond k = 2).
    rows = 0
    for n in (2, 3):
        p, q = wor_logs(90 + n, 10, 12, n, 4, n)
        _, hi, _, _, _ = iv._bounds(p, q, n, "wor", 0)
        for r in range(len(p)):
            logged = np.flatnonzero((p[r] > 0) | (q[r] > 0))
            D = np.flatnonzero((p[r] == 0) & (q[r] == 0))  # alike: only their count in H matters
            best = np.inf
            for bits in itertools.product([False, True], repeat=logged.size):
                for h in range(D.size + 1):
                    H = np.zeros(p[r].size, dtype=bool)
                    H[logged[np.array(bits)]] = True
                    H[D[:h]] = True
                    best = min(best, cut_wor(p[r], q[r], H, n))
            assert abs(hi[r] - min(1.0, best + iv.BOUND_SLACK)) <= 1e-11
            rows += int(D.size >= 4)
    assert rows >= 8


def test_the_enumeration_needs_every_prefix_of_a() -> None:
    # Negative control: with A (tokens logged in both) all in or all out of H the minimum is higher
    # on some rows, so the exact comparison above would catch a kernel that skipped its prefixes.
    p, q = wor_logs(71, 14, 9, 2, 7, 2)
    higher = 0
    for r in range(len(p)):
        A = (p[r] > 0) & (q[r] > 0)
        full = brute_high_wor(p[r], q[r], 2)
        ends = brute_high_wor(p[r], q[r], 2, lambda H, A=A: not (H & A).any() or (H & A).sum() == A.sum())
        assert ends >= full - 1e-12
        higher += int(ends > full + 1e-9)
    assert higher >= 2


def determined(p: np.ndarray, q: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose top m tokens of q are the same in every completion (m-th logged > cap)."""
    mth = -np.sort(-q, axis=1)[:, m - 1]
    ok = (mth > np.where(q > 0, q, np.inf).min(axis=1)) | (q.sum(axis=1) > 1 - 1e-12)
    return p[ok], q[ok]


@pytest.mark.parametrize(("V", "k", "n", "m"), [(40, 12, 2, 0), (3000, 20, 4, 0), (300, 14, 3, 1)])
def test_never_above_the_candidate_search(V: int, k: int, n: int, m: int) -> None:
    from test_intervals_iid import _search_high

    p, q = wor_logs(V + n, 24, V, max(n, 4 * m), k, n)
    if m:
        p, q = determined(p, q, m)
    scheme = f"top{m}+wor" if m else "wor"
    _, hi, _, _, _ = iv._bounds(p, q, n, scheme, ends.SEARCH_STEPS)
    old = _search_high(p, q, n, scheme, m, ends.SEARCH_STEPS)
    assert (hi <= old + 1e-12).all()
    assert len(p) >= 12


def _topk(x: np.ndarray) -> mf.TopK:
    ids = [np.flatnonzero(r)[::-1] for r in x]  # descending ids: the route must not rely on order
    return mf.TopK(ids, [r[i] for r, i in zip(x, ids, strict=True)], vocab_size=x.shape[1])


@pytest.mark.parametrize("n", [2, 4])
def test_input_types_chunks_and_order_give_the_same_bits(n: int) -> None:
    p, q = wor_logs(31 + n, 24, 500, 4, 20, n)
    want = mf.acceptance_bounds(p, q, n, "wor")
    for a, b in ((sp.csr_array(p), sp.csr_array(q)), (_topk(p), _topk(q))):
        got = mf.acceptance_bounds(a, b, n, "wor")
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    perm = np.random.default_rng(0).permutation(len(p))
    got = mf.acceptance_bounds(p[perm], q[perm], n, "wor")
    assert np.array_equal(got[0], want[0][perm]) and np.array_equal(got[1], want[1][perm])
    for size in (1, 7):
        parts = [mf.acceptance_bounds(p[i : i + size], q[i : i + size], n, "wor") for i in range(0, len(p), size)]
        assert np.array_equal(np.concatenate([a for a, _ in parts]), want[0])
        assert np.array_equal(np.concatenate([b for _, b in parts]), want[1])


def test_kernels_name_bad_arguments() -> None:
    x = np.array([[0.5, 0.2]])
    with pytest.raises(ValueError, match="u: the bucket"):
        _core.intervals.wor_low_end(x, x, np.array([0.0]), 2)
    with pytest.raises(ValueError, match="k: must be in"):
        _core.intervals.wor_low_end(x, x, np.array([0.3]), 0)
    with pytest.raises(ValueError, match="p, q: expected"):
        _core.intervals.wor_cut_min(
            x, x[:, :1], np.array([0]), *(np.array([0.1]),) * 4, 2, np.array([0.0]), np.array([0])
        )
    with pytest.raises(ValueError, match="n_tc: counts"):
        _core.intervals.wor_cut_min(x, x, np.array([0]), *(np.array([0.1]),) * 4, 2, np.array([0.0]), np.array([-1]))
