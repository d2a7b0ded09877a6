"""The laws of the engine reference kernels (mdsd_fast.engines).

* Losslessness: the first two tokens of the generated stream (completed by a fresh target draw
  when a step emits one token) follow the target's law, by a Pearson chi-square at level 1e-6 on
  16 cells; each such test has a negative control that must fail it (a lossy rule in the same
  contract), and STEPS samples detect any law at chi-square distance >= MIN_DISTANCE.
* Registry verifiers at every node: for a depth-1 tree the output law equals the verifier's exact
  law given the tuple (the C++ LawVisitor, which tests/verifiers/test_verifiers.py checks against p).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdsd_fast as mf
from engine_reference import ref_vllm
from mdsd_fast import _core
from mdsd_fast.engines import rejection_sample, tree_speculative_sampling
from stats import chi2_pvalue, chi2_sf

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
    law = _core.verifiers.VerifierBatch(verifier, p[None], q[None], n, scheme, None, 1, mf.WOR_WORK_BUDGET).law(
        np.array([tup])
    )[0]
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
