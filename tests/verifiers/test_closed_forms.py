"""The closed forms: exact acceptance of sd, rrs, kseq, greedy, topk and spechub in one validated
pass over each row, without a plan (``_core.verifiers.exact_closed``), against the plans' own
exact values and against formulas written here from the verifiers' definitions."""

from __future__ import annotations

import hashlib
import json
import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sparse

import mdsd_fast as mf
from heldout import heldout_rows
from mdsd_fast import _core
from mdsd_fast.inputs.pairs import as_pair
from mdsd_fast.verifiers.run import CLOSED_FORMS, EXACT_BUDGET, PLAN_BITS, _acceptance_rows, _prepare

SAME_BITS = PLAN_BITS  # closed forms that run the plans' own sums in the plans' order


def _rows(seed: int, B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    L = g.standard_normal((B, V)) * 2.5
    P = np.exp(L)
    Q = np.exp(L + g.standard_normal((B, V)))
    P[:, : V // 7] = 0.0  # zeros on either side, ties in q
    Q[:, V // 7 : V // 5] = 0.0
    Q[:, -3:] = Q[:, -3:].max(axis=1, keepdims=True)
    return P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)


def _ns(name: str) -> tuple[int, ...]:
    return {"sd": (1,), "spechub": (2,)}.get(name, (1, 2, 3, 5, 8))


def _plan(name: str, P: np.ndarray, Q: np.ndarray, n: int) -> np.ndarray:
    batch, _ = _prepare(name, P, Q, n, None, 1)
    return batch.exact(EXACT_BUDGET, 1)


@pytest.mark.parametrize("name", CLOSED_FORMS)
def test_closed_forms_equal_the_plans(name: str) -> None:
    Ph, Qh, _ = heldout_rows(6, seed=11)  # LLM-like rows at V = 49,152
    for P, Q in (_rows(1, 40, 9), _rows(2, 6, 3000), (Ph, Qh)):
        for n in _ns(name):
            want = _plan(name, P, Q, n)
            got = mf.acceptance(name, P, Q, n)
            if name in SAME_BITS:
                np.testing.assert_array_equal(got, want)
            else:  # sums in id order here, prefix sums in ratio order in the plan: both round
                np.testing.assert_allclose(got, want, rtol=0, atol=5e-13)


def np_rrs(p: np.ndarray, q: np.ndarray, n: int) -> float:
    r, rej = p, 1.0
    for _ in range(n):
        a = np.minimum(r, q).sum()
        rej *= 1.0 - a
        r = np.maximum(r - q, 0.0)
        if r.sum() <= 0:
            return 1.0
        r = r / r.sum()
    return 1.0 - rej


def np_kseq(p: np.ndarray, q: np.ndarray, n: int) -> float:
    def beta(rho: float) -> float:
        return float(np.minimum(q, p / rho).sum())

    lo, hi = 1.0, float(n)
    if 1.0 - (1.0 - beta(1.0)) ** n - beta(1.0) <= 0:
        return 1.0 - (1.0 - beta(1.0)) ** n
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if 1.0 - (1.0 - beta(mid)) ** n - mid * beta(mid) > 0 else (lo, mid)
    return 1.0 - (1.0 - beta(hi)) ** n


def np_greedy(p: np.ndarray, q: np.ndarray, n: int) -> float:
    order = sorted(range(len(q)), key=lambda i: (-q[i], i))
    T = order[: n - 1]
    off = np.ones(len(q), bool)
    off[T] = False
    qt = np.where(off, q, 0.0) / q[off].sum()
    return float(p[T].sum() + np.minimum(p, qt)[off].sum())


def np_topk(p: np.ndarray, q: np.ndarray, n: int) -> float:
    return float(p[sorted(range(len(q)), key=lambda i: (-q[i], i))[:n]].sum())


@pytest.mark.parametrize(
    ("name", "formula"),
    [
        ("sd", lambda p, q, n: np.minimum(p, q).sum()),
        ("rrs", np_rrs),
        ("kseq", np_kseq),
        ("greedy", np_greedy),
        ("topk", np_topk),
        ("spechub", np_greedy),
    ],
)
def test_closed_forms_equal_their_definitions(name: str, formula) -> None:  # type: ignore[no-untyped-def]
    P, Q = _rows(3, 25, 40)
    for n in _ns(name):
        got = mf.acceptance(name, P, Q, n)
        want = [formula(P[r], Q[r], n) for r in range(len(P))]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_one_row_float32_and_prepared_rows() -> None:
    P, Q = _rows(4, 8, 500)
    P32, Q32 = P.astype(np.float32), Q.astype(np.float32)
    for name in CLOSED_FORMS:
        n = _ns(name)[-1]
        batch = mf.acceptance(name, P, Q, n)
        assert mf.acceptance(name, P[3], Q[3], n) == batch[3]
        # float32 rows give the float64 rows' result (widening is exact), read without a copy
        np.testing.assert_array_equal(
            mf.acceptance(name, P32, Q32, n), mf.acceptance(name, P32.astype(np.float64), Q32.astype(np.float64), n)
        )
        # the report's route (validated rows, read in place) equals the public one, or for rrs and
        # kseq keeps the plans' bits
        P2, Q2, _ = as_pair(P, Q)
        report = _acceptance_rows(name, P2, Q2, n, exact=True)
        np.testing.assert_array_equal(report, batch if name in PLAN_BITS else _plan(name, P, Q, n))
        # a single row against a batch broadcasts
        np.testing.assert_array_equal(
            mf.acceptance(name, P[0], Q[:3], n), [mf.acceptance(name, P[0], Q[r], n) for r in range(3)]
        )


def test_the_callers_arrays_stay_untouched() -> None:
    P, Q = _rows(5, 4, 64)
    P0, Q0 = P.copy(), Q.copy()
    for name in CLOSED_FORMS:
        mf.acceptance(name, P, Q, _ns(name)[0])
    np.testing.assert_array_equal(P, P0)
    np.testing.assert_array_equal(Q, Q0)
    assert P.flags.writeable and Q.flags.writeable


def test_errors_name_the_row_and_the_rule() -> None:
    P, Q = _rows(6, 3, 10)
    bad = P.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="p: row 1 contains NaN or inf"):
        mf.acceptance("rrs", bad, Q, 2)
    bad = Q.copy()
    bad[2] *= 1.5
    with pytest.raises(ValueError, match="q: row 2 sums to 1.5"):
        mf.acceptance("kseq", P, bad, 2)
    short = np.zeros((2, 10))
    short[:, :3] = 1 / 3
    short[1] = 0.1
    for name in ("greedy", "topk"):  # too few tokens with q > 0: the plan route's message
        with pytest.raises(ValueError, match="row 0 has only 3 tokens"):
            mf.acceptance(name, P[:2], short, 5)
    with pytest.raises(ValueError, match="handles n = 1 drafts only"):
        mf.acceptance("sd", P, Q, 2)


def test_the_kernel_refuses_what_it_has_no_closed_form_for() -> None:
    P, Q = _rows(7, 2, 6)
    with pytest.raises(ValueError, match="no closed form"):
        _core.verifiers.exact_closed("rrs-wor", P, Q, 2)


def test_results_do_not_depend_on_threads() -> None:
    P, Q = _rows(8, 33, 700)
    for name in CLOSED_FORMS:
        n = _ns(name)[-1]
        one = mf.acceptance(name, P, Q, n, threads=1)
        np.testing.assert_array_equal(mf.acceptance(name, P, Q, n, threads=3), one)
        np.testing.assert_array_equal(mf.acceptance(name, P, Q, n), one)


def test_rrs_closed_form_is_within_rounding_of_the_exact_value() -> None:
    """Against the exact rational value of rrs's acceptance on the same float64 rows (the plan's
    value too: the two routes round differently, both within a few 1e-14 of it)."""
    from fractions import Fraction

    P, Q, _ = heldout_rows(3, seed=12, V=2000)
    n = 3
    got = mf.acceptance("rrs", P, Q, n)
    plan = _plan("rrs", P, Q, n)
    for r in range(len(P)):
        p = [Fraction(x) for x in P[r]]
        q = [Fraction(x) for x in Q[r]]
        M0 = sum(p)
        T, M = Fraction(0), M0
        for _ in range(n):
            T += M
            M = sum(max(a - T * b, Fraction(0)) for a, b in zip(p, q, strict=True))
        exact = float(1 - M / M0)
        assert abs(got[r] - exact) <= 5e-14 and abs(plan[r] - exact) <= 2e-13, (r, got[r], plan[r], exact)


# The same bits as the row-at-a-time closed forms: closed_forms_bits.json holds a digest of every
# output below as that implementation computed it (identical in the baseline and AVX2 builds).
# Rows in lockstep (one vector lane per row) must reproduce them exactly: dense float64 and
# float32 rows, sparse rows, one 1-D row, the report's prepared rows and shipped LLM rows, at
# several V (4, 2 and 1 rows per group and tails) and n (a top-m scan and, for m > 32, a selection).
BITS_NS = {"sd": (1,), "rrs": (1, 2, 4), "kseq": (1, 2, 4, 7), "greedy": (1, 2, 4, 40), "topk": (1, 4, 40)}
BITS_NS["spechub"] = (2,)
BITS_VS = (1, 2, 3, 5, 8, 13, 64, 257, 4099)
BITS_B = 9


def _bits_side(g: np.random.Generator, V: int) -> np.ndarray:
    """Heavy-tailed rows without transcendental functions (the same inputs on every machine), with
    zeros, -0.0, subnormals and ties, scaled to sum to 1 (or 1 + 5e-5) by one division."""
    w = g.random((BITS_B, V)) ** 2
    w = w * w * w
    w[:, : V // 7] = 0.0
    w[1::3, V // 2 :: 5] = -0.0
    w[2::4, 1::9] = 5e-324
    w[3::4, ::11] = 1e-310
    if V >= 4:
        w[:, -3:] = w[:, -3:].max(axis=1, keepdims=True)  # ties at the top
    w[0] = np.where(np.arange(V) % 2 == 0, 1.0, w[0])  # many ties
    out = np.empty_like(w)
    for r in range(BITS_B):
        s = math.fsum(w[r])
        if s <= 0.0:
            w[r, 0] = s = 1.0
        out[r] = w[r] / (s / (1.0 + 5e-5 * (r % 2)))
    return out


def _digest(f) -> str:  # type: ignore[no-untyped-def]
    try:
        x = np.atleast_1d(np.asarray(f(), dtype=np.float64))
    except ValueError:  # too few tokens with q > 0 for the drafts (the message is tested elsewhere)
        return "ValueError"
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]


def _bits_cases(threads: int):  # type: ignore[no-untyped-def]
    acc = partial(mf.acceptance, threads=threads)
    for V in BITS_VS:
        g = np.random.default_rng([7, V])
        P, Q = _bits_side(g, V), _bits_side(g, V)
        P2, Q2, _ = as_pair(P, Q)
        Ps, Qs = sparse.csr_array(P), sparse.csr_array(Q)
        for name, ns in BITS_NS.items():
            for n in ns:
                for dt in (np.float64, np.float32):
                    yield f"{name} n={n} V={V} {np.dtype(dt).name}", partial(acc, name, P.astype(dt), Q.astype(dt), n)
                yield f"{name} n={n} V={V} sparse", partial(acc, name, Ps, Qs, n)
                yield f"{name} n={n} V={V} row 4", partial(mf.acceptance, name, P[4], Q[4], n)
                if name in PLAN_BITS:
                    yield f"{name} n={n} V={V} prepared", partial(_acceptance_rows, name, P2, Q2, n, exact=True)
    P, Q = mf.load_dataset().select(rows=list(range(0, 537, 59))).dense(np.float32)
    for dt in (np.float32, np.float64):
        for name, ns in BITS_NS.items():
            for n in ns:
                yield f"{name} n={n} shipped {np.dtype(dt).name}", partial(acc, name, P.astype(dt), Q.astype(dt), n)


@pytest.mark.parametrize("threads", [1, 2])
def test_closed_forms_keep_their_bits(threads: int) -> None:
    want = json.loads((Path(__file__).parent / "closed_forms_bits.json").read_text())
    got = {key: _digest(f) for key, f in _bits_cases(threads)}
    assert got.keys() == want.keys()
    assert sum(v == "ValueError" for v in want.values()) < len(want) // 4  # mostly numbers
    differ = [k for k in want if got[k] != want[k]]
    assert not differ, f"{len(differ)} of {len(want)} outputs changed bits, e.g. {differ[:5]}"


def test_the_bit_digests_see_an_ulp() -> None:
    """Negative control: rrs's plan, within ~1e-13 of its closed form, does not pass for it."""
    want = json.loads((Path(__file__).parent / "closed_forms_bits.json").read_text())
    g = np.random.default_rng([7, 4099])
    P, Q = _bits_side(g, 4099), _bits_side(g, 4099)
    plan, closed = _plan("rrs", P, Q, 4), mf.acceptance("rrs", P, Q, 4)
    assert 0 < np.abs(plan - closed).max() < 1e-12
    assert _digest(lambda: closed) == want["rrs n=4 V=4099 float64"] != _digest(lambda: plan)
