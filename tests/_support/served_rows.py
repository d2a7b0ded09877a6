"""Small synthetic served rows for the served-log tests (the shipped data takes seconds to load)."""

from __future__ import annotations

import numpy as np

from mdsd_fast.served import ServedRows


def synthetic_rows(R: int = 64, K: int = 12, seed: int = 0) -> ServedRows:
    """R rows of a 40-token vocabulary, each p and q on K tokens (q a perturbed p), two temperatures."""
    rng = np.random.default_rng(seed)
    W = 2 * K + 1
    ids = np.full((R, W), -1, np.int64)
    p, q = np.zeros((R, W)), np.zeros((R, W))
    for r in range(R):
        tok = np.sort(rng.choice(40, 2 * K, replace=False))
        ids[r, : 2 * K] = tok
        lp = rng.normal(0, 2.0, 2 * K)
        pp = np.exp(lp)
        pp[np.argsort(pp)[:K]] = 0
        qq = np.exp(lp + rng.normal(0, 1.0, 2 * K))
        qq[np.argsort(qq)[:K]] = 0
        p[r, : 2 * K], q[r, : 2 * K] = pp / pp.sum(), qq / qq.sum()
    return ServedRows(ids, p, q, np.where(np.arange(R) % 2, 0.7, 1.0), "synthetic")
