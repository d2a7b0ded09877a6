"""Rows shared by the tests of several rooms: raw (B, V) rows with their broken variants for the
plan-free route, and LLM-like rows with exact without-replacement levels at V = 262,144."""

from __future__ import annotations

import numpy as np


def direct_rows(B: int, V: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """LLM-like rows (softmax of heavy logits, the draft a noisy copy), left slightly unnormalised."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((B, V)) * 3.0
    P = np.exp(L - L.max(axis=1, keepdims=True))
    Q = np.exp(L + rng.standard_normal((B, V)) - L.max(axis=1, keepdims=True))
    P *= (1 + 3e-5) / P.sum(axis=1, keepdims=True)
    Q *= (1 - 2e-5) / Q.sum(axis=1, keepdims=True)
    return P, Q


def bad_cases(P: np.ndarray, Q: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """(p, q, the start of the message naming the problem) for broken copies of 6 rows of P, Q."""
    cases = []
    for arr, row, value in (("p", 3, np.nan), ("q", 2, np.inf), ("p", 1, -0.25), ("q", 4, -1e-3)):
        P2, Q2 = P.copy(), Q.copy()
        (P2 if arr == "p" else Q2)[row, 17] = value
        cases.append((P2, Q2, f"{arr}: row {row}"))
    P2 = P.copy()
    P2[5] *= 1.01
    cases.append((P2, Q, "p: row 5 sums to 1.01"))
    Q2 = Q.copy()
    Q2[0] = 0.0
    cases.append((P, Q2, "q: row 0 sums to 0"))
    P2, Q2 = P.copy(), Q.copy()  # both broken: p is named first, as as_pair checks it first
    P2[4, 0], Q2[1, 0] = np.nan, np.nan
    cases.append((P2, Q2, "p: row 4 contains NaN"))
    return cases


def levels_case(V: int, seed: int):
    """q takes three values (masses 0.5 / 0.3 / 0.2 on 20 / 3000 / rest tokens): Q_wor of any set
    depends only on how many tokens of each level it holds, so it has an exact small DP."""
    rng = np.random.default_rng(seed)
    counts = np.array([20, 3000, V - 3020])
    level = np.repeat(np.arange(3), counts)
    c = np.array([0.5, 0.3, 0.2]) / counts
    q = c[level]
    p = rng.dirichlet(np.full(V, 0.3))
    p = 0.5 * p + 0.5 * q * rng.uniform(0.2, 3.0, V)
    p /= p.sum()
    return p, q, level, c


def exact_wor_levels(p, q, level, c, n):
    """1 + min over ratio prefixes of p(H) - Q_wor(H), Q by a DP over per-level draw counts."""
    order = np.argsort(p / q, kind="stable")
    P = np.concatenate([[0.0], np.cumsum(p[order])])
    m = np.zeros((3, len(order) + 1))
    for j in range(3):
        m[j, 1:] = np.cumsum(level[order] == j)
    # prob[state] for states = draw counts (d0, d1, d2), vectorised over prefixes
    from itertools import product

    prob = {(0, 0, 0): np.ones(len(order) + 1)}
    for _ in range(n):
        nxt: dict[tuple[int, int, int], np.ndarray] = {}
        for d, pr in prob.items():
            used = sum(d[j] * c[j] for j in range(3))
            for j in range(3):
                take = np.clip(m[j] - d[j], 0, None) * c[j] / (1.0 - used)
                d2 = tuple(d[i] + (i == j) for i in range(3))
                nxt[d2] = nxt.get(d2, 0.0) + pr * take
        prob = nxt
    Q = sum(prob.values())
    F = P - Q
    del product
    return min(1.0, 1.0 + float(F.min()))
