"""Verification of draft tuples drawn by the caller: ``verify``.

A 1-D pair with one tuple, or rows with one tuple each, go through the plan-free route of the C++ core (one tuple per
row, no plan) for the verifiers that have one; anything else builds the verifier's plan for every row
and verifies through it. Both give the same output law (for a seed, a draw from the residual may
pick another token: the plan-free route draws it in token-id order, a plan in ratio order).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..inputs.args import _drafts, _row_ids, _seed, _threads
from .direct import _check_range, _verify_direct
from .run import VerifierName, _prepare_ids

__all__ = ["verify"]


def _to_columns(d2: NDArray[np.int64], col_ids: NDArray[np.int64], rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """Draft ids as columns of each row's union support; a draft outside it has q = 0."""
    out = np.empty_like(d2)
    for k in range(d2.shape[1]):
        ids_r = col_ids[rows]
        pos = np.argmax(ids_r == d2[:, k : k + 1], axis=1)
        found = ids_r[np.arange(d2.shape[0]), pos] == d2[:, k]
        if not found.all():
            bad = int(d2[np.argmin(found), k])
            raise ValueError(f"drafts: token {bad} has q = 0, so it cannot have been drafted from q")
        out[:, k] = pos
    return out


def verify(
    name: VerifierName,
    p: ArrayLike,
    q: ArrayLike,
    drafts: ArrayLike,
    *,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """Verify draft tuples drawn by the caller: the output token and whether it is a draft.

    Parameters
    ----------
    p, q : (V,) or (B, V) target and draft distributions.
    drafts : int token ids, (n,) for one tuple, or (B, n): one tuple per row of p, q (or B tuples
        for a single (V,) pair). Each tuple must be possible under the verifier's scheme (ids in
        [0, V), q > 0, distinct for "wor", containing the top n-1 of q for "greedy", the hub for
        "spechub"); otherwise ValueError.
    rng, scheme, threads, work_budget : as in :func:`acceptance`.
    row_ids : a stable integer id per tuple (B,): tuple i's random stream is keyed by row_ids[i]
        instead of its position i, so results do not depend on batching or order.

    Returns
    -------
    (token, accepted): (int, bool) for one tuple, arrays of shape (B,) otherwise.
    """
    d = _drafts(drafts)
    direct = _verify_direct(name, p, q, d, rng, scheme, threads, row_ids, work_budget)
    if direct is not None:
        return direct
    return _verify_planned(
        name, p, q, d, rng=rng, scheme=scheme, threads=threads, work_budget=work_budget, row_ids=row_ids
    )


def _verify_planned(
    name: Any,
    p: ArrayLike,
    q: ArrayLike,
    d: NDArray[Any],
    *,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """:func:`verify` through a prepared plan per row, every case included: the route the direct
    ones are tested against (their reference, kept reachable), and the route of every case they
    do not serve. ``d``: the output of ``_drafts``."""
    batch, batched, col_ids = _prepare_ids(name, p, q, d.shape[-1], scheme, threads, work_budget)
    if col_ids is None:
        V = batch.V
    else:
        from ..inputs.sparse import sparse_vocab  # sparse input: its module is loaded already

        V = sparse_vocab(p, q)
    _check_range(d, V)
    d = np.ascontiguousarray(d, dtype=np.int64)
    d2 = d if d.ndim == 2 else d[None, :]
    if batched and d2.shape[0] != batch.B:
        raise ValueError(f"drafts: expected {batch.B} tuples (one per row of p, q), got {d2.shape[0]}")
    rows = np.arange(d2.shape[0]) if batch.B != 1 else np.zeros(d2.shape[0], dtype=np.int64)
    if col_ids is not None:  # sparse input: vocabulary ids to the columns of each row's support
        d2 = _to_columns(d2, col_ids, rows)
    tokens, accepted = batch.verify(d2, _seed(rng), _threads(threads), _row_ids(row_ids, d2.shape[0]))
    if col_ids is not None:
        tokens = col_ids[rows, tokens]
    if d.ndim == 1 and not batched:
        return int(tokens[0]), bool(accepted[0])
    return tokens, accepted
