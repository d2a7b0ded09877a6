"""The box search inside §3.2's family for the "wor" high of the rows beyond ``WOR_MAX_ROW_CELLS``
(``_core.intervals.wor_cut_descent``, cpp/include/mdsd/intervals/family_descent.hpp; docs/design/intervals.md §3.2 "Beyond the limit").
Every set of the family is a valid bound, so the search can only lower the candidate search's high,
and never below the family's minimum; here rows small enough for the whole family (``wor_cut_min``)
are forced through the search too, so both run on them.

* Unlimited budget, from nothing (h_B = h_C = 0, empty A prefix): a box covers the family and the
  high is ``wor_cut_min``'s to 1e-12 (held-out top-20 and top-100 rows, n = 2-4, and "top1+wor").
* Default budget: never below the family's minimum, from nothing and from the candidate search's best
  set; through ``acceptance_bounds`` (every row forced through the search, which starts at that
  set) equal to the whole family's high on every row, never above the candidate search alone
  (budget 0) and below it on some rows; the work never exceeds the budget.
* Never below the largest alpha*_wor of a grid of completions (V = 6-8, n = 2-4, "top1+wor"), at the
  default budget and at a budget of 64 (the search stopped after its first lines).
* Negative control: the A prefix held at the start's (``hold_a``) misses the family's minimum by more
  than 1e-3 on some rows.

Rows are generated here (tests/_support/heldout.py at seed 29, not the seeds the budget was chosen on, and the
grid rows of test_intervals_wor_capped), not shipped data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_intervals_wor_capped import GRID_CASES, grid_best, grid_rows
from test_intervals_wor_witness import layout

import mdsd_fast as mf
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import wor as iw


def heldout_top(k: int, count: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Top-k logs of held-out LLM-like rows (tests/_support/heldout.py, V = 49,152, seed 29)."""
    from heldout import heldout_rows

    P, Q = heldout_rows(count, seed=29)[:2]
    return tuple(np.where(x >= -np.sort(-x, axis=1)[:, k - 1 : k], x, 0.0) for x in (P, Q))


def top_mask(ql: Any, m: int) -> np.ndarray:
    return ends._top(ql, m) if m else np.zeros(ql.x.shape, dtype=bool)


def forced_search(p: np.ndarray, q: np.ndarray, n: int, scheme: str, mp: pytest.MonkeyPatch, budget: Any) -> Any:
    """acceptance_bounds' high with every row through the candidate search and the box search."""
    mp.setattr(iw, "WOR_MAX_ROW_CELLS", -1)
    mp.setattr(iw, "WOR_BOX_BUDGET", budget)
    hi = np.asarray(mf.acceptance_bounds(p, q, n, scheme)[1])
    mp.undo()
    return hi


CASES = [(20, 2, "wor"), (20, 4, "wor"), (100, 2, "wor"), (100, 3, "wor"), (100, 4, "wor"), (100, 3, "top1+wor")]


@pytest.mark.parametrize(("k", "n", "scheme"), CASES)
def test_the_search_reaches_the_family_minimum(k: int, n: int, scheme: str) -> None:
    p, q = heldout_top(k)
    pl, ql = layout(p, q)
    m = 1 if scheme == "top1+wor" else 0
    T = top_mask(ql, m)
    full = iw.wor_high(pl, ql, T, n, m)
    zero = np.zeros((len(p), 3), dtype=np.int64)
    high, work, whole = iw.wor_box_high(pl, ql, T, n, m, zero, budget=1 << 40)
    assert whole.all()
    np.testing.assert_allclose(high, full, rtol=0, atol=1e-12)
    high, work, whole = iw.wor_box_high(pl, ql, T, n, m, zero)
    assert np.all(high >= full - 1e-12) and np.all(work <= iw.WOR_BOX_BUDGET)
    if k == 100:
        assert not whole.all()  # the default budget stops short of some families here
    # negative control: without the A coordinate the descent misses the minimum
    held = iw.wor_box_high(pl, ql, T, n, m, zero, budget=1 << 40, hold_a=True)[0]
    assert np.all(held >= full - 1e-12) and np.any(held > full + 1e-3), (held - full).max()


@pytest.mark.parametrize(("k", "n", "scheme"), CASES)
def test_through_acceptance_bounds(k: int, n: int, scheme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the candidate search's best set, the search's high is the whole family's; it is never
    above the candidate search alone."""
    p, q = heldout_top(k)
    family = np.asarray(mf.acceptance_bounds(p, q, n, scheme)[1])  # these rows take the whole family
    high = forced_search(p, q, n, scheme, monkeypatch, iw.WOR_BOX_BUDGET)
    alone = forced_search(p, q, n, scheme, monkeypatch, 0)
    np.testing.assert_allclose(high, family, rtol=0, atol=1e-12)
    assert np.all(high <= alone + 1e-15)


def test_lower_than_the_candidate_search_on_some_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the candidate search alone is above the family on some rows."""
    lowered = 0
    for k, n, scheme in CASES:
        p, q = heldout_top(k)
        high = forced_search(p, q, n, scheme, monkeypatch, iw.WOR_BOX_BUDGET)
        alone = forced_search(p, q, n, scheme, monkeypatch, 0)
        lowered += int((high < alone - 1e-9).sum())
    assert lowered >= 1


@pytest.mark.parametrize(("v", "k", "n", "scheme"), GRID_CASES)
@pytest.mark.parametrize("budget", [64, None])
def test_never_below_a_grid_completion(
    v: int, k: int, n: int, scheme: str, budget: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, q = grid_rows(v, k, scheme)
    hi = forced_search(p, q, n, scheme, monkeypatch, iw.WOR_BOX_BUDGET if budget is None else budget)
    grid = np.array([grid_best(p[r], q[r], n, scheme) for r in range(len(p))])
    assert np.all(hi >= grid - 1e-12), (grid - hi).max()
