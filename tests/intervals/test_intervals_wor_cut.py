"""The cap-aware candidate search for drafts without replacement: ``intervals._cut`` ("wor") with q's
forced mass as pieces at the cap t_q (docs/guide/intervals.md §3, §3.5), the high of the rows beyond
``WOR_MAX_ROW_CELLS`` (top-1,000 logs) before the box search (tests/test_intervals_wor_box.py); here every
row is forced through it (the limit set to 0) and the box search is off (its budget set to 0).

* Per set: ``_cut`` equals ``1 + p_max(H) - Q(H)`` with Q by ``_q_min_wor`` on H's weights and
  ``intervals.wor_capped.pieces`` (the Python reference of §3.5; no merge at these sizes), on random sets
  of V = 8-10 rows, hundreds of them with more than one piece, to 1e-10 (the core's alpha*_wor moves by
  9e-12 with the padding on a row with weights of 1e-13).
* Through the candidate search, the high never rises above the single lump's (the search before,
  ``_q_min_wor`` on the lump) and falls below it by more than 1e-3 on some rows (V = 40 and held-out
  top-20 rows); it is never below the largest alpha*_wor of a grid of completions (V = 6-8, n = 2-4,
  and "top1+wor" n = 3) nor below the search's own witness. Negative control: pieces at half the cap
  (finer than a completion can be) give a "bound" below a grid completion (V = 6) and below the
  witness (V = 40, held-out) on some rows.
* On §3.2's structured family, the kernel ``wor_cut_min``'s, the smallest ``_cut`` is the kernel's
  high to 1e-12 (held-out top-20 rows, V = 49,152, n = 2-4; negative control: with the lump it misses
  by more than 1e-3 on some rows); the candidate search's own sets (certificates of completions,
  another family) never go below the kernel's high.

Rows are generated here (tests/test_intervals_iid_max.py's generator, a V = 40 one, held-out top-20
rows), not shipped data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_intervals_wor import wor_logs
from test_intervals_wor_capped import GRID_CASES, cap_cut, grid_best, grid_rows, heldout_top20
from test_intervals_wor_witness import layout, wide_rows

import mdsd_fast as mf
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import wor as iw


def lump_set_high(p_max: Any, w: Any, forced: Any, cap: Any, out: Any, k: int, threads: Any = None) -> Any:
    """The candidate search before: the forced mass as one lump (docs/guide/intervals.md §3)."""
    return np.minimum(1.0, 1.0 + p_max - ends._q_min_wor(np.concatenate([w, forced[:, None]], axis=1), out, k))


def half_cap(p_max: Any, w: Any, forced: Any, cap: Any, *rest: Any) -> Any:
    """Pieces at half the cap: finer than a completion can be, so not a bound."""
    return iw.wor_set_high(p_max, w, forced, 0.5 * cap, *rest)


def search_high(p: np.ndarray, q: np.ndarray, n: int, scheme: str, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    monkeypatch.setattr(iw, "WOR_MAX_ROW_CELLS", 0)  # every row through the candidate search
    monkeypatch.setattr(iw, "WOR_BOX_BUDGET", 0)  # and only it (no box search after it: test_intervals_wor_box)
    return np.asarray(mf.acceptance_bounds(p, q, n, scheme)[1])


def repeat(lg: Any, count: int) -> Any:
    return ends._Log(*(np.repeat(np.asarray(a), count, axis=0) for a in (lg.x, lg.unseen, lg.u, lg.t, lg.hidden)))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_cut_is_the_cap_aware_bound_of_each_set(n: int) -> None:
    p, q = wor_logs(70 + n, 24, 8 + n // 2, n, 5, n)
    many = 0
    for r in range(len(p)):
        pl, ql = (ends._log(name, x[r : r + 1])[0] for name, x in (("p", p), ("q", q)))
        sets = np.random.default_rng(r).random((64, p.shape[1])) < np.linspace(0.3, 0.95, 64)[:, None]
        got = ends._cut(repeat(pl, 64), repeat(ql, 64), sets, np.zeros_like(sets), n, True, False)
        # 1e-10: on a row with weights of 1e-13 the core's alpha*_wor moves by 9e-12 with the padding
        np.testing.assert_allclose(got, np.minimum(1.0, cap_cut(p[r], q[r], sets, n)), rtol=0, atol=1e-10)
        many += int((ql.u - ql.t * (ql.unseen & ~sets).sum(axis=1) > ql.t).sum())
    assert many >= 100, many  # sets whose forced mass is more than one piece: the kernel's route


@pytest.mark.parametrize(("v", "k", "n", "scheme"), GRID_CASES)
def test_never_below_a_grid_completion_nor_above_the_lump(
    v: int, k: int, n: int, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, q = grid_rows(v, k, scheme)
    hi = search_high(p, q, n, scheme, monkeypatch)
    grid = np.array([grid_best(p[r], q[r], n, scheme) for r in range(len(p))])
    assert np.all(hi >= grid - 1e-12), (grid - hi).max()
    monkeypatch.setattr(ends, "wor_set_high", lump_set_high)
    lump = search_high(p, q, n, scheme, monkeypatch)
    assert np.all(hi <= lump + 1e-12) and len(p) >= 5  # two evaluators of Q: ~1e-12
    if v == 6:  # negative control (where the pieces set the minimum): pieces at half the cap
        monkeypatch.setattr(ends, "wor_set_high", half_cap)
        bad = search_high(p, q, n, scheme, monkeypatch)
        assert np.any(bad < grid - 1e-6), (bad - grid).min()


@pytest.mark.parametrize("gen", ["v40", "heldout"])
def test_lower_than_the_lump_on_wide_rows(gen: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p, q = wide_rows(5, 24) if gen == "v40" else heldout_top20(32)
    for n in (2, 4):
        new = search_high(p, q, n, "wor", monkeypatch)
        monkeypatch.setattr(ends, "wor_set_high", lump_set_high)
        lump = search_high(p, q, n, "wor", monkeypatch)
        monkeypatch.setattr(ends, "wor_set_high", half_cap)
        bad = search_high(p, q, n, "wor", monkeypatch)
        witness = iv._bounds(p, q, n, "wor", ends.SEARCH_STEPS)[3]  # the largest alpha*_wor the search visited
        monkeypatch.undo()
        assert np.all(new <= lump + 1e-12) and np.any(new < lump - 1e-3)
        assert np.all(new >= witness) and np.any(bad < witness - 1e-6)  # negative control
        assert np.all(new >= mf.acceptance_bounds(p, q, n, "wor")[1] - 1e-12)  # the kernel's family is wider


def structured_sets(pl: Any, ql: Any, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Every set of §3.2's family on row r of a union layout: the h_B cheapest of B, the h_C heaviest
    of C, a prefix of A in p/q order, with D off or in H (the second array)."""
    x, y = pl.x[r], ql.x[r]
    A = np.flatnonzero((x > 0) & (y > 0))
    A = A[np.argsort(x[A] / y[A], kind="stable")]
    B = np.flatnonzero((x > 0) & (y == 0))
    B = B[np.argsort(x[B], kind="stable")]
    C = np.flatnonzero((x == 0) & (y > 0))
    C = C[np.argsort(-y[C], kind="stable")]
    sets, d_in = [], []
    for d in (False, True):
        for hb in range(B.size + 1):
            for hc in range(C.size + 1):
                for ha in range(A.size + 1):
                    H = np.zeros(x.size, dtype=bool)
                    H[np.concatenate([A[:ha], B[:hb], C[:hc]])] = True
                    sets.append(H)
                    d_in.append(d)
    return np.array(sets), np.array(d_in)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_same_family_as_the_kernel(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    p, q = heldout_top20(12)
    pl, ql = layout(p, q)
    kernel = iw.wor_high(pl, ql, np.zeros(pl.x.shape, dtype=bool), n, 0)
    assert np.all(pl.hidden > 0)

    def family_min(r: int) -> float:
        sets, d_in = structured_sets(pl, ql, r)
        one = [ends._Log(*(np.asarray(a)[r : r + 1] for a in (g.x, g.unseen, g.u, g.t, g.hidden))) for g in (pl, ql)]
        best = 1.0
        for d in (False, True):
            H = sets[d_in == d]
            cut = ends._cut(repeat(one[0], len(H)), repeat(one[1], len(H)), H, np.zeros_like(H), n, True, d)
            best = min(best, float(cut.min()))
        return best

    got = np.array([family_min(r) for r in range(len(p))])
    np.testing.assert_allclose(got, kernel, rtol=0, atol=1e-12)
    monkeypatch.setattr(ends, "wor_set_high", lump_set_high)  # negative control: the lump misses it
    assert np.any(np.array([family_min(r) for r in range(len(p))]) > kernel + 1e-3)
