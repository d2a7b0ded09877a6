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

from .. import _core
from ..inputs.args import _drafts, _generator, _row_ids, _seed, _threads, _work_budget
from ..inputs.kinds import is_sparse
from ..inputs.pairs import raw_batch, raw_rows
from ..inputs.rules import SUM_TOL, check_n, check_pair_shapes, raise_row_error
from .run import VerifierName, _prepare_ids
from .table import lookup

__all__ = ["verify"]

#: Verifiers whose one-tuple-per-row case runs without a plan (cpp/include/mdsd/verifiers/planless/*.hpp;
#: "optimal" with its default i.i.d. scheme: optimal_iid/planless.hpp, docs/theory/level_race.md §12.6).
_DIRECT = ("sd", "rrs", "rrs-wor", "kseq", "optimal")


def _verify_direct(
    name: Any,
    p: Any,
    q: Any,
    d: NDArray[Any],
    rng: Any,
    scheme: str | None,
    threads: Any,
    row_ids: Any,
    work_budget: Any = None,
    seed: int | None = None,
) -> Any:
    """The engine case, one tuple per row of dense (B, V) p, q (or one tuple of a (V,) pair), for "sd", "rrs", "rrs-wor", "kseq"
    and "optimal" with i.i.d. drafts: no plan, and no validated copy of p and q either (the C++
    kernel validates and normalises each row in its own pass, float32 kept float32 until then).
    "optimal" cuts only the drafts' level windows, each from the levels left before it, with the
    plan's law given each tuple and the plan's draws for a seed. None where it does not apply."""
    if not isinstance(name, str) or name not in _DIRECT or _sparse(p) or _sparse(q):
        return None
    v = lookup(name)
    if scheme is not None and v.resolve_scheme(scheme) != v.scheme:
        return None
    _work_budget(work_budget)  # unused by these routes, but named when wrong, as on the planned route
    pr, qr = raw_rows("p", p), raw_rows("q", q)
    check_pair_shapes(pr, qr)
    one = pr.ndim == 1 and qr.ndim == 1
    if one:
        if d.ndim != 1:
            return None  # one pair, many tuples: the prepared plan serves them all
        pr, qr, d = pr[None], qr[None], d[None]  # one tuple: a batch of one row (views, no copy)
    elif d.ndim != 2:
        return None
    B, V = (pr if pr.ndim == 2 else qr).shape
    if d.shape[0] != B:
        return None  # the planned route says what is wrong
    _check_range(d, V)
    v.check_n(check_n(d.shape[1]))
    if pr.ndim != qr.ndim or pr.dtype != qr.dtype:
        pr, qr = raw_batch(pr, qr)
    d64 = np.ascontiguousarray(d, dtype=np.int64)
    ids = _row_ids(row_ids, B)
    try:
        tokens, accepted, err = _core.verifiers.verify_direct(
            name, pr, qr, d64, _seed(rng) if seed is None else seed, _threads(threads), ids, SUM_TOL
        )
    except ValueError as exc:
        if one:  # one tuple: no row to name
            raise ValueError(str(exc).replace("drafts: row 0: ", "drafts: ", 1)) from None
        raise
    if err is not None:
        status, side, r, value = err
        raise_row_error("pq"[side], status, r, value, (pr, qr)[side])
    if one:
        return int(tokens[0]), bool(accepted[0])
    return tokens, accepted


def _sparse(x: Any) -> bool:
    return type(x) is not np.ndarray and is_sparse(x)


def _check_range(d: NDArray[Any], V: int) -> None:
    """Every draft id in [0, V), compared in the input's own dtype or as Python ints (no int64
    wrap-around of unsigned ids); a short tuple without numpy's reductions."""
    if not d.size:
        return
    if d.size <= 64:
        vals = d.ravel().tolist()
        lo, hi = min(vals), max(vals)
    else:
        lo, hi = d.min(), d.max()
    if lo < 0 or hi >= V:
        bad = int(d[(d < 0) | (d >= V)].flat[0])
        raise ValueError(f"drafts: token id {bad} outside [0, {V})")


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


#: The verifiers whose one simulated step of a (V,) pair skips the plan (:func:`one_step`): the plan-free
#: route of :func:`verify` with the i.i.d. drafts they verify.
ONE_STEP = ("sd", "rrs", "kseq", "optimal")


def one_step(name: Any, p: Any, q: Any, n: Any, rng: Any, scheme: Any, threads: Any, work_budget: Any) -> Any:
    """``simulate(..., samples=1)`` of one dense (V,) float pair without a plan, or None where the
    plan route must answer: the n drafts drawn i.i.d. from q by its cumulative sums (one pass), then
    verified by :func:`verify`'s plan-free route, which validates both rows in C++ (an invalid q is
    reported there, before its drafts are seen). The law of the plan route; for a seed, other draws.
    Returns (tokens (1,), accepted (1,), drafts (1, n))."""
    if not isinstance(name, str) or name not in ONE_STEP or type(p) is not np.ndarray or type(q) is not np.ndarray:
        return None
    if p.ndim != 1 or p.shape != q.shape or p.dtype not in _FLOATS or q.dtype not in _FLOATS or not p.size:
        return None
    v = lookup(name)
    if scheme is not None and v.resolve_scheme(scheme) != v.scheme:
        return None
    nn = v.check_n(check_n(n))
    gen = _generator(rng)
    c = np.cumsum(q, dtype=np.float64)
    d = np.searchsorted(c, gen.random(nn) * c[-1], side="right")
    np.minimum(d, p.size - 1, out=d)  # u * c[-1] < c[-1] except for a q that verify refuses
    seed = int(gen.integers(0, 2**64, dtype=np.uint64))  # the verifier's stream, as _seed draws it
    out = _verify_direct(name, p, q, d, None, scheme, threads, None, work_budget, seed=seed)
    if out is None:
        return None
    return np.array([out[0]], dtype=np.int64), np.array([out[1]]), d[None].astype(np.int64, copy=False)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
