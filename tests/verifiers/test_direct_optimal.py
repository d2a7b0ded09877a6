"""The engine case of "optimal" with i.i.d. drafts: mf.verify with one tuple per row of (B, V) p, q
cuts only the drafts' level windows, each from the levels left before it
(cpp/include/mdsd/verifiers/optimal_iid/planless.hpp, docs/theory/level_race.md §12.6), instead of preparing the
whole plan. Checked here against the plan route (``verifiers._verify_planned``, kept as the
reference): the same seed gives the same outputs on random and shipped rows; rows whose residual
is empty; the route is taken only where it applies; losslessness by a chi-square test whose
negative control (the windows cut from the untouched levels) must fail it. The exact law given
each tuple (ties and zeros included) is in test_direct.py, threads, chunking, order, float32 and
bad input in test_direct_input.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_direct import _row

import mdsd_fast as mf
from cases import direct_rows
from mdsd_fast import _core
from mdsd_fast.inputs.args import _seed
from mdsd_fast.inputs.pairs import as_pair
from mdsd_fast.verifiers.given_drafts import _verify_planned
from mdsd_fast.verifiers.run import _prepare
from stats import LEVEL, chi2_pvalue


def _iid_drafts(P: np.ndarray, Q: np.ndarray, n: int, seed: int) -> np.ndarray:
    """One i.i.d. tuple from q per row."""
    rng = np.random.default_rng(seed)
    Q2 = as_pair(P, Q)[1]
    return np.stack([rng.choice(Q2.shape[1], size=n, p=Q2[r]) for r in range(Q2.shape[0])])


def _same_as_planned(P: np.ndarray, Q: np.ndarray, d: np.ndarray, seed: int, rejects: bool = True) -> None:
    got = mf.verify("optimal", P, Q, d, rng=seed, threads=2)
    want = _verify_planned("optimal", P, Q, d, rng=seed, threads=2)
    # Both routes draw the same uniforms; only a ~1e-16 move of a piece end could split one draw
    # (test_shadow_verify.cpp: at least 999 in 1,000 agree). On these rows and seeds all agree.
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert 0 < got[1].sum() < len(got[1]) or not rejects  # both outcomes: the residual is exercised


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_same_seed_as_the_plan_on_random_rows(n: int) -> None:
    P, Q = direct_rows(48, 4000, 40 + n)
    _same_as_planned(P, Q, _iid_drafts(P, Q, n, n), 7 + n, rejects=n <= 4)  # n = 8 accepts all 48


def test_same_seed_as_the_plan_on_shipped_rows() -> None:
    """40 rows of the shipped SmolLM2 data (V = 49,152, float32 as shipped), n = 2 and 4."""
    ds = mf.load_dataset()
    ch = next(iter(ds.iter_chunks(40)))
    P, Q = np.asarray(ch.p), np.asarray(ch.q)
    for n in (2, 4):
        _same_as_planned(P, Q, _iid_drafts(P, Q, n, 100 + n), 11 + n)


def test_rows_with_an_empty_residual() -> None:
    """p = q (alpha* = 1, the residual empty up to rounding): the route falls back to p where the
    plan does, and outputs a drafted token on every row."""
    P, _ = direct_rows(16, 300, 3)
    P = P / P.sum(axis=1, keepdims=True)
    d = _iid_drafts(P, P, 3, 5)
    tok, acc = mf.verify("optimal", P, P, d, rng=1)
    assert acc.all()
    want = _verify_planned("optimal", P, P, d, rng=1)
    np.testing.assert_array_equal(tok, want[0])
    for r in range(3):
        law = _core.verifiers.law_direct("optimal", P[r], P[r], d[r : r + 1])
        batch, _ = _prepare("optimal", P[r], P[r], 3, None, 1)
        np.testing.assert_allclose(law, batch.law(d[r : r + 1]), rtol=0, atol=1e-12)


def test_the_route_is_taken_where_it_applies() -> None:
    """mf.verify is the direct kernel for scheme "iid" (given or default); "wor" and mixed schemes
    keep the plan route (V = 12: the without-replacement plan is certified)."""
    P, Q = direct_rows(6, 12, 8)
    d = _iid_drafts(P, Q, 3, 2)
    P2, Q2, _ = as_pair(P, Q)
    want = _core.verifiers.verify_direct("optimal", P2, Q2, d, _seed(4), 1)
    for scheme in (None, "iid"):
        np.testing.assert_array_equal(mf.verify("optimal", P, Q, d, rng=4, scheme=scheme)[0], want[0])
    for scheme in ("wor", "top1+iid"):
        dd = np.stack([mf.simulate("optimal", P2[r], Q2[r], 3, 1, rng=r, scheme=scheme).drafts[0] for r in range(6)])
        got = mf.verify("optimal", P, Q, dd, rng=4, scheme=scheme)
        ref = _verify_planned("optimal", P, Q, dd, rng=4, scheme=scheme)
        np.testing.assert_array_equal(got[0], ref[0])
    with pytest.raises(TypeError, match="work_budget"):
        mf.verify("optimal", P, Q, d, work_budget="big")


def test_lossless_with_a_negative_control() -> None:
    """3,000 positions sharing one row (V = 1,000, the batch dense), n = 4, one tuple each:
    chi-square against p (fails below LEVEL = 1e-6) and the acceptance within 4 standard errors of
    alpha*. Negative control: the same tuples with every window cut from the untouched levels (the
    route without the order-freedom it rests on) fail both. Power, measured over 8 seeds: the
    control gave p < 1e-115 (acceptance ~1.000 against 0.714) in 8 of 8, the route p > 0.03 in 8 of
    8 (and p > 0.35 in 5 of 5 at 10,000 positions)."""
    p, q = _row()
    B, n = 3000, 4
    drafts = mf.simulate("optimal", p, q, n, B, rng=103).drafts
    P, Q = np.broadcast_to(p, (B, p.size)), np.broadcast_to(q, (B, q.size))
    tokens, accepted = mf.verify("optimal", P, Q, drafts, rng=4)
    star = mf.optimal_acceptance(p, q, n)
    se = np.sqrt(star * (1 - star) / B)
    assert chi2_pvalue(tokens, p)[0] > LEVEL
    assert abs(accepted.mean() - star) < 4 * se
    P2, Q2 = np.ascontiguousarray(P), np.ascontiguousarray(Q)
    bad, bad_acc, _ = _core.verifiers.verify_direct("optimal", P2, Q2, drafts, _seed(5), 0, None, 1e-4, True)
    assert chi2_pvalue(bad, p)[0] < LEVEL
    assert abs(bad_acc.mean() - star) > 4 * se


def test_untouched_windows_change_the_exact_law() -> None:
    """The exact-law counterpart of the control: on an LLM-like row the untouched windows give a
    law given the tuple far from the plan's, and their average over tuples is not p."""
    P, Q = direct_rows(1, 400, 12)
    p, q = (x[0] for x in as_pair(P, Q)[:2])
    batch, _ = _prepare("optimal", p, q, 2, None, 1)
    ts = np.random.default_rng(1).choice(p.size, size=(200, 2), p=q)
    good = _core.verifiers.law_direct("optimal", p, q, ts)
    bad = _core.verifiers.law_direct("optimal", p, q, ts, untouched=True)
    np.testing.assert_allclose(good, batch.law(ts), rtol=0, atol=1e-10)
    assert np.abs(bad - good).max() > 0.1
