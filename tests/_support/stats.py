"""The chi-square test of simulated tokens against a law, shared by every room's statistical tests:
``chi2_pvalue`` (bins merged to expected counts of at least 5) and its survival function, at the
level ``LEVEL`` the suites use, with ``STEPS`` simulated steps by default."""

from __future__ import annotations

import math

import numpy as np

STEPS = 1_000_000


LEVEL = 1e-6


def chi2_sf(x: float, k: int) -> float:
    """Upper tail of the chi-square law with k degrees of freedom (regularized gamma Q(k/2, x/2))."""
    a, z = 0.5 * k, 0.5 * x
    if z <= 0:
        return 1.0
    lg = math.lgamma(a)
    if z < a + 1:  # series for P, then Q = 1 - P
        term = total = 1.0 / a
        ap = a
        for _ in range(100_000):
            ap += 1
            term *= z / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(-z + a * math.log(z) - lg))
    # continued fraction for Q (modified Lentz)
    tiny = 1e-300
    b = z + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 100_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return math.exp(-z + a * math.log(z) - lg) * h


def chi2_pvalue(tokens: np.ndarray, p: np.ndarray) -> tuple[float, float, int]:
    """Pearson chi-square of token counts against p; cells with expected < 5 pooled into one."""
    N = tokens.shape[0]
    counts = np.bincount(tokens, minlength=p.shape[0]).astype(np.float64)
    if counts[p == 0].sum() > 0:
        return 0.0, math.inf, 0  # an impossible token is an outright rejection
    e = p * N
    big = e >= 5
    obs = list(counts[big])
    exp = list(e[big])
    if (~big).any() and e[~big].sum() > 0:
        obs.append(counts[~big].sum())
        exp.append(e[~big].sum())
    o, ex = np.array(obs), np.array(exp)
    stat = float(((o - ex) ** 2 / ex).sum())
    df = len(o) - 1
    return chi2_sf(stat, df), stat, df
