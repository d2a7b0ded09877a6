"""Validation of the raw draft-tree arrays (the shared contract of docs/guide/trees.md) and the per-step draft law.

A drafted tree for one target call is ``parent, token, p, q, draw_ptr, draw_child, scheme``
(docs/guide/trees_verification.md §1). ``check_tree`` turns them into validated arrays; ``step_law``
gives the law the j-th entry of a node's draft tuple was drawn from, given the entries before it,
which is what a sequential verifier (block, traversal) needs to stay lossless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.args import int_array
from ..inputs.pairs import as_distribution
from ..inputs.rules import as_array, check_threads, mixed_parts

__all__ = ["RawTree", "check_tree", "step_law", "TREE_SCHEMES"]

#: Schemes a sequential verifier can follow; "spechub" draws a pair from a sparse joint law that has
#: no per-entry conditional in this form, so it is refused.
TREE_SCHEMES = ("iid", "wor", "greedy", "topk", "static")


@dataclass(frozen=True)
class RawTree:
    """Validated contract arrays: ``p`` and ``q`` row-normalised float64 (N, V), the rest int64."""

    parent: NDArray[np.int64]
    token: NDArray[np.int64]
    p: NDArray[np.float64]
    q: NDArray[np.float64]
    draw_ptr: NDArray[np.int64]
    draw_child: NDArray[np.int64]
    scheme: tuple[str, ...]

    def draws(self, i: int) -> NDArray[np.int64]:
        """Child node ids of node ``i``'s draft tuple, in draw order (repeats are i.i.d. duplicates)."""
        return self.draw_child[self.draw_ptr[i] : self.draw_ptr[i + 1]]


def _int_vector(name: str, x: Any) -> NDArray[np.int64]:
    """An int64 copy of a 1-D integer vector, range-checked in its own dtype first (a uint64
    2**64 - 1 is refused, not read as -1)."""
    a = as_array(name, x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size and (a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    return int_array(name, a if a.size else a.astype(np.int64))


def _check_scheme_name(i: int, s: Any) -> str:
    if not isinstance(s, str):
        raise TypeError(f"scheme[{i}] must be a str, got {type(s).__name__}")
    if s in TREE_SCHEMES or s == "" or mixed_parts(s) is not None:
        return s
    raise ValueError(f"scheme[{i}] = {s!r}: a sequential tree verifier takes {TREE_SCHEMES}, top<m>+iid, top<m>+wor")


def check_tree(
    parent: Any, token: Any, p: Any, q: Any, draw_ptr: Any, draw_child: Any, scheme: Any, *, threads: int | None = None
) -> RawTree:
    """The contract arrays validated; a ValueError / TypeError naming the argument otherwise.
    ``threads``: of the validation of p and q (None: all cores)."""
    nthreads = check_threads(threads)
    par = _int_vector("parent", parent)
    n = par.size
    if n < 1 or par[0] != -1:
        raise ValueError("parent must be non-empty with parent[0] = -1 (node 0 is the root)")
    if n > 1 and not bool(np.all((par[1:] >= 0) & (par[1:] < np.arange(1, n)))):
        raise ValueError("parent must satisfy 0 <= parent[i] < i for i >= 1 (topological order)")
    tok = _int_vector("token", token)
    if tok.size != n:
        raise ValueError(f"token has {tok.size} entries, parent has {n}")
    pp = as_distribution("p", p, ndim=(2,), threads=nthreads)
    qq = as_distribution("q", q, ndim=(2,), threads=nthreads)
    if pp.shape[0] != n or qq.shape != pp.shape:
        raise ValueError(f"p and q must both have shape (N, V) with N = {n}, got {pp.shape} and {qq.shape}")
    v = pp.shape[1]
    if tok[0] != -1 or (n > 1 and not bool(np.all((tok[1:] >= 0) & (tok[1:] < v)))):
        raise ValueError(f"token must be -1 at the root and in [0, {v}) elsewhere")
    ptr = _int_vector("draw_ptr", draw_ptr)
    child = _int_vector("draw_child", draw_child)
    if ptr.size != n + 1 or ptr[0] != 0 or ptr[-1] != child.size or bool(np.any(np.diff(ptr) < 0)):
        raise ValueError("draw_ptr must have N + 1 non-decreasing entries from 0 to len(draw_child)")
    if child.size and not bool(np.all((child >= 1) & (child < n))):
        raise ValueError("draw_child entries must be node ids in [1, N)")
    if not isinstance(scheme, (list, tuple)) or len(scheme) != n:
        raise ValueError(f"scheme must be a list of N = {n} strings")
    sch = tuple(_check_scheme_name(i, s) for i, s in enumerate(scheme))
    seen = np.zeros(n, dtype=bool)
    for i in range(n):
        kids = child[ptr[i] : ptr[i + 1]]
        if kids.size and not bool(np.all(par[kids] == i)):
            raise ValueError(f"draw_child of node {i} lists a node whose parent is not {i}")
        if (kids.size == 0) != (sch[i] == ""):
            raise ValueError(f"scheme[{i}] must be '' exactly when node {i} has no draft tuple")
        seen[kids] = True
    if n > 1 and not bool(np.all(seen[1:])):
        raise ValueError("every non-root node must appear in its parent's draft tuple (draw_child)")
    for i in range(1, n):
        sib = np.flatnonzero(par == par[i])
        if np.unique(tok[sib]).size != sib.size:
            raise ValueError(f"siblings of node {i} must hold distinct tokens")
    return RawTree(par, tok, pp, qq, ptr, child, sch)


def step_law(scheme: str, j: int, q_row: NDArray[np.float64], tuple_tokens: NDArray[np.int64]) -> NDArray[np.float64]:
    """Law the j-th tuple entry was drawn from given entries 0..j-1 (the tuple is ``tuple_tokens``).

    Deterministic entries (topk, static, the top m of mixed schemes, the n - 1 fixed tokens of
    greedy) get a point mass; random entries get q renormalised over the tokens excluded so far.
    """
    n = tuple_tokens.size
    m = mixed_parts(scheme)
    if scheme in ("topk", "static"):
        fixed, rest = n, "iid"
    elif scheme == "greedy":
        fixed, rest = n - 1, "iid"
    elif m is not None:
        fixed, rest = m
    else:
        fixed, rest = 0, scheme
    if j < fixed:
        point: NDArray[np.float64] = np.zeros_like(q_row)
        point[tuple_tokens[j]] = 1.0
        return point
    # Random entries: q over the tokens not fixed and (without replacement) not drawn before.
    excluded = tuple_tokens[: (j if rest == "wor" else fixed)]
    law: NDArray[np.float64] = q_row.copy()
    law[excluded] = 0.0
    total = float(law.sum())
    if total <= 0.0:
        raise ValueError(f"scheme {scheme!r}: no draft mass left for tuple entry {j}")
    law /= total
    return law
