"""The fast route of ``acceptance_bounds`` for i.i.d. random drafts ("iid", "greedy", "top<m>+iid").

Two pieces (docs/design/intervals.md §3.1, §7):

* ``union_logs``: a batch of logged rows on each row's *union support* (the tokens logged in p or
  in q, ascending ids, zero-padded to the longest row); the tokens logged in neither are only
  counted (``hidden``). No column ever depends on V or on the unseen mass, and a row's values do
  not depend on the padding, so neither do its results.
* ``iid_high``: the smallest cut bound ``1 + p_max(H) - Q_min(H)`` over **every** token set H that
  holds T, not over a few candidates. For i.i.d. drafts the bound depends on H only through a few
  sums, so it suffices to try, for each number of tokens of B (logged in p only) and of C (logged
  in q only) in H, the cheapest ones (smallest p in B, largest q in C), none or all of D (logged in
  neither: the bound is concave in that count), and every prefix of A (logged in both) in
  increasing p/q order: for fixed other parts, ``p(S) - g(q(S))`` with g convex is minimised by a
  ratio-closed S. The result is never above the candidate search's (it minimises over a superset)
  and stays valid (every H gives a valid bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.args import check_alloc, nbytes

_F = NDArray[np.float64]
_I = NDArray[np.int64]
_B = NDArray[np.bool_]

#: Cells (rows x sizes of H tried) per numpy pass of ``iid_high``: about 8 MB per float64 temporary.
CELLS = 1 << 20

#: A row with more sizes of H than this (|B|+1)(|C|+1)(|A|+1) goes to the candidate search instead
#: (top-20 rows have at most 1,575: |A| = 6, |B| = |C| = 14; top-100 rows up to 157,216).
MAX_ROW_CELLS = 1 << 18


def row_cells(na: _I, nb: _I, nc: _I) -> _I:
    """Sizes of H ``iid_high`` tries per row (twice this: none or all of D)."""
    return (na + 1) * (nb + 1) * (nc + 1)


def union_logs(p: tuple[_I, _I, _F], q: tuple[_I, _I, _F], V: int, rows: _I) -> tuple[_F, _F, _I]:
    """(xp, xq, hidden) of ``rows``: p's and q's logged values on each row's union support, shape
    (len(rows), L), zeros in the padding; ``hidden`` counts the tokens logged in neither. The inputs
    are CSR parts (ptr, ids ascending per row, values > 0)."""
    keys, vals = [], []
    for ptr, ids, val in (p, q):
        cnt = np.diff(ptr)[rows]
        sel = np.repeat(ptr[rows], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        keys.append(np.repeat(np.arange(rows.size, dtype=np.int64), cnt) * V + ids[sel])
        vals.append(val[sel])
    uk = np.union1d(keys[0], keys[1])
    urow = uk // V
    counts = np.bincount(urow, minlength=rows.size)
    L = max(1, int(counts.max()) if counts.size else 1)
    # every row is padded to the longest: a ragged batch can ask far more than its entries hold
    # (p's and q's rows and the masks and fills of the bounds on them)
    check_alloc("p, q", nbytes(rows.size, L, copies=6), f"{rows.size} rows padded to their longest union support ({L})")
    col = np.arange(uk.size) - np.repeat(np.cumsum(counts) - counts, counts)
    out = []
    for k, v in zip(keys, vals, strict=True):
        x = np.zeros((rows.size, L))
        j = np.searchsorted(uk, k)
        x[urow[j], col[j]] = v
        out.append(x)
    return out[0], out[1], (V - counts).astype(np.int64)


def p_max_of(p_in: Any, p_unseen_in: Any, pu: Any, pt: Any) -> Any:
    """p_max(H): its logged p mass plus as much unseen mass as its p-unseen tokens hold (at most t_p each)."""
    return p_in + np.minimum(pu, pt * p_unseen_in)


def cut_value(p_in: Any, p_unseen_in: Any, q_in: Any, q_unseen_out: Any, qT: Any, caps: tuple[Any, ...], k: int) -> _F:
    """``1 + p_max(H) - Q_min(H)`` for i.i.d. random drafts from the sums of H (docs/guide/intervals.md §3):
    its logged p mass, its p-unseen tokens, its logged q mass outside T, the q-unseen tokens outside
    it, q(T), and the rows' caps (u_p, t_p, u_q, t_q). Arrays broadcast (``iid_high`` passes grids)."""
    pu, pt, qu, qt = caps
    p_max = p_max_of(p_in, p_unseen_in, pu, pt)
    q_rest = q_in + np.maximum(0.0, qu - qt * q_unseen_out)
    return np.asarray(1.0 + p_max - (q_rest / (1.0 - qT)).clip(0, 1) ** k, dtype=np.float64)


def topk_range(pl: Any, T: _B) -> tuple[_F, _F]:
    """alpha* = p(T) for "topk": its range over completions is explicit, and attained."""
    inside = (T & pl.unseen).sum(axis=1)
    outside = (pl.unseen & ~T).sum(axis=1) + pl.hidden
    pT = (pl.x * T).sum(axis=1)
    return pT + np.maximum(0.0, pl.u - pl.t * outside), pT + np.minimum(pl.u, pl.t * inside)


def union(P: Any, Q: Any, V: int, log_type: Any) -> tuple[Any, Any]:
    """The rows on their union support (``union_logs``): the layout of low, topk and ``iid_high``."""
    xp, xq, hidden = union_logs(P[:3], Q[:3], V, np.arange(P[0].shape[0] - 1))
    live = (xp > 0) | (xq > 0)
    return (
        log_type(xp, live & (xp == 0), P[3], P[4], hidden),
        log_type(xq, live & (xq == 0), Q[3], Q[4], hidden),
    )


def _prefix(x: _F, keep: _B, descending: bool = False) -> tuple[_F, _I]:
    """Per row: the prefix sums (0 first) of the kept values sorted ascending (descending), and the
    number kept. Sums run left to right over the row's own values, so padding never changes them."""
    key = np.where(keep, -x if descending else x, np.inf)
    s = np.take_along_axis(np.where(keep, x, 0.0), np.argsort(key, axis=1, kind="stable"), axis=1)
    return np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(s, axis=1)], axis=1), keep.sum(axis=1)


def iid_high(p: Any, q: Any, T: _B, k: int) -> _F:
    """min over every H containing T of ``cut_value``, for ``k`` random i.i.d. drafts and logs on the
    union layout (``p.hidden``: the tokens logged in neither)."""
    R = p.x.shape[0]
    a = (p.x > 0) & (q.x > 0) & ~T  # logged in both, free
    b = q.unseen  # logged in p only (never in T)
    c = p.unseen & ~T  # logged in q only, free
    pT, qT = (p.x * T).sum(axis=1), (q.x * T).sum(axis=1)
    nTC = (T & p.unseen).sum(axis=1)
    cum_b, nb = _prefix(p.x, b)  # the h cheapest tokens of B
    cum_c, nc = _prefix(q.x, c, descending=True)  # the h heaviest tokens of C
    ratio = np.argsort(np.where(a, p.x / np.where(a, q.x, 1.0), np.inf), axis=1, kind="stable")
    pa = np.take_along_axis(np.where(a, p.x, 0.0), ratio, axis=1)
    qa = np.take_along_axis(np.where(a, q.x, 0.0), ratio, axis=1)
    zero = np.zeros((R, 1))
    PA, SA = np.concatenate([zero, np.cumsum(pa, axis=1)], 1), np.concatenate([zero, np.cumsum(qa, axis=1)], 1)
    na = a.sum(axis=1)
    nD = p.hidden
    best = np.full(R, np.inf)
    dims = np.stack([nb, nc, na], axis=1) + 1
    order = np.argsort(row_cells(na, nb, nc), kind="stable")  # similar sizes share a block
    start = 0
    while start < R:  # blocks of about CELLS cells, padded to the block's largest sizes
        stop, big = start + 1, dims[order[start]].copy()
        while stop < R and (stop + 1 - start) * np.prod(np.maximum(big, dims[order[stop]])) <= CELLS:
            big = np.maximum(big, dims[order[stop]])
            stop += 1
        r = order[start:stop]
        HB, HC, JA = (int(x) for x in big)
        hb = np.arange(HB)[None, :, None, None]
        hc = np.arange(HC)[None, None, :, None]
        ja = np.arange(JA)[None, None, None, :]
        col = (slice(None), None, None, None)  # a per-row value against the (hb, hc, ja) grid
        valid = (hb <= nb[r][col]) & (hc <= nc[r][col]) & (ja <= na[r][col])
        p_in = pT[r][col] + cum_b[r, :HB][:, :, None, None] + PA[r, :JA][:, None, None, :]
        q_in = cum_c[r, :HC][:, None, :, None] + SA[r, :JA][:, None, None, :]
        for d in (np.zeros_like(nD[r]), nD[r]):  # none or all of D: the bound is concave in |H ∩ D|
            cut = cut_value(
                p_in,
                nTC[r][col] + hc + d[col],  # p-unseen tokens in H
                q_in,
                (nb[r][col] - hb) + (nD[r] - d)[col],  # q-unseen tokens outside H
                qT[r][col],
                tuple(x[r][col] for x in (p.u, p.t, q.u, q.t)),
                k,
            )
            best[r] = np.minimum(best[r], np.where(valid, cut, np.inf).reshape(r.size, -1).min(axis=1))
        start = stop
    return best
