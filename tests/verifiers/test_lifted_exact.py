"""Exact acceptance without a plan of "rrs-wor" and of the mixed lifts (``_core.verifiers.exact_lifted``):
"rrs-wor" under "wor" and "top<m>+wor" gives the plans' bits; "rrs" and "kseq" under "top<m>+iid"
give p(T) plus their closed form on the split pair, within the closed forms' rounding of the plans
and of the exact rational value; refusals and errors are the plan route's."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import mdsd_fast as mf
from heldout import heldout_rows
from mdsd_fast import _core
from mdsd_fast.bound.lp import TooLargeError
from mdsd_fast.inputs.pairs import as_pair
from mdsd_fast.verifiers.run import EXACT_BUDGET, _acceptance_rows, _prepare


def _rows(seed: int, B: int, V: int, support: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows with zeros on either side and ties in q; ``support`` > 0: q on that many tokens only."""
    g = np.random.default_rng(seed)
    L = g.standard_normal((B, V)) * 2.5
    P = np.exp(L)
    Q = np.exp(L + g.standard_normal((B, V)))
    P[:, : V // 7] = 0.0
    Q[:, V // 7 : V // 5] = 0.0
    Q[:, -3:] = Q[:, -3:].max(axis=1, keepdims=True)
    if support:
        keep = np.zeros(V, bool)
        keep[g.choice(np.arange(V // 5, V), support, replace=False)] = True
        Q[:, ~keep] = 0.0
    return P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)


def _plan(name: str, P: np.ndarray, Q: np.ndarray, n: int, scheme: str) -> np.ndarray:
    batch, _ = _prepare(name, P, Q, n, scheme, 1)
    return batch.exact(EXACT_BUDGET, 1)


WOR_CASES = [  # (V, support, n, scheme): full rows at small n, a few tokens with q > 0 at larger n
    (9, 0, 1, "wor"),
    (9, 0, 3, "wor"),
    (9, 0, 4, "top1+wor"),
    (40, 0, 2, "wor"),
    (40, 0, 3, "top2+wor"),
    (300, 0, 2, "wor"),
    (300, 0, 3, "top1+wor"),
    (2000, 9, 4, "wor"),
    (2000, 9, 5, "top2+wor"),
]


@pytest.mark.parametrize(("V", "support", "n", "scheme"), WOR_CASES)
def test_rrs_wor_and_its_lifts_give_the_plans_bits(V: int, support: int, n: int, scheme: str) -> None:
    P, Q = _rows(V + n, 12, V, support)
    want = _plan("rrs-wor", P, Q, n, scheme)
    P2, Q2, _ = as_pair(P, Q)  # the gap report's route: validated rows, read in place
    np.testing.assert_array_equal(_acceptance_rows("rrs-wor", P2, Q2, n, exact=True, scheme=scheme), want)
    if n > 1 or scheme != "wor":  # n = 1 is sd, whose closed form the public call takes
        np.testing.assert_array_equal(mf.acceptance("rrs-wor", P, Q, n, scheme=scheme), want)
        P32, Q32 = P.astype(np.float32), Q.astype(np.float32)
        np.testing.assert_array_equal(
            mf.acceptance("rrs-wor", P32, Q32, n, scheme=scheme),
            _plan("rrs-wor", P32.astype(np.float64), Q32.astype(np.float64), n, scheme),
        )


def test_rrs_wor_on_llm_like_and_shipped_rows_gives_the_plans_bits() -> None:
    Ph, Qh, _ = heldout_rows(4, seed=21)  # V = 49,152
    P, Q = mf.load_dataset()[::60].dense(np.float64)  # shipped SmolLM2 rows
    for A, C in ((Ph, Qh), (P, Q)):
        for n, scheme in ((2, "wor"), (3, "top1+wor")):
            np.testing.assert_array_equal(
                mf.acceptance("rrs-wor", A, C, n, scheme=scheme), _plan("rrs-wor", A, C, n, scheme)
            )


def test_rrs_wor_with_one_draft_is_sd() -> None:
    """n = 1: sd's closed form answers the public call; it and the plan (1 - M(T_1) / M_0 from the
    ratio table) are both within rounding of the exact rational value on the same float64 rows."""
    P, Q = _rows(3, 4, 2000)
    got = mf.acceptance("rrs-wor", P, Q, 1)
    np.testing.assert_array_equal(got, mf.acceptance("sd", P, Q, 1))
    plan = _plan("rrs-wor", P, Q, 1, "wor")
    P2, Q2, _ = as_pair(P, Q)
    for r in range(len(P)):
        p, q = [Fraction(x) for x in P2[r]], [Fraction(x) for x in Q2[r]]
        M0 = sum(p)
        T1 = M0 / sum(q)
        exact = float(1 - sum(max(a - T1 * b, Fraction(0)) for a, b in zip(p, q, strict=True)) / M0)
        assert abs(got[r] - exact) <= 1e-14 and abs(plan[r] - exact) <= 1e-14, (r, got[r], plan[r], exact)


def _split(p: list[Fraction], q: list[Fraction], m: int) -> tuple[Fraction, list[Fraction], list[Fraction]]:
    """p(T) and the split pair of the top m tokens of q (ties: lower id), in exact arithmetic."""
    T = sorted(sorted(range(len(q)), key=lambda i: (-q[i], i))[:m])
    rest = sum(q[i] for i in range(len(q)) if i not in T)
    ps = [Fraction(0) if i in T else p[i] for i in range(len(p))]
    ps[T[0]] = sum(p[i] for i in T)
    return ps[T[0]], ps, [Fraction(0) if i in T else q[i] / rest for i in range(len(q))]


def _rrs(p: list[Fraction], q: list[Fraction], n: int) -> Fraction:
    M0 = sum(p)
    T, M = Fraction(0), M0
    for _ in range(n):
        T += M
        M = sum(max(a - T * b, Fraction(0)) for a, b in zip(p, q, strict=True))
    return 1 - M / M0


def _kseq(p: list[Fraction], q: list[Fraction], n: int) -> Fraction:
    """K-SEQ at its optimal rho, the root bisected to 2^-90 (docs/theory/verifiers.md §8.4)."""

    def beta(rho: Fraction) -> Fraction:
        return sum(min(b, a / rho) for a, b in zip(p, q, strict=True))

    def f(rho: Fraction) -> Fraction:
        return 1 - (1 - beta(rho)) ** n - rho * beta(rho)

    if f(Fraction(1)) <= 0:
        return 1 - (1 - beta(Fraction(1))) ** n
    lo, hi = Fraction(1), Fraction(n)
    for _ in range(90):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return 1 - (1 - beta(hi)) ** n


@pytest.mark.parametrize(("name", "inner"), [("rrs", _rrs), ("kseq", _kseq)])
def test_iid_lifts_are_within_rounding_of_the_exact_value_and_the_plans(name: str, inner) -> None:  # type: ignore[no-untyped-def]
    P, Q = _rows(5, 6, 14)
    for n, m in ((2, 1), (4, 2), (5, 1)):
        scheme = f"top{m}+iid"
        got = mf.acceptance(name, P, Q, n, scheme=scheme)
        plan = _plan(name, P, Q, n, scheme)
        unlifted = mf.acceptance(name, P, Q, n - m)
        for r in range(len(P)):
            pT, ps, qs = _split([Fraction(x) for x in P[r]], [Fraction(x) for x in Q[r]], m)
            exact = float(min(Fraction(1), pT + inner(ps, qs, n - m)))
            assert abs(got[r] - exact) <= 1e-14 and abs(plan[r] - exact) <= 1e-14, (name, n, m, r, got[r], exact)
            assert abs(unlifted[r] - exact) > 1e-6  # the control: the test tells the schemes apart
    # larger rows: as close to the plans as the unlifted closed forms are
    for A, C in (_rows(6, 8, 3000), heldout_rows(3, seed=22)[:2]):
        for n, m in ((3, 1), (4, 2)):
            scheme = f"top{m}+iid"
            np.testing.assert_allclose(
                mf.acceptance(name, A, C, n, scheme=scheme), _plan(name, A, C, n, scheme), rtol=0, atol=5e-13
            )


def test_refusals_and_errors_are_the_plan_routes() -> None:
    P, Q = _rows(7, 4, 400)
    for n, scheme in ((4, "wor"), (5, "top1+wor")):  # the recursion over budget: the same message
        with pytest.raises(TooLargeError) as plan:
            _plan("rrs-wor", P, Q, n, scheme)
        with pytest.raises(TooLargeError) as public:
            mf.acceptance("rrs-wor", P, Q, n, scheme=scheme)
        assert str(public.value) == str(plan.value) and "rrs-wor: the exact recursion" in str(plan.value)
    Ps, Qs = _rows(8, 3, 400, support=6)
    Ps, Qs = np.vstack([Ps, P[:1]]), np.vstack([Qs, Q[:1]])  # row 3 over budget, rows 0-2 within
    with pytest.raises(TooLargeError, match="tokens with q > 0 and n = 4"):
        mf.acceptance("rrs-wor", Ps, Qs, 4)
    np.testing.assert_array_equal(
        mf.acceptance("rrs-wor", Ps[:3], Qs[:3], 4), _plan("rrs-wor", Ps[:3], Qs[:3], 4, "wor")
    )
    bad = Ps.copy()
    bad[2, 5] = np.nan  # an invalid row is named before any refusal, as the plan route validates first
    with pytest.raises(ValueError, match="p: row 2 contains NaN or inf"):
        mf.acceptance("rrs-wor", bad, Qs, 4)
    for name, n, scheme in (("rrs-wor", 7, "wor"), ("rrs-wor", 7, "top2+wor"), ("rrs", 8, "top6+iid")):
        with pytest.raises(ValueError) as plan:
            _plan(name, Ps[:3], Qs[:3], n, scheme)
        with pytest.raises(ValueError) as public:
            mf.acceptance(name, Ps[:3], Qs[:3], n, scheme=scheme)
        assert str(public.value) == str(plan.value) and "has only 6 tokens" in str(plan.value)
    with pytest.raises(ValueError, match="needs n > 2") as public:
        mf.acceptance("kseq", P, Q, 2, scheme="top2+iid")
    with pytest.raises(ValueError, match="no plan-free exact route"):
        _core.verifiers.exact_lifted("rrs", P, Q, 2, "iid")
    with pytest.raises(ValueError, match="needs 1 <= m < n"):
        _core.verifiers.exact_lifted("rrs-wor", P, Q, 2, "top2+wor")


def test_sparse_rows_threads_and_the_callers_arrays() -> None:
    P, Q = _rows(9, 7, 200)
    Q[:, ::3] = 0.0
    Q /= Q.sum(1, keepdims=True)
    P0, Q0 = P.copy(), Q.copy()
    for name, n, scheme in (
        ("rrs-wor", 2, "wor"),
        ("rrs-wor", 3, "top1+wor"),
        ("rrs", 3, "top1+iid"),
        ("kseq", 4, "top2+iid"),
    ):
        dense = mf.acceptance(name, P, Q, n, scheme=scheme, threads=1)
        np.testing.assert_array_equal(mf.acceptance(name, P, Q, n, scheme=scheme, threads=3), dense)
        np.testing.assert_array_equal(mf.acceptance(name, sp.csr_array(P), sp.csr_array(Q), n, scheme=scheme), dense)
        assert mf.acceptance(name, P[4], Q[4], n, scheme=scheme) == dense[4]
        P32, Q32 = P.astype(np.float32), Q.astype(np.float32)  # widening is exact: the float64 rows' result
        np.testing.assert_array_equal(
            mf.acceptance(name, P32, Q32, n, scheme=scheme),
            mf.acceptance(name, P32.astype(np.float64), Q32.astype(np.float64), n, scheme=scheme),
        )
    np.testing.assert_array_equal(P, P0)
    np.testing.assert_array_equal(Q, Q0)
