"""The tree bound: the best expected accepted length of any lossless per-node verifier of a
drafted-tree law (docs/guide/trees_verification.md §4).

A per-node verifier maps node i's draft tuple t to an output y with law pi_i(. | t), lossless on
average over t, and continues at the child holding y. Its expected accepted length is
L(i) = E_t[ sum_{y in t} pi_i(y | t) (1 + L(child y)) ], and the nodes' choices do not constrain
each other, so the best value is a recursion of one weighted optimal-transport problem per node:
B(i) = max over accepted-mass flows x_{t,y} of sum x_{t,y} u_t(y), u_t(y) = 1 + B(child y | t),
with sum_y x_{t,y} <= Pr(t) and sum_t x_{t,y} <= p_i(y) (the rest is paired up as corrections).

Two routes: ``node_lp`` solves that LP by HiGHS over the explicit tuple law (any weights) and
gives the plan of a verifier attaining it; ``node_greedy`` uses that, for weights depending on
the token only, the feasible accepted-mass vectors form the polymatroid
{a : 0 <= a <= p, a(S) <= Pr(t meets S)} with rank g(S) = p(S) + min_{T <= S} [Pr(t meets T) - p(T)],
the alpha* of a pair where the tokens outside S carry no target mass (``optimal_acceptance``), so
accepting greedily in decreasing weight order is optimal (Edmonds).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..bound.alpha import optimal_acceptance
from ..bound.lp import SolverError, _highs, solve_lp
from ..inputs.pairs import as_distribution
from ..inputs.rules import check_n
from ._raw import check_tree
from .block import MAX_PREFIXES, Oracle

__all__ = [
    "NodePlan",
    "node_lp",
    "node_greedy",
    "greedy_value",
    "TreeBound",
    "tree_bound",
    "kseq_bound",
    "per_node_ot_value",
    "bound_output_law",
]

#: Dual certificates of ``node_lp`` must close the gap to this tolerance.
LP_GAP_TOL = 1e-8


@dataclass(frozen=True)
class NodePlan:
    """An optimal accepted-mass flow of one node: set s (tokens ``set_tokens[set_ptr[s]:set_ptr[s+1]]``,
    probability ``set_weights[s]``) accepts ``flows[...]`` on its tokens; ``accepted`` = a(y)."""

    value: float
    accepted: NDArray[np.float64]
    set_ptr: NDArray[np.int64]
    set_tokens: NDArray[np.int64]
    set_weights: NDArray[np.float64]
    flows: NDArray[np.float64]


def node_lp(
    p: NDArray[np.float64],
    sets: Sequence[NDArray[np.int64]],
    probs: Sequence[float],
    weights: Sequence[NDArray[np.float64]],
) -> NodePlan:
    """max sum_{s, y in s} weights[s][k] x_{s,y} s.t. sum_y x_{s,y} <= probs[s], sum_s x_{s,y} <= p(y), x >= 0,
    solved by HiGHS and certified by its dual (min sum probs alpha + sum p beta, alpha_s + beta_y >= w)."""
    v = p.size
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    set_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    tokens = np.concatenate([np.asarray(s, dtype=np.int64) for s in sets]) if sets else np.zeros(0, np.int64)
    cost = np.concatenate([np.asarray(w, dtype=np.float64) for w in weights]) if sets else np.zeros(0)
    q_sets = np.asarray(probs, dtype=np.float64)
    ns, nc = len(sets), int(tokens.size)
    if nc == 0:
        return NodePlan(0.0, np.zeros(v), set_ptr, tokens, q_sets, np.zeros(0))
    owner = np.repeat(np.arange(ns), sizes)
    # Column k (flow of set owner[k] onto token tokens[k]) sits in row owner[k] and row ns + tokens[k].
    a_index = np.empty(2 * nc, dtype=np.int32)
    a_index[0::2], a_index[1::2] = owner, ns + tokens
    h = _highs()
    inf = highspy.kHighsInf
    h.passModel(
        nc, ns + v, 2 * nc, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize), 0.0,
        cost, np.zeros(nc), np.full(nc, inf), np.full(ns + v, -inf), np.concatenate([q_sets, p]),
        np.arange(0, 2 * nc + 1, 2, dtype=np.int32), a_index, np.ones(2 * nc), np.zeros(nc, dtype=np.int32),
    )  # fmt: skip
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise SolverError(f"HiGHS did not solve the weighted node LP: {status!r}", status)
    sol = h.getSolution()
    flows = np.clip(np.asarray(sol.col_value, dtype=np.float64), 0.0, None)
    dual = np.abs(np.asarray(sol.row_dual, dtype=np.float64))  # both row families are <= rows of a max
    primal = float(cost @ flows)
    slack = dual[owner] + dual[ns + tokens] - cost
    dual_value = float(q_sets @ dual[:ns] + p @ dual[ns:])
    if slack.min() < -LP_GAP_TOL or abs(dual_value - primal) > LP_GAP_TOL:
        raise SolverError(f"weighted node LP: primal {primal:.12g} vs dual {dual_value:.12g} not certified", status)
    accepted = np.bincount(tokens, weights=flows, minlength=v).astype(np.float64)
    return NodePlan(primal, accepted, set_ptr, tokens, q_sets, flows)


def node_greedy(
    p: NDArray[np.float64], q: NDArray[np.float64], n: int, scheme: str, u: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    """(value, a) of max sum_y u(y) a(y) over the node's polymatroid, greedily in decreasing u
    (ties to the lower id); the rank of a prefix S is alpha* of (p on S + a never-drafted token
    holding 1 - p(S), q + that token at 0). Needs u >= 0."""
    v = p.size
    order = sorted((y for y in range(v) if p[y] > 0.0), key=lambda y: (-u[y], y))
    a = np.zeros(v)
    rank = 0.0
    for k, y in enumerate(order):
        new = _prefix_rank(p, q, order[: k + 1], n, scheme)
        a[y] = max(0.0, new - rank)
        rank = max(rank, new)
    return float(u @ a), a


def _prefix_rank(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    members: Sequence[int],
    n: int,
    scheme: str,
    threads: int | None = None,
) -> float:
    """g(S) for S = ``members``: alpha* of (p on S + a never-drafted token holding 1 - p(S), q + that token at 0)."""
    v = p.size
    inside = np.zeros(v + 1)
    inside[list(members)] = p[list(members)]
    inside[v] = max(0.0, 1.0 - float(inside[:v].sum()))
    return float(optimal_acceptance(inside, np.append(q, 0.0), n, scheme, threads=threads))


def greedy_value(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    n: int,
    scheme: str,
    u: NDArray[np.float64],
    *,
    threads: int | None = None,
) -> float:
    """The value of ``node_greedy`` with one rank evaluation per distinct weight instead of per token:
    tokens of equal weight enter together (their split does not change sum u a). Needs u >= 0.
    ``threads``: of each rank's alpha*."""
    pos = np.flatnonzero(p > 0.0)
    levels = np.unique(u[pos])[::-1]
    value, rank, members = 0.0, 0.0, np.zeros(0, dtype=np.int64)
    for w in levels:
        members = np.concatenate([members, pos[u[pos] == w]])
        new = max(rank, _prefix_rank(p, q, members.tolist(), n, scheme, threads))
        value += float(w) * (new - rank)
        rank = new
    return value


@dataclass(frozen=True)
class TreeBound:
    """The tree bound of a branching-tree law and the node plans of a verifier attaining it
    (``plans`` keyed by prefix; present when computed by the LP route)."""

    value: float
    plans: dict[tuple[int, ...], NodePlan]


def _rows(oracle: Oracle, prefix: tuple[int, ...], count: list[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    count[0] += 1
    if count[0] > MAX_PREFIXES:
        raise ValueError(f"the tree law has more than MAX_PREFIXES = {MAX_PREFIXES} prefixes; use a smaller tree")
    pr, qr = oracle(prefix)
    return as_distribution("oracle p", pr, ndim=(1,)), as_distribution("oracle q", qr, ndim=(1,))


def _check_shape(shape: Any) -> list[tuple[int, str]]:
    if not isinstance(shape, (list, tuple)) or not all(isinstance(e, (list, tuple)) and len(e) == 2 for e in shape):
        raise ValueError(f"shape must be a sequence of (n, scheme) pairs, one per depth, got {shape!r}")
    return [(check_n(n, name=f"shape[{d}] n"), str(sch)) for d, (n, sch) in enumerate(shape)]


def _check_count(name: str, x: Any, low: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {x!r}")
    return int(x)


def tree_bound(oracle: Oracle, shape: Sequence[tuple[int, str]], *, method: str = "greedy") -> TreeBound:
    """Tree bound of per-node branching trees: depth d nodes draw ``shape[d] = (n, scheme)`` and every
    distinct child drafts its own subtree, so the weight of accepting y, 1 + B(prefix + y), depends on
    the token only. ``method``: "greedy" (polymatroid greedy) or "lp" (HiGHS over solve_lp's set law;
    returns the plans). Enumerates every prefix: V^depth nodes."""
    if method not in ("greedy", "lp"):
        raise ValueError(f"method must be 'greedy' or 'lp', got {method!r}")
    shape = _check_shape(shape)
    plans: dict[tuple[int, ...], NodePlan] = {}
    count = [0]

    def value(prefix: tuple[int, ...]) -> float:
        d = len(prefix)
        if d == len(shape):
            return 0.0
        n, scheme = shape[d]
        p, q = _rows(oracle, prefix, count)
        u = np.array([1.0 + value(prefix + (y,)) if p[y] > 0.0 else 0.0 for y in range(p.size)])
        if method == "greedy":
            return node_greedy(p, q, n, scheme, u)[0]
        law = solve_lp(p, q, n, scheme)
        sets = [tok.astype(np.int64) for tok, _, _ in law.sets()]
        plan = node_lp(p, sets, [w for _, w, _ in law.sets()], [u[s] for s in sets])
        plans[prefix] = plan
        return plan.value

    return TreeBound(value(()), plans)


def per_node_ot_value(oracle: Oracle, shape: Sequence[tuple[int, str]]) -> float:
    """Expected accepted length of the per-node alpha*-optimal verifier that plays solve_lp's OT plan
    at every node (a lossless per-node verifier; the tree bound is never below it)."""
    shape = _check_shape(shape)
    count = [0]

    def value(prefix: tuple[int, ...]) -> float:
        if len(prefix) == len(shape):
            return 0.0
        n, scheme = shape[len(prefix)]
        p, q = _rows(oracle, prefix, count)
        a = solve_lp(p, q, n, scheme).accepted
        return float(sum(a[y] * (1.0 + value(prefix + (y,))) for y in map(int, np.flatnonzero(a > 0.0))))

    return value(())


def kseq_bound(oracle: Oracle, k: int, length: int) -> float:
    """Tree bound of K i.i.d. draft sequences merged into a trie (SpecTr): a child drawn m times
    carries m continuing sequences, so the weight 1 + B(child, m) depends on the multiplicity and
    the greedy does not apply; the LP runs over the multiset law (multinomial)."""
    k, length = _check_count("k", k, 1), _check_count("length", length, 0)
    memo: dict[tuple[tuple[int, ...], int], float] = {}
    count = [0]

    def value(prefix: tuple[int, ...], m: int) -> float:
        if len(prefix) == length:
            return 0.0
        if (prefix, m) in memo:
            return memo[(prefix, m)]
        p, q = _rows(oracle, prefix, count)
        sets, probs, weights = [], [], []
        for combo in itertools.combinations_with_replacement(range(p.size), m):
            counts = np.bincount(combo, minlength=p.size)
            prob = math.factorial(m) * float(
                np.prod([q[y] ** c / math.factorial(int(c)) for y, c in enumerate(counts)])
            )
            if prob <= 0.0:
                continue
            toks = np.flatnonzero((counts > 0) & (p > 0.0))
            sets.append(toks)
            probs.append(prob)
            weights.append(np.array([1.0 + value(prefix + (int(y),), int(counts[y])) for y in toks]))
        memo[(prefix, m)] = node_lp(p, sets, probs, weights).value
        return memo[(prefix, m)]

    return value((), k)


def _node_output(plan: NodePlan, p: NDArray[np.float64], drafted: NDArray[np.int64]) -> NDArray[np.float64]:
    """pi(. | tuple) of the verifier playing ``plan``: the tuple's set accepts its planned flows;
    the rest of its mass is a correction from (p - a)^+ / (1 - sum a), which keeps the output law p."""
    key = frozenset(int(y) for y in drafted if p[y] > 0.0)
    out = np.zeros(p.size)
    left = 1.0
    for s in range(plan.set_weights.size):
        lo, hi = int(plan.set_ptr[s]), int(plan.set_ptr[s + 1])
        if frozenset(int(y) for y in plan.set_tokens[lo:hi]) == key:
            share = plan.flows[lo:hi] / plan.set_weights[s]
            out[plan.set_tokens[lo:hi]] += share
            left -= float(share.sum())
            break
    else:
        if key:
            raise ValueError(f"draft set {sorted(key)} has probability 0 under the node's draft law")
    rest = np.maximum(p - plan.accepted, 0.0)
    if rest.sum() > 0.0:
        out += max(left, 0.0) * rest / rest.sum()
    return out


def bound_output_law(
    bound: TreeBound,
    parent: ArrayLike,
    token: ArrayLike,
    p: ArrayLike,
    q: ArrayLike,
    draw_ptr: ArrayLike,
    draw_child: ArrayLike,
    scheme: Any,
) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted tokens when the verifier attaining ``bound`` (its LP plans, from
    ``tree_bound(..., method="lp")``) verifies a drafted tree top-down, one node at a time."""
    tree = check_tree(parent, token, p, q, draw_ptr, draw_child, scheme)
    kids: dict[int, dict[int, int]] = {i: {} for i in range(tree.parent.size)}
    for c in range(1, tree.parent.size):
        kids[int(tree.parent[c])][int(tree.token[c])] = c

    def law(i: int, prefix: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        draws = tree.draws(i)
        if draws.size == 0:
            return {(int(y),): float(tree.p[i, y]) for y in np.flatnonzero(tree.p[i])}
        if prefix not in bound.plans:
            raise ValueError(f"the bound has no plan for the prefix {prefix} of node {i}")
        pi = _node_output(bound.plans[prefix], tree.p[i], tree.token[draws])
        out: dict[tuple[int, ...], float] = {}
        for y in np.flatnonzero(pi > 0.0):
            y_ = int(y)
            if y_ in kids[i]:
                for seq, v in law(kids[i][y_], prefix + (y_,)).items():
                    out[(y_,) + seq] = out.get((y_,) + seq, 0.0) + float(pi[y]) * v
            else:
                out[(y_,)] = out.get((y_,), 0.0) + float(pi[y])
        return out

    return law(0, ())
