"""Buggy verifiers for the audit's negative controls (and a correct one), written here from their
published descriptions, in the audit's batched form verify_batch(p, q, drafts[B, n], rng) -> tokens[B]
(vectorised over the B tuples so each audit takes a second). Each reproduces a bug that was
reported in public code; none is the original code."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

Batch = Callable[[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], np.random.Generator], NDArray[np.int64]]


def _norm(x: NDArray[np.float64]) -> NDArray[np.float64]:
    s = x.sum()
    return x / s if s > 0 else x


def _residual(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    return _norm(np.maximum(p - q, 0.0))


def _chain(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    drafts: NDArray[np.int64],
    g: np.random.Generator,
    levels: list[NDArray[np.float64]],
) -> NDArray[np.int64]:
    """Sequential rejection: draft k is accepted with min(1, levels[k](x) / q(x)) (q(x) = 0 accepts);
    if all are rejected the output is drawn from levels[n]."""
    B, n = drafts.shape
    out = np.full(B, -1, dtype=np.int64)
    alive = np.ones(B, dtype=bool)
    for k in range(n):
        x = drafts[:, k]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q[x] > 0, levels[k][x] / np.where(q[x] > 0, q[x], 1.0), np.inf)
        take = alive & (g.random(B) < ratio)
        out[take] = x[take]
        alive &= ~take
    rest = np.flatnonzero(alive)
    out[rest] = _draw(g, p, levels[n], rest.size)
    return out


def _draw(g: np.random.Generator, p: NDArray[np.float64], dist: NDArray[np.float64], size: int) -> NDArray[np.int64]:
    """``size`` draws from ``dist`` (from p when dist has no mass: nothing should reach it then)."""
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return g.choice(p.size, size=size, p=dist if dist.sum() > 0 else p)


def rrs(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """Correct recursive rejection sampling for i.i.d. drafts (residual p <- norm((p - q)_+))."""
    levels = [p]
    for _ in range(drafts.shape[1]):
        levels.append(_residual(levels[-1], q))
    return _chain(p, q, drafts, g, levels)


def naive_residual(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """(a) Every draft tested against p itself and p resampled after the rejections."""
    return _chain(p, q, drafts, g, [p] * (drafts.shape[1] + 1))


def eagle_duplicate_skip(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """(b) RRS that skips a draft equal to an earlier (rejected) one without updating the residual."""
    B, n = drafts.shape
    levels = [p]
    for _ in range(n):
        levels.append(_residual(levels[-1], q))
    stack = np.stack(levels)
    level = np.zeros(B, dtype=np.int64)
    out = np.full(B, -1, dtype=np.int64)
    alive = np.ones(B, dtype=bool)
    for k in range(n):
        x = drafts[:, k]
        dup = (drafts[:, :k] == x[:, None]).any(axis=1)
        test = alive & ~dup
        take = test & (g.random(B) * q[x] < stack[level, x])
        out[take] = x[take]
        alive &= ~take
        level[test & ~take] += 1
    for lv in np.unique(level[alive]):
        rows = np.flatnonzero(alive & (level == lv))
        out[rows] = _draw(g, p, stack[lv], rows.size)
    return out


def llama_index_subtraction(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """(c) The residual computed by subtracting the draft's candidate list from the target's by
    list position (both lists: the tokens with nonzero probability, sorted by id)."""
    tgt, dft = np.flatnonzero(p > 0), np.flatnonzero(q > 0)
    m = min(tgt.size, dft.size)
    levels = [p]
    for _ in range(drafts.shape[1]):
        cur = levels[-1].copy()
        cur[tgt[:m]] = np.maximum(cur[tgt[:m]] - q[dft[:m]], 0.0)
        levels.append(_norm(cur))
    return _chain(p, q, drafts, g, levels)


def ratio_on_deterministic(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """(d) The min(1, p/q) chain applied to drafts that were not sampled from q (greedy's top
    candidates): the RRS rule, whatever the draft law."""
    return rrs(p, q, drafts, g)


def first_draft(
    p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
) -> NDArray[np.int64]:
    """(e) Always the first draft."""
    return drafts[:, 0].copy()


def truncated_q(k: int = 50) -> Batch:
    """(f) Correct RRS, but verified against q truncated to its top k and renormalised, while the
    drafts come from the full q (the transformers #47932 family)."""

    def verify(
        p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], g: np.random.Generator
    ) -> NDArray[np.int64]:
        keep = np.argsort(-q, kind="stable")[:k]
        qt = np.zeros_like(q)
        qt[keep] = q[keep]
        return rrs(p, _norm(qt), drafts, g)

    return verify
