"""Rows the benchmarks generate: LLM-like pairs, the engine case's batch, top-k logs."""

from __future__ import annotations

from typing import Any

import numpy as np


def llm_like(rng: np.random.Generator, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Heavy-tailed pair resembling LLM next-token distributions (sum min(p, q) about 0.65)."""
    logits = rng.standard_normal(V) * 3.0
    p = np.exp(logits - logits.max())
    q = np.exp(logits + rng.standard_normal(V) - logits.max())
    return p / p.sum(), q / q.sum()


def engine_rows(B: int, V: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """B LLM-like rows of the engine case: logits 3 * N(0, 1), the draft's plus N(0, 1)."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((B, V)) * 3.0
    P = np.exp(L - L.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Q = np.exp(L + rng.standard_normal((B, V)) - L.max(axis=1, keepdims=True))
    Q /= Q.sum(axis=1, keepdims=True)
    return P, Q


def top_k(x: np.ndarray, k: int) -> np.ndarray:
    """The logged part of a top-k log: the k largest entries of each row, zeros elsewhere."""
    idx = np.argsort(-x, axis=1, kind="stable")[:, :k]
    out = np.zeros_like(x)
    np.put_along_axis(out, idx, np.take_along_axis(x, idx, axis=1), axis=1)
    return out


V, K, CANDIDATES = 49_152, 20, 32


def synth(rng: np.random.Generator, B: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """CSR parts (ptr, ids, probs) of B target rows and B draft rows (see the module docstring)."""
    # distinct candidate ids per row: an arithmetic progression mod V with a step coprime to V = 2^14 * 3
    start = rng.integers(0, V, (B, 1))
    stride = rng.integers(0, 4096, (B, 1)) * 6 + rng.choice([1, 5], (B, 1))
    cand = np.sort((start + np.arange(CANDIDATES) * stride) % V, axis=1)
    lp = rng.standard_normal((B, CANDIDATES)) * 3.0
    lq = lp + 2.0 * rng.standard_normal((B, CANDIDATES))
    out = []
    for lg in (lp, lq):
        top = np.sort(np.argpartition(-lg, K, axis=1)[:, :K], axis=1)
        x = np.exp(np.take_along_axis(lg, top, axis=1))
        x /= x.sum(axis=1, keepdims=True)
        out.append((np.arange(0, B * K + 1, K), np.take_along_axis(cand, top, axis=1).ravel(), x.ravel()))
    return out[0], out[1]
