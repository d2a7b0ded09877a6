"""An unofficial Traversal Verification port (brian030128/subspec_v2) ported under the audit contract.

What is ported (``specdecodes/models/utils/traversal_verification.py``,
``traversal_verification_tree``, commit 3682b226): the verification of a one-level draft tree,
which is what the audit's one position is. The root's children are the n drafted tokens, in the
order they were drafted (the tree's child order, which its DFS order follows). Per child c the
code keeps M_s(c) = q(c) (the node's cumulative draft probability over the root's),
M_b(c) = p(c) and p_alpha(c) = min(1, p_alpha(root) M_b(c) / M_s(c)) (0 where M_s <= 1e-8), with
p_alpha(root) = 1. It then repeats: take the first still-valid leaf (deepest, then lowest DFS
order), accept it when a uniform draw is below its p_alpha; otherwise delete it and, if the root
still has valid children, update, in the code's order:

1. M_s of the remaining children divided by 1 - M_s(rejected);
2. S = sum over all the root's children, deleted ones included, of (p_alpha M_b - M_s)+ (with the
   M_s just updated) plus p_alpha (1 - sum of their M_b), floored at 1e-8; the root's
   p_alpha becomes S / (S + 1 - p_alpha);
3. the remaining children's M_s divided by 1 - M_s(rejected) a second time, M_b set to
   (p_alpha_old M_b - M_s)+ / S, and p_alpha = min(1, p_alpha_root M_b / M_s).

When every child is deleted the root itself is the leaf: accepted or not, the next token is then
the "bonus" drawn from the root's original target row, that is from p (the code's comment says
the row "has NOT been modified by the rejection logic"), not from a residual. The comments in the
file say the update is an approximation ("APPROXIMATION", "heuristic"). float64 instead of the
code's float32.

:class:`SubspecTraversal` is ``verify(p, q, drafts, rng) -> token`` (drafts distinct: Traversal
Verification drafts each node's children without replacement, scheme "wor"; n = 1 is the
author's own chain test); :func:`output_law` is the exact law, by enumeration of the ordered draft
tuples; :func:`accept_probabilities` is the deterministic part the two share.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...inputs.pairs import as_distribution

__all__ = ["EPS", "SubspecTraversal", "accept_probabilities", "output_law", "verify"]

#: The code's ``eps``.
EPS = 1e-8
_MAX_TUPLES = 1 << 20


def _ratio(mb: float, ms: float) -> float:
    return mb / ms if ms > EPS else 0.0


def accept_probabilities(p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64]) -> list[float]:
    """The probability with which each child is accepted when it is reached (children visited in
    draft order, each one only after all before it were rejected), as the code computes them."""
    tok = [int(t) for t in drafts]
    n = len(tok)
    ms = [float(q[t]) for t in tok]  # cumulative / root cumulative (root = 1)
    mb = [float(p[t]) for t in tok]
    p_root = 1.0
    pa = [min(p_root * _ratio(mb[c], ms[c]), 1.0) for c in range(n)]
    valid = [True] * n
    out: list[float] = []
    for c in range(n):  # the first valid leaf is always the next child in order
        out.append(pa[c])
        valid[c] = False  # followed only on rejection
        active = [s for s in range(n) if valid[s]]
        if not active:
            break
        p_old = p_root
        denom = 1.0 - ms[c]
        denom = EPS if denom < EPS else denom
        for s in active:  # "A. Update Ms scalars"
            ms[s] = ms[s] / denom
        S = sum(max(p_old * mb[k] - ms[k], 0.0) for k in range(n)) + p_old * (1.0 - sum(mb))
        S = EPS if S < EPS else S
        p_root = S / (S + 1.0 - p_old)
        new_ms = {s: ms[s] / denom for s in active}  # divided a second time
        new_mb = {s: max(p_old * mb[s] - ms[s], 0.0) / S for s in active}
        for s in active:
            ms[s], mb[s] = new_ms[s], new_mb[s]
            pa[s] = min(p_root * _ratio(mb[s], ms[s]), 1.0)
    return out


class SubspecTraversal:
    """``verify(p, q, drafts, rng) -> token``: the port's verification of the one-level tree whose
    children are ``drafts`` (distinct token ids, in draft order)."""

    def __call__(
        self, p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], rng: np.random.Generator
    ) -> int:
        d = np.asarray(drafts)
        if d.ndim != 1 or d.size < 1 or d.dtype.kind not in "iu" or np.unique(d).size != d.size:
            raise ValueError(f"drafts: expected distinct token ids (a tree's children), got {d.tolist()}")
        for c, a in enumerate(accept_probabilities(p, q, d)):
            if rng.random() < a:
                return int(d[c])
        return int(rng.choice(p.size, p=p))  # the bonus from the root's original row

    def __repr__(self) -> str:
        return "SubspecTraversal()"


def output_law(p: Any, q: Any, n: int) -> tuple[NDArray[np.float64], float]:
    """(exact output law, exact acceptance) of :class:`SubspecTraversal` when the n children are
    drawn from q without replacement, every ordered tuple enumerated (small V and n only)."""
    p = as_distribution("p", p, ndim=(1,))
    q = as_distribution("q", q, ndim=(1,))
    if p.size != q.size:
        raise ValueError(f"p, q: sizes {p.size} and {q.size} differ")
    support = [int(t) for t in np.flatnonzero(q > 0)]
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(support):
        raise ValueError(f"n: expected an integer in [1, {len(support)}] (tokens with q > 0), got {n!r}")
    if len(support) ** n > _MAX_TUPLES:
        raise ValueError(f"n: {len(support)}^{n} ordered tuples is too many to enumerate")
    law = np.zeros(p.size)
    acc = 0.0
    for tup in itertools.permutations(support, n):
        w, left = 1.0, 1.0
        for t in tup:  # sequential sampling without replacement
            w *= q[t] / left
            left -= q[t]
        reach = w
        for t, a in zip(tup, accept_probabilities(p, q, np.array(tup)), strict=False):
            law[t] += reach * a
            acc += reach * a
            reach *= 1.0 - a
        law += reach * p
    return law, acc


#: ``mdsd-fast audit mdsd_fast.audit.thirdparty.subspec_traversal:verify --scheme wor --n N``.
verify = SubspecTraversal()
