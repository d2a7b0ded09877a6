"""Independent references of the engines' verification kernels, for tests/test_engines*.py.

Pure numpy, written from the engines' code as read (vllm/v1/sample/rejection_sampler.py;
sgl-kernel/csrc/speculative/speculative_sampling.cuh), not from mdsd_fast's C++; and random
inputs in the engines' layouts (ragged draft counts with 0, random trees, sparse rows with a
zero padded column, float32 or float64).
"""

from __future__ import annotations

import numpy as np


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


def random_rows(rng: np.random.Generator, m: int, V: int, dtype: type) -> np.ndarray:
    """Random distributions with exact zeros (sparse rows) and a zero padded last column."""
    x = rng.dirichlet(np.full(V, 0.7), size=m) * (rng.random((m, V)) < 0.75)
    x[:, -1] = 0.0 if V > 2 else x[:, -1]
    x[x.sum(axis=1) == 0, 0] = 1.0
    return (x / x.sum(axis=1, keepdims=True)).astype(dtype)


def chain_case(rng: np.random.Generator, dtype: type) -> dict:
    B, V = int(rng.integers(1, 7)), int(rng.integers(1, 9))
    counts = rng.integers(0, 5, size=B)
    T = int(counts.sum())
    ngram = rng.random() < 0.3
    greedy = rng.random(B) < 0.3 if rng.random() < 0.5 else None
    return dict(
        draft_token_ids=rng.integers(0, V, size=T),
        num_draft_tokens=counts.tolist(),
        draft_probs=None if ngram else random_rows(rng, T, V, dtype),
        target_probs=random_rows(rng, T, V, dtype),
        bonus_token_ids=rng.integers(0, V, size=(B, 1)),
        uniform_probs=rng.random(T).astype(dtype),
        recovery_noise=rng.exponential(size=(B, V)).astype(dtype) + np.asarray(1e-30, dtype),
        is_greedy=greedy,
        max_spec_len=int(counts.max(initial=0)) + int(rng.integers(0, 2)),
    )


def ref_chain(c: dict) -> np.ndarray:
    f64 = lambda x: None if x is None else np.asarray(x, dtype=np.float64)  # noqa: E731
    return ref_vllm(
        c["draft_token_ids"], c["num_draft_tokens"], f64(c["draft_probs"]), f64(c["target_probs"]),
        c["bonus_token_ids"][:, 0], c["is_greedy"], f64(c["uniform_probs"]), f64(c["recovery_noise"]),
        c["max_spec_len"],
    )  # fmt: skip


def random_tree(rng: np.random.Generator, N: int) -> tuple[np.ndarray, np.ndarray]:
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


def tree_case(rng: np.random.Generator, dtype: type) -> dict:
    B, N, V = int(rng.integers(1, 6)), int(rng.integers(1, 10)), int(rng.integers(1, 9))
    trees = [random_tree(rng, N) for _ in range(B)]
    perm = rng.permutation(B * N).reshape(B, N) if rng.random() < 0.5 else None
    return dict(
        candidates=rng.integers(0, V, size=(B, N)),
        retrive_next_token=np.stack([t[0] for t in trees]),
        retrive_next_sibling=np.stack([t[1] for t in trees]),
        target_probs=random_rows(rng, B * N, V, dtype).reshape(B, N, V),
        uniform_samples=rng.random((B, N)).astype(dtype),
        uniform_samples_for_final_sampling=rng.random(B).astype(dtype),
        draft_probs=random_rows(rng, B * N, V, dtype).reshape(B, N, V) if rng.random() < 0.3 else None,
        retrive_index=perm,
        num_speculative_tokens=int(rng.integers(1, N + 1)) if rng.random() < 0.7 else None,
    )


def tree_depth(nxt: np.ndarray, sib: np.ndarray) -> int:
    best, stack = 0, [(0, 0)]
    while stack:
        i, d = stack.pop()
        best = max(best, d)
        c = nxt[i]
        while c != -1:
            stack.append((c, d + 1))
            c = sib[c]
    return best


def ref_tree(c: dict, t_single: float = 1.0, t_acc: float = 1.0) -> tuple:
    B, N = c["candidates"].shape
    f64 = lambda x: None if x is None else np.asarray(x, dtype=np.float64)  # noqa: E731
    spec = c["num_speculative_tokens"]
    if spec is None:
        spec = 1 + max(
            tree_depth(a, s) for a, s in zip(c["retrive_next_token"], c["retrive_next_sibling"], strict=True)
        )
    idx = c["retrive_index"] if c["retrive_index"] is not None else np.arange(B * N).reshape(B, N)
    return ref_sglang(
        c["candidates"], idx, c["retrive_next_token"], c["retrive_next_sibling"], f64(c["uniform_samples"]),
        f64(c["uniform_samples_for_final_sampling"]), f64(c["target_probs"]), f64(c["draft_probs"]), spec,
        t_single, t_acc,
    )  # fmt: skip
