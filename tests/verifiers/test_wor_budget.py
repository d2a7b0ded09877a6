"""The work budget of the full-vocabulary without-replacement route, and the tables it reads.

The route ("optimal" / "sweep" with scheme "wor" beyond the enumerable supports) climbs a ladder of
orders until its plan reaches alpha*_wor or its work budget per row is spent (docs/theory/wor_route.md §15).
Checked here: the budget bounds the work (up to the pass that crosses it), every plan stays
lossless and below the bound whatever the budget, an order that cannot end within what is left
is not started, results do not depend on threads, a strict refusal says what ran out, and the
limits / verifier tables agree across C++ and Python.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from heldout import heldout_rows
from mdsd_fast import _core
from mdsd_fast.report.config import _FIXED_N, _VERIFIER_SCHEMES


@pytest.fixture(scope="module")
def rows() -> tuple[np.ndarray, np.ndarray]:
    # held-out rows with full drafts (the ones that climb the ladder), V = 49,152
    P, Q, meta = heldout_rows(24, seed=5)
    full = [i for i, m in enumerate(meta) if m["top_k"] == 0]
    return P[full], Q[full]


def _work_per_pass(p: np.ndarray, q: np.ndarray, n: int) -> float:
    # one checkpointed pass over the support: 3 token factors per token, n x G operations each
    g = _core.verifiers.VerifierBatch("sweep", p[None], q[None], n, "wor", None, 1, 1.0).route()
    return float(g["work"][0])  # the work of the mandatory first order, an upper bound on a pass


@pytest.mark.parametrize("n", [2, 4])
def test_budget_bounds_the_work(rows, n: int) -> None:
    P, Q = rows
    budget = 3e7
    for p, q in zip(P, Q, strict=True):
        rep = mf.route_report("sweep", p, q, n, work_budget=budget, threads=1)
        first = _work_per_pass(p, q, n)
        # the first order always completes; after it, at most one more unit of work of the same
        # size crosses the budget before the next check
        assert rep["work"] <= max(budget, first) + first, (rep, first)
        # out of budget: spent, or declined an order / run whose floor (the work it charges once
        # started: a few passes over the support, under 3x the first order's) exceeds what was left
        if rep["work"] >= budget:
            assert rep["out_of_budget"], rep
        elif rep["out_of_budget"]:
            assert budget - rep["work"] < 3 * first, (rep, first)
        assert rep["gap"] >= -1e-12  # never above alpha*_wor


def test_an_order_that_cannot_end_is_not_started(rows) -> None:
    # At the default budget, a row left short by the first order whose remaining budget is below
    # every later order's floor stops there, under the budget: its plan and work are exactly those
    # of a budget equal to that work (outer system and first order, then nothing). Before the
    # floors the route started the chain order on such rows and ran it into the budget.
    P, Q = rows
    declined = 0
    for n, (p, q) in ((n, r) for n in (3, 4) for r in zip(P, Q, strict=True)):
        rep = mf.route_report("sweep", p, q, n, threads=1)
        if rep["gap"] <= 1e-9 or rep["orders_run"] != 1 or rep["work"] >= mf.WOR_WORK_BUDGET:
            continue
        declined += 1
        assert rep["out_of_budget"], rep
        same = mf.route_report("sweep", p, q, n, work_budget=rep["work"], threads=1)
        assert same["work"] == rep["work"] and same["alpha_plan"] == rep["alpha_plan"], (rep, same)
        assert same["orders_run"] == 1 and same["out_of_budget"]
    assert declined > 0, "no row of the fixture declines an order: the test would check nothing"


def test_larger_budget_certifies_more_and_stays_lossless(rows) -> None:
    P, Q = rows
    small = mf.route_report("sweep", P, Q, 4, work_budget=1.0)
    large = mf.route_report("sweep", P, Q, 4)
    assert np.all(small["gap"] >= -1e-12) and np.all(large["gap"] >= -1e-12)
    assert np.sum(large["gap"] <= 1e-9) >= np.sum(small["gap"] <= 1e-9)
    assert np.all(small["orders_run"] == 1)  # only the mandatory first order
    # the budgeted plan is a real plan: its exact law given a tuple is a distribution
    b = _core.verifiers.VerifierBatch("sweep", P[:1].copy(), Q[:1].copy(), 4, "wor", None, 1, 1.0)
    _, _, d = b.simulate(5, 3, 1)
    law = b.law(np.ascontiguousarray(d[0]), 0, False)
    assert np.all(law >= 0) and np.allclose(law.sum(axis=1), 1.0, atol=1e-12)


def test_budget_results_do_not_depend_on_threads(rows) -> None:
    P, Q = rows
    a = mf.acceptance("sweep", P[:4], Q[:4], 3, work_budget=5e7, threads=1)
    b = mf.acceptance("sweep", P[:4], Q[:4], 3, work_budget=5e7, threads=2)
    assert np.array_equal(a, b)


def test_strict_refusal_names_the_budget(rows) -> None:
    P, Q = rows
    for p, q in zip(P, Q, strict=True):
        rep = mf.route_report("sweep", p, q, 4, work_budget=1.0)
        if rep["gap"] > 1e-9:
            with pytest.raises(ValueError, match=r"work budget spent .*raise work_budget=") as err:
                mf.acceptance("optimal", p, q, 4, scheme="wor", work_budget=1.0)
            assert "closest inner order: top" in str(err.value)
            return
    pytest.skip("every row certified by the first order")


def test_work_budget_argument_is_checked() -> None:
    p = np.full(50, 1 / 50)
    with pytest.raises(ValueError, match="work_budget"):
        mf.acceptance("sweep", p, p, 2, work_budget=0)
    with pytest.raises(TypeError, match="work_budget"):
        mf.acceptance("sweep", p, p, 2, work_budget="lots")
    with pytest.raises(ValueError, match="route_report"):
        mf.route_report("rrs", p, p, 2)  # type: ignore[arg-type]


def test_limits_table_is_shared() -> None:
    lim = mf.limits.LIMITS
    assert lim["max_threads"] == 256 and lim["wor_route_max_n"] == 64
    assert mf.WOR_WORK_BUDGET == mf.limits.WOR_WORK_BUDGET > 0
    assert set(mf.limits.describe()) == set(lim)
    with pytest.raises(ValueError, match=f"limit {lim['max_drafts']}"):
        mf.acceptance("rrs", [0.5, 0.5], [0.5, 0.5], lim["max_drafts"] + 1)


def test_verifier_table_is_the_one_source() -> None:
    table = {row["name"]: row for row in _core.verifiers.table()}
    assert set(table) == set(mf.verifiers)
    for name, v in mf.verifiers.items():
        row = table[name]
        assert v.schemes == tuple(row["schemes"].split(",")) and v.scheme == v.schemes[0]
        assert v.optimal_scheme == row["bound"] and (v.n_min, v.n_max) == (row["n_min"], row["n_max"])
        assert _VERIFIER_SCHEMES[name] == v.report_schemes
        assert _FIXED_N.get(name) == v.fixed_n
    assert mf.verifiers["spechub"].fixed_n == 2 and mf.verifiers["sd"].fixed_n == 1
    with pytest.raises(ValueError, match="handles n = 2 drafts only"):
        mf.acceptance("spechub", [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 3)


def test_prepare_h_star_matches_the_every_prefix_scan(rows) -> None:
    """prepare takes H* from the chord scan with its argmin check instead of the scan of every prefix
    (``wor_options={"h_star_every_prefix": True}``, the reference): the same plan (work spent, exact
    acceptance) on full held-out rows at n = 3, 4, 8, and alpha* within 1e-12."""
    P, Q = rows
    for p, q in zip(P[:4], Q[:4], strict=True):
        for n in (3, 4, 8):
            got = []
            for every in (True, False):
                opts = {"h_star_every_prefix": every}
                vb = _core.verifiers.VerifierBatch("sweep", p[None], q[None], n, "wor", None, 1, 1e7, opts)
                r = vb.route()
                got.append((float(r["work"][0]), float(vb.exact(2e8, 1)[0]), float(r["alpha_star"][0])))
            (w_e, a_e, s_e), (w_c, a_c, s_c) = got
            assert (w_c, a_c) == (w_e, a_e), (n, got)
            assert abs(s_c - s_e) <= 1e-12, (n, got)


def test_outer_passes_by_division_keep_the_plan(rows) -> None:
    """The outer system's rank and round passes run by division instead of checkpointed
    (``wor_options={"outer_by_division": False}``, the reference): the same work, exact acceptance and
    best order on full held-out rows at n = 3, 4, 8, and the same work before the inner system.
    Control: the comparison tells apart a plan that runs one more order (a larger budget)."""
    P, Q = rows

    def plan(p, q, n, budget, div=True):
        opts = {"outer_by_division": div}
        vb = _core.verifiers.VerifierBatch("sweep", p[None], q[None], n, "wor", None, 1, budget, opts)
        r = vb.route()
        return float(r["work"][0]), float(vb.exact(2e8, 1)[0]), int(r["best_order"][0]), float(r["work_outer"][0])

    for p, q in zip(P[:4], Q[:4], strict=True):
        for n in (3, 4, 8):
            got = [plan(p, q, n, 1e7, div) for div in (False, True)]
            assert got[0][:3] == got[1][:3], (n, got)
            assert got[0][3] == got[1][3], (n, got)
    # negative control: the same comparison tells apart the plan of a budget that runs one more order
    p, q = P[0], Q[0]
    assert plan(p, q, 4, 1e7)[:3] != plan(p, q, 4, 4e8)[:3]
