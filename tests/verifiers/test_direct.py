"""The engine case without a plan (cpp/include/mdsd/verifiers/planless/*.hpp): one tuple per row of
(B, V) p, q, verified by "sd", "rrs", "rrs-wor" and "kseq" with linear passes, and by "optimal"
with i.i.d. drafts from the drafts' windows alone (optimal_iid/planless.hpp; test_direct_optimal.py).
mf.verify takes this route for a batch with one tuple per row; its exact law must be p and equal
the planned verifier's. Fused validation, float32 input and thread counts: test_direct_input.py."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast.inputs.pairs import as_pair
from mdsd_fast.verifiers.run import _prepare
from reference import random_case, tuple_law
from stats import LEVEL, chi2_pvalue

ROUTES = [("sd", "iid"), ("rrs", "iid"), ("rrs-wor", "wor"), ("kseq", "iid"), ("optimal", "iid")]


@pytest.mark.parametrize("name,scheme", ROUTES)
def test_exact_law_is_p_and_the_plans(name: str, scheme: str) -> None:
    rng = np.random.default_rng(17)
    checked = 0
    while checked < 150:
        V = int(rng.integers(2, 8))
        p, q = random_case(rng, V)
        p, q = (r[0] for r in as_pair(p, q)[:2])
        n = 1 if name == "sd" else int(rng.integers(1, 4))
        if scheme == "wor":
            n = min(n, int(np.count_nonzero(q)))
        tuples, probs = zip(*tuple_law(q, n, scheme), strict=True)
        T = np.array(tuples, dtype=np.int64).reshape(len(tuples), n)
        law = _core.verifiers.law_direct(name, p, q, T)
        batch, _ = _prepare(name, p, q, n, None, 1)
        np.testing.assert_allclose(law, batch.law(T), atol=1e-12, err_msg=name)
        np.testing.assert_allclose(np.array(probs) @ law, p, atol=1e-10, err_msg=name)
        checked += 1


def _row(V: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(31)
    p = rng.dirichlet(np.full(V, 0.5))
    q = 0.5 * p[rng.permutation(V)] + 0.5 * rng.dirichlet(np.full(V, 0.5))
    p[rng.choice(V, 50, replace=False)] = 0.0
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize(
    "name,scheme,n", [("sd", "iid", 1), ("rrs", "iid", 4), ("rrs-wor", "wor", 3), ("kseq", "iid", 4)]
)
def test_lossless_with_a_negative_control(name: str, scheme: str, n: int) -> None:
    """20,000 positions sharing one row (V = 1,000: the batch is dense), one tuple each: chi-square
    against p; the same tuples verified by the wrong rule (i.i.d. rrs or kseq on without-replacement
    drafts) fail it."""
    p, q = _row()
    B = 20_000
    drafts = mf.simulate(name, p, q, n, B, rng=3).drafts
    P, Q = np.broadcast_to(p, (B, p.size)), np.broadcast_to(q, (B, q.size))
    tokens, accepted = mf.verify(name, P, Q, drafts, rng=4)
    assert chi2_pvalue(tokens, p)[0] > LEVEL
    assert abs(accepted.mean() - mf.acceptance(name, p, q, n)) < 4 * np.sqrt(0.25 / B)
    if name == "rrs-wor":  # the control needs a q where the two rules differ: a peaked one
        p6 = np.array([0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
        q6 = np.array([0.05, 0.05, 0.1, 0.2, 0.3, 0.3])
        d6 = mf.simulate("rrs-wor", p6, q6, 3, B, rng=5).drafts
        P6, Q6 = np.broadcast_to(p6, (B, 6)), np.broadcast_to(q6, (B, 6))
        assert chi2_pvalue(mf.verify("rrs-wor", P6, Q6, d6, rng=6)[0], p6)[0] > LEVEL
        assert chi2_pvalue(mf.verify("rrs", P6, Q6, d6, rng=6)[0], p6)[0] < LEVEL
        assert chi2_pvalue(mf.verify("kseq", P6, Q6, d6, rng=6)[0], p6)[0] < LEVEL


def test_verify_takes_the_direct_route_and_keys_streams_by_row() -> None:
    rng = np.random.default_rng(2)
    P, Q = rng.dirichlet(np.ones(400), size=8), rng.dirichlet(np.ones(400), size=8)
    d = np.stack([mf.simulate("rrs", P[r], Q[r], 3, 1, rng=r).drafts[0] for r in range(8)])
    P2, Q2, _ = as_pair(P, Q)
    got = mf.verify("rrs", P, Q, d, rng=9, threads=2)
    seed = int(np.random.default_rng(9).integers(0, 2**64, dtype=np.uint64))
    want = _core.verifiers.verify_direct("rrs", P2, Q2, d, seed, 1)
    np.testing.assert_array_equal(got[0], want[0])
    ids = np.arange(100, 108)
    a = mf.verify("rrs", P, Q, d, rng=9, row_ids=ids)[0]
    b = mf.verify("rrs", P[4:], Q[4:], d[4:], rng=9, row_ids=ids[4:])[0]
    np.testing.assert_array_equal(a[4:], b)
    with pytest.raises(ValueError, match="drafts: row 0: token 5 appears twice"):
        mf.verify("rrs-wor", P[:1], Q[:1], [[5, 5]])
    with pytest.raises(ValueError, match="n: verifier 'sd' handles n = 1"):
        mf.verify("sd", P, Q, d)
