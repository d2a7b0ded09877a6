"""Tree-level verifiers as ``tree_value`` names: "traversal" (any tree) and "block" (chains).

Both are registered with ``register_tree_value`` on import of :mod:`mdsd_fast.trees`, so
``tree_value(tree, "traversal")`` and ``tree_values(trees, "block")`` work like a registry verifier and
return the same :class:`TreeValue` (expected accepted length, per-depth profile, reach).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._raw import check_tree
from .block import block_acceptance_law
from .traversal import Plans, _plans, _value
from .tree import DraftTree
from .value import TreeValue, _profile, register_tree_value

__all__ = ["traversal_value", "block_value", "chain_nodes"]


def _options(options: dict[str, Any], name: str) -> None:
    """``work_budget`` does not apply to these Python recursions (``threads`` only to the validation of
    traversal's arrays); a biased variant does not exist."""
    if options.get("naive_residual", False):
        raise ValueError(f"naive_residual: {name!r} has no naive-residual variant (registry verifiers only)")
    unknown = set(options) - {"naive_residual", "threads", "work_budget"}
    if unknown:
        raise TypeError(f"{name}: unexpected option(s) {sorted(unknown)}")


def _check(tree: Any) -> DraftTree:
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    return tree


def _traversal_reach(tree: DraftTree, plans: Plans) -> NDArray[np.float64]:
    """Pr(node c is on the accepted path): given node i is accepted, the traversal's next accepted node
    is entry j's child with probability fail_j A(c_j) / A(i), A = Pr(accepted | entered)."""
    accept = {i: _value(plans, i)[0] for i in plans}
    reach = np.zeros(tree.N)
    reach[0] = 1.0
    for i in range(tree.N):  # parents before children (topological ids)
        if i not in plans or reach[i] == 0.0 or accept[i] <= 0.0:
            continue
        fail = 1.0
        for c, wc in plans[i][0]:
            a = accept[c] if wc > 0.0 else 0.0
            reach[c] += reach[i] * fail * a / accept[i]
            fail *= 1.0 - a
    return reach


def traversal_value(tree: DraftTree, **options: Any) -> TreeValue:
    """Traversal verification's exact value given the drafted tree (trees.traversal), as a TreeValue."""
    _options(options, "traversal")
    t = _check(tree)
    raw = check_tree(
        t.parent, t.token, t.p, t.q, t.draw_ptr, t.draw_child, list(t.scheme), threads=options.get("threads")
    )
    plans = _plans(raw)
    reach = _traversal_reach(t, plans)
    return TreeValue(_value(plans, 0)[1], _profile(t, reach), reach)


def chain_nodes(tree: DraftTree) -> NDArray[np.int64]:
    """Node ids root -> tip of a chain drafted one token per step from q ("iid", n = 1); a ValueError
    naming the first node that makes ``tree`` something else."""
    t = _check(tree)
    order = [0]
    for i in range(t.N):
        n = int(t.draw_ptr[i + 1] - t.draw_ptr[i])
        if n == 0:
            continue
        if n != 1 or t.scheme[i] != "iid":
            raise ValueError(
                f"tree: block verification takes a chain drafted one token per step from q (scheme 'iid', "
                f"n = 1); node {i} has scheme {t.scheme[i]!r} with n = {n}"
            )
        if order[-1] != i:
            raise ValueError(f"tree: block verification takes a chain; node {i} branches off the path")
        order.append(int(t.draws(i)[0]))
    if len(order) != t.N:
        raise ValueError(f"tree: block verification takes a chain; {t.N - len(order)} node(s) lie off the path")
    return np.asarray(order, dtype=np.int64)


def block_value(tree: DraftTree, **options: Any) -> TreeValue:
    """Block verification's exact value given a drafted chain (trees.block), as a TreeValue:
    reach of the depth-i node = Pr(tau >= i)."""
    _options(options, "block")
    t = _check(tree)
    nodes = chain_nodes(t)
    law = block_acceptance_law(t.token[nodes[1:]], t.p[nodes], t.q[nodes[:-1]])
    tail = np.cumsum(law[::-1])[::-1]  # Pr(tau >= i)
    reach = np.zeros(t.N)
    reach[nodes] = tail
    return TreeValue(float(np.arange(law.size) @ law), _profile(t, reach), reach)


register_tree_value("traversal", traversal_value)
register_tree_value("block", block_value)
