"""acceptance_bounds: rigorous intervals for alpha* from truncated (top-k) logs.

Checked against brute force over completions (tests/_support/interval_reference.py, independent of the
module): every vertex pair of the two completion polytopes plus random mixtures, and the true
rows the logs were cut from. Power: each containment test runs 12 instances x ~1,000 completions;
the negative controls show the same check rejects an interval narrowed by 0.005 at either end and
the naive "rest bucket" value as a lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from interval_reference import sample, vertices

CASES = [("iid", 2), ("iid", 3), ("wor", 2), ("wor", 3), ("greedy", 3), ("topk", 2), ("top1+iid", 3), ("top1+wor", 3)]


def top_k(x: np.ndarray, k: int) -> np.ndarray:
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    out = np.zeros_like(x)
    np.put_along_axis(out, idx, np.take_along_axis(x, idx, axis=-1), axis=-1)
    return out


def _instances(seed: int, count: int, V: int = 7):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        P, Q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        yield top_k(P, int(rng.integers(3, 6))), top_k(Q, int(rng.integers(3, 6))), P, Q, rng


def _brute(p, q, P, Q, n, scheme, rng):
    """alpha* over all vertex pairs, 400 random mixtures and the true rows."""
    vp, vq = vertices(p), vertices(q)
    pp = np.concatenate([np.repeat(vp, len(vq), 0), sample(vp, 400, rng), P[None]])
    qq = np.concatenate([np.tile(vq, (len(vp), 1)), sample(vq, 400, rng), Q[None]])
    return mf.optimal_acceptance(pp, qq, n, scheme)


@pytest.mark.parametrize(("scheme", "n"), CASES)
def test_interval_contains_every_completion(scheme, n):
    missed = narrowed_caught = 0
    for p, q, P, Q, rng in _instances(100 + CASES.index((scheme, n)), 12):
        lo, hi = mf.acceptance_bounds(p, q, n, scheme)
        a = _brute(p, q, P, Q, n, scheme, rng)
        missed += int(a.min() < lo - 1e-12 or a.max() > hi + 1e-12)
        narrowed_caught += int(a.min() < lo + 0.005 or a.max() > hi - 0.005)
    assert missed == 0
    assert narrowed_caught >= 8  # negative control: measured 9-12 of the 12


def test_topk_interval_is_attained():
    for p, q, P, Q, rng in _instances(11, 12):
        lo, hi = mf.acceptance_bounds(p, q, 2, "topk")
        a = _brute(p, q, P, Q, 2, "topk", rng)
        assert abs(a.min() - lo) < 3e-9 and abs(a.max() - hi) < 3e-9


def _disjoint(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """p's unseen mass at its cap on the first tokens logged in neither row, q's spread flat over the
    rest of them (each side then lands where the other has nothing); also the count q spreads over."""
    d = np.flatnonzero((p == 0) & (q == 0))
    up, tp = 1 - p.sum(), p[p > 0].min()
    uq = 1 - q.sum()
    kp = int(np.ceil(up / tp))
    pc, qc = p.copy(), q.copy()
    pc[d[:kp]] = np.minimum(tp, up - tp * np.arange(kp))
    qc[d[kp:]] = uq / (len(d) - kp)
    assert qc[d[kp:]].max() <= q[q > 0].min()
    return pc, qc, len(d) - kp


@pytest.mark.parametrize(
    ("scheme", "n"), [("iid", 2), ("iid", 4), ("greedy", 3), ("top2+iid", 4), ("wor", 2), ("wor", 4)]
)
def test_low_is_attained_with_room(scheme, n):
    # With enough tokens logged in neither row the disjoint completion reaches low: exactly for
    # i.i.d. drafts, within C(k, 2) / spread without replacement (the bucket, docs/guide/intervals.md §2).
    rng = np.random.default_rng(3)
    V = 400
    for _ in range(6):
        P, Q = rng.dirichlet(np.full(V, 0.2)), rng.dirichlet(np.full(V, 0.2))
        p, q = top_k(P, 12), top_k(Q, 12)
        lo, _ = mf.acceptance_bounds(p, q, n, scheme)
        pc, qc, spread = _disjoint(p, q)
        a = mf.optimal_acceptance(pc, qc, n, scheme)
        assert lo <= a + 1e-12
        k = n
        allowed = 3e-9 if scheme != "wor" else k * (k - 1) / 2 / spread + 3e-9
        assert a - lo <= allowed


def test_rest_bucket_is_not_a_lower_bound():
    # Negative control: completing each row with one "rest" token (the same for p and q) gives an
    # alpha* that some consistent completion undercuts; the brute-force check sees it.
    undercut = 0
    for p, q, P, Q, rng in _instances(5, 12):
        V = p.size
        pr, qr = np.append(p, 1 - p.sum()), np.append(q, 1 - q.sum())
        naive = mf.optimal_acceptance(pr, qr, 2, "iid")
        a = _brute(p, q, P, Q, 2, "iid", rng)
        undercut += int(a.min() < naive - 1e-6)
        assert V == 7
    assert undercut >= 3  # measured: 6 of the 12


def test_complete_logs_give_alpha_star():
    rng = np.random.default_rng(8)
    P, Q = rng.dirichlet(np.full(50, 0.3), size=5), rng.dirichlet(np.full(50, 0.3), size=5)
    for scheme in ("iid", "wor", "greedy", "top2+wor", "topk"):
        lo, hi = mf.acceptance_bounds(P, Q, 3, scheme)
        a = mf.optimal_acceptance(P, Q, 3, scheme)
        assert np.all(lo <= a) and np.all(a <= hi) and np.all(hi - lo <= 3e-9)


def test_verifier_intervals():
    for p, q, _, _, rng in _instances(21, 6):
        vp, vq = vertices(p), vertices(q)
        pp, qq = sample(vp, 40, rng), sample(vq, 40, rng)
        lo, hi = mf.acceptance_bounds(p, q, 1, verifier="sd")
        sd = np.minimum(pp, qq).sum(axis=1)
        assert lo <= sd.min() + 1e-12 and sd.max() <= hi + 1e-12
        assert (lo, hi) == mf.acceptance_bounds(p, q, 1)
        for name, scheme in (("rrs", "iid"), ("rrs-wor", "wor"), ("optimal", "iid")):
            lo, hi = mf.acceptance_bounds(p, q, 2, scheme, verifier=name)
            acc = mf.acceptance(name, pp, qq, 2)
            assert lo <= acc.min() + 1e-12 and acc.max() <= hi + 1e-12


def test_batches_and_chunks_do_not_change_results():
    rng = np.random.default_rng(9)
    P, Q = rng.dirichlet(np.full(300, 0.2), size=7), rng.dirichlet(np.full(300, 0.2), size=7)
    p, q = top_k(P, 10), top_k(Q, 30)
    for scheme in ("iid", "wor", "top2+iid"):
        lo, hi = mf.acceptance_bounds(p, q, 3, scheme)
        parts = [mf.acceptance_bounds(p[i : i + 3], q[i : i + 3], 3, scheme) for i in (0, 3, 6)]
        assert np.array_equal(lo, np.concatenate([a for a, _ in parts]))
        assert np.array_equal(hi, np.concatenate([b for _, b in parts]))
        one = mf.acceptance_bounds(p[4], q[4], 3, scheme)
        assert isinstance(one[0], float) and one == (lo[4], hi[4])
    e = mf.acceptance_bounds(np.zeros((0, 5)), np.zeros((0, 5)), 2)
    assert e[0].shape == (0,) and e[1].shape == (0,)


@pytest.mark.parametrize(
    ("p", "q", "kwargs", "match"),
    [
        ([0.7, 0.4, 0, 0], [0.5, 0.2, 0, 0], {}, "p: row 0 has logged mass"),
        ([0.5, -0.1, 0, 0], [0.5, 0.2, 0, 0], {}, "p: row 0 has negative"),
        ([0.5, 0.2, 0, 0], [np.nan, 0.2, 0, 0], {}, "q: row 0 contains NaN"),
        ([0.0, 0.0, 0, 0], [0.5, 0.2, 0, 0], {}, "p: row 0 has no logged entry"),
        ([0.5, 0.1, 0, 0], [0.5, 0.2, 0, 0], {}, "p: row 0 leaves mass 0.4 unseen"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0.15, 0.15, 0], {}, "p, q: shapes differ"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"scheme": "nope"}, "scheme:"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"verifier": "kseq"}, "verifier:"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"verifier": "sd"}, "n: verifier 'sd'"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"verifier": "rrs", "scheme": "wor"}, "scheme: verifier 'rrs'"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"verifier": "optimal", "scheme": "wor"}, "scheme: verifier 'optimal'"),
        ([0.5, 0.2, 0, 0], [0.4, 0.2, 0.2, 0], {"scheme": "topk"}, "q: row 0 does not determine its top 2"),
        ([0.5, 0.2, 0, 0], [0.9, 0, 0, 0], {"scheme": "wor"}, "q: scheme 'wor' needs 2 logged"),
        ([0.5, 0.2, 0, 0], [0.5, 0.2, 0, 0], {"scheme": "top2+iid"}, "scheme: 'top2\\+iid'"),
    ],
)
def test_errors_name_the_argument(p, q, kwargs, match):
    with pytest.raises(ValueError, match=match):
        mf.acceptance_bounds(np.array(p, dtype=float), np.array(q, dtype=float), 2, **kwargs)


def test_more_search_never_raises_high():
    rng = np.random.default_rng(12)
    P, Q = rng.dirichlet(np.full(200, 0.2), size=6), rng.dirichlet(np.full(200, 0.2), size=6)
    p, q = top_k(P, 8), top_k(Q, 8)
    his = [mf.acceptance_bounds(p, q, 3, "iid", search_steps=s)[1] for s in (0, 12, 40)]
    assert np.all(his[1] <= his[0]) and np.all(his[2] <= his[1])
    assert np.all(his[2] >= mf.optimal_acceptance(P, Q, 3))
    with pytest.raises(ValueError, match="search_steps"):
        mf.acceptance_bounds(p, q, 3, search_steps=-1)


def test_topk_and_csr_logs_equal_dense():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(14)
    P, Q = rng.dirichlet(np.full(80, 0.3), size=3), rng.dirichlet(np.full(80, 0.3), size=3)
    p, q = top_k(P, 6), top_k(Q, 9)
    dense = mf.acceptance_bounds(p, q, 2, "wor")
    ids_p, ids_q = np.argsort(-P, axis=1)[:, :6], np.argsort(-Q, axis=1)[:, :9]
    tp = mf.TopK(ids_p, np.log(np.take_along_axis(P, ids_p, 1)), 80, logprobs=True)
    tq = mf.TopK(ids_q, np.take_along_axis(Q, ids_q, 1), 80)
    for a, b in ((tp, tq), (sp.csr_array(p), sp.csr_array(q))):
        lo, hi = mf.acceptance_bounds(a, b, 2, "wor")
        assert np.allclose(lo, dense[0], rtol=0, atol=1e-12) and np.allclose(hi, dense[1], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="p: row 0 lists a token twice|p: row 0 lists token"):
        mf.acceptance_bounds(mf.TopK(np.array([[1, 1]]), np.array([[0.3, 0.2]]), 80), tq, 2)


def test_dtype_errors():
    with pytest.raises(TypeError, match="p: expected float32 or float64"):
        mf.acceptance_bounds(np.array([1, 0]), np.array([0.5, 0.5]), 1)
    with pytest.raises(TypeError, match="n:"):
        mf.acceptance_bounds(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 1.5)  # type: ignore[arg-type]
