"""Exact expected accepted length of a drafted tree, and its expectation over tree drafting.

Top-down verification accepts child c of node i with probability pi_i(token c), pi_i the node
verifier's exact output law given the drafted tuple (the C++ ``VerifierBatch.law``). Hence
L(i) = sum_c pi_i(token c) (1 + L(c)), and the probability of reaching node c is the product of
pi along its path; P(accepted >= d) sums it over depth d, and L(0) is the sum over all non-root
nodes. Verifiers that are not per-node (block, traversal) plug in through ``register_tree_value``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..inputs.args import _work_budget, integer
from ..inputs.rules import check_bool, check_threads
from ..verifiers.registry import verifiers
from ..verifiers.run import _prepare_rows
from ._nodes import DETERMINISTIC, VerifierSpec, node_verifier
from .tree import DraftTree

__all__ = [
    "TreeValue",
    "DraftedValue",
    "node_laws",
    "tree_value",
    "tree_values",
    "register_tree_value",
    "tree_verifiers",
    "expected_value",
    "simulated_value",
]


class TreeValue(NamedTuple):
    """Exact value of one drafted tree under one verifier."""

    accepted: float  #: expected accepted length L(0)
    profile: NDArray[np.float64]  #: P(accepted >= d) for d = 1 .. max depth
    reach: NDArray[np.float64]  #: (N,) probability that verification accepts node i's token (1 at the root)

    @property
    def tokens_per_call(self) -> float:
        """Expected tokens emitted per target call: accepted + the final (correction or bonus) token."""
        return self.accepted + 1.0


class DraftedValue(NamedTuple):
    """A verifier's value averaged over tree drafting (exact: ``se`` = 0)."""

    accepted: float  #: expected accepted length
    se: float  #: its standard error (0 for an exact enumeration)
    profile: NDArray[np.float64]  #: P(accepted >= d), d = 1 .. the deepest tree's depth

    @property
    def tokens_per_call(self) -> float:
        """Expected tokens per target call."""
        return self.accepted + 1.0


#: Tree-level values by verifier name, for verifiers that are not per-node (block, traversal):
#: ``fn(tree, **options) -> TreeValue``. Registry verifiers go through ``node_laws``.
_TREE_VALUES: dict[str, Callable[..., TreeValue]] = {}


def register_tree_value(name: str, fn: Callable[..., TreeValue]) -> None:
    """Make ``tree_value(tree, name)`` call ``fn(tree, **options)`` (a hook for tree verifiers)."""
    if not isinstance(name, str) or not name or name in verifiers:
        raise ValueError(f"name: expected a new non-empty name (not a registry verifier), got {name!r}")
    _TREE_VALUES[name] = fn


def tree_verifiers() -> tuple[str, ...]:
    """Every name ``tree_value`` accepts: the registry's, then the registered tree verifiers."""
    return tuple(verifiers) + tuple(_TREE_VALUES)


def node_laws(
    tree: DraftTree,
    verifier: VerifierSpec,
    *,
    naive_residual: bool = False,
    threads: int | None = None,
    work_budget: float | None = None,
) -> NDArray[np.float64]:
    """(N, V): row i is the law of node i's output given its drafted tuple. Leaves and "static"
    nodes give p (the bonus draw, the deterministic-set rule). ``naive_residual=True`` gives the
    law of the biased variant that resamples from p on rejection (for negative controls)."""
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    naive_residual = check_bool("naive_residual", naive_residual)
    laws = np.array(tree.p, dtype=np.float64)
    groups: dict[tuple[str, str, int], list[int]] = {}
    for i in range(tree.N):
        sch, n = tree.scheme[i], int(tree.draw_ptr[i + 1] - tree.draw_ptr[i])
        if n and sch != DETERMINISTIC:
            groups.setdefault((node_verifier(verifier, sch, n, i), sch, n), []).append(i)
    for (name, sch, n), nodes in groups.items():
        try:
            batch = _prepare_rows(verifiers[name], sch, n, tree.p[nodes], tree.q[nodes], threads, work_budget)
        except ValueError as exc:
            raise type(exc)(f"tree: nodes {nodes} ({name!r}, {sch!r}, n = {n}): {exc}") from None
        for k, i in enumerate(nodes):
            tup = tree.draft_tokens(i)[None, :]
            try:
                laws[i] = batch.law(tup, k, naive_residual)[0]
            except ValueError as exc:
                raise ValueError(f"tree: node {i}'s tuple {tup[0].tolist()} under {sch!r}: {exc}") from None
    return laws


def _value_from_laws(tree: DraftTree, laws: NDArray[np.float64]) -> TreeValue:
    kids = np.arange(1, tree.N)
    accept = laws[tree.parent[kids], tree.token[kids]]  # pi_parent(token of the child)
    reach = np.ones(tree.N)
    for c in kids:  # parents come first (topological ids)
        reach[c] = reach[tree.parent[c]] * accept[c - 1]
    L = np.zeros(tree.N)
    for c in kids[::-1]:  # L(i) = sum_c pi_i(token c) (1 + L(c)), children before parents
        L[tree.parent[c]] += accept[c - 1] * (1.0 + L[c])
    return TreeValue(float(L[0]), _profile(tree, reach), reach)


def _profile(tree: DraftTree, reach: NDArray[np.float64]) -> NDArray[np.float64]:
    depth = int(tree.depth.max())
    return np.asarray(np.bincount(tree.depth, weights=reach, minlength=depth + 1)[1:], dtype=np.float64)


def _node_names(tree: DraftTree, verifier: VerifierSpec) -> list[str]:
    """Node i's registry verifier, or "" where the output law is p (leaves, "static" sets)."""
    names = []
    for i in range(tree.N):
        sch, n = tree.scheme[i], int(tree.draw_ptr[i + 1] - tree.draw_ptr[i])
        names.append(node_verifier(verifier, sch, n, i) if n and sch != DETERMINISTIC else "")
    return names


def tree_values(
    trees: list[DraftTree],
    verifier: VerifierSpec,
    *,
    naive_residual: bool = False,
    threads: int | None = None,
    work_budget: float | None = None,
) -> list[TreeValue]:
    """``tree_value`` of every tree, the trees split over threads in C++ (GIL released); results
    do not depend on ``threads``. Trees with an "optimal-lp" node (one flow LP per node, solved
    in Python) take the ``node_laws`` route."""
    if isinstance(verifier, str) and verifier in _TREE_VALUES:
        opts = dict(naive_residual=naive_residual, threads=threads, work_budget=work_budget)
        return [_TREE_VALUES[verifier](t, **opts) for t in trees]
    naive_residual = check_bool("naive_residual", naive_residual)
    if not isinstance(trees, (list, tuple)) or not all(isinstance(t, DraftTree) for t in trees):
        raise TypeError("trees: expected a list of DraftTree")
    out: list[TreeValue | None] = [None] * len(trees)
    batch: list[int] = []
    names: list[str] = []
    for k, t in enumerate(trees):
        node_names = _node_names(t, verifier)
        if "optimal-lp" in node_names:
            laws = node_laws(t, verifier, naive_residual=naive_residual, threads=threads, work_budget=work_budget)
            out[k] = _value_from_laws(t, laws)
        else:
            batch.append(k)
            names.extend(node_names)
    if batch:
        sel = [trees[k] for k in batch]
        tree_ptr = np.concatenate([[0], np.cumsum([t.N for t in sel])])
        try:
            accepted, reach = _core.trees.values(
                names,
                [s for t in sel for s in t.scheme],
                [(t.parent, t.token, t.p, t.q, t.draw_ptr, t.draw_child) for t in sel],
                _work_budget(work_budget),
                check_threads(threads),
                naive_residual,
            )
        except ValueError as exc:  # the message names the tree of the batch and the node
            raise type(exc)(f"trees: {exc}") from None
        for j, k in enumerate(batch):
            r = np.asarray(reach[tree_ptr[j] : tree_ptr[j + 1]], dtype=np.float64)
            out[k] = TreeValue(float(accepted[j]), _profile(sel[j], r), r)
    return [v for v in out if v is not None]


def tree_value(tree: DraftTree, verifier: VerifierSpec, **options: Any) -> TreeValue:
    """Exact expected accepted length, per-depth profile and reach probabilities of one drafted
    tree, for a registry verifier at every node (``options``: ``naive_residual``, ``threads``,
    ``work_budget``) or a tree verifier added with ``register_tree_value``. The recursion runs in
    C++ (cpp/include/mdsd/trees/value.hpp); ``node_laws`` gives the same laws row by row."""
    if isinstance(verifier, str) and verifier in _TREE_VALUES:
        return _TREE_VALUES[verifier](tree, **options)
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    return tree_values([tree], verifier, **options)[0]


def _profile_mean(profiles: list[NDArray[np.float64]], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    depth = max((pr.shape[0] for pr in profiles), default=0)
    out = np.zeros(depth)
    for w, pr in zip(weights, profiles, strict=False):
        out[: pr.shape[0]] += w * pr
    return out


def expected_value(trees: Iterable[tuple[float, DraftTree]], verifier: VerifierSpec, **options: Any) -> DraftedValue:
    """Exact expectation over tree drafting from an enumeration ``[(probability, tree), ...]``
    (``draft.enumerate_kseq`` / ``enumerate_branching``); the probabilities must sum to 1."""
    pairs = list(trees)
    w = np.array([float(pr) for pr, _ in pairs])
    if not pairs or (w < 0).any() or abs(math.fsum(w) - 1.0) > 1e-9:
        raise ValueError(
            f"trees: expected (probability, tree) pairs with probabilities summing to 1, got {math.fsum(w)}"
        )
    values = [tree_value(t, verifier, **options) for _, t in pairs]
    acc = math.fsum(wi * v.accepted for wi, v in zip(w, values, strict=False))
    return DraftedValue(acc, 0.0, _profile_mean([v.profile for v in values], w))


def simulated_value(
    draw: Callable[[np.random.Generator], DraftTree],
    verifier: VerifierSpec,
    samples: int,
    *,
    rng: Any = None,
    **options: Any,
) -> DraftedValue:
    """Expectation over tree drafting by simulation: ``samples`` trees from ``draw(generator)``,
    each valued exactly; the standard error is the sample's (drafting is the only randomness)."""
    samples = integer("samples", samples, 2)  # any integer type, numpy's included
    gen = np.random.default_rng(rng)
    values = [tree_value(draw(gen), verifier, **options) for _ in range(samples)]
    acc = np.array([v.accepted for v in values])
    w = np.full(samples, 1.0 / samples)
    return DraftedValue(
        float(acc.mean()), float(acc.std(ddof=1) / math.sqrt(samples)), _profile_mean([v.profile for v in values], w)
    )
