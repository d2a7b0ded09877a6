"""The fast i.i.d. route of acceptance_bounds (python/mdsd_fast/intervals/iid.py).

* high is the minimum of the cut bound 1 + p_max(H) - Q_min(H) over every H containing T: checked
  against an independent enumeration of all 2^V token sets (V <= 9);
* it is never above the candidate search's high (the previous route, still run for wor and for
  oversized rows) and, on a good share of the rows, strictly below it (the negative control: the
  comparison can tell the two routes apart);
* dense, TopK and CSR logs give the same bits, and so do any chunking and row order.

Rows are generated here (heavy- and light-tailed rows, ties at the cut, zeros, rows with one
logged token, complete rows), not taken from the shipped data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import iid as fast
from mdsd_fast.intervals.support import column_groups, dense_parts

sp = pytest.importorskip("scipy.sparse")


def logs(seed: int, B: int, V: int, kmin: int, kmax: int, ties: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Random truncated rows (dense, zeros off the log); every row's unseen mass fits its unlogged tokens."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        full = np.stack([rng.dirichlet(np.full(V, a)) for a in rng.choice([0.05, 0.3, 1.0], size=B)])
        if ties:
            full[: B // 4] = np.round(full[: B // 4], 2) + 1e-3
            full /= full.sum(axis=1, keepdims=True)
        cut = np.zeros_like(full)
        for r, k in enumerate(rng.integers(kmin, kmax + 1, size=B)):
            top = np.argsort(-full[r], kind="stable")[:k]
            cut[r, top] = full[r, top]
        cut[-1] = full[-1]  # complete
        cut[-2] = 0.0
        cut[-2, np.argmax(full[-2])] = full[-2].max()  # one logged token
        out.append(cut)
    ok = np.ones(B, dtype=bool)
    for x in out:
        u, t = 1 - x.sum(axis=1), np.where(x > 0, x, np.inf).min(axis=1)
        ok &= (u < 1e-12) | (u <= t * (x == 0).sum(axis=1) * (1 - 1e-9))
    return out[0][ok], out[1][ok]


def brute_high(p: np.ndarray, q: np.ndarray, k: int, m: int) -> float:
    """min over all token sets H containing T (q's top m) of 1 + p_max(H) - Q_min(H), straight
    from the definitions of docs/guide/intervals.md §3 (one row, small V)."""
    V = p.size
    up, uq = max(0.0, 1 - p.sum()), max(0.0, 1 - q.sum())
    up, uq = (0.0 if up < 1e-12 else up), (0.0 if uq < 1e-12 else uq)
    tp, tq = p[p > 0].min(), q[q > 0].min()
    T = np.zeros(V, dtype=bool)
    T[np.argsort(-q, kind="stable")[:m]] = True
    H = np.array(list(itertools.product([False, True], repeat=V))) | T
    p_max = (H * p).sum(1) + np.minimum(up, tp * (H & (p == 0)).sum(1))
    forced = np.maximum(0.0, uq - tq * (~H & (q == 0)).sum(1))
    Q = np.clip(((H & ~T) * q).sum(1) + forced, 0, None) / (1 - q[T].sum())
    return float((1 + p_max - np.clip(Q, 0, 1) ** k).min())


SCHEMES = [("iid", 1, 0), ("iid", 2, 0), ("iid", 4, 0), ("greedy", 3, 2), ("top1+iid", 3, 1)]


@pytest.mark.parametrize(("scheme", "n", "m"), SCHEMES)
def test_high_is_the_minimum_over_every_h(scheme: str, n: int, m: int) -> None:
    p, q = logs(7 + n + m, 40, 9, 1 if m == 0 else 4, 6, ties=m == 0)
    if m:  # the deterministic part needs q's top m determined
        p, q = p[:-2], q[:-2]
    _, hi, _, _, _ = iv._bounds(p, q, n, scheme, 0)
    want = np.array([brute_high(p[r], q[r], n - m, m) for r in range(len(p))])
    tol = 1e-12 if m == 0 else 1e-10  # the mixed bound divides by 1 - q(T), which amplifies rounding
    np.testing.assert_allclose(hi, np.clip(want + iv.BOUND_SLACK, 0, 1), rtol=0, atol=tol)


def _search_high(p: np.ndarray, q: np.ndarray, n: int, scheme: str, m: int, steps: int) -> np.ndarray:
    """high of the candidate search (the route before the fast one) on every row."""
    P, Q = dense_parts("p", p, ends.COMPLETE_TOL), dense_parts("q", q, ends.COMPLETE_TOL)
    hi = np.empty(len(p))
    for rows, pg, qg in column_groups(P, Q, p.shape[1], np.arange(len(p)), ends._Log, ends.COMPRESS_KEEP):
        T = ends._top(qg, m) if m else np.zeros(pg.x.shape, dtype=bool)
        hi[rows] = ends._high(pg, qg, n, scheme, m, T, steps)[0]
    return np.clip(hi + iv.BOUND_SLACK, 0, 1)


@pytest.mark.parametrize(("V", "k"), [(40, 12), (3000, 20)])
def test_never_above_the_candidate_search(V: int, k: int) -> None:
    narrower = total = 0
    for scheme, n, m in SCHEMES:
        p, q = logs(V + n, 30, V, 4 if m else 1, k, ties=m == 0)
        if m:
            p, q = p[:-2], q[:-2]
        _, hi, _, _, _ = iv._bounds(p, q, n, scheme, ends.SEARCH_STEPS)
        old = _search_high(p, q, n, scheme, m, ends.SEARCH_STEPS)
        assert (hi <= old + 1e-12).all()
        narrower += int((hi < old - 1e-9).sum())
        total += len(p)
    assert narrower >= 1  # the check tells the routes apart (measured: 1 of 143 and 6 of 131 rows, by up to 0.044)


def _topk(x: np.ndarray, logprobs: bool) -> mf.TopK:
    ids = [np.flatnonzero(r)[::-1] for r in x]  # descending ids: the route must not rely on order
    vals = [np.log(r[i]) if logprobs else r[i] for r, i in zip(x, ids, strict=True)]
    return mf.TopK(ids, vals, vocab_size=x.shape[1], logprobs=logprobs)


@pytest.mark.parametrize(("scheme", "n"), [("iid", 4), ("greedy", 3), ("wor", 2), ("topk", 2)])
def test_input_types_chunks_and_order_give_the_same_bits(scheme: str, n: int) -> None:
    det = scheme != "iid"
    p, q = logs(31, 24, 500, 4 if det else 1, 20, ties=not det)
    if det:
        p, q = p[:-2], q[:-2]
    want = mf.acceptance_bounds(p, q, n, scheme)
    for a, b in ((sp.csr_array(p), sp.csr_array(q)), (_topk(p, False), _topk(q, False))):
        got = mf.acceptance_bounds(a, b, n, scheme)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    perm = np.random.default_rng(0).permutation(len(p))
    got = mf.acceptance_bounds(p[perm], q[perm], n, scheme)
    assert np.array_equal(got[0], want[0][perm]) and np.array_equal(got[1], want[1][perm])
    for size in (1, 5):
        parts = [mf.acceptance_bounds(p[i : i + size], q[i : i + size], n, scheme) for i in range(0, len(p), size)]
        assert np.array_equal(np.concatenate([a for a, _ in parts]), want[0])
        assert np.array_equal(np.concatenate([b for _, b in parts]), want[1])


def test_oversized_rows_take_the_search_and_mix_freely(monkeypatch: pytest.MonkeyPatch) -> None:
    p, q = logs(5, 20, 300, 1, 20)
    full = iv._bounds(p, q, 3, "iid", 2)[:2]
    monkeypatch.setattr(iv, "MAX_ROW_CELLS", 60)  # about half the rows now go to the search
    cells = fast.row_cells(((p > 0) & (q > 0)).sum(1), ((p > 0) & (q == 0)).sum(1), ((p == 0) & (q > 0)).sum(1))
    assert 0 < (cells > 60).sum() < len(p)
    mixed = iv._bounds(p, q, 3, "iid", 2)[:2]
    alone = [iv._bounds(p[r : r + 1], q[r : r + 1], 3, "iid", 2)[:2] for r in range(len(p))]
    for end in (0, 1):
        assert np.array_equal(mixed[end], np.concatenate([a[end] for a in alone]))
    big = cells > 60
    assert np.array_equal(mixed[0], full[0])  # the low end never depends on the route
    assert (full[1][big] <= mixed[1][big] + 1e-12).all()  # the search is never below the minimum
    assert np.array_equal(mixed[1][~big], full[1][~big])


def test_witnesses_run_the_search_on_every_row() -> None:
    p, q = logs(6, 12, 200, 1, 15)
    lo, hi, wlo, whi, _ = iv._bounds(p, q, 2, "iid", 4, witnesses=True)
    assert np.isfinite(wlo).all() and np.isfinite(whi).all()
    assert (lo <= wlo + 1e-12).all() and (whi <= hi + 1e-12).all() and (wlo <= whi + 1e-12).all()
    assert np.isnan(iv._bounds(p, q, 2, "iid", 4)[2]).all()
