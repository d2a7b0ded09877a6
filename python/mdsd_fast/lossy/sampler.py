"""The lossy rules run step by step, written as the engines write them (a loop per draft, an
explicit coin), independently of the closed-form laws in ``rules``: the tests check one against
the other by exact enumeration of the random numbers and by simulation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.pairs import as_pair
from .rules import ENTROPY_EPS, SGLANG_MIN_ACC, TYPICAL_EPS, Setting, resolve

__all__ = ["step", "simulate", "row_constants", "MAX_SAMPLES"]

#: Largest simulation :func:`simulate` runs (steps of Python code each).
MAX_SAMPLES = 10_000_000

#: ``final(weights) -> token``: how a step draws a token from unnormalised non-negative weights.
Final = Callable[[NDArray[np.float64]], int]


def row_constants(p: NDArray[np.float64], s: Setting) -> dict[str, Any]:
    """What an engine computes once per target row: the thresholds and the rank order."""
    out: dict[str, Any] = {"argmax": int(np.argmax(p))}
    if s.rule in ("typical", "entropy"):
        eps = TYPICAL_EPS if s.rule == "typical" else ENTROPY_EPS
        h = float(-(p * np.log(p + eps)).sum())
        a, t = s.values["posterior_alpha"], s.values["posterior_threshold"]
        with np.errstate(over="ignore"):
            scaled = a * np.exp(-h) if s.rule == "typical" else float(np.exp(-h * a))
        out["tau"] = min(t, float(scaled))
    if s.rule == "relaxed":
        k = min(s.values["relaxed_topk"], p.size)
        order = np.argsort(-p, kind="stable")[:k]
        out["topk"] = [(int(i), float(p[i])) for i in order]
    return out


def inverse_cdf(w: NDArray[np.float64], coin: float) -> int:
    """The smallest v with w[v] > 0 and w[0] + ... + w[v] > coin * sum(w) (the engines' final draw)."""
    c = np.cumsum(w)
    hit = np.flatnonzero((w > 0) & (c > coin * c[-1]))
    return int(hit[0]) if hit.size else w.size - 1


def step(
    s: Setting,
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    drafts: list[int],
    coin: float,
    final: Final,
    const: dict[str, Any],
) -> tuple[int, bool]:
    """One verification of ``drafts`` (children in sibling order); returns (token, accepted)."""
    if s.rule == "sglang":
        ts = s.values["threshold_single"]
        ta = max(s.values["threshold_acc"], SGLANG_MIN_ACC)
        prob_acc = 0.0
        rejected = []
        for x in drafts:
            ps = p[x]
            prob_acc += ps
            if ps > 0 and (coin < prob_acc / ta or ps >= ts):
                return x, True
            rejected.append(x)
        resid = p.copy()
        resid[rejected] = 0.0  # draft_probs[rejected] = p: out of max(p - draft_probs, 0)
        return final(resid), False
    if s.rule == "typical":
        for x in drafts:
            if p[x] > const["tau"]:
                return x, True
        return final(p.copy()), False  # the target's own sampled token at this position
    if s.rule == "relaxed":
        x = drafts[0]
        threshold = const["topk"][0][1] - s.values["relaxed_delta"]
        for jj, (tok, val) in enumerate(const["topk"]):
            if jj > 0 and threshold > val:
                break
            if x == tok:
                return x, True
        return const["argmax"], False
    x = drafts[0]  # entropy verify
    if q[x] > 0 and p[x] / q[x] >= const["tau"] * coin:
        return x, True
    return final(np.maximum(p - q, 0.0)), False


def simulate(
    rule: str, p: Any, q: Any, samples: int, rng: Any = None, n: int = 1, **settings: Any
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Run ``rule`` ``samples`` times at one position with fresh random numbers.

    Returns the output tokens and whether each step accepted a draft. ``rng`` is a
    ``numpy.random.Generator`` or a seed.
    """
    s = resolve(rule, n, **settings)
    p2, q2, batched = as_pair(p, q)
    if batched:
        raise ValueError("p, q: simulate takes one position (V,)")
    if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, (int, np.integer)):
        raise TypeError(f"samples: expected an integer, got {type(samples).__name__}")
    if not 1 <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples: expected 1 <= samples <= {MAX_SAMPLES}, got {samples}")
    g = np.random.default_rng(rng)
    pr, qr = p2[0], q2[0]
    const = row_constants(pr, s)
    top = [int(i) for i in np.argsort(-qr, kind="stable")[: s.n] if qr[i] > 0]
    qcdf = np.cumsum(qr)
    toks = np.empty(samples, dtype=np.int64)
    acc = np.empty(samples, dtype=bool)
    u = g.random((samples, 3))
    for i in range(samples):
        if s.drafts == "sample":
            drafts = [min(int(np.searchsorted(qcdf, u[i, 0] * qcdf[-1], side="right")), qr.size - 1)]
        else:
            drafts = top
        c = float(u[i, 2])

        def final(w: NDArray[np.float64], c: float = c) -> int:
            return inverse_cdf(w, c)

        toks[i], acc[i] = step(s, pr, qr, drafts, float(u[i, 1]), final, const)
    return toks, acc
