"""The engine reference kernels (mdsd_fast.engines) against independent references and the target law.

* Token for token: pure numpy re-implementations of vLLM V1's ``rejection_sample`` and SGLang's
  ``tree_speculative_sampling_target_only``, written from the engines' code
  (vllm/v1/sample/rejection_sampler.py; sgl-kernel/csrc/speculative/speculative_sampling.cuh),
  reproduced exactly by the C++ kernels under the same uniforms on random batches (ragged draft
  counts including 0, random trees, float32 and float64, n-gram drafts, greedy requests), and
  SGLang's and vLLM's published test vectors.
* Losslessness: the first two tokens of the generated stream (completed by a fresh target draw
  when a step emits one token) follow the target's law, by a Pearson chi-square at level 1e-6 on
  16 cells; each such test has a negative control that must fail it (a lossy rule in the same
  contract), and STEPS samples detect any law at chi-square distance >= MIN_DISTANCE.
* Registry verifiers at every node: for a depth-1 tree the output law equals the verifier's exact
  law given the tuple (the C++ LawVisitor, which tests/test_verifiers.py checks against p).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast.engines import TREE_VERIFIERS, rejection_sample, tree_speculative_sampling
from test_verifiers_stats import chi2_pvalue, chi2_sf

LEVEL = 1e-6
STEPS = 30_000


def _detectable(steps: int, df: int, level: float = LEVEL, power: float = 0.99) -> float:
    """Smallest chi-square distance sum (a - p)^2 / p that a level-`level` test on `steps` samples
    rejects with probability >= `power` (normal approximation of the noncentral chi-square)."""
    lo, hi = 0.0, 1e4
    for _ in range(200):  # the critical value
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if chi2_sf(mid, df) > level else (lo, mid)
    crit, z = hi, 2.3263478740408408  # z: the 0.99 normal quantile
    lam_lo, lam_hi = 0.0, 1e5
    for _ in range(200):
        lam = 0.5 * (lam_lo + lam_hi)
        ok = df + lam - z * math.sqrt(2 * (df + 2 * lam)) > crit
        lam_lo, lam_hi = (lam_lo, lam) if ok else (lam, lam_hi)
    assert power == 0.99
    return lam_hi / steps


#: With 30,000 samples on 15 degrees of freedom: about 0.0035 (e.g. a shift of 0.01 in one cell of
#: probability 0.03, 0.007 on both sides of a 0.05 cell).
MIN_DISTANCE = _detectable(STEPS, 15)


# ----------------------------------------------------------------------------- references


def ref_vllm(ids, counts, dp, tp, bonus, greedy, u, noise, width, naive=False):
    """vLLM V1 rejection_sample, as its triton kernels read (greedy, random, recovered).
    naive=True: the recovered token drawn from p instead of the residual (a negative control)."""
    out = np.full((len(counts), width + 1), -1, dtype=np.int64)
    start = 0
    for b, n in enumerate(counts):
        rejected = False
        for pos in range(n):
            t = start + pos
            x, p = ids[t], tp[t]
            if greedy is not None and greedy[b]:
                out[b, pos] = np.argmax(p)
                rejected = out[b, pos] != x
            else:
                qx = 1.0 if dp is None else dp[t, x]
                if qx > 0 and p[x] / qx >= u[t]:
                    out[b, pos] = x
                else:
                    if naive:
                        r = p
                    elif dp is None:
                        r = p.copy()
                        r[x] = 0.0
                    else:
                        r = np.maximum(p - dp[t], 0.0)
                    out[b, pos] = np.argmax(r / noise[b])
                    rejected = True
            if rejected:
                break
        if not rejected:
            out[b, n] = bonus[b]
        start += n
    return out


def ref_sglang(cand, idx, nxt, sib, coins, final, tp, dp, num_spec, t_single=1.0, t_acc=1.0):
    """SGLang's TreeSpeculativeSamplingTargetOnly, draft_probs mutated as the kernel does (on a copy)."""
    B, N, V = tp.shape
    predicts = np.full(B * N, -1, dtype=np.int64)
    acc_index = np.full((B, num_spec), -1, dtype=np.int64)
    acc_num = np.zeros(B, dtype=np.int64)
    t_acc = max(t_acc, 1e-9)
    for b in range(B):
        d = np.zeros((N, V)) if dp is None else dp[b].copy()
        prob_acc, row, coin, last, k, cur = 0.0, 0, coins[b, 0], idx[b, 0], 0, 0
        acc_index[b, 0] = last
        for _ in range(1, num_spec):
            cur = nxt[b, cur]
            while cur != -1:
                tok = cand[b, cur]
                ps = tp[b, row, tok]
                prob_acc += ps
                if coin <= prob_acc / t_acc or ps >= t_single:
                    prob_acc, row, coin = 0.0, cur, coins[b, cur]
                    predicts[last] = tok
                    k += 1
                    last = idx[b, cur]
                    acc_index[b, k] = last
                    break
                d[row, tok] = tp[b, row, tok]
                cur = sib[b, cur]
            if cur == -1:
                break
        acc_num[b] = k
        r = np.maximum(tp[b, row] - (d[row] if k != num_spec - 1 else 0.0), 0.0)
        cdf = np.cumsum(r)
        hit = np.nonzero((cdf > final[b] * cdf[-1]) & (r > 0))[0]
        predicts[last] = hit[0] if hit.size else V - 1
    return predicts, acc_index, acc_num


# ----------------------------------------------------------------------------- random inputs


def _rows(rng: np.random.Generator, m: int, V: int, dtype: type) -> np.ndarray:
    """Random distributions with exact zeros (sparse rows) and a zero padded last column."""
    x = rng.dirichlet(np.full(V, 0.7), size=m) * (rng.random((m, V)) < 0.75)
    x[:, -1] = 0.0 if V > 2 else x[:, -1]
    x[x.sum(axis=1) == 0, 0] = 1.0
    return (x / x.sum(axis=1, keepdims=True)).astype(dtype)


def _chain_case(rng: np.random.Generator, dtype: type) -> dict:
    B, V = int(rng.integers(1, 7)), int(rng.integers(1, 9))
    counts = rng.integers(0, 5, size=B)
    T = int(counts.sum())
    ngram = rng.random() < 0.3
    greedy = rng.random(B) < 0.3 if rng.random() < 0.5 else None
    return dict(
        draft_token_ids=rng.integers(0, V, size=T),
        num_draft_tokens=counts.tolist(),
        draft_probs=None if ngram else _rows(rng, T, V, dtype),
        target_probs=_rows(rng, T, V, dtype),
        bonus_token_ids=rng.integers(0, V, size=(B, 1)),
        uniform_probs=rng.random(T).astype(dtype),
        recovery_noise=rng.exponential(size=(B, V)).astype(dtype) + np.asarray(1e-30, dtype),
        is_greedy=greedy,
        max_spec_len=int(counts.max(initial=0)) + int(rng.integers(0, 2)),
    )


def _ref_chain(c: dict) -> np.ndarray:
    f64 = lambda x: None if x is None else np.asarray(x, dtype=np.float64)  # noqa: E731
    return ref_vllm(
        c["draft_token_ids"], c["num_draft_tokens"], f64(c["draft_probs"]), f64(c["target_probs"]),
        c["bonus_token_ids"][:, 0], c["is_greedy"], f64(c["uniform_probs"]), f64(c["recovery_noise"]),
        c["max_spec_len"],
    )  # fmt: skip


def _random_tree(rng: np.random.Generator, N: int) -> tuple[np.ndarray, np.ndarray]:
    """First-child / next-sibling arrays of a random tree on N nodes (root 0, random labels)."""
    labels = np.concatenate([[0], 1 + rng.permutation(N - 1)])
    kids: list[list[int]] = [[] for _ in range(N)]
    for j in range(1, N):
        kids[labels[int(rng.integers(0, j))]].append(int(labels[j]))
    nxt, sib = np.full(N, -1), np.full(N, -1)
    for i, ks in enumerate(kids):
        if ks:
            nxt[i] = ks[0]
            for a, c in zip(ks, ks[1:], strict=False):
                sib[a] = c
    return nxt, sib


def _tree_case(rng: np.random.Generator, dtype: type) -> dict:
    B, N, V = int(rng.integers(1, 6)), int(rng.integers(1, 10)), int(rng.integers(1, 9))
    trees = [_random_tree(rng, N) for _ in range(B)]
    perm = rng.permutation(B * N).reshape(B, N) if rng.random() < 0.5 else None
    return dict(
        candidates=rng.integers(0, V, size=(B, N)),
        retrive_next_token=np.stack([t[0] for t in trees]),
        retrive_next_sibling=np.stack([t[1] for t in trees]),
        target_probs=_rows(rng, B * N, V, dtype).reshape(B, N, V),
        uniform_samples=rng.random((B, N)).astype(dtype),
        uniform_samples_for_final_sampling=rng.random(B).astype(dtype),
        draft_probs=_rows(rng, B * N, V, dtype).reshape(B, N, V) if rng.random() < 0.3 else None,
        retrive_index=perm,
        num_speculative_tokens=int(rng.integers(1, N + 2)) if rng.random() < 0.7 else None,
    )


def _depth(nxt: np.ndarray, sib: np.ndarray) -> int:
    best, stack = 0, [(0, 0)]
    while stack:
        i, d = stack.pop()
        best = max(best, d)
        c = nxt[i]
        while c != -1:
            stack.append((c, d + 1))
            c = sib[c]
    return best


def _ref_tree(c: dict, t_single: float = 1.0, t_acc: float = 1.0) -> tuple:
    B, N = c["candidates"].shape
    f64 = lambda x: None if x is None else np.asarray(x, dtype=np.float64)  # noqa: E731
    spec = c["num_speculative_tokens"]
    if spec is None:
        spec = 1 + max(_depth(a, s) for a, s in zip(c["retrive_next_token"], c["retrive_next_sibling"], strict=True))
    idx = c["retrive_index"] if c["retrive_index"] is not None else np.arange(B * N).reshape(B, N)
    return ref_sglang(
        c["candidates"], idx, c["retrive_next_token"], c["retrive_next_sibling"], f64(c["uniform_samples"]),
        f64(c["uniform_samples_for_final_sampling"]), f64(c["target_probs"]), f64(c["draft_probs"]), spec,
        t_single, t_acc,
    )  # fmt: skip


# ----------------------------------------------------------------------------- token for token


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vllm_token_for_token(dtype: type) -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        c = _chain_case(rng, dtype)
        want = _ref_chain(c)
        got = rejection_sample(**c, threads=1)
        assert got.dtype == np.int32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sglang_token_for_token(dtype: type) -> None:
    rng = np.random.default_rng(12)
    for it in range(300):
        c = _tree_case(rng, dtype)
        th = (1.0, 1.0) if it % 3 else (float(rng.random()), float(rng.random()))
        got = tree_speculative_sampling(**c, threshold_single=th[0], threshold_acc=th[1], threads=1)
        for g, w in zip(got, _ref_tree(c, *th), strict=True):
            assert g.dtype == np.int32
            np.testing.assert_array_equal(g, w)


def test_threads_do_not_change_results() -> None:
    rng = np.random.default_rng(13)
    B, N, V = 400, 7, 6
    c = _tree_case(rng, np.float64)
    trees = [_random_tree(rng, N) for _ in range(B)]
    c.update(
        candidates=rng.integers(0, V, size=(B, N)),
        retrive_next_token=np.stack([t[0] for t in trees]),
        retrive_next_sibling=np.stack([t[1] for t in trees]),
        target_probs=_rows(rng, B * N, V, np.float64).reshape(B, N, V),
        draft_probs=_rows(rng, B * N, V, np.float64).reshape(B, N, V) + 0.0,
        uniform_samples=rng.random((B, N)),
        uniform_samples_for_final_sampling=rng.random(B),
        retrive_index=None,
        num_speculative_tokens=None,
    )
    c["draft_probs"] = np.full((B, N, V), 1.0 / V)  # every token draftable: any tuple is an iid tuple
    for verifier in ("sglang", "rrs", "optimal"):
        kw = dict(c) if verifier != "sglang" else {**c, "draft_probs": None}
        runs = [tree_speculative_sampling(**kw, verifier=verifier, threads=t) for t in (1, 2, 5)]
        for r in runs[1:]:
            for a, b in zip(runs[0], r, strict=True):
                np.testing.assert_array_equal(a, b)
    chain = _chain_case(np.random.default_rng(14), np.float64)
    np.testing.assert_array_equal(rejection_sample(**chain, threads=1), rejection_sample(**chain, threads=3))


def test_sglang_published_vectors() -> None:
    """sgl-kernel's test_tree_speculative_sampling_target_only cases (thresholds (1, 1) and (0, 0))."""
    candidates = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12]])
    retrive_index = np.array([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]])
    nxt = np.array([[1, 2, -1, 4, 5, -1], [4, 2, 3, -1, 5, -1]])
    sib = np.array([[-1, 3, -1, -1, -1, -1], [-1, -1, -1, -1, 1, -1]])
    logits = np.ones((2, 6, 20), dtype=np.float32)
    for b, i, tok in [(0, 0, 3), (0, 3, 4), (0, 4, 5), (1, 0, 11), (1, 4, 12)]:
        logits[b, i, tok] = 10
    logits[logits.max(axis=2) < 10, 18] = 10
    z = np.exp((logits - logits.max(axis=2, keepdims=True)) / np.float32(0.01))
    target = (z / z.sum(axis=2, keepdims=True)).astype(np.float32)
    rng = np.random.default_rng(0)
    kw = dict(
        retrive_index=retrive_index,
        uniform_samples=rng.uniform(0.01, 0.99, size=(2, 6)).astype(np.float32),
        uniform_samples_for_final_sampling=rng.uniform(0.01, 0.99, size=2).astype(np.float32),
        num_speculative_tokens=4,
    )
    one = tree_speculative_sampling(candidates, nxt, sib, target, **kw)
    assert one.predicts.tolist() == [3, -1, -1, 4, 5, 18, 11, -1, -1, -1, 12, 18]
    assert one.accept_index.tolist() == [[0, 3, 4, 5], [6, 10, 11, -1]]
    assert one.accept_token_num.tolist() == [3, 2]
    zero = tree_speculative_sampling(candidates, nxt, sib, target, **kw, threshold_single=0.0, threshold_acc=0.0)
    assert zero.predicts.tolist() == [1, 2, 18, -1, -1, -1, 11, -1, -1, -1, 12, 18]
    assert zero.accept_index.tolist() == [[0, 1, 2, -1], [6, 10, 11, -1]]
    assert zero.accept_token_num.tolist() == [2, 2]


def test_vllm_greedy_cases() -> None:
    """The greedy cases of vLLM's tests/v1/sample/test_rejection_sampler.py (temperature 0)."""
    V = 8

    def run(spec: list[list[int]], argmax: list[list[int]], bonus: list[int]) -> list[list[int]]:
        flat = [t for s in spec for t in s]
        target = np.eye(V)[[t for a in argmax for t in a]].reshape(len(flat), V)
        greedy = np.ones(len(spec), dtype=bool)
        out = rejection_sample(flat, [len(s) for s in spec], None, target, [[b] for b in bonus], is_greedy=greedy)
        return out.tolist()

    assert run([[1, 2, 3]], [[1, 2, 3]], [4]) == [[1, 2, 3, 4]]  # perfect match: bonus appended
    assert run([[1, 2, 3]], [[1, 5, 3]], [4]) == [[1, 5, -1, -1]]  # early mismatch
    assert run([[1, 2], [3]], [[1, 2], [7]], [5, 4]) == [[1, 2, 5], [7, -1, -1]]  # ragged
    assert run([[], [3]], [[], [3]], [5, 4]) == [[5, -1], [3, 4]]  # no drafts: the bonus alone


def test_vllm_edge_rules() -> None:
    """q(x) = 0 rejects even when p(x) > 0; u = 0 accepts even p(x) = 0; the recovered token
    of an all-zero residual is token 0 (first argmax); padded zero columns are never recovered."""
    p = np.array([[0.5, 0.5, 0.0, 0.0]])
    q0 = np.array([[1.0, 0.0, 0.0, 0.0]])
    noise = np.ones((1, 4))
    kw = dict(bonus_token_ids=[[3]], recovery_noise=noise)
    assert rejection_sample([1], [1], q0, p, uniform_probs=[0.0], **kw).tolist() == [[1, -1]]
    out = rejection_sample([2], [1], np.array([[0.0, 0.0, 1.0, 0.0]]), p, uniform_probs=[0.0], **kw)
    assert out.tolist() == [[2, 3]]  # p/q = 0 >= u = 0: accepted, as vLLM does
    out = rejection_sample([0], [1], p, p, uniform_probs=[0.999], **kw)
    assert out.tolist() == [[0, 3]]  # p = q: p/q = 1 >= u
    # n-gram draft with p(x) = 0: rejected, recovered from p with x zeroed
    out = rejection_sample(
        [3], [1], None, p, uniform_probs=[0.5], bonus_token_ids=[[3]], recovery_noise=[[2.0, 1.0, 1.0, 1.0]]
    )
    assert out.tolist() == [[1, -1]]


# ----------------------------------------------------------------------------- losslessness

V4 = 4
#: A bigram target and draft on 4 tokens: row a is the next-token law after token a.
P_BIGRAM = np.array(
    [[0.40, 0.30, 0.20, 0.10], [0.10, 0.20, 0.30, 0.40], [0.25, 0.25, 0.40, 0.10], [0.50, 0.05, 0.05, 0.40]]
)
Q_BIGRAM = np.array(
    [[0.10, 0.20, 0.30, 0.40], [0.40, 0.30, 0.20, 0.10], [0.25, 0.40, 0.25, 0.10], [0.10, 0.40, 0.40, 0.10]]
)
ROOT = 0


def _pair_pvalue(t1: np.ndarray, t2: np.ndarray) -> float:
    """Chi-square p-value of (t1, t2) against P(t1 | ROOT) P(t2 | t1), with the power check."""
    law = (P_BIGRAM[ROOT][:, None] * P_BIGRAM).ravel()
    pval, _, df = chi2_pvalue(t1 * V4 + t2, law)
    assert df == 15 and MIN_DISTANCE < 0.004
    return pval


def _complete(rng: np.random.Generator, stream: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The first two tokens of each stream; a stream of one token is completed from the target."""
    t1 = np.array([s[0] for s in stream])
    fresh = np.array([rng.choice(V4, p=P_BIGRAM[a]) for a in t1])
    t2 = np.array([s[1] if len(s) > 1 else f for s, f in zip(stream, fresh, strict=True)])
    return t1, t2


def _draw(rng: np.random.Generator, q: np.ndarray, k: int, scheme: str) -> np.ndarray:
    """k drafts per row of q (M, V): i.i.d., without replacement (Gumbel top-k) or greedy."""
    M = q.shape[0]
    if scheme == "iid":
        return (rng.random((M, k, 1)) > np.cumsum(q, axis=1)[:, None, :]).sum(axis=2)
    keys = np.log(q) + rng.gumbel(size=q.shape)
    if scheme == "wor":
        return np.argsort(-keys, axis=1, kind="stable")[:, :k]
    top = np.argsort(-q, axis=1, kind="stable")[:, : k - 1]  # greedy: top k-1 (lower id on ties) + one draw
    keys[np.arange(M)[:, None], top] = -np.inf
    return np.concatenate([top, np.argmax(keys, axis=1)[:, None]], axis=1)


@pytest.mark.parametrize("rule", ["kernel", "ngram", "naive"])
def test_vllm_chain_is_lossless(rule: str) -> None:
    """Chains of 2 drafts from the bigram draft. "ngram": the same drafts passed as n-gram drafts
    (draft_probs=None: accept x with probability p(x), else recover from p without x), which is
    lossless for any draft law, only with a lower acceptance. "naive": the negative control, the
    reference with the recovered token drawn from p instead of max(p - q, 0): it must fail."""
    rng = np.random.default_rng(21)
    M = STEPS
    x1 = _draw(rng, np.tile(Q_BIGRAM[ROOT], (M, 1)), 1, "iid")[:, 0]
    x2 = _draw(rng, Q_BIGRAM[x1], 1, "iid")[:, 0]
    drafts = np.stack([x1, x2], axis=1).ravel()
    ctx = np.stack([np.full(M, ROOT), x1], axis=1).ravel()
    args = dict(
        draft_token_ids=drafts,
        num_draft_tokens=[2] * M,
        draft_probs=None if rule == "ngram" else Q_BIGRAM[ctx],
        target_probs=P_BIGRAM[ctx],
        bonus_token_ids=_draw(rng, P_BIGRAM[x2], 1, "iid"),
        uniform_probs=rng.random(2 * M),
        recovery_noise=rng.exponential(size=(M, V4)),
    )
    if rule == "naive":
        a = args
        out = ref_vllm(drafts, a["num_draft_tokens"], a["draft_probs"], a["target_probs"], a["bonus_token_ids"][:, 0],
                       None, a["uniform_probs"], a["recovery_noise"], 2, naive=True)  # fmt: skip
    else:
        out = rejection_sample(**args)
    t1, t2 = _complete(rng, [[t for t in row if t >= 0] for row in out.tolist()])
    pval = _pair_pvalue(t1, t2)
    assert (pval < LEVEL) if rule == "naive" else (pval > LEVEL), pval


def _two_level_tree(rng: np.random.Generator, M: int, k1: int, k2: int, scheme: str) -> dict:
    """M trees: the root's k1 children drafted from Q(. | ROOT), each child's k2 children from
    Q(. | child), by `scheme`; rows of target_probs / draft_probs are the bigram rows of each node."""
    N = 1 + k1 + k1 * k2
    kids = _draw(rng, np.tile(Q_BIGRAM[ROOT], (M, 1)), k1, scheme)
    grand = np.stack([_draw(rng, Q_BIGRAM[kids[:, j]], k2, scheme) for j in range(k1)], axis=1)
    cand = np.concatenate([np.full((M, 1), ROOT), kids, grand.reshape(M, k1 * k2)], axis=1)
    nxt, sib = np.full(N, -1), np.full(N, -1)
    nxt[0] = 1
    sib[1:k1] = np.arange(2, k1 + 1)
    for j in range(k1):
        first = 1 + k1 + j * k2
        nxt[1 + j] = first
        sib[first : first + k2 - 1] = np.arange(first + 1, first + k2)
    return dict(
        candidates=cand,
        retrive_next_token=np.tile(nxt, (M, 1)),
        retrive_next_sibling=np.tile(sib, (M, 1)),
        target_probs=P_BIGRAM[cand],
        draft_probs=Q_BIGRAM[cand],
        uniform_samples=rng.random((M, N)),
        uniform_samples_for_final_sampling=rng.random(M),
    )


def _streams(res: mf.engines.TreeVerification, cand: np.ndarray) -> list[list[int]]:
    N = cand.shape[1]
    out = []
    for b, (acc, k) in enumerate(zip(res.accept_index.tolist(), res.accept_token_num.tolist(), strict=True)):
        path = [int(cand.flat[i]) for i in acc[1 : k + 1]]
        out.append(path + [int(res.predicts[acc[k]])])
        assert all(i // N == b for i in acc[: k + 1])
    return out


@pytest.mark.parametrize(
    ("verifier", "scheme", "thresholds", "lossless"),
    [
        ("sglang", "wor", (1.0, 1.0), True),
        ("sglang", "wor", (1.0, 0.6), False),  # negative control: SGLang's relaxed accumulation threshold
        ("rrs-wor", "wor", None, True),
        ("sweep", "wor", None, True),
        ("kseq", "iid", None, True),
        ("optimal", "iid", None, True),
        ("greedy", "greedy", None, True),
    ],
)
def test_tree_is_lossless(verifier: str, scheme: str, thresholds: tuple[float, float] | None, lossless: bool) -> None:
    rng = np.random.default_rng(31)
    c = _two_level_tree(rng, STEPS, 2, 2, scheme)
    kw: dict = {"threshold_single": thresholds[0], "threshold_acc": thresholds[1]} if thresholds else {"scheme": scheme}
    if verifier == "sglang":
        c["draft_probs"] = None
    res = tree_speculative_sampling(**c, verifier=verifier, **kw)
    t1, t2 = _complete(rng, _streams(res, c["candidates"]))
    pval = _pair_pvalue(t1, t2)
    assert (pval > LEVEL) if lossless else (pval < LEVEL), pval


@pytest.mark.parametrize(
    ("verifier", "scheme", "tup"),
    [
        ("sd", "iid", [2]),
        ("rrs", "iid", [2, 2, 0]),
        ("rrs-wor", "wor", [3, 0, 1]),
        ("kseq", "iid", [1, 3]),
        ("spechub", "spechub", [2, 4]),
        ("greedy", "greedy", [4, 1, 0]),
        ("optimal", "iid", [0, 0, 4]),
        ("optimal", "wor", [1, 4]),
        ("sweep", "wor", [3, 4, 2]),
    ],
)
def test_depth_one_tree_matches_the_verifier_law(verifier: str, scheme: str, tup: list[int]) -> None:
    """At a depth-1 tree the node's output law is the verifier's exact law given the tuple."""
    p = np.array([0.30, 0.05, 0.25, 0.15, 0.25])
    q = np.array([0.10, 0.20, 0.15, 0.20, 0.35])
    n, M = len(tup), 20_000
    law = _core.VerifierBatch(verifier, p[None], q[None], n, scheme, None, 1, mf.WOR_WORK_BUDGET).law(np.array([tup]))[
        0
    ]
    rng = np.random.default_rng(41)
    coins, final = rng.random((M, n + 1)), rng.random(M)
    nxt = np.array([1] + [-1] * n)
    sib = np.array([-1, *range(2, n + 1), -1])
    res = tree_speculative_sampling(
        np.tile([0, *tup], (M, 1)), np.tile(nxt, (M, 1)), np.tile(sib, (M, 1)), np.tile(p, (M, n + 1, 1)),
        uniform_samples=coins, uniform_samples_for_final_sampling=final,
        draft_probs=np.tile(q, (M, n + 1, 1)), verifier=verifier, scheme=scheme, num_speculative_tokens=2,
    )  # fmt: skip
    root_out = res.predicts[:: n + 1].astype(np.int64)
    pval, _, _ = chi2_pvalue(root_out, law)
    assert pval > LEVEL, (pval, np.bincount(root_out, minlength=5) / M, law)
    accepted = res.accept_token_num == 1
    assert np.array_equal(accepted, np.isin(root_out, tup))  # accepted exactly when the output is a child
    # explicit randomness: the first 5 requests alone, with their own uniforms, give the same tokens
    first = tree_speculative_sampling(
        np.tile([0, *tup], (5, 1)), np.tile(nxt, (5, 1)), np.tile(sib, (5, 1)), np.tile(p, (5, n + 1, 1)),
        uniform_samples=coins[:5], uniform_samples_for_final_sampling=final[:5],
        draft_probs=np.tile(q, (5, n + 1, 1)), verifier=verifier, scheme=scheme, num_speculative_tokens=2,
    )  # fmt: skip
    np.testing.assert_array_equal(first.predicts, res.predicts[: 5 * (n + 1)])


# ----------------------------------------------------------------------------- torch, validation


def test_torch_tensors_in_and_out() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(51)
    for dtype in (np.float32, np.float64):
        c = _chain_case(rng, dtype)
        t = {k: torch.from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v for k, v in c.items()}
        got = rejection_sample(**t)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.int32
        np.testing.assert_array_equal(got.numpy(), _ref_chain(c))
        tc = _tree_case(rng, dtype)
        tt = {k: torch.from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v for k, v in tc.items()}
        res = tree_speculative_sampling(**tt)
        for g, w in zip(res, _ref_tree(tc), strict=True):
            assert isinstance(g, torch.Tensor) and g.dtype == torch.int32
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(TypeError, match="target_probs"):
        rejection_sample([0], [1], None, torch.ones(1, 2, dtype=torch.bfloat16) / 2, [[0]], is_greedy=np.ones(1, bool))


def _chain_ok() -> dict:
    return dict(
        draft_token_ids=[1, 0],
        num_draft_tokens=[2, 0],
        draft_probs=np.full((2, 3), 1 / 3),
        target_probs=np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]),
        bonus_token_ids=[[2], [1]],
        uniform_probs=[0.5, 0.5],
        recovery_noise=np.ones((2, 3)),
    )


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"num_draft_tokens": [1, 0]}, ValueError, "num_draft_tokens: the counts sum to 1"),
        ({"num_draft_tokens": [3, -1]}, ValueError, "num_draft_tokens: counts must be >= 0"),
        ({"cu_num_draft_tokens": [1, 2]}, ValueError, "cu_num_draft_tokens"),
        ({"draft_token_ids": [1, 3]}, ValueError, r"draft_token_ids: id 3 outside \[0, 3\)"),
        ({"draft_token_ids": [1.0, 0.0]}, TypeError, "draft_token_ids: expected integer ids"),
        ({"bonus_token_ids": [[2], [-1]]}, ValueError, "bonus_token_ids: id -1"),
        ({"uniform_probs": [0.5, 1.0]}, ValueError, r"uniform_probs: uniforms must lie in \[0, 1\)"),
        ({"uniform_probs": None}, ValueError, "uniform_probs: needed"),
        ({"recovery_noise": np.zeros((2, 3))}, ValueError, "recovery_noise: Exp"),
        ({"target_probs": np.array([[0.2, 0.3, np.nan], [0.6, 0.2, 0.2]])}, ValueError, "target_probs: row 0"),
        ({"target_probs": np.array([[0.2, 0.3, 0.4], [0.6, 0.2, 0.2]])}, ValueError, "target_probs: row 0 sums"),
        ({"draft_probs": np.ones((2, 3))}, ValueError, "draft_probs: row 0 sums to 3"),
        ({"draft_probs": np.ones((2, 4)) / 4}, ValueError, r"draft_probs: expected shape \(2, 3\)"),
        ({"max_spec_len": 1}, ValueError, "max_spec_len"),
        ({"is_greedy": [1, 0]}, TypeError, "is_greedy: expected bools"),
    ],
)
def test_vllm_errors_name_the_argument(change: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        rejection_sample(**{**_chain_ok(), **change})


def _tree_ok() -> dict:
    return dict(
        candidates=[[0, 1, 2]],
        retrive_next_token=[[1, -1, -1]],
        retrive_next_sibling=[[-1, 2, -1]],
        target_probs=np.full((1, 3, 3), 1 / 3),
        uniform_samples=[[0.5, 0.5, 0.5]],
        uniform_samples_for_final_sampling=[0.5],
        draft_probs=np.full((1, 3, 3), 1 / 3),
        verifier="rrs-wor",
    )


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"retrive_next_sibling": [[-1, 2, 1]]}, ValueError, "reached twice from the root"),
        ({"retrive_next_token": [[1, 0, -1]]}, ValueError, "reached twice from the root"),
        ({"retrive_next_token": [[3, -1, -1]]}, ValueError, r"retrive_next_token: id 3 outside \[-1, 3\)"),
        ({"retrive_index": [[0, 1, 1]]}, ValueError, "retrive_index: entries must be distinct"),
        ({"candidates": [[0, 1, 5]]}, ValueError, "candidates: id 5"),
        ({"uniform_samples": [[0.5, -0.1, 0.5]]}, ValueError, "uniform_samples: uniforms"),
        ({"uniform_samples_for_final_sampling": [1.5]}, ValueError, "uniform_samples_for_final_sampling"),
        ({"verifier": "optimal-lp"}, ValueError, "verifier: expected one of"),
        ({"verifier": "sd"}, ValueError, "request 0, node 0 .* the node has 2 children"),
        ({"candidates": [[0, 1, 1]]}, ValueError, "request 0, node 0 .*appears twice"),
        ({"draft_probs": None}, ValueError, "draft_probs: verifier 'rrs-wor' needs"),
        ({"scheme": "iid"}, ValueError, "scheme: verifier 'rrs-wor' verifies 'wor'"),
        ({"threshold_acc": 0.5}, ValueError, "only verifier='sglang' has thresholds"),
        (
            {"verifier": "sglang", "threshold_single": 2.0},
            ValueError,
            r"threshold_single: expected a number in \[0, 1\]",
        ),
        ({"num_speculative_tokens": 0}, ValueError, "num_speculative_tokens"),
    ],
)
def test_tree_errors_name_the_argument(change: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        tree_speculative_sampling(**{**_tree_ok(), **change})


def test_tree_verifiers_list() -> None:
    assert TREE_VERIFIERS[0] == "sglang" and "optimal-lp" not in TREE_VERIFIERS
    assert set(TREE_VERIFIERS[1:]) == set(mf.verifiers) - {"optimal-lp"}
