"""The cap-aware high of acceptance_bounds for drafts without replacement (cpp/include/mdsd/intervals/forced_pieces.hpp in
``wor_cut_min``, docs/design/intervals.md §3.2, §3.5): the q mass forced into H as pieces at the cap.

* The kernel at the reference's cap (``CAP_PIECES`` = 64) equals the Python reference
  ``intervals.wor_capped.wor_cap_high`` (``_q_min_wor`` on each set) where both run the same family,
  capped by the single-lump kernel (the sets that force no mass, which the reference leaves out), to
  1e-12: V = 6 to 600, n = 2-4, with the merge into equal lumps exercised (rows with more than 64
  pieces, and a cap of 8 in both). A higher cap only lowers high; the default 2^20 never merges.
* It is never below the largest alpha*_wor of a grid of completions (V = 6-8, n = 2-4, and "top1+wor"),
  and never above the single lump's high. Negative control: the caps halved (pieces of half the cap,
  half the room off H: not a completion) give a "bound" below a grid completion on some rows.
* On V <= 9 with 4-8 tokens logged in neither, the structured sets reach the minimum of the cap-aware
  bound over every H and every count of D in H (the §3.2 reductions, re-checked with pieces).
* §3.2 step 1's proof: Q is convex in the pieces moved into H (remainder first, then pieces at the
  cap), by exact Plackett-Luce sums; a heavier piece first breaks it (the control).

Rows are generated here (tests/test_intervals_iid_max.py's generator, a V = 40-600 one), not shipped data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_intervals_iid_max import rows, splits
from test_intervals_wor import wor_logs
from test_intervals_wor_witness import layout, wide_rows

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import wor as iw
from mdsd_fast.intervals import wor_capped as wc


def kernel(pl: object, ql: object, n: int, pieces: int = wc.CAP_PIECES, tq_scale: float = 1.0) -> np.ndarray:
    """The C++ high (no slack) of "wor" rows on the union layout."""
    z = np.zeros(pl.x.shape[0])
    return np.asarray(
        _core.intervals.wor_cut_min(
            pl.x, ql.x, pl.hidden.astype(np.int64), pl.u, pl.t, ql.u, ql.t * tq_scale, n, z,
            z.astype(np.int64), pieces=pieces,
        )
    )  # fmt: skip


@pytest.mark.parametrize("n", [2, 4])
def test_more_pieces_only_lower_high(n: int) -> None:
    """Fewer equal lumps majorise more (§3.5), so the high falls as the cap rises, and a cap at or
    above every row's pieces is the exact fill (the default, 2^20: no merge)."""
    p, q = heldout_top20(32)
    pl, ql = layout(p, q)
    hs = [kernel(pl, ql, n, pieces=c) for c in (1, 8, 64, most_pieces(pl, ql) + 1, iw.WOR_HIGH_PIECES)]
    for a, b in itertools.pairwise(hs):
        assert np.all(b <= a + 1e-15)
    assert np.any(hs[3] < hs[2] - 1e-5)  # merging above 64 pieces costs on these rows
    np.testing.assert_allclose(hs[4], hs[3], rtol=0, atol=1e-15)


def heldout_top20(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-20 logs of held-out LLM-like rows (tests/_support/heldout.py, V = 49,152, seed 11)."""
    from heldout import heldout_rows

    P, Q = heldout_rows(count, seed=11)[:2]
    return tuple(np.where(x >= -np.sort(-x, axis=1)[:, 19:20], x, 0.0) for x in (P, Q))


def grid_best(p: np.ndarray, q: np.ndarray, n: int, scheme: str = "wor") -> float:
    P, Q = splits(p), splits(q)
    return float(np.max(mf.optimal_acceptance(np.repeat(P, Q.shape[0], 0), np.tile(Q, (P.shape[0], 1)), n, scheme)))


def most_pieces(pl: object, ql: object) -> int:
    """The largest number of cap pieces any row's forced mass needs (all of D and B off H)."""
    return int(np.max(np.floor(ql.u / ql.t)))


@pytest.mark.parametrize(("gen", "n"), [("v6", 2), ("v40", 2), ("v40", 3), ("v40", 4), ("v600", 2)])
def test_kernel_equals_the_python_reference(gen: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    p, q = {"v6": lambda: rows(21, 12), "v40": lambda: wide_rows(2, 12), "v600": lambda: wide_rows(3, 10, V=600, K=6)}[
        gen
    ]()
    pl, ql = layout(p, q)
    new, lump = kernel(pl, ql, n), kernel(pl, ql, n, pieces=1)
    ref = np.minimum(wc.wor_cap_high(pl, ql, n), lump)
    np.testing.assert_allclose(new, ref, rtol=0, atol=1e-12)
    if gen == "v600":  # more pieces than the cap: both merge them into CAP_PIECES equal lumps
        assert most_pieces(pl, ql) > wc.CAP_PIECES and np.any(new < 1 - 1e-3)
    else:
        assert np.any(new < lump - 1e-3)  # the pieces matter on these rows
    right = wc.pieces  # a cap of 8 in both
    monkeypatch.setattr(wc, "pieces", lambda f, t, most=8: right(f, t, most))
    np.testing.assert_allclose(kernel(pl, ql, n, pieces=8), np.minimum(wc.wor_cap_high(pl, ql, n), lump), atol=1e-12)
    # through acceptance_bounds: the kernel's high at WOR_HIGH_PIECES, the single lump's at 1
    hi = mf.acceptance_bounds(p, q, n, "wor")[1]
    want = kernel(pl, ql, n, pieces=iw.WOR_HIGH_PIECES)
    np.testing.assert_allclose(hi, np.clip(want + iv.BOUND_SLACK, 0, 1), rtol=0, atol=1e-15)
    monkeypatch.setattr(iw, "WOR_HIGH_PIECES", 1)
    np.testing.assert_allclose(
        mf.acceptance_bounds(p, q, n, "wor")[1], np.clip(lump + iv.BOUND_SLACK, 0, 1), atol=1e-15
    )


GRID_CASES = [(6, 2, 2, "wor"), (7, 3, 3, "wor"), (8, 4, 4, "wor"), (7, 3, 3, "top1+wor")]


def grid_rows(v: int, k: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows small enough for a grid of completions (for "top1+wor": q's top token the same in all)."""
    p, q = rows(100 + v, 8, v=v, k=k)
    if scheme != "wor":
        ok = -np.sort(-q, axis=1)[:, 0] > np.where(q > 0, q, np.inf).min(axis=1)
        p, q = p[ok], q[ok]
    return p, q


@pytest.mark.parametrize(("v", "k", "n", "scheme"), GRID_CASES)
def test_never_below_a_grid_completion_nor_above_the_lump(
    v: int, k: int, n: int, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, q = grid_rows(v, k, scheme)
    hi = mf.acceptance_bounds(p, q, n, scheme)[1]
    grid = np.array([grid_best(p[r], q[r], n, scheme) for r in range(len(p))])
    assert np.all(hi >= grid - 1e-12), (grid - hi).max()
    monkeypatch.setattr(iw, "WOR_HIGH_PIECES", 1)
    lump = mf.acceptance_bounds(p, q, n, scheme)[1]
    assert np.all(hi <= lump + 1e-15) and len(p) >= 5
    if scheme == "wor":  # negative control: the caps halved, finer than a completion can be
        bad = kernel(*layout(p, q), n, tq_scale=0.5)
        assert np.any(bad < grid - 1e-6), (bad - grid).min()


@pytest.mark.parametrize("gen", ["v40", "heldout"])
def test_never_above_the_lump(gen: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p, q = wide_rows(5, 24) if gen == "v40" else heldout_top20(64)
    for n in (2, 4):
        new = mf.acceptance_bounds(p, q, n, "wor")[1]
        monkeypatch.setattr(iw, "WOR_HIGH_PIECES", 1)
        lump = mf.acceptance_bounds(p, q, n, "wor")[1]
        monkeypatch.undo()
        assert np.all(new <= lump + 1e-15) and np.any(new < lump - 1e-3)


def cap_cut(p: np.ndarray, q: np.ndarray, sets: np.ndarray, k: int) -> np.ndarray:
    """1 + p_max(H) - Q_cap(H) for every H (rows of ``sets``) of one dense row, Q by ``_q_min_wor``."""
    up, uq = 1 - p.sum(), 1 - q.sum()
    tp, tq = p[p > 0].min(), q[q > 0].min()
    W, OUT, PM = [], [], []
    for H in sets:
        room = tq * (~H & (q == 0)).sum()
        inH = q[H & (q > 0)]
        f = uq - room
        W.append(np.concatenate([inH, wc.pieces(f, tq) if f > 1e-15 else []]))
        OUT.append(q[~H].sum() + min(uq, room))
        PM.append(p[H].sum() + min(up, tp * (H & (p == 0)).sum()))
    w = np.zeros((len(W), max(max(v.size for v in W), k)))
    for i, v in enumerate(W):
        w[i, : v.size] = v
    return 1 + np.asarray(PM) - ends._q_min_wor(w, np.maximum(np.asarray(OUT), 0.0), k)


def test_structured_sets_reach_the_minimum_over_every_h() -> None:
    checked = 0
    for n, V in ((2, 12), (3, 11)):
        p, q = wor_logs(90 + n, 12, V, n, 5, n)
        hi = kernel(*layout(p, q), n)
        for r in range(len(p)):
            logged = np.flatnonzero((p[r] > 0) | (q[r] > 0))
            D = np.flatnonzero((p[r] == 0) & (q[r] == 0))  # alike: only their count in H matters
            sets = []
            for bits in itertools.product([False, True], repeat=logged.size):
                for h in range(D.size + 1):
                    H = np.zeros(V, dtype=bool)
                    H[logged[np.array(bits)]] = True
                    H[D[:h]] = True
                    sets.append(H)
            best = float(np.min(cap_cut(p[r], q[r], np.array(sets), n)))
            assert abs(hi[r] - min(1.0, best)) <= 1e-11, (n, r, hi[r], best)
            checked += int(D.size >= 4)
    assert checked >= 8


def test_oversized_rows_keep_the_reference_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows beyond ``WOR_MAX_ROW_CELLS`` keep the candidate search's high (cap-aware,
    tests/test_intervals_wor_cut.py); under ``witnesses=True`` (the bench) the Python reference's caps
    still take part there, and only there."""
    n = 2
    p, q = wide_rows(2, 8)
    pl, ql = layout(p, q)
    monkeypatch.setattr(iw, "WOR_MAX_ROW_CELLS", 0)
    monkeypatch.setattr(iw, "WOR_BOX_BUDGET", 0)  # the candidate search alone (no box search)
    search = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS)[1]
    bracket = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS, witnesses=True)[1]
    want = np.clip(np.minimum(search - iv.BOUND_SLACK, wc.wor_cap_high(pl, ql, n)) + iv.BOUND_SLACK, 0, 1)
    np.testing.assert_allclose(bracket, want, rtol=0, atol=1e-15)
    from test_intervals_wor_cut import lump_set_high  # the search before: the single lump, above it

    monkeypatch.setattr(ends, "wor_set_high", lump_set_high)
    assert np.any(iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS)[1] > bracket + 1e-3)


def pl_all_inside(w: list[float], inside: set[int], k: int) -> float:
    """Pr[the first k Plackett-Luce draws from weights w all lie in `inside`], by every order."""
    tot = sum(w)

    def rec(gone: float, drawn: frozenset[int], depth: int) -> float:
        if depth == k:
            return 1.0
        return sum(w[i] / (tot - gone) * rec(gone + w[i], drawn | {i}, depth + 1) for i in inside if i not in drawn)

    return rec(0.0, frozenset(), 0)


def second_differences(w: list[float], steps: list[list[int]], k: int) -> list[float]:
    qs = [pl_all_inside(w, set(s), k) for s in steps]
    d = np.diff(qs)
    return list(np.diff(d))


def test_q_is_convex_in_the_pieces_moved_in() -> None:
    """§3.2 step 1's proof: moving nothing, then the remainder rho <= t_q, then pieces of weight t_q
    one at a time from the outside into H never lowers Q's increment (exact Plackett-Luce sums,
    k = 2-4). Negative control: a piece heavier than t_q first breaks convexity on many rows."""
    rng = np.random.default_rng(20261203)
    broken = 0
    for _ in range(150):
        k, n_s, m = int(rng.integers(2, 5)), int(rng.integers(1, 5)), int(rng.integers(2, 5))
        s = list(rng.uniform(0.01, 0.3, n_s))
        t = float(rng.uniform(0.02, 0.2))
        rho = float(rng.uniform(0.0, t))
        outside = list(rng.uniform(0.01, 0.3, int(rng.integers(1, 4))))
        w = s + [rho] + [t] * m + outside
        held = list(range(n_s))
        steps = [held, held] + [held + list(range(n_s, n_s + 1 + j)) for j in range(m + 1)]
        assert min(second_differences(w, steps, k)) >= -1e-14
        heavy = s + [float(rng.uniform(2 * t, 5 * t)), t, t] + outside
        ctl = [held + list(range(n_s, n_s + j)) for j in range(4)]
        broken += min(second_differences(heavy, ctl, k)) < -1e-12
    assert broken >= 20, broken
