"""The union-support route of acceptance_bounds (TopK / scipy.sparse logs, never (rows, V) arrays)
against the dense route on the same logs: same intervals to 1e-12, same errors."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.intervals import acceptance_bounds

sp = pytest.importorskip("scipy.sparse")


def _logs(rng: np.random.Generator, B: int, V: int, k: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Random top-k logs (dense, zeros elsewhere): heavy-tailed rows, some with ties at the cut,
    some complete, logged mass below 1 by the cut tail."""
    out = []
    for _ in range(2):
        full = rng.dirichlet(np.full(V, 0.3), size=B)
        if ties:
            full[: B // 2] = np.round(full[: B // 2], 2) + 1e-3
            full /= full.sum(axis=1, keepdims=True)
        cut = np.zeros_like(full)
        top = np.argsort(-full, axis=1, kind="stable")[:, :k]
        np.put_along_axis(cut, top, np.take_along_axis(full, top, axis=1), axis=1)
        cut[0] = full[0]  # one complete row
        out.append(cut)
    return out[0], out[1]


def _topk(x: np.ndarray, logprobs: bool) -> mf.TopK:
    ids = [np.flatnonzero(r)[::-1] for r in x]  # descending ids: the route must not rely on order
    vals = [np.log(r[i]) if logprobs else r[i] for r, i in zip(x, ids, strict=True)]
    return mf.TopK(ids, vals, vocab_size=x.shape[1], logprobs=logprobs)


@pytest.mark.parametrize(("V", "k", "ties"), [(7, 3, False), (12, 5, True), (300, 8, True), (4096, 20, False)])
@pytest.mark.parametrize("scheme", ["iid", "wor", "greedy", "topk"])
def test_sparse_route_equals_dense(V: int, k: int, ties: bool, scheme: str) -> None:
    rng = np.random.default_rng(V + k)
    P, Q = _logs(rng, 10, V, k, ties)
    n = 2
    try:
        want = acceptance_bounds(P, Q, n, scheme, search_steps=3)
    except ValueError as exc:  # e.g. a tie at q's top-m cut: the sparse route must say the same
        for p, q in ((sp.csr_array(P), sp.csr_array(Q)), (_topk(P, False), _topk(Q, True))):
            with pytest.raises(ValueError) as got:
                acceptance_bounds(p, q, n, scheme, search_steps=3)
            assert str(got.value) == str(exc)
        return
    for p, q in (
        (sp.csr_array(P), sp.csr_array(Q)),
        (_topk(P, False), _topk(Q, False)),
        (_topk(P, True), _topk(Q, True)),
    ):
        got = acceptance_bounds(p, q, n, scheme, search_steps=3)
        tol = 1e-12 if not isinstance(p, mf.TopK) or not p.logprobs else 1e-9  # exp(log x) rounds
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=tol)
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=tol)


def test_sparse_route_large_vocabulary_contains_truth() -> None:
    """V = 49,152 top-20 rows: equal to the dense route, and the interval holds alpha* of the rows
    the logs were cut from (a completion)."""
    rng = np.random.default_rng(3)
    V, B = 49_152, 4
    full = np.zeros((2, B, V))
    for s in range(2):
        ids = rng.choice(V, size=(B, 60))
        for r in range(B):
            full[s, r, ids[r]] = rng.dirichlet(np.full(60, 0.5))
    cut = np.zeros_like(full)
    for s in range(2):
        top = np.argsort(-full[s], axis=1, kind="stable")[:, :20]
        np.put_along_axis(cut[s], top, np.take_along_axis(full[s], top, axis=1), axis=1)
    for scheme in ("iid", "wor"):
        want = acceptance_bounds(cut[0], cut[1], 2, scheme, search_steps=2)
        got = acceptance_bounds(sp.csr_array(cut[0]), sp.csr_array(cut[1]), 2, scheme, search_steps=2)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        truth = np.asarray(mf.optimal_acceptance(full[0], full[1], 2, scheme))
        assert (got[0] <= truth + 1e-12).all() and (truth <= got[1] + 1e-12).all()


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (np.array([[0.5, 0.6, 0.0]]), "logged mass"),
        (np.array([[0.5, -0.1, 0.0]]), "negative entries"),
        (np.array([[0.0, 0.0, 0.0]]), "no logged entry"),
        (np.array([[0.1, 0.0, 0.0]]), "can hold at most"),
    ],
)
def test_sparse_route_errors_match_dense(p: np.ndarray, message: str) -> None:
    q = np.array([[0.5, 0.3, 0.2]])
    with pytest.raises(ValueError, match=message) as dense:
        acceptance_bounds(p, q, 2)
    with pytest.raises(ValueError) as sparse:
        acceptance_bounds(sp.csr_array(p), sp.csr_array(q), 2)
    assert str(sparse.value) == str(dense.value)
