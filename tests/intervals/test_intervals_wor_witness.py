"""The witness search for the largest alpha*_wor over completions (python/mdsd_fast/intervals/wor_witness.py,
docs/design/intervals.md §3.4).

* The witness is a real completion: logged values kept, caps and sums respected, and its alpha*_wor,
  recomputed on the full vocabulary (the small layout's D columns on the lowest ids of D, zeros on
  the rest), is the witness. It never exceeds the proven high (a completion's alpha* cannot).
* It is never below the witness of the candidate search (``intervals._high``), on V = 6 and V = 40.
* On V = 6 it reaches the best completion of a grid (every split of each side's unseen mass in
  steps of u/10) within ``GRID_TOL`` on every row; negative control: the starts alone (no moves)
  fall short of the grid on some row, so the grid check can tell a weak search.
* The cap-aware Q_min lemma on a grid, and the cap-aware bound (``intervals.wor_capped``): never below
  a completion's alpha*_wor, below high on some rows, equal on V = 6 to the minimum over all 2^6
  sets; negative controls (a fill at twice the cap, pieces at a quarter of it).

Rows are generated here (test_intervals_iid_max.py's generator and a V = 40 one), not shipped data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_intervals_iid_max import rows, splits

import mdsd_fast as mf
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import wor as iw
from mdsd_fast.intervals import wor_capped as wc
from mdsd_fast.intervals import wor_witness as ww

GRID_TOL = 1e-3


def layout(p: np.ndarray, q: np.ndarray) -> tuple[object, object]:
    P, Q, Vv, _ = iv._parts(p, q)
    return iv.union(P, Q, Vv, ends._Log)


def wide_rows(seed: int, count: int, V: int = 40, K: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Top-K logs of random rows at V = 40 (p and q correlated, as a draft follows its target)."""
    rng = np.random.default_rng(seed)
    ps, qs = [], []
    while len(ps) < count:
        base = rng.normal(size=V) * rng.choice([1.0, 2.0, 3.0])
        pair = []
        for noise in (0.0, rng.uniform(0.2, 1.5)):
            full = np.exp(base + noise * rng.normal(size=V))
            full /= full.sum()
            cut = np.zeros(V)
            top = np.argsort(-full, kind="stable")[:K]
            cut[top] = full[top]
            pair.append(cut)
        ps.append(pair[0])
        qs.append(pair[1])
    return np.array(ps), np.array(qs)


def full_rows(p: np.ndarray, q: np.ndarray, w: ww.Witness, r: int) -> tuple[np.ndarray, np.ndarray]:
    V = p.shape[1]
    ids = np.flatnonzero((p[r] > 0) | (q[r] > 0))  # the union support, ascending: its columns
    hidden = np.setdiff1d(np.arange(V), ids)[: int(w.nD[r])]
    out = []
    for x, comp in ((p[r], w.p[r]), (q[r], w.q[r])):
        y = np.zeros(V)
        y[ids] = comp[: ids.size]
        y[hidden] = comp[ids.size :]
        logged = x > 0
        assert np.array_equal(y[logged], x[logged])  # logged values kept
        assert np.all(y[~logged] <= x[logged].min() * (1 + 1e-12)) and np.all(y >= 0)  # caps
        assert abs(y.sum() - 1) <= 1e-12
        out.append(y)
    return out[0], out[1]


@pytest.mark.parametrize(("gen", "n"), [("v6", 2), ("v40", 2), ("v40", 3), ("v40", 4)])
def test_witness_is_a_real_completion_below_high_and_above_the_old_witness(gen: str, n: int) -> None:
    p, q = rows(5, 12) if gen == "v6" else wide_rows(1, 12)
    w = ww.wor_witness(*layout(p, q), n)
    for r in range(p.shape[0]):
        fp, fq = full_rows(p, q, w, r)
        assert abs(mf.optimal_acceptance(fp, fq, n, "wor") - w.witness[r]) <= 1e-12
    hi = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS)[1]
    with pytest.MonkeyPatch.context() as mp:  # the candidate search's witness alone
        mp.setattr(iv, "wor_witness", lambda *a, **k: ww.Witness(np.full(p.shape[0], -np.inf), [], [], w.nD))
        old = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS, witnesses=True)[3]
    assert np.all(w.witness <= hi + 1e-12)
    assert np.all(w.witness >= old - 1e-12), (w.witness - old).min()


def test_witness_reaches_the_grid_maximum(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 2  # the generator logs 2 tokens of q
    p, q = rows(21, 12)
    grid = []
    for r in range(p.shape[0]):
        P, Q = splits(p[r]), splits(q[r])
        pp, qq = np.repeat(P, Q.shape[0], axis=0), np.tile(Q, (P.shape[0], 1))
        grid.append(float(np.max(mf.optimal_acceptance(pp, qq, n, "wor"))))
    g = np.array(grid)
    w = ww.wor_witness(*layout(p, q), n)
    assert np.all(w.witness >= g - GRID_TOL), np.round(g - w.witness, 4)
    monkeypatch.setattr(ww, "WIT_ROUNDS", 0)  # negative control: the starts alone
    starts = ww.wor_witness(*layout(p, q), n)
    assert np.any(starts.witness < g - GRID_TOL)


def q_wor(w: np.ndarray, H: np.ndarray, k: int) -> float:
    """Pr[the first k draws without replacement from weights w all fall in H], by enumeration."""

    def go(left: tuple[int, ...], total: float, depth: int) -> float:
        if depth == k:
            return 1.0
        return sum(w[i] / total * go(tuple(j for j in left if j != i), total - w[i], depth + 1) for i in left)

    return go(tuple(np.flatnonzero(H & (w > 0)).tolist()), float(w.sum()), 0)


def cap_fill(q: np.ndarray, H: np.ndarray) -> np.ndarray:
    """The completion of q that puts as much unseen mass off H as the caps allow and the rest, the
    forced mass, on H's unseen tokens greedily at the cap (the cap-aware Q_min of §3.4)."""
    free = q == 0
    u, t = 1 - q.sum(), q[q > 0].min()
    y = q.copy()
    for side in (~H & free, H & free):
        for i in np.flatnonzero(side):
            y[i] = min(t, u)
            u -= y[i]
    return y


@pytest.mark.parametrize("n", [2, 3])
def test_cap_aware_q_min_is_the_smallest_q_over_completions(n: int) -> None:
    """For a fixed H, the forced mass greedily at the cap on H's unseen tokens (a completion) has a
    Q_wor(H) no larger than any completion of the grid: the cap-aware Q_min of §3.4 is attained. The
    lump of §3 is below it (valid, not tight); negative control: a fill at twice the cap (not a
    completion) falls below the grid's minimum on some row, so the check can tell."""
    rng = np.random.default_rng(40 + n)
    checked, gaps, under = 0, [], 0
    for q in rows(60 + n, 40)[1]:
        unseen = q == 0
        u, t = 1 - q.sum(), q[~unseen].min()
        H = rng.random(q.size) < 0.6
        f = u - t * (unseen & ~H).sum()  # the mass forced into H
        if f <= 1e-9 or H.sum() < n:
            continue
        grid = min(q_wor(c, H, n) for c in splits(q))
        qc = q_wor(cap_fill(q, H), H, n)
        assert qc <= grid + 1e-12, (qc, grid)
        lump = np.append(np.where(unseen & ~H, t, np.where(unseen, 0.0, q)), f)
        q_lump = q_wor(lump, np.append(H & ~unseen, True), n)
        assert q_lump <= qc + 1e-12
        gaps.append(qc - q_lump)
        wide = np.where(unseen & ~H, t, q)
        wide[unseen & H] = np.clip(f - 2 * t * np.arange((unseen & H).sum()), 0.0, 2 * t)
        under += q_wor(wide, H, n) < grid - 1e-9
        checked += 1
    assert checked >= 5 and max(gaps) > 1e-3 and under >= 1, (checked, max(gaps), under)


@pytest.mark.parametrize(("gen", "n"), [("v6", 2), ("v40", 2), ("v40", 4)])
def test_cap_aware_high_is_valid_and_lowers_high(gen: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap-aware bound (``intervals.wor_capped``) is never below a completion's alpha*_wor (the
    witness, and on V = 6 every grid completion), never above the single lump's high, and below it
    on some rows. Negative control: pieces at a quarter of the cap (finer than a completion must be: Q too large)
    go below a witness."""
    p, q = rows(21, 12) if gen == "v6" else wide_rows(2, 12)
    pl, ql = layout(p, q)
    cap = wc.wor_cap_high(pl, ql, n)
    with monkeypatch.context() as mp:  # the single lump's high (§3), which the caps lower
        mp.setattr(iw, "WOR_HIGH_PIECES", 1)
        hi = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS)[1]
    w = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS, witnesses=True)[3]
    assert np.all(cap >= w - 1e-12) and np.all(np.minimum(cap, hi) <= hi)
    assert np.any(cap < hi - 1e-3)
    if gen == "v6":
        for r in range(p.shape[0]):
            P, Q = splits(p[r]), splits(q[r])
            pp, qq = np.repeat(P, Q.shape[0], axis=0), np.tile(Q, (P.shape[0], 1))
            assert cap[r] >= float(np.max(mf.optimal_acceptance(pp, qq, n, "wor"))) - 1e-12
    right = wc.pieces
    monkeypatch.setattr(wc, "pieces", lambda f, t, most=wc.CAP_PIECES: right(f, t / 4, 4 * most))
    assert np.any(wc.wor_cap_high(pl, ql, n) < w - 1e-6)


def test_cap_aware_family_is_the_minimum_over_every_h() -> None:
    """On V = 6 the structured sets give the minimum over all 2^6 sets H of the cap-aware cut bound
    (Q of the fill at the cap, by enumeration), capped by the function's high."""
    n = 2
    p, q = rows(21, 12)
    fam = np.minimum(wc.wor_cap_high(*layout(p, q), n), iv._bounds(p, q, n, "wor", 0)[1] - iv.BOUND_SLACK)
    for r in range(p.shape[0]):
        x, y = p[r], q[r]
        pu, pt = 1 - x.sum(), x[x > 0].min()
        best = np.inf
        for bits in itertools.product([False, True], repeat=x.size):
            H = np.array(bits)
            p_max = x[H].sum() + min(pu, pt * (H & (x == 0)).sum())
            best = min(best, 1 + p_max - q_wor(cap_fill(y, H), H, n))
        assert abs(fam[r] - min(best, 1.0)) <= 2e-9, (r, fam[r], best)
