"""Rigorous bounds on alpha* from truncated (top-k) logs: ``acceptance_bounds``.

A top-k log keeps the k most probable tokens of a row. Everything else is known only through two
facts: the unseen mass is ``u = 1 - (logged mass)`` and no unseen token is more probable than the
row's smallest logged probability ``t``. A *completion* of the row adds ``r >= 0`` on its unlogged
tokens with ``r <= t`` and ``sum r = u``. alpha* of the completed pair is then an interval, and
``acceptance_bounds`` returns an interval ``(low, high)`` that provably contains it for every
consistent completion of p and of q (docs/guide/intervals.md: statement, proofs, measured tightness).

* ``low`` is alpha* of one explicit pessimistic pair computed by the C++ core: p's unseen mass goes
  to a phantom token that is never drafted and q's to phantom tokens that p never gives (so every
  draft landing there is wasted). Without replacement q's phantoms are split without limit: a
  Poisson bucket in every H (``wor.wor_low``).
* ``high`` is ``1 + p_max(H) - Q_min(H)`` minimised over token sets H (any H gives a valid bound),
  where ``p_max(H)`` and ``Q_min(H)`` are the largest p(H) and smallest Pr[all drafts in H] over
  completions, both explicit. For i.i.d. random drafts the minimum is over **every** H
  (``iid.iid_high``: the bound depends on H through a few sums), and for "wor" too
  (``wor.wor_high``: a few structured sets per size, with the q mass forced into H at
  the cap, docs/design/intervals.md §3.5); for oversized rows it is over
  candidates, the certificates of extreme completions and of a Frank-Wolfe search (for "wor" with
  the same pieces at the cap, by the same kernel: ``wor.wor_set_high``).
* "topk" is exact: alpha* = p(T) with T the logged top n of q.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..inputs.args import integer
from ..inputs.rules import check_n, check_scheme, check_threads, mixed_parts
from ..inputs.sparse import is_sparse
from .ends import _B, _F, COMPLETE_TOL, COMPRESS_KEEP, SEARCH_STEPS, _high, _Log, _log, _low, _top
from .iid import MAX_ROW_CELLS, iid_high, row_cells, topk_range, union
from .iid_max import iid_max
from .support import Parts, column_groups, dense_parts, sparse_parts
from .wor import wor_box_high, wor_high, wor_high_rows
from .wor_capped import wor_cap_high
from .wor_witness import wor_witness

__all__ = ["acceptance_bounds", "BOUND_SLACK"]

#: Peak memory of the candidate search per compressed column, in bytes, with room to spare
#: (tracemalloc: 839 and 111 bytes per column on 20 rows of top-300 logs, V = 50,000, n = 3):
#: a search that would pass ``limits.MAX_ALLOC_BYTES`` is refused before it starts.
SEARCH_BYTES_PER_COLUMN = {"iid": 1024, "wor": 160}

#: Both ends are moved outward by this much: the without-replacement evaluator of the core is
#: accurate to ~1e-12 absolute, and the sums here are float64.
BOUND_SLACK = 1e-9


def acceptance_bounds(
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    scheme: str = "iid",
    *,
    verifier: str | None = None,
    search_steps: int = SEARCH_STEPS,
    threads: int | None = None,
) -> tuple[Any, Any]:
    """Interval (low, high) that contains alpha* of every completion of truncated logs p and q.

    Parameters
    ----------
    p, q : logged entries of the target and draft rows, shape (V,) or (B, V) (same shape), zero
        on tokens not logged; a row's sum is its logged mass (at most 1, within 1e-4). Each unseen
        token has probability at most the row's smallest logged value, and the unseen tokens hold
        the missing mass ``1 - sum``; a row whose unlogged tokens cannot hold it is an error.
        A ``TopK`` (ids and probabilities or log-probabilities per row) or a scipy.sparse row
        holds the logged entries directly (not renormalised).
    n : number of drafts.
    scheme : "iid", "wor", "greedy", "topk" or a mixed "top<m>+iid" / "top<m>+wor" (as in
        ``optimal_acceptance``). For the schemes with deterministic drafts every completion must have
        the same top m tokens of q: the m-th logged value must exceed the smallest one (or q must be
        complete).
    verifier : None (alpha*), or a verifier whose exact acceptance to bound: "sd" (n = 1: the
        interval of sum min(p', q')), "optimal" ("iid"), "optimal-lp", "greedy", "topk" (they reach
        alpha*, so the alpha* interval), "rrs" ("iid") or "rrs-wor" ("wor"): from the "sd" low
        end (their first draft is checked as speculative sampling checks it) to alpha*'s high
        end; valid, not tight.
    search_steps : Frank-Wolfe steps of the search for certificates behind ``high`` (each costs
        about one alpha* of the batch); more can only lower ``high``, and it stays valid with 0.
        The search runs for the without-replacement schemes, and for i.i.d. drafts only on rows
        too large for the exact minimum over every H (more than ``MAX_ROW_CELLS`` sizes of H,
        e.g. some top-100 logs); elsewhere ``high`` is that minimum and the steps change nothing.
    threads : C++ threads of every alpha* computed inside (None: all cores), as in
        ``optimal_acceptance``; the interval does not depend on it.

    Returns
    -------
    (low, high): floats for 1-D input, float64 arrays (B,) for 2-D input, with
    ``low <= alpha*(p', q') <= high`` (or the verifier's acceptance) for every consistent completion
    p', q'. docs/guide/intervals.md states how close each end is to the true extremes.
    """
    if verifier is not None and (not isinstance(verifier, str) or verifier not in _VERIFIER_SCHEMES):
        raise ValueError(
            f"verifier: expected None or one of {', '.join(map(repr, _VERIFIER_SCHEMES))}, got {verifier!r}"
        )
    if verifier is not None:
        allowed = _VERIFIER_SCHEMES[verifier]
        if allowed and check_scheme(scheme) not in allowed:
            raise ValueError(f"scheme: verifier {verifier!r} verifies {' or '.join(allowed)} drafts, got {scheme!r}")
        if verifier == "sd" and n != 1:
            raise ValueError(f"n: verifier 'sd' checks one draft, got n = {n!r}")
    try:
        search_steps = integer("search_steps", search_steps, 0)
    except TypeError:
        raise ValueError(f"search_steps: expected a non-negative integer, got {search_steps!r}") from None
    check_threads(threads)  # named before any work
    lo, hi, _, _, batched = _bounds(p, q, n, scheme, search_steps, threads=threads)
    if verifier in ("rrs", "rrs-wor"):
        lo = _bounds(p, q, 1, "iid", 0, threads=threads)[0]
    if not batched:
        return float(lo[0]), float(hi[0])
    return lo, hi


#: Verifiers with an interval, and the schemes they verify here (empty: any scheme of alpha*).
_VERIFIER_SCHEMES: dict[str, tuple[str, ...]] = {
    "sd": ("iid",),
    "optimal": ("iid",),  # its without-replacement route may stop short of alpha* (route_report)
    "optimal-lp": (),
    "greedy": ("greedy",),
    "topk": ("topk",),
    "rrs": ("iid",),
    "rrs-wor": ("wor",),
}


def _parts(p: ArrayLike, q: ArrayLike) -> tuple[Parts, Parts, int, bool]:
    """Both sides' logged entries as CSR parts, with each input type's checks and messages."""
    if is_sparse(p) and is_sparse(q):  # never a (rows, V) array
        return sparse_parts(p, q, COMPLETE_TOL)
    if is_sparse(p):  # the dense side first: a sparse side must declare its V before it is densified
        ql, qb = _log("q", q)
        pl, pb = _log("p", p, ql.x.shape)
    else:
        pl, pb = _log("p", p)
        ql, qb = _log("q", q, pl.x.shape)
    if pl.x.shape != ql.x.shape:
        raise ValueError(f"p, q: shapes differ ({pl.x.shape} and {ql.x.shape}); pass one logged row of each")
    return dense_parts("p", pl.x, COMPLETE_TOL), dense_parts("q", ql.x, COMPLETE_TOL), pl.x.shape[1], pb or qb


def _take(pl: _Log, ql: _Log, rows: _B) -> tuple[_Log, _Log]:
    """The union-layout logs of some rows."""

    def one(lg: _Log) -> _Log:
        return _Log(lg.x[rows], lg.unseen[rows], lg.u[rows], lg.t[rows], np.asarray(lg.hidden)[rows])

    return one(pl), one(ql)


def _bounds(
    p: ArrayLike, q: ArrayLike, n: int, scheme: str, steps: int, witnesses: bool = False, *, threads: int | None = None
) -> tuple[_F, _F, _F, _F, bool]:
    """(low, high, smallest and largest alpha* of the completions tried (NaN where no search ran;
    ``witnesses`` runs it on every row, and for the schemes with an i.i.d. random part ("iid",
    "greedy", "top<m>+iid") the cutting planes of §3.3 too, which can only lower high), batched); ``threads`` goes to every ``optimal_acceptance``."""
    scheme = check_scheme(scheme)
    n = check_n(n)
    P, Q, V, batched = _parts(p, q)
    B = P[0].shape[0] - 1
    mp = mixed_parts(scheme)
    m = {"greedy": n - 1, "topk": n}.get(scheme, mp[0] if mp else 0)
    if mp is not None and m >= n:
        raise ValueError(f"scheme: {scheme!r} drafts the top {m} tokens and needs n > {m}, got n = {n}")
    wor = scheme == "wor" or (mp is not None and mp[1] == "wor")
    if wor or scheme == "topk":
        short = np.diff(Q[0]) < n
        if short.any():
            r = int(np.argmax(short))
            raise ValueError(f"q: scheme {scheme!r} needs {n} logged draft tokens, row {r} has fewer")
    wlo, whi = np.full(B, np.nan), np.full(B, np.nan)
    if B == 0:
        return np.empty(0), np.empty(0), wlo, whi, batched
    pl, ql = union(P, Q, V, _Log)
    T = _top(ql, m) if m else np.zeros(pl.x.shape, dtype=bool)
    if scheme == "topk":
        lo, hi = topk_range(pl, T)
        wlo, whi = lo.copy(), hi.copy()
    else:
        lo, hi = _low(pl, ql, n, scheme, m, T, threads), np.ones(B)
        a = ((pl.x > 0) & (ql.x > 0)).sum(axis=1)
        if wor:  # every H at once (docs/design/intervals.md §3.2)
            fast = wor_high_rows(pl, ql)
        else:
            fast = row_cells(a, ql.unseen.sum(axis=1), pl.unseen.sum(axis=1)) <= MAX_ROW_CELLS
        if fast.any():  # every H at once (docs/design/intervals.md §3.1, §3.2)
            sub = _take(pl, ql, fast)
            hi[fast] = (
                wor_high(sub[0], sub[1], T[fast], n, m, threads) if wor else iid_high(sub[0], sub[1], T[fast], n - m)
            )
        search = np.flatnonzero(~fast | witnesses)
        start = np.zeros((B, 3), dtype=np.int64)
        per_column = SEARCH_BYTES_PER_COLUMN["wor" if wor else "iid"]
        for rows, pg, qg in column_groups(P, Q, V, search, _Log, COMPRESS_KEEP, per_column) if search.size else []:
            h, whi[rows], wlo[rows], start[rows] = _high(
                pg, qg, n, scheme, m, _top(qg, m) if m else np.zeros(pg.x.shape, bool), steps, threads
            )
            hi[rows] = np.where(fast[rows], hi[rows], h)
        if wor and (~fast).any():  # inside §3.2's family from the search's best set (§3.2)
            big = _take(pl, ql, ~fast)
            hi[~fast] = np.minimum(hi[~fast], wor_box_high(*big, T[~fast], n, m, start[~fast], threads=threads)[0])
        if witnesses and not wor:  # bracket the largest alpha* over completions (§3.3)
            br = iid_max(pl, ql, n, hi, threads=threads, T=T, m=m)
            whi, hi = np.fmax(whi, br.witness), np.minimum(hi, br.high)
        if witnesses and scheme == "wor":  # bracket the largest alpha*_wor: a local search, the caps (§3.4-3.5)
            whi = np.fmax(whi, wor_witness(pl, ql, n, threads=threads).witness)
            if (~fast).any():  # the kernel's high already holds the caps on its rows (§3.5)
                big = _take(pl, ql, ~fast)
                hi[~fast] = np.minimum(hi[~fast], wor_cap_high(big[0], big[1], n, threads=threads))
    lo = np.clip(lo - BOUND_SLACK, 0.0, 1.0)
    hi = np.clip(hi + BOUND_SLACK, 0.0, 1.0)
    return lo, hi, wlo, whi, batched
