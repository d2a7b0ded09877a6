"""A witness search for the largest α*_wor over the completions of truncated logs
(docs/design/intervals.md §3.4): a real completion per row whose α*_wor is a lower bound on that maximum,
so that the maximum lies in [witness, high] and high − witness is a proven slack.

α*_wor is not concave on the completions (§3.3), so there is no bracket that closes; this is a
local search on each row's *small layout*: the union support, then ``nD`` tokens logged in neither
(enough to hold both unseen masses at their caps, plus ``WIT_EXTRA_D``); the other tokens of D
stay at zero, which is a completion of the full vocabulary (q = 0 is never drafted, p = 0 adds
nothing). Starts: four vertices (each side's unseen mass at its cap, on the other side's largest
logged tokens first or on D first, p and q on the same D tokens in the same order) and the flat
spread over the free tokens. Moves: one transfer of mass between two free tokens of one side,
accepted when α*_wor rises; half of them follow the current certificate H (p mass into H, q mass
out of it: the cut p(H) − Q(H) rises), the others are random or concentrate / spread one side.
Budget: one ``optimal_acceptance`` call of the batch for the starts, then at most ``WIT_ROUNDS``
calls of ``WIT_MOVES`` proposals per row still moving. The search runs only under
``_bounds(witnesses=True)`` (the bench), never in ``acceptance_bounds``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..bound.alpha import optimal_acceptance

_F = NDArray[np.float64]
_B = NDArray[np.bool_]
_I = NDArray[np.int64]

#: Rounds of moves per row at most (one alpha* call of the batch each).
WIT_ROUNDS = 48
#: Proposals per row per round.
WIT_MOVES = 8
#: A row stops when its step (a share of the cap moved) falls below this.
WIT_MIN_STEP = 1.0 / 64
#: Tokens of D beyond those the caps need, so that mass can also spread.
WIT_EXTRA_D = 8


class Witness(NamedTuple):
    """Per row: alpha*_wor of a completion on the small layout (module docstring)."""

    witness: _F
    p: list[_F]  #: the union support's columns (ascending ids), then nD tokens of D
    q: list[_F]
    nD: _I  #: tokens of D used as columns (the lowest ids of D, say: D is symmetric)


class _Side(NamedTuple):
    """One side's unseen mass and cap per row of a group."""

    u: _F
    t: _F


def _fill(free: _B, u: _F, t: _F, key: _F) -> _F:
    """Each row's unseen mass u at its cap t on the free columns in increasing ``key`` (a vertex)."""
    order = np.argsort(np.where(free, key, np.inf), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    return np.where(free, np.clip(u[:, None] - t[:, None] * rank, 0.0, t[:, None]), 0.0)


def _alpha(P: _F, Q: _F, n: int, threads: int | None) -> tuple[_F, list[_I]]:
    a, c = optimal_acceptance(P, Q, n, "wor", return_certificate=True, threads=threads)
    return np.asarray(a, dtype=np.float64), list(c)


def _move(rng: np.random.Generator, x: _F, free: _B, t: float, H: _B, side: int, step: float) -> _F | None:
    """One transfer of mass on one side (0: p, 1: q) of a row, or None if none is possible."""
    donors, recv = free & (x > 0), free & (x < t)
    kind = rng.random()
    if kind < 0.5:  # along the certificate: p into H, q out of H
        gd, gr = (donors & ~H, recv & H) if side == 0 else (donors & H, recv & ~H)
        if gd.any() and gr.any():
            donors, recv = gd, gr
    d_ids, r_ids = np.flatnonzero(donors), np.flatnonzero(recv)
    if not d_ids.size or not r_ids.size:
        return None
    if kind >= 0.8:  # concentrate (smallest into largest below the cap) or spread
        conc = kind < 0.9
        i = d_ids[np.argmin(x[d_ids])] if conc else d_ids[np.argmax(x[d_ids])]
        j = r_ids[np.argmax(x[r_ids])] if conc else r_ids[np.argmin(x[r_ids])]
    else:
        i, j = int(rng.choice(d_ids)), int(rng.choice(r_ids))
    if i == j:
        return None
    d = min(step * t, x[i], t - x[j])
    if d <= 0:
        return None
    y: _F = np.array(x, dtype=np.float64)
    y[i] -= d
    y[j] += d
    return y


def _search(
    p0: _F, q0: _F, isD: _B, fp: _B, fq: _B, pl: Any, ql: Any, n: int, seed: int, threads: int | None
) -> tuple[_F, _F, _F]:
    """The search on one group of rows of one width: (witness, p, q) per row."""
    R, W = p0.shape
    col = np.broadcast_to(np.arange(W) / W, (R, W))
    pu, pt, qu, qt = pl.u, pl.t, ql.u, ql.t
    starts = []
    for q_first_d in (False, True):
        for p_first_d in (False, True):
            kq = np.where(isD, (-2.0 if q_first_d else 1.0) + col, -p0)  # B: largest p first
            kp = np.where(isD, (-2.0 if p_first_d else 1.0) + col, -q0)  # C: largest q first
            starts.append((p0 + _fill(fp, pu, pt, kp), q0 + _fill(fq, qu, qt, kq)))
    flat = [x0 + np.where(f, (u / np.maximum(f.sum(1), 1))[:, None], 0.0) for x0, f, u in ((p0, fp, pu), (q0, fq, qu))]
    ok = np.all((flat[0] - p0 <= pt[:, None]) & (flat[1] - q0 <= qt[:, None]), axis=1)  # within the caps
    fs = [np.asarray(np.where(ok[:, None], f, s), dtype=np.float64) for f, s in zip(flat, starts[0], strict=True)]
    starts.append((fs[0], fs[1]))
    a, c = _alpha(np.concatenate([s[0] for s in starts]), np.concatenate([s[1] for s in starts]), n, threads)
    a, best = a.reshape(len(starts), R), np.argmax(a.reshape(len(starts), R), axis=0)
    wit = a[best, np.arange(R)]
    xp = np.stack([starts[b][0][r] for r, b in enumerate(best)])
    xq = np.stack([starts[b][1][r] for r, b in enumerate(best)])
    H = np.zeros((R, W), dtype=bool)
    for r, b in enumerate(best):
        H[r, c[b * R + r]] = True
    step, fails = np.ones(R), np.zeros(R, dtype=np.int64)
    rng = np.random.default_rng(seed)
    for _ in range(WIT_ROUNDS):
        active = np.flatnonzero(step >= WIT_MIN_STEP)
        if not active.size:
            break
        owner, Pp, Qp = [], [], []
        # the certificate's vertex: p's unseen mass into H first, q's off H first (spread when the
        # caps allow: only its total counts for Q(H)), both at the caps; two steps toward it per row
        vp = _fill(fp, pu, pt, np.where(H, col, 1.0 + col))
        off = fq & ~H
        spread = qu <= qt * off.sum(axis=1)
        vq = np.where(
            spread[:, None],
            np.where(off, (qu / np.maximum(off.sum(axis=1), 1))[:, None], 0.0),
            _fill(fq, qu, qt, np.where(H, 1.0 + col, col)),
        )
        for r in active.tolist():
            for g in (0.5 * step[r], 0.125 * step[r]):
                owner.append(r)
                Pp.append((1 - g) * xp[r] + g * (p0[r] + vp[r]))
                Qp.append((1 - g) * xq[r] + g * (q0[r] + vq[r]))
            for _ in range(WIT_MOVES):
                side = int(rng.integers(2))
                y = _move(rng, (xp, xq)[side][r], (fp, fq)[side][r], float((pt, qt)[side][r]), H[r], side, step[r])
                if y is not None:
                    owner.append(r)
                    Pp.append(y if side == 0 else xp[r])
                    Qp.append(y if side == 1 else xq[r])
        if not owner:
            break
        a, c = _alpha(np.stack(Pp), np.stack(Qp), n, threads)
        own = np.asarray(owner)
        moved = np.zeros(R, dtype=bool)
        for r in np.unique(own).tolist():
            js = np.flatnonzero(own == r)
            j = int(js[np.argmax(a[js])])
            if a[j] > wit[r]:
                wit[r], xp[r], xq[r], moved[r] = a[j], Pp[j], Qp[j], True
                H[r] = False
                H[r, c[j]] = True
        fails = np.where(moved, 0, fails + 1)
        halve = (fails >= 2) & ~moved
        step[halve] *= 0.5
        fails[halve] = 0
        step[np.setdiff1d(np.arange(R), own)] = 0.0  # no move possible: done
    return wit, xp, xq


def wor_witness(pl: Any, ql: Any, n: int, seed: int = 0, threads: int | None = None) -> Witness:
    """The witness search of the module docstring on union-layout logs ``pl``, ``ql``
    (``pl.hidden``: the tokens logged in neither)."""
    R = pl.x.shape[0]
    live = (pl.x > 0) | (ql.x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.nan_to_num(pl.u / pl.t)) + np.ceil(np.nan_to_num(ql.u / ql.t))
    nD = np.minimum(pl.hidden, need.astype(np.int64) + WIT_EXTRA_D)
    width = live.sum(axis=1) + nD
    group = 2 ** np.ceil(np.log2(np.maximum(width, 16)))  # rows of one width share the calls
    witness = np.empty(R)
    out_p: list[_F] = [np.empty(0)] * R
    out_q: list[_F] = [np.empty(0)] * R
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        W = int(g)
        p0, q0 = np.zeros((rows.size, W)), np.zeros((rows.size, W))
        used = np.zeros((rows.size, W), dtype=bool)
        for j, r in enumerate(rows.tolist()):
            ids = np.flatnonzero(live[r])
            p0[j, : ids.size], q0[j, : ids.size] = pl.x[r, ids], ql.x[r, ids]
            used[j, : width[r]] = True
        sub = [_Side(lg.u[rows], lg.t[rows]) for lg in (pl, ql)]
        isD = used & (p0 == 0) & (q0 == 0)  # live columns are logged on one side at least
        fp = used & (p0 == 0) & (sub[0].u[:, None] > 0)
        fq = used & (q0 == 0) & (sub[1].u[:, None] > 0)
        wit, xp, xq = _search(p0, q0, isD, fp, fq, sub[0], sub[1], n, seed, threads)
        witness[rows] = wit
        for j, r in enumerate(rows.tolist()):
            out_p[r], out_q[r] = xp[j, : width[r]], xq[j, : width[r]]
    return Witness(witness, out_p, out_q, nD)
