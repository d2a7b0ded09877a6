"""The drafted tree of one target call, as arrays (the contract of docs/guide/trees.md).

Node 0 is the root (the last verified position, no token); ``parent[i] < i`` keeps the nodes in
topological order, so every pass over the tree is one loop over node ids. Node i's draft tuple is
``draw_child[draw_ptr[i]:draw_ptr[i + 1]]``: its children in draw order, an i.i.d. repeat listing
the same child again. Conversions to the engines' layouts (SGLang's first-child / next-sibling
arrays, EAGLE's choice lists) live here too.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..inputs.args import int_array
from ..inputs.pairs import as_distribution
from ..inputs.rules import MAX_V, as_array, check_threads, mixed_parts

__all__ = ["DraftTree", "TREE_SCHEMES", "choices_to_parent", "q_ranks"]

#: Schemes a node's tuple may carry besides the mixed "top<m>+iid" / "top<m>+wor".
TREE_SCHEMES = ("iid", "wor", "greedy", "topk", "spechub", "static")
#: Schemes whose tuple holds each token once.
_DISTINCT = ("wor", "greedy", "topk", "spechub", "static")


def _ids(name: str, x: Any, shape_name: str) -> NDArray[np.int64]:
    """An int64 copy (the tree freezes its arrays; the caller's stay theirs), range-checked first."""
    arr = as_array(name, x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer ids, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected shape {shape_name}, got shape {arr.shape}")
    return int_array(name, arr)


def _frozen(arr: NDArray[Any]) -> NDArray[Any]:
    arr.setflags(write=False)
    return arr


def _check_scheme(i: int, s: Any, size: int) -> str:
    if not isinstance(s, str):
        raise TypeError(f"scheme: node {i}: expected a str, got {type(s).__name__}")
    if size == 0:
        if s != "":
            raise ValueError(f"scheme: node {i} has no drafts (a leaf) and must have scheme '', got {s!r}")
        return s
    if s not in TREE_SCHEMES and mixed_parts(s) is None:
        allowed = ", ".join(map(repr, TREE_SCHEMES))
        raise ValueError(f"scheme: node {i}: expected one of {allowed}, 'top<m>+iid', 'top<m>+wor', got {s!r}")
    return s


@dataclass(frozen=True, eq=False)
class DraftTree:
    """A drafted tree for one target call (arrays read-only once validated).

    Attributes
    ----------
    parent : int64 (N,), parent[0] = -1 and 0 <= parent[i] < i.
    token : int64 (N,), token[0] = -1; the draft token on the edge parent[i] -> i, distinct among siblings.
    p, q : float64 (N, V), target and draft next-token distributions at each node.
    draw_ptr : int64 (N + 1,), draw_child : int64 (M,), the ordered draft tuple of each node as child ids.
    scheme : N str (stored as a tuple), the draft scheme of each node's tuple ("" for a leaf).
    threads : keyword only, not stored: C++ threads of the validation of p and q at construction
        (None: all cores; as every ``threads=``). Values computed from the tree later take their own.
    """

    parent: NDArray[np.int64]
    token: NDArray[np.int64]
    p: NDArray[np.float64]
    q: NDArray[np.float64]
    draw_ptr: NDArray[np.int64]
    draw_child: NDArray[np.int64]
    scheme: Sequence[str]
    depth: NDArray[np.int64] = field(init=False)
    _: KW_ONLY
    threads: InitVar[int | None] = None

    def __post_init__(self, threads: int | None) -> None:
        nthreads = check_threads(threads)  # the caller's choice covers the validation pass too
        parent = _ids("parent", self.parent, "(N,)")
        N = parent.shape[0]
        if N == 0:
            raise ValueError("parent: a tree has at least the root (N >= 1), got N = 0")
        token = _ids("token", self.token, "(N,)")
        if token.shape[0] != N:
            raise ValueError(f"token: expected shape ({N},) like parent, got {token.shape}")
        p = as_distribution("p", self.p, ndim=(2,), threads=nthreads)
        q = as_distribution("q", self.q, ndim=(2,), threads=nthreads)
        if p.shape != q.shape or p.shape[0] != N:
            raise ValueError(f"p, q: expected shape ({N}, V) each, got {p.shape} and {q.shape}")
        V = p.shape[1]
        if parent[0] != -1 or token[0] != -1:
            raise ValueError(
                f"parent, token: the root (node 0) has parent -1 and token -1, got {parent[0]}, {token[0]}"
            )
        ids = np.arange(N)
        bad = np.flatnonzero((parent[1:] < 0) | (parent[1:] >= ids[1:]))
        if bad.size:
            i = int(bad[0]) + 1
            raise ValueError(
                f"parent: node {i} has parent {parent[i]}; expected 0 <= parent[i] < i (topological order)"
            )
        bad = np.flatnonzero((token[1:] < 0) | (token[1:] >= V))
        if bad.size:
            i = int(bad[0]) + 1
            raise ValueError(f"token: node {i} has token {token[i]} outside [0, {V})")
        seen: dict[tuple[int, int], int] = {}
        for i in range(1, N):
            key = (int(parent[i]), int(token[i]))
            if key in seen:
                raise ValueError(f"token: nodes {seen[key]} and {i} are siblings with the same token {token[i]}")
            seen[key] = i
        draw_ptr = _ids("draw_ptr", self.draw_ptr, f"({N + 1},)")
        draw_child = _ids("draw_child", self.draw_child, "(M,)")
        if draw_ptr.shape[0] != N + 1:
            raise ValueError(f"draw_ptr: expected shape ({N + 1},), got {draw_ptr.shape}")
        if draw_ptr[0] != 0 or draw_ptr[-1] != draw_child.shape[0] or (np.diff(draw_ptr) < 0).any():
            raise ValueError(
                f"draw_ptr: expected non-decreasing offsets from 0 to len(draw_child) = {draw_child.shape[0]}, "
                f"got {draw_ptr.tolist()}"
            )
        if not isinstance(self.scheme, Sequence) or isinstance(self.scheme, str) or len(self.scheme) != N:
            raise ValueError(f"scheme: expected a list of {N} str (one per node)")
        scheme = tuple(_check_scheme(i, s, int(draw_ptr[i + 1] - draw_ptr[i])) for i, s in enumerate(self.scheme))
        counts = np.zeros(N, dtype=np.int64)
        for i in range(N):
            tup = draw_child[draw_ptr[i] : draw_ptr[i + 1]]
            if tup.size and ((tup < 1) | (tup >= N)).any():
                raise ValueError(f"draw_child: node {i}'s tuple {tup.tolist()} holds ids outside [1, {N})")
            if tup.size and (parent[tup] != i).any():
                c = int(tup[parent[tup] != i][0])
                raise ValueError(f"draw_child: node {i}'s tuple lists node {c}, which is not a child of node {i}")
            if scheme[i] in _DISTINCT and np.unique(tup).size != tup.size:
                raise ValueError(f"draw_child: node {i}'s {scheme[i]!r} tuple repeats a child: {tup.tolist()}")
            counts[tup] += 1
        missing = np.flatnonzero(counts[1:] == 0)
        if missing.size:
            c = int(missing[0]) + 1
            raise ValueError(f"draw_child: node {c} is in no draft tuple of its parent {parent[c]}")
        depth = np.zeros(N, dtype=np.int64)
        for i in range(1, N):
            depth[i] = depth[parent[i]] + 1
        for name, arr in (("parent", parent), ("token", token), ("p", p), ("q", q)):
            object.__setattr__(self, name, _frozen(arr))
        object.__setattr__(self, "draw_ptr", _frozen(draw_ptr))
        object.__setattr__(self, "draw_child", _frozen(draw_child))
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "depth", _frozen(depth))

    @property
    def N(self) -> int:
        """Number of nodes, the root included."""
        return int(self.parent.shape[0])

    @property
    def V(self) -> int:
        """Vocabulary size."""
        return int(self.p.shape[1])

    def draws(self, i: int) -> NDArray[np.int64]:
        """Node i's draft tuple as child ids, in draw order (repeats included)."""
        return self.draw_child[self.draw_ptr[i] : self.draw_ptr[i + 1]]

    def draft_tokens(self, i: int) -> NDArray[np.int64]:
        """Node i's draft tuple as tokens, in draw order."""
        return self.token[self.draws(i)]

    def children(self, i: int) -> NDArray[np.int64]:
        """Node i's children, in node-id order."""
        return np.flatnonzero(self.parent == i)

    def path(self, i: int) -> tuple[int, ...]:
        """Tokens on the path root -> i (the prefix relative to the root)."""
        out: list[int] = []
        while i > 0:
            out.append(int(self.token[i]))
            i = int(self.parent[i])
        return tuple(reversed(out))

    def paths(self) -> list[tuple[int, ...]]:
        """``path(i)`` of every node."""
        return [self.path(i) for i in range(self.N)]

    def to_sibling_arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """SGLang's (retrive_next_token, retrive_next_sibling): first child and next sibling of each
        node in node-id order, -1 for none (the layout ``engines.tree_speculative_sampling`` reads)."""
        first = np.full(self.N, -1, dtype=np.int64)
        sibling = np.full(self.N, -1, dtype=np.int64)
        last = np.full(self.N, -1, dtype=np.int64)
        for i in range(1, self.N):
            par = int(self.parent[i])
            if first[par] < 0:
                first[par] = i
            else:
                sibling[last[par]] = i
            last[par] = i
        return first, sibling

    @classmethod
    def from_sibling_arrays(
        cls,
        token: ArrayLike,
        retrive_next_token: ArrayLike,
        retrive_next_sibling: ArrayLike,
        p: ArrayLike,
        q: ArrayLike,
        scheme: str = "static",
        *,
        threads: int | None = None,
    ) -> DraftTree:
        """A tree from first-child / next-sibling arrays; each node's tuple is its children in
        sibling order, with ``scheme`` (default "static", the engines' fixed sets). ``token[0]``
        (the engines' root token) is ignored. Node ids are kept, so they must be topological.
        ``threads``: of the validation, as in the constructor."""
        tok = _ids("token", token, "(N,)").copy()
        first = _ids("retrive_next_token", retrive_next_token, "(N,)")
        sib = _ids("retrive_next_sibling", retrive_next_sibling, "(N,)")
        N = tok.shape[0]
        for name, arr in (("retrive_next_token", first), ("retrive_next_sibling", sib)):
            if arr.shape[0] != N or ((arr < -1) | (arr >= N) | (arr == 0)).any():
                raise ValueError(f"{name}: expected shape ({N},) with entries -1 or in [1, {N})")
        parent = np.full(N, -2, dtype=np.int64)
        parent[0] = -1
        ptr, child = [0], []
        for i in range(N):
            c = int(first[i])
            while c >= 0:
                if parent[c] != -2:
                    raise ValueError(
                        f"retrive_next_token, retrive_next_sibling: node {c} is reached twice (not a tree)"
                    )
                parent[c] = i
                child.append(c)
                c = int(sib[c])
            ptr.append(len(child))
        unreached = np.flatnonzero(parent == -2)
        if unreached.size:
            raise ValueError(f"retrive_next_token: node {int(unreached[0])} is not reached from the root")
        tok[0] = -1
        schemes = [scheme if ptr[i + 1] > ptr[i] else "" for i in range(N)]
        arrays = (np.asarray(p), np.asarray(q), np.asarray(ptr), np.asarray(child, np.int64))
        return cls(parent, tok, *arrays, schemes, threads=threads)

    def to_choices(self) -> list[list[int]]:
        """EAGLE-style choice list: the path of child ranks to each non-root node, a child's rank
        being its token's rank in the parent's q (descending, ties to the lower id); sorted by
        length, then lexicographically (EAGLE's order)."""
        ranks = q_ranks(self.q)
        out: list[list[int]] = []
        for i in range(1, self.N):
            path: list[int] = []
            j = i
            while j > 0:
                path.append(int(ranks[self.parent[j], self.token[j]]))
                j = int(self.parent[j])
            out.append(path[::-1])
        return sorted(out, key=lambda c: (len(c), c))


def q_ranks(q: NDArray[np.float64]) -> NDArray[np.int64]:
    """Rank of every token in each row of q: 0 for the most probable, ties to the lower id (the
    package's rule for "topk" and "greedy")."""
    order = np.argsort(-q, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(q.shape[-1])[None, :], axis=-1)
    return ranks


def choices_to_parent(choices: Any) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(parent, rank) of a choice list, nodes in EAGLE order (by length, then lexicographic) after
    the root: ``rank[i]`` is node i's child rank. Every prefix of a path must be a path too."""
    if not isinstance(choices, Sequence) or isinstance(choices, str):
        raise TypeError("choices: expected a list of paths (lists of child ranks), e.g. [[0], [1], [0, 0]]")
    paths: list[tuple[int, ...]] = []
    for k, c in enumerate(choices):
        if not isinstance(c, Sequence) or isinstance(c, str) or len(c) == 0:
            raise ValueError(f"choices: entry {k} must be a non-empty list of child ranks, got {c!r}")
        for r in c:
            if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral) or not 0 <= int(r) < MAX_V:
                raise ValueError(f"choices: entry {k} ({list(c)!r}) holds {r!r}; ranks are integers in [0, {MAX_V})")
        paths.append(tuple(int(r) for r in c))
    if len(set(paths)) != len(paths):
        raise ValueError("choices: a path is listed twice")
    known = set(paths)
    for path in paths:
        if len(path) > 1 and path[:-1] not in known:
            raise ValueError(f"choices: path {list(path)} lacks its prefix {list(path[:-1])}")
    paths.sort(key=lambda c: (len(c), c))
    index = {(): 0} | {c: i + 1 for i, c in enumerate(paths)}
    parent = np.array([-1] + [index[c[:-1]] for c in paths], dtype=np.int64)
    rank = np.array([-1] + [c[-1] for c in paths], dtype=np.int64)
    return parent, rank
