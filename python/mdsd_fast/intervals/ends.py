"""The two ends of ``acceptance_bounds``'s interval on a batch of logged rows, on the general route.

A row's log fixes its unseen mass and the cap no unseen token exceeds; :func:`completions` lists
completions that place that mass (each a real pair of distributions), the low end is the best alpha*
among them (``_low``) and the high end the smallest cut bound over candidate token sets H
(``_high``, ``_cut``), each valid for every completion (docs/guide/intervals.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..bound.alpha import optimal_acceptance
from ..inputs.args import check_alloc, nbytes
from ..inputs.pairs import _sampled
from ..inputs.rules import _as_float_array
from ..inputs.sparse import is_sparse
from .iid import cut_value, p_max_of
from .support import check_logged_mass, logged_entries, unseen_mass
from .wor import family_start, wor_low, wor_set_high

#: A row whose logged mass is within this of 1 is complete (its missing mass is rounding).
COMPLETE_TOL = 1e-12


#: Frank-Wolfe steps of the search for the certificates behind ``high`` (without-replacement drafts,
#: and i.i.d. rows beyond ``MAX_ROW_CELLS``).
SEARCH_STEPS = 12


#: Unlogged-in-both tokens kept as columns (beyond those the fills need); the rest are counted.
#: More columns let the flat completions spread finer (the witnesses of ``low`` for "wor").
COMPRESS_KEEP = 2048


_F = NDArray[np.float64]


_B = NDArray[np.bool_]


@dataclass(frozen=True)
class _Log:
    """One side (p or q) of a batch of truncated rows, shape (B, V)."""

    x: _F  #: logged values, 0 elsewhere
    unseen: _B  #: tokens not logged (x == 0)
    u: _F  #: unseen mass per row, (B,)
    t: _F  #: cap of an unseen token per row: the smallest logged value, (B,)
    hidden: NDArray[np.int64]  #: unlogged-in-both tokens left out of the arrays (see ``_compress``)


def _logged(name: str, x: Any, like: tuple[int, int] | None = None) -> _F:
    """A TopK or scipy.sparse log as a dense array of its logged entries (not normalised: the row
    sum is the logged mass), after the union-support route's checks of its entries. ``like``: the
    (rows, V) of the other side, dense, which this one must match (checked before densifying)."""
    ptr, ids, val, V, one_d = logged_entries(name, x)
    B = ptr.shape[0] - 1
    if like is not None and like[1] != V:
        raise ValueError(f"p, q: vocabulary sizes differ ({name} declares V = {V}, the other side has V = {like[1]})")
    check_alloc(name, nbytes(B, V), f"the dense ({B}, {V}) rows of this sparse log")
    dense = np.zeros((B, V))
    dense[np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr)), ids] = val
    return dense[0] if one_d else dense


def _log(name: str, x: Any, like: tuple[int, int] | None = None) -> tuple[_Log, bool]:
    arr = _as_float_array(name, _logged(name, x, like) if is_sparse(x) else _sampled(name, x), (1, 2))
    batched = arr.ndim == 2
    rows = arr.reshape(-1, arr.shape[-1])
    if not np.isfinite(rows).all():
        r = int(np.argmin(np.isfinite(rows).all(axis=1)))
        raise ValueError(f"{name}: row {r} contains NaN or inf")
    if (rows < 0).any():
        r = int(np.argmax((rows < 0).any(axis=1)))
        raise ValueError(f"{name}: row {r} has negative entries (min {rows[r].min():.3g})")
    mass = rows.sum(axis=1)
    check_logged_mass(name, mass)
    unseen = rows == 0
    t = np.where(unseen.all(axis=1), 0.0, np.min(np.where(unseen, np.inf, rows), axis=1))
    u = unseen_mass(name, mass, t, unseen.sum(axis=1), COMPLETE_TOL)
    return _Log(rows, unseen, u, t, np.zeros(rows.shape[0], dtype=np.int64)), batched


def _fill(lg: _Log, key: _F | None) -> _F:
    """A completion: unseen mass spread flat (key None) or filled at the cap t, token by token, in
    increasing ``key`` order (a vertex of the completion polytope)."""
    if key is None:
        k = lg.unseen.sum(axis=1)
        return lg.x + np.where(lg.unseen, (lg.u / np.maximum(k, 1))[:, None], 0.0)
    order = np.argsort(np.where(lg.unseen, key, np.inf), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    fill = np.clip(lg.u[:, None] - lg.t[:, None] * rank, 0.0, lg.t[:, None])
    return lg.x + np.where(lg.unseen, fill, 0.0)


def _order(primary: NDArray[Any], *, reverse_ids: bool = False) -> _F:
    """Fill key: increasing ``primary``, ties by increasing (or decreasing) column."""
    x = primary[:, ::-1] if reverse_ids else primary
    order = np.argsort(x, axis=1, kind="stable")
    rank = np.empty(order.shape, dtype=np.float64)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(order.shape[1], dtype=np.float64), order.shape), axis=1)
    return rank[:, ::-1] if reverse_ids else rank


def completions(p: _Log, q: _Log) -> list[tuple[_F, _F]]:
    """Extreme completions, used as witnesses of the true range and as the source of candidate
    certificates for ``high``: flat, aligned with the other row, on tokens the other row avoids,
    and "disjoint" (p's unseen mass at its cap on the lowest unlogged-in-both tokens, q's spread
    flat over the others: the completion that attains ``low`` when there are enough of them)."""
    p_aligned, q_aligned = _fill(p, _order(-q.x)), _fill(q, _order(-p.x))  # where the other row is largest
    p_low, q_high = _fill(p, _order(q.x)), _fill(q, _order(p.x, reverse_ids=True))  # where it is smallest
    p_flat, q_flat = _fill(p, None), _fill(q, None)
    both = p.unseen & q.unseen
    p_dis = _fill(p, _order(~both))
    free = both & (p_dis == 0)
    k = free.sum(axis=1)
    flat_ok = (k > 0) & (q.u <= q.t * k * (1 + 1e-12))
    q_dis = np.where(
        flat_ok[:, None],
        q.x + np.where(free, (q.u / np.maximum(k, 1))[:, None], 0.0),
        _fill(q, _order(~free, reverse_ids=True)),
    )
    return [
        (p_flat, q_flat),
        (p_aligned, q_aligned),
        (p_low, q_high),
        (p_flat, q_high),
        (p_low, q_flat),
        (p_dis, q_dis),
    ]


def _top(q: _Log, m: int) -> _B:
    """Mask of T, the m largest logged tokens of q (ties to the lower id), after checking that
    every completion has the same top m (the m-th logged value is above every unseen value)."""
    B, V = q.x.shape
    order = np.argsort(-q.x, axis=1, kind="stable")[:, :m]
    mth = np.take_along_axis(q.x, order[:, -1:], axis=1)[:, 0]
    bad = (q.u > 0) & (mth <= q.t) | (mth <= 0)
    if bad.any():
        r = int(np.argmax(bad))
        raise ValueError(
            f"q: row {r} does not determine its top {m} tokens (the {m}-th logged value {mth[r]:.6g} "
            f"does not exceed the unseen cap {q.t[r]:.6g}); log more tokens or use a random scheme"
        )
    mask = np.zeros((B, V), dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def _low(p: _Log, q: _Log, n: int, scheme: str, m: int, T: _B, threads: int | None = None) -> _F:
    """alpha* of the pessimistic pair: p's unseen mass on a phantom never drafted, q's on phantoms
    p never gives, each below the m-th logged q value so the top m stays T (docs/guide/intervals.md §2).

    i.i.d. drafts: one phantom of mass u. Without replacement, the worst completion splits q's
    unseen mass ever finer: its limit, a Poisson bucket in every H (``wor.wor_low``)."""
    if scheme == "wor" or scheme.endswith("+wor"):
        return wor_low(p, q, T, n, m, threads)
    B, V = p.x.shape
    J = np.ones(B)
    if m:
        cap = 0.5 * np.sort(q.x, axis=1)[:, -m]  # below every top-m value, so T stays the top m
        J = np.maximum(J, np.ceil(q.u / cap))
    J = 2 ** np.ceil(np.log2(J))  # rows with the same J form one call: a row's arrays never depend on others
    low = np.empty(B)
    for j in np.unique(J):
        rows = np.flatnonzero(J == j)
        Jr = int(j)
        pt = np.zeros((rows.size, V + 1 + Jr))
        qt = np.zeros((rows.size, V + 1 + Jr))
        pt[:, :V] = p.x[rows]
        pt[:, V] = p.u[rows]
        qt[:, :V] = q.x[rows]
        qt[:, V + 1 :] = (q.u[rows] / Jr)[:, None]
        low[rows] = np.asarray(optimal_acceptance(pt, qt, n, scheme, threads=threads), dtype=np.float64)
    return low


def _q_min_wor(w: _F, w_out: _F, k: int, threads: int | None = None) -> _F:
    """Pr[k draws without replacement from weights (w, w_out) all fall in w's tokens]: 1 - alpha* of
    the pair p = (0, ..., 0, 1), q = (w, w_out), whose only cut worth taking is "w's tokens"."""
    B, L = w.shape
    out = np.zeros(B)
    ok = (np.count_nonzero(w > 0, axis=1) >= k) & (w.sum(axis=1) > 0)
    if not ok.any():
        return out
    qq = np.concatenate([w[ok], w_out[ok, None]], axis=1)
    qq /= qq.sum(axis=1, keepdims=True)
    pp = np.zeros_like(qq)
    pp[:, -1] = 1.0
    out[ok] = 1.0 - np.asarray(optimal_acceptance(pp, qq, k, "wor", threads=threads), dtype=np.float64)
    return out


def _cut(p: _Log, q: _Log, H: _B, T: _B, k: int, wor: bool, hidden_in: bool, threads: int | None = None) -> _F:
    """``1 + p_max(H) - Q_min(H)`` (H contains T, and the hidden tokens if ``hidden_in``): the
    largest cut value of H over completions."""
    inside = (H & p.unseen).sum(axis=1) + (p.hidden if hidden_in else 0)
    rest = H & ~T
    outside = (q.unseen & ~H).sum(axis=1) + (0 if hidden_in else q.hidden)
    if not wor:
        qT = (q.x * T).sum(axis=1)
        return cut_value((p.x * H).sum(axis=1), inside, (q.x * rest).sum(axis=1), outside, qT, (p.u, p.t, q.u, q.t), k)
    p_max = p_max_of((p.x * H).sum(axis=1), inside, p.u, p.t)
    out_room = q.t * outside
    w = np.where(rest & ~q.unseen, q.x, 0.0)
    w = np.take_along_axis(w, np.argsort(-w, axis=1, kind="stable")[:, : max(k, int((w > 0).sum(1).max()))], 1)
    w_out = (q.x * ~(H | T)).sum(axis=1) + np.minimum(q.u, out_room)
    # q's unseen mass that must fall inside H, at the cap t_q: the exact smallest Q over completions
    # (docs/design/intervals.md §3.5). Up to one cap it is one token, §3's lump, here one alpha*_wor call;
    # beyond, the pieces by the kernel of the rows it covers (its prefix scan costs more than that)
    forced = np.maximum(0.0, q.u - out_room)
    many = forced > q.t
    high = np.empty(forced.shape)
    if many.any():
        high[many] = wor_set_high(p_max[many], w[many], forced[many], q.t[many], w_out[many], k, threads)
    if not many.all():
        one = ~many
        lump = _q_min_wor(np.concatenate([w[one], forced[one, None]], axis=1), w_out[one], k, threads)
        high[one] = np.minimum(1.0, 1.0 + p_max[one] - lump)
    return high


def _certs(pc: _F, qc: _F, n: int, scheme: str, T: _B, threads: int | None = None) -> tuple[_F, _B]:
    """alpha* of a completion and its certificates as a (B, V) mask (with T, for the mixed schemes)."""
    alpha, certs = optimal_acceptance(pc, qc, n, scheme, return_certificate=True, threads=threads)
    H = T.copy()
    for r, c in enumerate(certs):
        H[r, c] = True
    return np.asarray(alpha, dtype=np.float64), H


def _high(
    p: _Log, q: _Log, n: int, scheme: str, m: int, T: _B, steps: int, threads: int | None = None
) -> tuple[_F, _F, _F, NDArray[np.int64]]:
    """min over candidate certificates of their largest cut value (docs/guide/intervals.md §3), the
    largest and smallest alpha* among the completions visited (witnesses: the true extremes lie
    between them and the bounds), and the best candidate's coordinates in §3.2's family
    (``family_start``; for "wor", the box search's start).

    Candidates: the certificates of the extreme completions, then of a Frank-Wolfe ascent from the
    best of them (each step moves toward the vertex that gives the current certificate H the most
    p mass and the least q mass). Any H gives a valid bound; the search only makes it tighter."""
    both_unseen = p.unseen & q.unseen
    wor = scheme == "wor" or scheme.endswith("+wor")
    B, V = p.x.shape
    best = np.ones(B)
    witness = np.zeros(B)
    lowest = np.ones(B)
    start_p, start_q = p.x.copy(), q.x.copy()
    coords = np.zeros((B, 3), dtype=np.int64)

    def visit(pc: _F, qc: _F) -> _B:
        nonlocal best, witness, lowest
        alpha, H = _certs(pc, qc, n, scheme, T, threads)
        lowest = np.minimum(lowest, alpha)
        better = alpha > witness
        start_p[better], start_q[better] = pc[better], qc[better]
        witness = np.maximum(witness, alpha)
        for Hv, hid in ((H & ~both_unseen, False), (H | both_unseen, True)):  # concave in |H ∩ D|: ends
            cut = _cut(p, q, Hv, T, n - m, wor, hid, threads)
            if wor:
                lower = cut < best
                coords[lower] = family_start(p, q, Hv, T)[lower]
            best = np.minimum(best, cut)
        return H

    for pc, qc in completions(p, q):
        visit(pc, qc)
    pc, qc = start_p.copy(), start_q.copy()
    ids = np.broadcast_to(np.arange(V, dtype=np.float64), p.x.shape) / V
    H = _certs(pc, qc, n, scheme, T, threads)[1]
    for s in range(steps):
        gamma = 2.0 / (s + 3)
        pc = (1 - gamma) * pc + gamma * _fill(p, ids - 2.0 * H)
        qc = (1 - gamma) * qc + gamma * _fill(q, ids + 2.0 * H)
        H = visit(pc, qc)
    return best, witness, lowest, coords
