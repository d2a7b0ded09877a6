"""Drafting trees from a model oracle: K i.i.d. sequences, per-depth branching, static choice lists.

A tree grows breadth first: every node asks the oracle for (p, q) after its path, and a node that
drafts draws its tuple from q with the package's own draft laws (``mdsd_fast.simulate`` draws it,
so ties, lowest-id rules and the order of a tuple are exactly the verifiers'). Duplicates of an
i.i.d. tuple merge into one child, listed again in the tuple (its multiplicity). Each drafting
rule also enumerates every tree it can draw with its probability, for exact expectations on tiny
cases; the ordered-tuple laws used there are ``tuple_law``'s (tested against ``simulate``).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..bound.lp import TooLargeError
from ..inputs.args import check_alloc, integer, nbytes
from ..inputs.pairs import as_pair
from ..inputs.rules import check_n, check_scheme, check_threads, mixed_parts
from ..verifiers.run import simulate
from .tree import DraftTree, choices_to_parent

__all__ = [
    "Oracle",
    "tuple_law",
    "draft_kseq",
    "draft_branching",
    "draft_static",
    "enumerate_kseq",
    "enumerate_branching",
    "MAX_ENUMERATED",
    "MAX_TREE_NODES",
]

#: ``oracle(prefix) -> (p, q)``: target and draft next-token distributions after ``prefix``
#: (token ids relative to the root).
Oracle = Callable[[tuple[int, ...]], tuple[ArrayLike, ArrayLike]]
#: (depth, multiplicity) -> (n, scheme) of the node's tuple, or None for a leaf.
_Plan = Callable[[int, int], "tuple[int, str] | None"]
#: (p, q, n, scheme) -> the tuples to expand with their probabilities.
_Pick = Callable[[NDArray[np.float64], NDArray[np.float64], int, str], "list[tuple[tuple[int, ...], float]]"]

#: Most trees (or ordered tuples of one node) an enumeration builds before refusing.
MAX_ENUMERATED = 200_000
#: Most nodes a drafted tree may grow to by default (``max_nodes=``): drafting is refused
#: (``TooLargeError``) as soon as a tree passes it, or when its rows would pass
#: ``limits.MAX_ALLOC_BYTES``, whichever comes first.
MAX_TREE_NODES = 65_536
#: float64 (V,) rows held per node while a tree is drafted and built: p and q as the oracle gave
#: them, stacked for the tree, and the tree's validated copies.
_ROWS_PER_NODE = 6

#: The registry verifier whose ``simulate`` draws each scheme family's tuples.
_DRAWER = {"iid": "rrs", "wor": "rrs-wor", "greedy": "greedy", "topk": "topk", "spechub": "spechub"}


def _drawer(scheme: str) -> str:
    mp = mixed_parts(scheme)
    return _DRAWER[mp[1] if mp else scheme]


def _order(q: NDArray[np.float64]) -> list[int]:
    return [int(x) for x in np.argsort(-q, kind="stable")]


def tuple_law(q: ArrayLike, n: int, scheme: str, *, threads: int | None = None) -> list[tuple[tuple[int, ...], float]]:
    """Every ordered draft tuple of a scheme with its probability (tiny vocabularies).

    Orders as ``simulate`` draws them: "wor" in draw order; "greedy", "topk" and mixed schemes
    put the deterministic top tokens first, as sorted ids. Refuses (TooLargeError) beyond
    ``MAX_ENUMERATED`` tuples. ``threads``: of the validation of q.
    """
    qa = as_pair(q, q, threads=check_threads(threads))[1][0]
    n = check_n(n)
    scheme = check_scheme(scheme, ("iid", "wor", "greedy", "topk", "spechub"))
    V = qa.shape[0]
    support = [x for x in range(V) if qa[x] > 0]
    count = len(support) ** n if scheme == "iid" else math.perm(len(support), min(n, len(support)))
    if count > MAX_ENUMERATED:
        raise TooLargeError(f"tuple_law: about {count} tuples of {scheme!r} drafts, above MAX_ENUMERATED")
    out: list[tuple[tuple[int, ...], float]] = []
    mp = mixed_parts(scheme)
    if scheme == "iid":
        for t in itertools.product(support, repeat=n):
            out.append((t, math.prod(float(qa[x]) for x in t)))
    elif scheme == "wor":
        for t in itertools.permutations(support, n):
            w = 1.0
            for k, x in enumerate(t):  # the mass not yet drawn, summed (1 - used cancels)
                w *= qa[x] / math.fsum(qa[y] for y in support if y not in t[:k])
            out.append((t, w))
    elif scheme == "topk":
        out.append((tuple(sorted(_order(qa)[:n])), 1.0))
    elif scheme == "greedy" or mp is not None:
        m, rest = (n - 1, "iid") if scheme == "greedy" else mp  # type: ignore[misc]
        top = tuple(sorted(_order(qa)[:m]))
        qr = qa.copy()
        qr[list(top)] = 0.0
        if qr.sum() <= 0:
            raise ValueError(f"q: {scheme!r} needs a token with q > 0 outside the top {m}")
        for t, w in tuple_law(qr / qr.sum(), n - m, rest, threads=threads):
            out.append((top + t, w))
    else:  # spechub, n = 2: hub a = argmax q; (i, a) w.p. q(i), (a, i) w.p. q(a) q(i) / (1 - q(a))
        if n != 2:
            raise ValueError(f"n: scheme 'spechub' draws n = 2 drafts, got n = {n}")
        a = _order(qa)[0]
        for i in support:
            if i != a:
                out.append(((i, a), float(qa[i])))
                out.append(((a, i), float(qa[a] * qa[i] / math.fsum(qa[y] for y in support if y != a))))
    return out


class _Budget:
    """The bound on a drafted tree: at most ``max_nodes`` nodes, and rows within ``MAX_ALLOC_BYTES``
    (for an enumeration, the rows of every tree built so far)."""

    def __init__(self, what: str, max_nodes: Any) -> None:
        self.what = what
        self.max_nodes = integer("max_nodes", max_nodes, 1)
        self.built = 0  # nodes of the enumerated trees built so far

    def check(self, nodes: int, V: int) -> None:
        if nodes > self.max_nodes:
            raise TooLargeError(
                f"{self.what}: the drafted tree grows past max_nodes = {self.max_nodes} nodes "
                "(pass a larger max_nodes=, or draft a smaller tree)"
            )
        total = self.built + nodes
        check_alloc(self.what, nbytes(total, V, copies=_ROWS_PER_NODE), f"the p and q rows of {total} tree nodes")


class _Builder:
    """A tree under construction; nodes get ids in the order they are attached (topological)."""

    def __init__(
        self,
        oracle: Oracle,
        cache: dict[tuple[int, ...], tuple[Any, Any]],
        threads: int | None = None,
        budget: _Budget | None = None,
    ) -> None:
        self.oracle, self.cache, self.threads = oracle, cache, threads
        self.budget = budget if budget is not None else _Budget("choices", MAX_TREE_NODES)
        self.parent: list[int] = []
        self.token: list[int] = []
        self.prefix: list[tuple[int, ...]] = []
        self.p: list[NDArray[np.float64]] = []
        self.q: list[NDArray[np.float64]] = []
        self.mult: list[int] = []
        self.draws: dict[int, tuple[list[int], str]] = {}
        self.add(-1, -1, (), 0)

    def copy(self) -> _Builder:
        b = object.__new__(_Builder)
        b.oracle, b.cache, b.threads, b.budget = self.oracle, self.cache, self.threads, self.budget
        b.parent, b.token, b.prefix = list(self.parent), list(self.token), list(self.prefix)
        b.p, b.q, b.mult, b.draws = list(self.p), list(self.q), list(self.mult), dict(self.draws)
        return b

    def add(self, parent: int, token: int, prefix: tuple[int, ...], mult: int) -> int:
        if self.p:  # checked before the oracle is asked for one more node
            self.budget.check(len(self.parent) + 1, self.p[0].shape[0])
        if prefix not in self.cache:
            res = self.oracle(prefix)
            if not isinstance(res, Sequence) or len(res) != 2:
                raise TypeError(f"oracle: prefix {prefix}: expected a pair (p, q), got {type(res).__name__}")
            p2, q2, batched = as_pair(res[0], res[1], threads=check_threads(self.threads))
            if batched:
                raise ValueError(f"oracle: prefix {prefix}: expected p, q of shape (V,)")
            if self.p and p2.shape[1] != self.p[0].shape[0]:
                raise ValueError(
                    f"oracle: prefix {prefix}: V = {p2.shape[1]}, but the root has V = {self.p[0].shape[0]}"
                )
            self.cache[prefix] = (p2[0], q2[0])
        p, q = self.cache[prefix]
        self.parent.append(parent)
        self.token.append(token)
        self.prefix.append(prefix)
        self.p.append(p)
        self.q.append(q)
        self.mult.append(mult)
        return len(self.parent) - 1

    def attach(self, i: int, tokens: Sequence[int], scheme: str) -> list[int]:
        """Node i drafts ``tokens`` (in draw order); returns the new children."""
        child: dict[int, int] = {}
        counts: dict[int, int] = {}
        for x in tokens:
            counts[x] = counts.get(x, 0) + 1
        new: list[int] = []
        for x in tokens:
            if x not in child:
                child[x] = self.add(i, x, self.prefix[i] + (x,), counts[x])
                new.append(child[x])
        self.draws[i] = ([child[x] for x in tokens], scheme)
        return new

    def build(self) -> DraftTree:
        N = len(self.parent)
        ptr, flat, schemes = [0], [], []
        for i in range(N):
            ids, sch = self.draws.get(i, ([], ""))
            flat.extend(ids)
            ptr.append(len(flat))
            schemes.append(sch)
        return DraftTree(
            np.array(self.parent, np.int64),
            np.array(self.token, np.int64),
            np.stack(self.p),
            np.stack(self.q),
            np.array(ptr, np.int64),
            np.array(flat, np.int64),
            schemes,
            threads=self.threads,
        )


def _grow(
    oracle: Oracle, plan: _Plan, pick: _Pick, root_mult: int, threads: int | None, budget: _Budget
) -> list[tuple[float, DraftTree]]:
    """Every tree that ``pick`` lets the plan grow (breadth first), with its probability, within ``budget``."""
    if not callable(oracle):
        raise TypeError(f"oracle: expected a callable prefix -> (p, q), got {type(oracle).__name__}")
    cache: dict[tuple[int, ...], tuple[Any, Any]] = {}
    root = _Builder(oracle, cache, threads, budget)
    root.mult[0] = root_mult
    states: list[tuple[float, _Builder, deque[int]]] = [(1.0, root, deque([0]))]
    done: list[tuple[float, DraftTree]] = []
    while states:
        w, b, pending = states.pop()
        if not pending:
            done.append((w, b.build()))
            budget.built += len(b.parent)
            continue
        i = pending.popleft()
        d = len(b.prefix[i])
        plan_i = plan(d, b.mult[i])
        if plan_i is None:
            states.append((w, b, pending))
            continue
        n, sch = plan_i
        try:
            options = pick(b.p[i], b.q[i], n, sch)
        except ValueError as exc:
            raise type(exc)(f"node at prefix {b.prefix[i]} ({sch!r}, n = {n}): {exc}") from None
        if len(states) + len(done) + len(options) > MAX_ENUMERATED:
            raise TooLargeError(f"the enumeration of drafted trees exceeds MAX_ENUMERATED = {MAX_ENUMERATED}")
        for k, (tup, pr) in enumerate(options):
            last = k == len(options) - 1
            b2, pend2 = (b, pending) if last else (b.copy(), deque(pending))
            pend2.extend(b2.attach(i, tup, sch))
            states.append((w * pr, b2, pend2))
    return done


def _sampler(rng: Any, threads: int | None = None) -> _Pick:
    gen = np.random.default_rng(rng)

    def pick(
        p: NDArray[np.float64], q: NDArray[np.float64], n: int, scheme: str
    ) -> list[tuple[tuple[int, ...], float]]:
        sim = simulate(_drawer(scheme), p, q, n, 1, rng=gen, scheme=scheme, threads=threads)  # type: ignore[arg-type]
        drafts = sim.drafts
        return [(tuple(int(x) for x in drafts[0]), 1.0)]

    return pick


def _enumerator(threads: int | None = None) -> _Pick:
    def pick(
        p: NDArray[np.float64], q: NDArray[np.float64], n: int, scheme: str
    ) -> list[tuple[tuple[int, ...], float]]:
        return tuple_law(q, n, scheme, threads=threads)

    return pick


def _positive(name: str, x: Any) -> int:
    try:
        return integer(name, x, 1)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a positive integer, got {x!r}") from None


def _kseq_plan(K: Any, L: Any) -> tuple[_Plan, int]:
    K, L = _positive("K", K), _positive("L", L)
    check_n(K, name="K")
    return (lambda d, m: (m, "iid") if d < L else None), K


def _branching_plan(branching: Any, scheme: Any) -> _Plan:
    if not isinstance(branching, Sequence) or isinstance(branching, str):
        raise TypeError("branching: expected a list of drafts per depth, e.g. [4, 2, 1]")
    widths = [_positive(f"branching[{d}]", b) for d, b in enumerate(branching)]
    scheme = check_scheme(scheme, ("iid", "wor", "greedy", "topk", "spechub"))
    mp = mixed_parts(scheme)
    for d, b in enumerate(widths):
        if (mp is not None and b <= mp[0]) or (scheme == "spechub" and b != 2):
            need = f"n > {mp[0]}" if mp is not None else "n = 2"
            raise ValueError(f"branching[{d}]: scheme {scheme!r} needs {need} drafts per node, got {b}")
    return lambda d, m: (widths[d], scheme) if d < len(widths) else None


def draft_kseq(
    oracle: Oracle, K: int, L: int, *, rng: Any = None, threads: int | None = None, max_nodes: int = MAX_TREE_NODES
) -> DraftTree:
    """K draft sequences of length L, i.i.d. from the draft model (SpecTr / Khisti): the root
    draws K i.i.d. tokens; a child drawn m times draws m i.i.d. continuations (scheme "iid").
    ``threads`` (every drafting function): of the validation and the draws (None: all cores).
    ``max_nodes`` (every drafting function): refuse (``TooLargeError``) a tree growing past this
    many nodes, or whose rows would pass ``limits.MAX_ALLOC_BYTES``, before asking the oracle more."""
    plan, root = _kseq_plan(K, L)
    check_threads(threads)
    return _grow(oracle, plan, _sampler(rng, threads), root, threads, _Budget("K, L", max_nodes))[0][1]


def enumerate_kseq(
    oracle: Oracle, K: int, L: int, *, threads: int | None = None, max_nodes: int = MAX_TREE_NODES
) -> list[tuple[float, DraftTree]]:
    """Every tree ``draft_kseq`` can draw, with its probability (the probabilities sum to 1); the
    rows of all of them together stay within ``limits.MAX_ALLOC_BYTES``."""
    plan, root = _kseq_plan(K, L)
    check_threads(threads)
    return _grow(oracle, plan, _enumerator(threads), root, threads, _Budget("K, L", max_nodes))


def draft_branching(
    oracle: Oracle,
    branching: Sequence[int],
    scheme: str = "iid",
    *,
    rng: Any = None,
    threads: int | None = None,
    max_nodes: int = MAX_TREE_NODES,
) -> DraftTree:
    """Every node at depth d drafts ``branching[d]`` tokens with ``scheme`` ("iid", "wor",
    "greedy", "topk", "top<m>+iid", "top<m>+wor", "spechub"); nodes at depth len(branching) are leaves.
    i.i.d. duplicates merge, and a merged child still drafts ``branching[d + 1]`` tokens.
    ``max_nodes``: as in :func:`draft_kseq` (``[64] * 4`` could grow 17 million nodes)."""
    check_threads(threads)
    plan = _branching_plan(branching, scheme)
    return _grow(oracle, plan, _sampler(rng, threads), 1, threads, _Budget("branching", max_nodes))[0][1]


def enumerate_branching(
    oracle: Oracle,
    branching: Sequence[int],
    scheme: str = "iid",
    *,
    threads: int | None = None,
    max_nodes: int = MAX_TREE_NODES,
) -> list[tuple[float, DraftTree]]:
    """Every tree ``draft_branching`` can draw, with its probability (within the budget of
    :func:`enumerate_kseq`)."""
    check_threads(threads)
    plan = _branching_plan(branching, scheme)
    return _grow(oracle, plan, _enumerator(threads), 1, threads, _Budget("branching", max_nodes))


def draft_static(
    oracle: Oracle, choices: Sequence[Sequence[int]], *, threads: int | None = None, max_nodes: int = MAX_TREE_NODES
) -> DraftTree:
    """A static tree from an EAGLE-style choice list: the child of rank r is the r-th most
    probable token of the parent's q (ties to the lower id). A node whose children are the top k
    tokens of q, all with q > 0, has scheme "topk"; any other set is "static" (deterministic-set rule)."""
    parent, rank = choices_to_parent(choices)
    if not callable(oracle):
        raise TypeError(f"oracle: expected a callable prefix -> (p, q), got {type(oracle).__name__}")
    check_threads(threads)
    budget = _Budget("choices", max_nodes)
    if parent.shape[0] > budget.max_nodes:
        budget.check(parent.shape[0], 1)
    b = _Builder(oracle, {}, threads, budget)
    kids: dict[int, list[int]] = {}
    for i in range(1, parent.shape[0]):
        par = int(parent[i])
        q = b.q[par]
        if rank[i] >= q.shape[0]:
            raise ValueError(f"choices: rank {rank[i]} at node {i} is beyond the vocabulary (V = {q.shape[0]})")
        tok = _order(q)[rank[i]]
        b.add(par, tok, b.prefix[par] + (tok,), 1)
        kids.setdefault(par, []).append(i)
    for par, ids in kids.items():
        ranks = sorted(int(rank[i]) for i in ids)
        q = b.q[par]
        top = ranks == list(range(len(ids))) and np.count_nonzero(q > 0) >= len(ids)
        b.draws[par] = (ids, "topk" if top else "static")
    return b.build()
