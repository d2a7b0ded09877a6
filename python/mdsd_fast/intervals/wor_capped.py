"""The cap-aware cut bound for drafts without replacement (docs/design/intervals.md §3.5): the mass forced
into H as pieces at the cap t_q instead of one lump, which is the exact smallest Q_wor(H) over
completions, so ``1 + p_max(H) - Q_cap(H)`` is a valid high for every H and never above the lump's.

It runs in Python under ``_bounds(witnesses=True)`` only (the bench), on the structured sets of
§3.2 that force mass into H (h_B, h_C, h_D at both ends of D, a prefix of A in p/q order), at most
``CAP_SETS`` per row (an even subsample of each count beyond that: any family of sets gives a valid
bound), with the forced mass in at most ``CAP_PIECES`` pieces (more pieces than that become that
many equal lumps, which majorise the pieces, so Q only falls: still a lower bound). Each set's Q is
``intervals._q_min_wor``: ``1 - alpha*_wor`` of the pair p = (0, ..., 0, 1), q = (H's weights, the
outside total).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

_F = NDArray[np.float64]
_I = NDArray[np.int64]

#: Structured sets per row at most (each count subsampled evenly beyond it).
CAP_SETS = 4096
#: Pieces of the forced mass at most (beyond: that many equal lumps, a lower bound still).
CAP_PIECES = 64


def pieces(f: float, t: float, most: int = CAP_PIECES) -> _F:
    """The forced mass f at the cap t: floor(f / t) pieces of t and the remainder, or ``most``
    equal lumps when that is more pieces (they majorise the pieces: Q_wor only falls)."""
    m = int(np.floor(f / t * (1 + 1e-12))) if t > 0 else 0
    rem = f - m * t
    if m + (rem > 1e-15) > most:
        return np.full(most, f / most)
    return np.concatenate([np.full(m, t), [rem] if rem > 1e-15 else []])


def _counts(size: int, budget: int) -> _I:
    """0..size, or an even subsample of it with both ends."""
    if size + 1 <= budget:
        return np.arange(size + 1)
    return np.unique(np.round(np.linspace(0, size, budget)).astype(np.int64))


def wor_cap_high(pl: Any, ql: Any, n: int, threads: int | None = None) -> _F:
    """Per row of union-layout logs: min over the module docstring's sets of the cap-aware cut bound
    (inf where no set forces mass into H)."""
    from .ends import _q_min_wor  # one Q_min evaluator for both bounds

    R = pl.x.shape[0]
    best = np.full(R, np.inf)
    for r in range(R):
        x, y = pl.x[r], ql.x[r]
        pu, pt, qu, qt, nD = pl.u[r], pl.t[r], ql.u[r], ql.t[r], int(pl.hidden[r])
        if qu <= 0:
            continue
        A = np.flatnonzero((x > 0) & (y > 0))
        A = A[np.argsort(x[A] / y[A], kind="stable")]
        B = np.flatnonzero((x > 0) & (y == 0))
        B = B[np.argsort(x[B], kind="stable")]  # the cheapest p first
        C = np.flatnonzero((x == 0) & (y > 0))
        C = C[np.argsort(-y[C], kind="stable")]  # the heaviest q first
        full = (A.size + 1) * (B.size + 1) * (C.size + 1) <= CAP_SETS
        side = 1 << 30 if full else max(2, int(round(CAP_SETS ** (1 / 3))))
        pA = np.concatenate([[0.0], np.cumsum(x[A])])
        pB = np.concatenate([[0.0], np.cumsum(x[B])])
        W, OUT, PM = [], [], []
        for hd in sorted({0, nD}):
            for hb in _counts(B.size, side):
                rest = B.size - hb + nD - hd  # q-unseen tokens off H
                f = qu - qt * rest
                if f <= 1e-15:
                    continue
                pc = pieces(f, qt)
                for hc in _counts(C.size, side):
                    for ha in _counts(A.size, side):
                        inH = np.concatenate([y[A[:ha]], y[C[:hc]]])
                        W.append(np.concatenate([inH, pc]))
                        OUT.append(y.sum() - inH.sum() + qt * rest)
                        PM.append(pA[ha] + pB[hb] + min(pu, pt * (hc + hd)))
        if not W:
            continue
        w = np.zeros((len(W), max(max(v.size for v in W), n)))
        for i, v in enumerate(W):
            w[i, : v.size] = v
        out = np.maximum(np.asarray(OUT), 0.0)  # a rounding below 0 is an empty outside
        best[r] = float(np.min(1.0 + np.asarray(PM) - _q_min_wor(w, out, n, threads)))
    return best
