"""What the tree bound says about one drafted tree: a rigorous interval (docs/guide/trees_report.md §3).

The tree bound (``bound.tree_bound``) belongs to a drafting LAW: at node i it is
B(i) = max over the node's polymatroid of sum_y a(y) (1 + W(y)), where W(y) is the bound of the
subtree token y would have drafted. A shipped tree holds p and q only at drafted nodes, so W(y) is
known only through the drafted children; for any other token it is somewhere in [0, H], H the levels
left below the child. B is non-decreasing in every W (a >= 0), so greedy runs with the smallest and
the largest admissible W bracket the bound of the law that drafted the tree, at its root context:

- a token never drafted: W in [0, H];
- a drafted child c: W in [low(c), high(c)] (recursively; a drafted leaf has an empty subtree, W = 0);
- deterministic tuples ("topk", "static"): only the drafted tokens can be accepted, a = p on them,
  so the node is exact when its children are;
- K i.i.d. sequences (``kseq=True``): the subtree of y depends on how many sequences drew y, so only
  token-wise extremes are valid weights: high W = H for every token, low W = the bound of one
  sequence through y (more sequences never hurt), known from the drafted child's rows.

Where the weights are all known the interval closes: chains at the last drafted node, nodes whose
children are leaves (the bound is alpha* there), fully deterministic trees (EAGLE static and
dynamic top-k trees: the bound equals the deterministic-set rule's value).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .bound import greedy_value
from .tree import DraftTree

__all__ = ["BoundInterval", "drafted_bound"]

#: Tuples with no randomness: only their own tokens can ever be drafted at that node.
_FIXED = ("topk", "static")


class BoundInterval(NamedTuple):
    """The tree bound of the drafting law at one drafted tree's root context lies in [low, high]
    (expected accepted lengths; tokens per call = value + 1)."""

    low: float
    high: float

    @property
    def exact(self) -> bool:
        """True where the drafted tree determines the bound (low == high up to rounding)."""
        return self.high - self.low <= 1e-12 * max(1.0, self.high)


def _support(tree: DraftTree, i: int) -> NDArray[np.int64]:
    return np.flatnonzero((tree.p[i] > 0.0) | (tree.q[i] > 0.0))


def drafted_bound(
    tree: DraftTree, *, depth: int | None = None, kseq: bool = False, threads: int | None = None
) -> BoundInterval:
    """The interval of the module docstring for one drafted tree. ``depth``: the drafting law's
    depth (default: the tree's; tokens not drafted at depth d could carry depth - d - 1 more levels);
    ``kseq``: the tree is K i.i.d. sequences merged by prefix (multiplicity-dependent subtrees).
    ``threads``: of every alpha* inside (None: all cores); the interval does not depend on it."""
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    tree_depth = int(tree.depth.max())
    if depth is None:
        depth = tree_depth
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < tree_depth:
        raise ValueError(f"depth: expected an integer >= the tree's depth {tree_depth}, got {depth!r}")
    if not isinstance(kseq, bool):
        raise TypeError(f"kseq: expected a bool, got {type(kseq).__name__}")
    low = np.zeros(tree.N)
    high = np.zeros(tree.N)
    for i in range(tree.N - 1, -1, -1):  # children (higher ids) first
        draws = tree.draws(i)
        if draws.size == 0:
            continue  # a drafted leaf: its subtree is empty in the law too
        sch, n = tree.scheme[i], int(draws.size)
        kids = np.unique(draws)
        ktok = tree.token[kids]
        if sch in _FIXED:
            pk = tree.p[i, ktok]
            low[i], high[i] = float(pk @ (1.0 + low[kids])), float(pk @ (1.0 + high[kids]))
            continue
        if sch == "spechub":
            raise ValueError(f"tree: node {i} has scheme 'spechub', whose pair law has no polymatroid greedy here")
        sup = np.union1d(_support(tree, i), ktok)
        p, q = tree.p[i, sup], tree.q[i, sup]
        at = np.searchsorted(sup, ktok)
        left = depth - int(tree.depth[i]) - 1  # levels below a child of i
        w_low, w_high = np.ones(sup.size), np.full(sup.size, 1.0 + left)
        if kseq:
            for c, j in zip(kids, at, strict=True):
                once = int(np.count_nonzero(draws == c)) == 1 or left == 0
                # one sequence through y: the drafted child's own bound if it had one, else alpha of 1 draft
                alone = low[c] if once else (float(np.minimum(tree.p[c], tree.q[c]).sum()) if left else 0.0)
                w_low[j] = 1.0 + alone
        else:
            w_low[at], w_high[at] = 1.0 + low[kids], 1.0 + high[kids]
        low[i] = greedy_value(p, q, n, sch, w_low, threads=threads)
        high[i] = greedy_value(p, q, n, sch, w_high, threads=threads)
    return BoundInterval(float(low[0]), float(high[0]))
