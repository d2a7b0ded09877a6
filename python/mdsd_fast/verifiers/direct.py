"""The plan-free routes of the C++ core for given drafts: one tuple per row (``verify``'s engine case)
and one simulated step of one pair (``simulate(..., samples=1)``). Neither builds a plan or a validated
copy of p and q: the kernel validates and normalises each row in its own pass. They follow the plans'
law; for a seed, a draw from the residual may pick another token (token-id order here, ratio order in
a plan).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..inputs.args import _generator, _row_ids, _seed, _threads, _work_budget
from ..inputs.kinds import is_sparse
from ..inputs.pairs import raw_batch, raw_rows
from ..inputs.rules import SUM_TOL, check_n, check_pair_shapes, raise_row_error
from .table import lookup

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
