"""Plain numpy implementations of the sorted-prefix dual (the comparison a user would write).

The same algorithms as the C++ kernels (docs/theory/sorted_prefix.md §4), written the natural numpy way: argsort,
cumulative sums and, for without-replacement drafts with n >= 3, the exponential-race integral
with the Poisson-binomial DP vectorised over the time grid and a Python loop over tokens.
"""

from __future__ import annotations

import numpy as np


def alpha_iid(p: np.ndarray, q: np.ndarray, n: int) -> float:
    keep = q > 0
    p, q = p[keep], q[keep]
    order = np.argsort(p / q, kind="stable")
    P = np.cumsum(p[order])
    S = np.cumsum(q[order])
    return float(min(1.0, 1.0 + min(0.0, float(np.min(P - S**n)))))


def alpha_wor(p: np.ndarray, q: np.ndarray, n: int) -> float:
    keep = q > 0
    p, q = p[keep], q[keep]
    order = np.argsort(p / q, kind="stable")
    p, q = p[order], q[order]
    P = np.cumsum(p)
    S = np.cumsum(q)
    lam = np.concatenate([np.cumsum(q[::-1])[::-1][1:], [0.0]])  # outside mass after each prefix
    K = len(q)
    if n == 2:
        Q = S - lam * np.cumsum(q / (1.0 - q))
    else:
        h = np.log(2.0) / 3
        t_lo = (np.prod(np.arange(2, n + 2)) * 1e-16) ** (1.0 / (n + 1))
        lam_min = lam[K - 2] if K >= 2 else 1.0
        G = int(np.ceil((np.log(45.0 / lam_min) - np.log(t_lo)) / h)) + 1
        t = t_lo * np.exp(h * np.arange(G))
        Pc = np.zeros((n, G))
        Pc[0] = 1.0
        Q = np.empty(K)
        j = np.arange(14)
        fact = np.cumprod(np.concatenate([[1.0], np.arange(1, 14)]))
        for k in range(K):
            b = -np.expm1(-q[k] * t)
            e = 1.0 - b
            for c in range(n - 1, 0, -1):
                Pc[c] = Pc[c] * e + Pc[c - 1] * b
            Pc[0] *= e
            lk = lam[k]
            if lk <= 0:
                Q[k] = 1.0
                continue
            y0 = lk * t_lo
            ltail = h * np.sum(y0 ** (j + 1) * (-1.0) ** j / (fact * (np.exp2((j + 1) / 3) - 1.0)))
            Q[k] = 1.0 - ltail - h * lk * np.sum(t * np.exp(-lk * t) * Pc.sum(axis=0))
        Q[: n - 1] = 0.0
    F = P - Q
    F[-1] = P[-1] - 1.0
    return float(min(1.0, 1.0 + min(0.0, float(np.min(F)))))
