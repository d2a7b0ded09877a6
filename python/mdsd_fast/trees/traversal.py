"""Traversal verification of a drafted tree (after Weng et al., arXiv:2505.12398, NeurIPS 2025).

Leaf-to-root, post-order over each node's draft tuple. Node i is entered with a weight w (the
root with w = 1). Its tuple entries are tried in draw order: entry j (token t, child c, drawn from
the step law m_j of ``_raw.step_law``) is given the weight w_c = min(1, w b(t) / m_j(t)), where b
starts as p_i, and c's subtree is traversed first. If c fails, node i's state becomes
(w, b) <- (r / s, R / r) with R = (w b - m_j)^+, r = sum R, s = sum (m_j - w b)^+ (``block.residual``).
After the last entry node i itself is accepted with probability w and emits its final token from b
(at a leaf: w and p_i, the bonus token). A later entry repeating an already tried child has weight
0 (its token's residual mass is 0 once it failed), so a subtree is traversed at most once.

On a chain this is block verification exactly. Lossless: averaged over the drafting of the
subtree, node i is accepted with probability w and the emitted continuation has the target's law
(docs/guide/trees_verification.md §3). The exact value given the drafted tree follows the same recursion
with the accept probabilities in place of the coin flips.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._raw import RawTree, check_tree, step_law
from .block import residual

__all__ = ["traversal_plan", "traversal_expected_accepted", "traversal_output_law", "traversal_verify"]


def traversal_plan(tree: RawTree, i: int, w: float) -> tuple[list[tuple[int, float]], float, NDArray[np.float64]]:
    """Node ``i`` entered with weight ``w``: [(child, child weight)] in draw order, then the final
    weight and final-token law once every entry failed. Deterministic given the drafted tree."""
    draws = tree.draws(i)
    tokens = tree.token[draws]
    b = tree.p[i]
    steps: list[tuple[int, float]] = []
    tried: set[int] = set()
    for j, c in enumerate(draws):
        m = step_law(tree.scheme[i], j, tree.q[i], tokens)
        t = int(tokens[j])
        if m[t] <= 0.0:
            raise ValueError(f"node {i}: tuple entry {j} (token {t}) has probability 0 under its draft law")
        steps.append((int(c), 0.0 if int(c) in tried else min(1.0, w * b[t] / m[t])))
        tried.add(int(c))
        big, r, s = residual(w, b, m)
        if s <= 0.0:  # this entry never fails: what follows is never reached
            w, b = 0.0, np.zeros_like(b)
        else:
            # r <= s exactly; the clamp only guards rounding where s is itself ~1e-17.
            w, b = min(1.0, r / s), (big / r if r > 0.0 else np.zeros_like(b))
    return steps, w, b


Plans = dict[int, tuple[list[tuple[int, float]], float, NDArray[np.float64]]]


def _plans(tree: RawTree) -> Plans:
    """The plan of every node the traversal can reach (each is entered with one weight only)."""
    plans: Plans = {}
    stack = [(0, 1.0)]
    while stack:
        i, w = stack.pop()
        plans[i] = traversal_plan(tree, i, w)
        stack.extend((c, wc) for c, wc in plans[i][0] if wc > 0.0)
    return plans


def _value(plans: Plans, i: int) -> tuple[float, float]:
    """(Pr(node i accepted), E[depth accepted below i; accepted]) given the drafted subtree."""
    steps, w_final, _ = plans[i]
    fail, accept, depth = 1.0, 0.0, 0.0
    for c, wc in steps:
        a, g = _value(plans, c) if wc > 0.0 else (0.0, 0.0)
        accept += fail * a
        depth += fail * (a + g)
        fail *= 1.0 - a
    return accept + fail * w_final, depth


def traversal_expected_accepted(
    parent: ArrayLike,
    token: ArrayLike,
    p: ArrayLike,
    q: ArrayLike,
    draw_ptr: ArrayLike,
    draw_child: ArrayLike,
    scheme: Any,
) -> float:
    """Exact expected number of accepted draft tokens given the drafted tree (tokens per call - 1)."""
    tree = check_tree(parent, token, p, q, draw_ptr, draw_child, scheme)
    return _value(_plans(tree), 0)[1]


def _law(tree: RawTree, plans: Plans, i: int) -> dict[tuple[int, ...], float]:
    steps, w_final, b = plans[i]
    out: dict[tuple[int, ...], float] = {}
    fail = 1.0
    for c, wc in steps:
        if wc <= 0.0:
            continue
        sub = _law(tree, plans, c)
        t = int(tree.token[c])
        for seq, v in sub.items():
            out[(t,) + seq] = out.get((t,) + seq, 0.0) + fail * v
        fail *= 1.0 - sum(sub.values())
    for y in np.flatnonzero(b):
        out[(int(y),)] = out.get((int(y),), 0.0) + fail * w_final * float(b[y])
    return out


def traversal_output_law(
    parent: ArrayLike,
    token: ArrayLike,
    p: ArrayLike,
    q: ArrayLike,
    draw_ptr: ArrayLike,
    draw_child: ArrayLike,
    scheme: Any,
) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted tokens (accepted path's tokens + final token) given the drafted tree."""
    tree = check_tree(parent, token, p, q, draw_ptr, draw_child, scheme)
    return _law(tree, _plans(tree), 0)


def _sample(plans: Plans, i: int, rng: np.random.Generator) -> list[int] | None:
    steps, w_final, b = plans[i]
    for c, wc in steps:
        if wc > 0.0:
            below = _sample(plans, c, rng)
            if below is not None:
                return [c, *below]
    if rng.random() < w_final:
        return [-1 - int(rng.choice(b.size, p=b / b.sum()))]  # the final token, encoded below zero
    return None


def traversal_verify(
    parent: ArrayLike,
    token: ArrayLike,
    p: ArrayLike,
    q: ArrayLike,
    draw_ptr: ArrayLike,
    draw_child: ArrayLike,
    scheme: Any,
    *,
    samples: int = 1,
    rng: Any = None,
) -> list[tuple[tuple[int, ...], int]]:
    """Verify one drafted tree ``samples`` times (fresh randomness each time, from
    ``numpy.random.default_rng(rng)``): [(accepted node ids root -> deepest, root excluded; final token)]."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
        raise ValueError(f"samples must be a non-negative integer, got {samples!r}")
    tree = check_tree(parent, token, p, q, draw_ptr, draw_child, scheme)
    plans = _plans(tree)
    gen = np.random.default_rng(rng)
    results: list[tuple[tuple[int, ...], int]] = []
    for _ in range(samples):
        out = _sample(plans, 0, gen)
        assert out is not None  # the root's final weight is 1 (docs/guide/trees_verification.md §3)
        results.append((tuple(out[:-1]), -1 - out[-1]))
    return results
