"""Sparse and top-k inputs (mdsd_fast.sparse): scipy CSR rows and TopK (ids, values) give the dense
results bit for bit where the rows are complete, on the union support, with ids mapped back."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.inputs.pairs import as_distribution
from mdsd_fast.inputs.sparse import TopK
from mdsd_fast.sparse import union_pair

sp = pytest.importorskip("scipy.sparse")


def _rows(seed: int, B: int = 12, V: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """LLM-like rows with most tokens at zero (separate supports for p and q), ties and float32."""
    rng = np.random.default_rng(seed)
    P = np.zeros((B, V))
    Q = np.zeros((B, V))
    for r in range(B):
        sp_ = rng.choice(V, size=int(rng.integers(5, 400)), replace=False)
        sq_ = rng.choice(V, size=int(rng.integers(5, 400)), replace=False)
        P[r, sp_] = rng.dirichlet(np.full(sp_.size, 0.3))
        Q[r, sq_] = rng.dirichlet(np.full(sq_.size, 0.3))
        Q[r, np.union1d(sp_[:3], sq_[:2])] = 0.01  # shared tokens and tied values
        Q[r] /= Q[r].sum()
    return P, Q


def _topk(X: np.ndarray, logprobs: bool = False) -> TopK:
    ids = [np.flatnonzero(x)[::-1] for x in X]  # any order within a row
    vals = [np.log(x[i]) if logprobs else x[i] for x, i in zip(X, ids, strict=True)]
    return TopK(ids, vals, X.shape[1], logprobs=logprobs)


@pytest.mark.parametrize("scheme", ["iid", "wor", "greedy", "topk", "top1+iid", "top2+wor"])
def test_alpha_and_certificate_bit_for_bit(scheme: str) -> None:
    P, Q = _rows(1)
    a, H = mf.optimal_acceptance(P, Q, 4, scheme, return_certificate=True)
    for p_in, q_in in ((sp.csr_matrix(P), sp.csr_matrix(Q)), (_topk(P), _topk(Q)), (P, sp.csr_array(Q))):
        a2, H2 = mf.optimal_acceptance(p_in, q_in, 4, scheme, return_certificate=True)
        np.testing.assert_array_equal(a, a2)
        for h, h2 in zip(H, H2, strict=True):
            np.testing.assert_array_equal(h, h2)


def test_padded_topk_logprobs_and_one_row() -> None:
    P, Q = _rows(2, B=3)
    a = mf.optimal_acceptance(P, Q, 3, "wor")
    k = max(int((P > 0).sum(1).max()), int((Q > 0).sum(1).max()))
    ids = np.full((3, k), -1)
    vals = np.zeros((3, k))
    for r in range(3):
        nz = np.flatnonzero(Q[r])
        ids[r, : nz.size], vals[r, : nz.size] = nz, Q[r, nz]
    np.testing.assert_array_equal(
        mf.optimal_acceptance(_topk(P, logprobs=True), TopK(ids, vals, P.shape[1]), 3, "wor"), a
    )
    one = mf.optimal_acceptance(sp.csr_matrix(P[:1]), Q[0], 3, "wor")  # a (1, V) sparse row is a batch of one
    assert one.shape == (1,) and one[0] == a[0]
    assert mf.optimal_acceptance(TopK(np.flatnonzero(P[0]), P[0][P[0] > 0], P.shape[1]), Q[0], 3, "wor") == a[0]


def test_the_kernels_run_on_the_union_support() -> None:
    P, Q = _rows(3)
    pc, qc, ids, batched = union_pair(sp.csr_matrix(P), sp.csr_matrix(Q))
    P = as_distribution("p", P)  # the dense rules' normalisation, which the sparse rows share
    assert batched and pc.shape[1] == max(np.count_nonzero((P > 0) | (Q > 0), axis=1)) < P.shape[1]
    for r in range(P.shape[0]):
        keep = ids[r] >= 0
        np.testing.assert_array_equal(pc[r, keep], P[r, ids[r, keep]])
        assert (np.diff(ids[r, keep]) > 0).all() and (pc[r, ~keep] == 0).all()


def test_verifiers_lp_and_drafts() -> None:
    P, Q = _rows(4, B=4, V=600)
    Ps, Qs = sp.csr_matrix(P), sp.csr_matrix(Q)
    for name, scheme in (("rrs", None), ("kseq", None), ("optimal", "iid"), ("sweep", "wor"), ("topk", None)):
        np.testing.assert_array_equal(
            mf.acceptance(name, P, Q, 3, scheme=scheme), mf.acceptance(name, Ps, Qs, 3, scheme=scheme)
        )
    dense = mf.simulate("rrs", P, Q, 3, 500, rng=7)
    sparse = mf.simulate("rrs", Ps, Qs, 3, 500, rng=7)
    assert (Q[np.arange(4)[:, None, None], sparse.drafts] > 0).all()  # drafts are vocabulary ids
    assert (P[np.arange(4)[:, None], sparse.tokens] > 0).all()
    # same law, relabelled streams: compare acceptance rates, not samples
    assert abs(dense.accepted.mean() - sparse.accepted.mean()) < 0.1
    d = sparse.drafts[:, 0, :]
    tok, acc = mf.verify("rrs", Ps, Qs, d, rng=1)
    assert (P[np.arange(4), tok] > 0).all() and (acc == (tok[:, None] == d).any(axis=1)).all()
    with pytest.raises(ValueError, match="has q = 0"):
        mf.verify("rrs", Ps, Qs, np.array([[int(np.flatnonzero(Q[r] == 0)[0])] * 3 for r in range(4)]), rng=1)
    for scheme in ("iid", "wor", "top1+iid"):
        small_p, small_q = P[0], Q[0]
        keep = np.argsort(-small_q)[:8]
        qk = np.zeros_like(small_q)
        qk[keep] = small_q[keep]
        qk /= qk.sum()
        lp = mf.solve_lp(small_p, qk, 2, scheme)
        lps = mf.solve_lp(sp.csr_matrix(small_p[None, :]), sp.csr_matrix(qk[None, :]), 2, scheme)
        assert lps.alpha == pytest.approx(lp.alpha, abs=1e-12)
        support = np.flatnonzero((small_p > 0) | (qk > 0))  # the dense cut may add inert p = q = 0 tokens
        np.testing.assert_array_equal(lps.certificate, np.intersect1d(lp.certificate, support))
        np.testing.assert_allclose(lps.accepted, lp.accepted, atol=1e-12)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda P: TopK([[0, 0]], [[0.5, 0.5]], 4), "lists token 0 twice"),
        (lambda P: TopK([[0, 9]], [[0.5, 0.5]], 4), "outside"),
        (lambda P: TopK([[0, 1]], [[0.5, 0.3]], 4), "acceptance_bounds"),
        (lambda P: TopK([[0, 1]], [[0.5, -0.5]], 4), "negative"),
        (lambda P: TopK([[0, 1]], [[0.5, 0.5]], 0), "vocab_size"),
        (lambda P: TopK([[0, 1]], [[0.1, 0.2]], 4, logprobs=True), "log-probabilities"),
        (lambda P: TopK([[0, 1]], [[1, 0]], 4), "must be floats"),
    ],
)
def test_errors_name_the_argument(make, match: str) -> None:  # type: ignore[no-untyped-def]
    q = np.full(4, 0.25)
    with pytest.raises((ValueError, TypeError), match=match):
        mf.optimal_acceptance(make(None), q, 2, "iid")


def test_every_entry_point_takes_sparse_rows() -> None:
    """Functions without a union-support route (the audit's cases, solve_lp's 'explicit' p, ...)
    read sparse input as dense rows."""
    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.2, 0.3, 0.5, 0.0])
    res = mf.solve_lp(sp.csr_matrix(p[None, :]), None, 2, "explicit", tuples=[[0, 1], [2, 2]], probs=[0.7, 0.3])
    assert res.alpha == pytest.approx(
        mf.solve_lp(p, None, 2, "explicit", tuples=[[0, 1], [2, 2]], probs=[0.7, 0.3]).alpha
    )
    out = mf.audit(
        mf.audit.registry_verifier("rrs"), "iid", 2, cases=[(TopK([0, 1, 2], p[:3], 4), q)], samples=2000, rng=0
    )
    assert out.lossless


def test_lists_padded_or_ragged() -> None:
    q = np.array([0.25, 0.25, 0.25, 0.25])
    want = mf.optimal_acceptance(np.array([[0.5, 0.5, 0, 0], [0, 0, 1.0, 0]]), q, 2, "iid")
    for ids, vals in (([[0, 1], [2, -1]], [[0.5, 0.5], [1.0, 0.0]]), ([[0, 1], [2]], [[0.5, 0.5], [1.0]])):
        np.testing.assert_array_equal(mf.optimal_acceptance(TopK(ids, vals, 4), q, 2, "iid"), want)


def test_ragged_rows_padded_to_the_longest_are_refused_before_they_are_allocated() -> None:
    # 2.4 MB of input whose union-support rows, padded to the longest, would need ~9 GiB
    ids = [np.arange(20_000)] + [np.array([0])] * 20_000
    vals = [np.full(20_000, 1 / 20_000)] + [np.array([1.0])] * 20_000
    t = TopK(ids, vals, 49_152)
    with pytest.raises(ValueError, match=r"p, q: the rows on their union support, padded to the longest would need"):
        mf.optimal_acceptance(t, t, 2)
