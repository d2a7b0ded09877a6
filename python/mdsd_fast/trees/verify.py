"""Top-down token-level verification of a drafted tree: one target call, one emitted sequence.

At node i the node verifier picks an output y from the drafted tuple (``mdsd_fast.verify``, the
same C++ code whose law ``value.node_laws`` reads); if y is a child's token the walk continues
there, otherwise y is the correction and the walk stops. At a leaf the bonus token is drawn from p.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..inputs.rules import check_threads
from ..verifiers.given_drafts import verify
from ._nodes import DETERMINISTIC, VerifierSpec, node_verifier
from .tree import DraftTree

__all__ = ["TreeVerdict", "verify_tree"]


class TreeVerdict(NamedTuple):
    """Outcome of verifying one tree."""

    tokens: NDArray[np.int64]  #: the emitted tokens: accepted ones, then the correction or bonus token
    accepted: int  #: number of accepted draft tokens (len(tokens) - 1)
    node: int  #: the last accepted node (0 if none)


def _draw(p: NDArray[np.float64], gen: np.random.Generator) -> int:
    """y ~ p by inverse CDF (never an index with p = 0)."""
    cdf = np.cumsum(p)
    y = int(np.searchsorted(cdf, gen.random() * cdf[-1], side="right"))
    while p[min(y, p.shape[0] - 1)] == 0 and y > 0:
        y -= 1
    return int(min(y, p.shape[0] - 1))


def verify_tree(
    tree: DraftTree,
    verifier: VerifierSpec,
    *,
    rng: Any = None,
    work_budget: float | None = None,
    threads: int | None = None,
) -> TreeVerdict:
    """Verify ``tree`` top down with ``verifier`` at every drafting node ("static" nodes by the
    deterministic-set rule, i.e. y ~ p); returns the emitted tokens (accepted + 1 of them).
    ``threads``: of each node's ``verify`` (None: all cores); the tokens do not depend on it."""
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    check_threads(threads)  # named even if no node calls a verifier
    gen = np.random.default_rng(rng)
    i, out = 0, []
    while True:
        tup = tree.draft_tokens(i)
        sch = tree.scheme[i]
        if tup.size == 0 or sch == DETERMINISTIC:
            y = _draw(tree.p[i], gen)
        else:
            name = node_verifier(verifier, sch, int(tup.size), i)
            kw: dict[str, Any] = dict(rng=gen, scheme=sch, work_budget=work_budget, threads=threads)
            y, _ = verify(name, tree.p[i], tree.q[i], tup, **kw)  # type: ignore[arg-type]
        out.append(y)
        kids = np.flatnonzero((tree.parent == i) & (tree.token == y)) if tup.size else np.empty(0, np.int64)
        if kids.size == 0:
            return TreeVerdict(np.array(out, dtype=np.int64), len(out) - 1, i)
        i = int(kids[0])
