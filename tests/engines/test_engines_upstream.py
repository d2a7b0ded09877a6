"""The engines' own tests, ported to mdsd_fast.engines with their inputs, so that an upstream change
is one diff away.

* SGLang (sgl-project/sglang test/registered/kernels/ops/speculative/test_speculative_sampling.py
  after SGLang PR #35798): the published tree vector at thresholds (1, 1) and (0, 0), and the CDF
  boundary cases the PR added; the expectations before the PR under ``verifier="sglang-pre-35798"``;
  the zero-residual fallback and the float32 thresholds; random trees token for token against
  an independent numpy reading of the current kernel.
* vLLM (vllm-project/vllm tests/v1/sample/test_rejection_sampler.py): the greedy cases (argmax
  rows standing for the test's logits), and the -1 placeholder drafts of vLLM PR #46533.
* flashinfer (flashinfer-ai/flashinfer tests/utils/test_sampling.py, test_chain_speculative_sampling):
  a one-hot target reproduces the drafts and the bonus; otherwise the output is a run of accepted
  drafts, one differing token, then -1.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine_reference import ref_tree, tree_case
from mdsd_fast.engines import rejection_sample, tree_speculative_sampling

# ----------------------------------------------------------------------------- SGLang


def _published_inputs() -> tuple[list, dict]:
    """The vector of SGLang's test_tree_speculative_sampling_target_only (softmax at temperature 0.01
    in float32: every entry but the hot one underflows to 0)."""
    candidates = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12]])
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
        retrive_index=np.array([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]),
        uniform_samples=rng.uniform(0.01, 0.99, size=(2, 6)).astype(np.float32),
        uniform_samples_for_final_sampling=rng.uniform(0.01, 0.99, size=2).astype(np.float32),
        num_speculative_tokens=4,
    )
    return [candidates, nxt, sib, target], kw


ACCEPTED = ([3, -1, -1, 4, 5, 18, 11, -1, -1, -1, 12, 18], [[0, 3, 4, 5], [6, 10, 11, -1]], [3, 2])
#: (0, 0) before SGLang PR #35798: the zero-probability first child was accepted at every level.
ZERO_MASS_ACCEPTED = ([1, 2, 18, -1, -1, -1, 11, -1, -1, -1, 12, 18], [[0, 1, 2, -1], [6, 10, 11, -1]], [2, 2])


@pytest.mark.parametrize(
    ("verifier", "thresholds", "want"),
    [
        ("sglang", (1.0, 1.0), ACCEPTED),
        ("sglang", (0.0, 0.0), ACCEPTED),
        ("sglang-pre-35798", (1.0, 1.0), ACCEPTED),
        ("sglang-pre-35798", (0.0, 0.0), ZERO_MASS_ACCEPTED),
    ],
)
def test_sglang_published_vector(verifier: str, thresholds: tuple[float, float], want: tuple) -> None:
    args, kw = _published_inputs()
    got = tree_speculative_sampling(
        *args, **kw, verifier=verifier, threshold_single=thresholds[0], threshold_acc=thresholds[1]
    )
    assert (got.predicts.tolist(), got.accept_index.tolist(), got.accept_token_num.tolist()) == want


def _root(children: list[int], p: list[float], coin: float, threshold_single: float, verifier: str) -> tuple[int, int]:
    """SGLang's boundary harness: a root whose children carry `children`, root row p (float32),
    each child's row one-hot at token 0, coin at the root, final coin 0, threshold_acc 1."""
    n = len(children) + 1
    nxt, sib = np.full((1, n), -1), np.full((1, n), -1)
    nxt[0, 0] = 1
    sib[0, 1 : n - 1] = np.arange(2, n)
    tp = np.zeros((1, n, len(p)), dtype=np.float32)
    tp[0, 0] = p
    tp[0, 1:, 0] = 1.0
    coins = np.zeros((1, n), dtype=np.float32)
    coins[0, 0] = coin
    res = tree_speculative_sampling(
        [[0, *children]], nxt, sib, tp, uniform_samples=coins,
        uniform_samples_for_final_sampling=np.zeros(1, dtype=np.float32),
        num_speculative_tokens=2, verifier=verifier, threshold_single=threshold_single, threshold_acc=1.0,
    )  # fmt: skip
    return int(res.predicts[0]), int(res.accept_token_num[0])


# (children, root row, coin, threshold_single, after SGLang PR #35798, before it)
BOUNDARIES = {
    "zero-mass-zero-threshold": ([2], [0.0, 1.0, 0.0], 0.0, 0.0, (1, 0), (2, 1)),
    "zero-mass-default-threshold": ([2], [0.0, 1.0, 0.0], 0.0, 1.0, (1, 0), (2, 1)),
    "interior-boundary": ([1, 2, 3], [0.0, 0.25, 0.0, 0.75], 0.25, 1.0, (3, 1), (1, 1)),
    "lower-endpoint": ([1], [0.0, 0.25, 0.75], 0.0, 1.0, (1, 1), (1, 1)),
    "upper-endpoint": ([1], [0.0, 1.0], 1.0 - 2**-24, 1.0, (1, 1), (1, 1)),
    # every child rejected and nothing left: the last rejected child with mass (before: V - 1)
    "empty-residual": ([0, 1], [0.5, 0.49995, 0.0], 0.99999, 1.0, (1, 0), (2, 0)),
    # SGLang takes threshold_single as float32: 0.9 is 0.9f, and p = 0.9f reaches it
    "float32-threshold": ([1], [0.1, 0.9, 0.0], 0.99, 0.9, (1, 1), (1, 1)),
}


@pytest.mark.parametrize("case", list(BOUNDARIES))
def test_sglang_boundaries(case: str) -> None:
    children, p, coin, single, now, before = BOUNDARIES[case]
    assert _root(children, p, coin, single, "sglang") == now
    assert _root(children, p, coin, single, "sglang-pre-35798") == before


def ref_sglang_now(c: dict, t_single: float, t_acc: float) -> tuple:
    """SGLang's TreeSpeculativeSamplingTargetOnly after PR #35798, read from its kernel: the accept
    test needs p > 0 and a coin strictly below A / threshold_acc; thresholds are float32; an empty
    residual emits the last rejected child with mass. Independent of tests/_support's older reading."""
    tp = np.asarray(c["target_probs"], dtype=np.float64)
    B, N, V = tp.shape
    dp = None if c["draft_probs"] is None else np.asarray(c["draft_probs"], dtype=np.float64)
    idx = np.arange(B * N).reshape(B, N) if c["retrive_index"] is None else np.asarray(c["retrive_index"])
    nxt, sib, cand = c["retrive_next_token"], c["retrive_next_sibling"], c["candidates"]
    coins = np.asarray(c["uniform_samples"], dtype=np.float64)
    final = np.asarray(c["uniform_samples_for_final_sampling"], dtype=np.float64)
    depth = _depths(nxt, sib)
    spec = c["num_speculative_tokens"] or max(depth) + 1
    t_single, t_acc = float(np.float32(t_single)), max(float(np.float32(t_acc)), float(np.float32(1e-9)))
    pred, acc_idx, acc_num = np.full(B * N, -1), np.full((B, spec), -1), np.zeros(B, dtype=np.int64)
    for b in range(B):
        d = np.zeros((N, V)) if dp is None else dp[b].copy()
        A, row, coin, last, k, cur, lost = 0.0, 0, coins[b, 0], idx[b, 0], 0, 0, -1
        acc_idx[b, 0] = last
        for _ in range(1, spec):
            cur = nxt[b, cur]
            while cur != -1:
                tok = cand[b, cur]
                ps = tp[b, row, tok]
                A += ps
                if ps > 0 and (coin < A / t_acc or ps >= t_single):
                    A, row, coin, lost = 0.0, cur, coins[b, cur], -1
                    pred[last] = tok
                    k += 1
                    last = idx[b, cur]
                    acc_idx[b, k] = last
                    break
                lost = tok if ps > 0 else lost
                d[row, tok] = tp[b, row, tok]
                cur = sib[b, cur]
            if cur == -1:
                break
        acc_num[b] = k
        r = np.maximum(tp[b, row] - (d[row] if k != spec - 1 else 0.0), 0.0)
        cdf = np.cumsum(r)
        hit = np.nonzero((cdf > final[b] * cdf[-1]) & (r > 0))[0]
        valid = np.nonzero(r > 0)[0]
        pred[last] = hit[0] if hit.size else (valid[-1] if valid.size else (lost if lost >= 0 else V - 1))
    return pred, acc_idx, acc_num


def _depths(nxt: np.ndarray, sib: np.ndarray) -> list[int]:
    out = []
    for b in range(nxt.shape[0]):
        depth, stack = 0, [(0, 0)]
        while stack:
            i, dd = stack.pop()
            depth = max(depth, dd)
            c = nxt[b, i]
            while c != -1:
                stack.append((c, dd + 1))
                c = sib[b, c]
        out.append(depth)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sglang_rules_token_for_token(dtype: type) -> None:
    """Random trees (zero entries included, so zero-mass children occur; some coins 0 and some
    threshold_single 0, where the two rules part) against both readings."""
    rng = np.random.default_rng(71)
    differ = 0
    for it in range(300):
        c = tree_case(rng, dtype)
        if it % 2:
            c["uniform_samples"] = np.where(rng.random(c["uniform_samples"].shape) < 0.4, 0, c["uniform_samples"])
        th = (1.0, 1.0) if it % 3 else (float(np.float32(rng.random())), float(np.float32(rng.random())))
        th = (0.0, th[1]) if it % 5 == 0 else th
        now = tree_speculative_sampling(**c, threshold_single=th[0], threshold_acc=th[1], threads=1)
        for g, w in zip(now, ref_sglang_now(c, *th), strict=True):
            np.testing.assert_array_equal(g, w)
        before = tree_speculative_sampling(**c, verifier="sglang-pre-35798", threshold_single=th[0],
                                           threshold_acc=th[1], threads=1)  # fmt: skip
        for g, w in zip(before, ref_tree(c, *th), strict=True):
            np.testing.assert_array_equal(g, w)
        differ += any(not np.array_equal(a, b) for a, b in zip(now, before, strict=True))
    assert differ > 0  # the two rules are told apart on these inputs


# ----------------------------------------------------------------------------- vLLM


def _greedy(spec: list[list[int]], output: list[list[int]], V: int = 100) -> list[list[int]]:
    """vLLM's greedy harness: target rows whose argmax is output[b][j] (the test's logits), the
    bonus output[b][-1]."""
    flat = [t for s in spec for t in s]
    rows = [t for out, s in zip(output, spec, strict=True) for t in out[: len(s)]]
    target = np.eye(V, dtype=np.float32)[rows].reshape(len(flat), V)
    bonus = [[out[-1]] for out in output]
    counts = [len(s) for s in spec]
    return rejection_sample(flat, counts, None, target, bonus, is_greedy=np.ones(len(spec), dtype=bool)).tolist()


@pytest.mark.parametrize(
    ("spec", "output", "want"),
    [
        ([[1, 2, 3]], [[1, 2, 3, 4]], [[1, 2, 3, 4]]),  # test_perfect_match
        ([[1, 2, 3]], [[1, 5, 3, 4]], [[1, 5, -1, -1]]),  # test_early_mismatch
        ([[1, 2], [3]], [[1, 2, 5], [3, 4]], [[1, 2, 5], [3, 4, -1]]),  # test_multiple_sequences
        ([[1]], [[1, 2]], [[1, 2]]),  # test_single_token_sequence
        ([[]], [[5]], [[5]]),  # test_empty_sequence
        ([[1, 2, 3], [4, 5, 6]], [[1, 2, 7, 6], [4, 8, 6, 9]], [[1, 2, 7, -1], [4, 8, -1, -1]]),
        ([[1, 2]], [[1, 2, 3]], [[1, 2, 3]]),  # test_parametrized_cases
        ([[1]], [[2, 3]], [[2, -1]]),
        ([[1, 2], [3, 4]], [[1, 5, 6], [3, 4, 7]], [[1, 5, -1], [3, 4, 7]]),
    ],
)
def test_vllm_greedy(spec: list, output: list, want: list) -> None:
    assert _greedy(spec, output) == want


def test_vllm_placeholder_drafts() -> None:
    """vLLM PR #46533: a -1 draft is rejected whatever its uniform, greedy or random, and the
    recovered token is emitted there; it is never read as token V - 1."""
    p = np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
    q = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    noise = np.array([[1.0, 1.0, 1.0]])
    kw = dict(uniform_probs=[0.0, 0.0], recovery_noise=noise)
    # a real draft 2 with p = q is accepted; the placeholder after it is rejected at u = 0
    assert rejection_sample([2, -1], [2], q, p, [[1]], **kw).tolist() == [[2, 2, -1]]
    # recovered from max(p - q, 0) = (0, 0.05, 0.15) at the placeholder's row
    assert rejection_sample([-1, 0], [2], q[::-1], p[::-1], [[1]], **kw).tolist() == [[2, -1, -1]]
    # n-gram: recovered from p itself (no token zeroed); greedy: the argmax, then stop
    assert rejection_sample([-1], [1], None, p[:1], [[0]], **{**kw, "uniform_probs": [0.0]}).tolist() == [[2, -1]]
    greedy = rejection_sample([-1, 2], [2], None, p, [[0]], is_greedy=np.array([True]))
    assert greedy.tolist() == [[2, -1, -1]]
    with pytest.raises(ValueError, match=r"draft_token_ids: id -2 outside \[-1, 3\)"):
        rejection_sample([-2], [1], None, p[:1], [[0]], **{**kw, "uniform_probs": [0.5]})


# ----------------------------------------------------------------------------- flashinfer


@pytest.mark.parametrize(("batch", "V", "k"), [(1, 111, 1), (9, 111, 3), (5, 1000, 7)])
@pytest.mark.parametrize("onehot", [False, True])
def test_flashinfer_chain(batch: int, V: int, k: int, onehot: bool) -> None:
    rng = np.random.default_rng(batch * 1000 + k)
    draft = rng.random((batch, k, V), dtype=np.float32)
    draft /= draft.sum(axis=-1, keepdims=True)
    ids = rng.integers(0, V, (batch, k))
    if onehot:
        target_ids = rng.integers(0, V, (batch, k + 1))
        target_ids[:, :k] = ids
        target = np.zeros((batch, k + 1, V), dtype=np.float32)
        np.put_along_axis(target, target_ids[..., None], 1.0, axis=2)
    else:
        target = rng.random((batch, k + 1, V), dtype=np.float32)
        target /= target.sum(axis=-1, keepdims=True)
    bonus = [[int(rng.choice(V, p=target[b, k] / target[b, k].sum()))] for b in range(batch)]
    for _ in range(10):
        out = rejection_sample(
            ids.ravel(), [k] * batch, draft.reshape(-1, V), target[:, :k].reshape(-1, V), bonus,
            uniform_probs=rng.random(batch * k), recovery_noise=rng.exponential(size=(batch, V)),
        )  # fmt: skip
        assert out.shape == (batch, k + 1) and ((out >= -1) & (out < V)).all()
        if onehot:
            np.testing.assert_array_equal(out, target_ids)  # the drafts, then the bonus
            continue
        for b in range(batch):
            mismatch = np.nonzero(out[b, :k] != ids[b])[0]
            if mismatch.size:  # one differing token, then -1 only
                assert (out[b, mismatch[0] + 1 :] == -1).all()
            else:
                assert out[b, k] == bonus[b][0]
