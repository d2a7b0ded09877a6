"""The largest α*_iid over the completions of truncated logs, bracketed: a witness completion
below it and a certified bound above it (docs/design/intervals.md §3.3).

α*_iid = 1 + min_H [p(H) − q(H)^n] is jointly concave in (p, q) (each cut is linear in p and
concave in q), and the completions form a polytope X. Two facts make the maximum over X small and
provable:

* **Symmetry.** X and α* are unchanged by permuting the tokens logged in neither row (D), so
  averaging a completion over those permutations never lowers α*: some maximiser spreads its D
  mass evenly. On such a completion every minimal cut holds all or none of D, so α* equals α* of
  the row with D merged into one *lump* token; the variables are q on B (logged in p only), p on C
  (logged in q only) and the lump's two masses, each side a capped simplex.
* **Cutting planes.** A cut's tangent at any completion lies above the cut everywhere
  (concavity), so for any weights λ on a family of tangents, the largest λ-mixture over X is an
  upper bound on max_X α* (it bounds the minimum of the tangents, which bounds α*). Kelley's
  method adds the tangent of the minimal cut at each new point and takes λ from the LP's duals.
  The mixture's maximum over X is a greedy fill (each side: the largest coefficients first, up to
  their caps), computed here without the LP, so the bound holds whatever the LP's accuracy.

The witness is the best completion visited: its α* (from ``optimal_acceptance``) is a lower bound
on the maximum, so the maximum lies in [witness, high].
"""

from __future__ import annotations

from typing import Any, NamedTuple

import highspy
import numpy as np
from numpy.typing import NDArray

from ..bound.alpha import optimal_acceptance
from ..bound.lp import SolverError, _highs

_F = NDArray[np.float64]
_I = NDArray[np.int64]

#: Steps per row at most (each: one LP over the row's free tokens, two α* of the batch's rows).
TIGHT_STEPS = 500
#: A row stops once its certified bound is within this of its witness.
TIGHT_GAP = 1e-9


class Bracket(NamedTuple):
    """Per row: max over completions of alpha*_iid lies in [witness, high]."""

    witness: _F  #: alpha*_iid of the completion ``p``, ``q``
    high: _F  #: a certified upper bound (the smaller of the given one and the tangents')
    steps: _I  #: steps taken
    p: _F  #: the witness completion on the lump layout: the union support, then the lump
    q: _F  #: (column L: the mass of the tokens logged in neither, spread evenly over them)


class _Rows:
    """The lump layout of a batch of iid rows: fixed values, the variable columns and their caps."""

    def __init__(self, pl: Any, ql: Any) -> None:
        live = (pl.x > 0) | (ql.x > 0)
        R, L = pl.x.shape
        self.R, self.W = R, L + 1  # the lump is column L
        self.p0 = np.concatenate([np.where(live, pl.x, 0.0), np.zeros((R, 1))], axis=1)
        self.q0 = np.concatenate([np.where(live, ql.x, 0.0), np.zeros((R, 1))], axis=1)
        m = pl.hidden.astype(np.float64)
        # per row: the columns whose p (resp. q) is free, with their caps; the lump last
        self.pcols = [np.append(np.flatnonzero(pl.unseen[r] & live[r]), L) for r in range(R)]
        self.qcols = [np.append(np.flatnonzero(ql.unseen[r] & live[r]), L) for r in range(R)]
        self.pcap = [np.append(np.full(c.size - 1, pl.t[r]), pl.t[r] * m[r]) for r, c in enumerate(self.pcols)]
        self.qcap = [np.append(np.full(c.size - 1, ql.t[r]), ql.t[r] * m[r]) for r, c in enumerate(self.qcols)]
        self.pu, self.qu = np.asarray(pl.u, dtype=np.float64), np.asarray(ql.u, dtype=np.float64)

    def flat(self) -> tuple[list[_F], list[_F]]:
        """The flat completion: each side's unseen mass spread evenly over its unseen tokens (the
        caps are t per token, t m for the lump, so cap-proportional is even per token)."""
        return tuple(  # type: ignore[return-value]
            [u[r] * c[r] / c[r].sum() if c[r].sum() > 0 else np.zeros(c[r].size) for r in range(self.R)]
            for c, u in ((self.pcap, self.pu), (self.qcap, self.qu))
        )

    def dense(self, xp: list[_F], xq: list[_F]) -> tuple[_F, _F]:
        p, q = self.p0.copy(), self.q0.copy()
        for r in range(self.R):
            p[r, self.pcols[r]] += xp[r]
            q[r, self.qcols[r]] += xq[r]
        return p, q


def fill_max(coef: _F, caps: _F, total: float) -> float:
    """max of coef · x over 0 <= x <= caps, sum x = total (the caps hold it): the largest first."""
    order = np.argsort(-coef, kind="stable")
    c, k = coef[order], caps[order]
    before = np.concatenate([[0.0], np.cumsum(k)[:-1]])
    take = np.clip(total - before, 0.0, k)
    return float(c @ take)


def _tangent(
    p: _F, q: _F, H: _I, pcols: _I, qcols: _I, xp: _F, xq: _F, k: int, T: NDArray[np.bool_]
) -> tuple[float, _F, _F]:
    """The tangent c + gp · xp' + gq · xq' of the cut H ∪ T at a completion: above the cut everywhere.

    The cut of a scheme drafting the top tokens T of q, then k i.i.d. from q renormalised off T
    (docs/theory/greedy.md §5.2; T empty for "iid"): 1 + p(H ∪ T) − (q(H ∖ T) / (1 − q(T)))^k. T's q is
    logged (``intervals._top``), so 1 − q(T) is the same on every completion."""
    inH = T.copy()
    inH[H] = True
    rest = 1.0 - float(q[T].sum())
    s = float(q[inH & ~T].sum()) / rest
    cut = 1.0 + float(p[inH].sum()) - s**k
    gp = inH[pcols].astype(np.float64)
    gq = -k * s ** (k - 1) / rest * (inH & ~T)[qcols].astype(np.float64)
    return cut - float(gp @ xp) - float(gq @ xq), gp, gq


def _kelley_lp(cuts: list[tuple[float, _F, _F]], pcap: _F, qcap: _F, pu: float, qu: float) -> tuple[_F, _F, _F]:
    """Maximise min over the tangents on the completions: (xp, xq, weights λ of the tangents)."""
    a, b = pcap.size, qcap.size
    k = len(cuts)
    ncol = a + b + 1
    # rows: t - g_i . x <= c_i (k of them), sum xp = pu, sum xq = qu; row-wise CSR
    starts, index, value = [0], [], []
    for _, gp, gq in cuts:
        index += [*range(a + b), a + b]
        value += [*(-gp), *(-gq), 1.0]
        starts.append(len(index))
    index += [*range(a), *range(a, a + b)]
    value += [1.0] * (a + b)
    starts += [starts[-1] + a, starts[-1] + a + b]
    inf = highspy.kHighsInf
    h = _highs()
    st = h.passModel(
        ncol, k + 2, len(index), int(highspy.MatrixFormat.kRowwise), int(highspy.ObjSense.kMaximize), 0.0,
        np.concatenate([np.zeros(a + b), [1.0]]),
        np.concatenate([np.zeros(a + b), [-inf]]), np.concatenate([pcap, qcap, [inf]]),
        np.concatenate([np.full(k, -inf), [pu, qu]]), np.concatenate([[c for c, _, _ in cuts], [pu, qu]]),
        np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32), np.asarray(value, dtype=np.float64),
        np.zeros(ncol, dtype=np.int32),
    )  # fmt: skip
    if st == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the cutting-plane LP of acceptance_bounds", "ModelError")
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        status = h.modelStatusToString(h.getModelStatus())
        raise SolverError(f"HiGHS did not solve the cutting-plane LP of acceptance_bounds: {status!r}", status)
    sol = h.getSolution()
    x = np.clip(np.asarray(sol.col_value, dtype=np.float64)[: a + b], 0.0, np.concatenate([pcap, qcap]))
    lam = np.abs(np.asarray(sol.row_dual, dtype=np.float64)[:k])
    return x[:a], x[a:], lam / lam.sum() if lam.sum() > 0 else np.full(k, 1.0 / k)


def _mixture_bound(cuts: list[tuple[float, _F, _F]], lam: _F, pcap: _F, qcap: _F, pu: float, qu: float) -> float:
    """max over the completions of the λ-mixture of the tangents: a certified upper bound."""
    c = sum(w * ci for w, (ci, _, _) in zip(lam, cuts, strict=True))
    gp = sum(w * g for w, (_, g, _) in zip(lam, cuts, strict=True))
    gq = sum(w * g for w, (_, _, g) in zip(lam, cuts, strict=True))
    return float(c) + fill_max(np.asarray(gp), pcap, pu) + fill_max(np.asarray(gq), qcap, qu)


def _alpha(P: _F, Q: _F, k: int, T: NDArray[np.bool_], threads: int | None) -> tuple[_F, list[_I]]:
    """α* of lump rows and their certificates (T left out). With T (the top tokens of q, drafted
    first) through the split pair of docs/theory/greedy.md §5.2, p(T) + α*_iid(p, q off T renormalised; k):
    the mixed scheme on the lump row itself would take the lump for a top token once the unlogged
    mass outweighs the logged one, which no even completion does."""
    if not T.any():
        return optimal_acceptance(P, Q, k, "iid", return_certificate=True, threads=threads)
    Qs = np.where(T, 0.0, Q)
    Qs /= Qs.sum(axis=1, keepdims=True)
    alpha, certs = optimal_acceptance(P, Qs, k, "iid", return_certificate=True, threads=threads)
    return np.minimum(1.0, np.where(T, P, 0.0).sum(axis=1) + alpha), certs


def iid_max(
    pl: Any,
    ql: Any,
    n: int,
    high: _F,
    steps: int = TIGHT_STEPS,
    threads: int | None = None,
    *,
    T: NDArray[np.bool_] | None = None,
    m: int = 0,
) -> Bracket:
    """The bracket of max over completions of α* per row of union-layout logs
    (docs/design/intervals.md §3.3): a witness completion and its α*, and the smaller of ``high`` (any
    valid bound) and the certified bound of the tangents. A row stops once the two are within
    ``TIGHT_GAP``, or after ``steps``. For a scheme that drafts the top ``m`` tokens of q first and
    the rest i.i.d. ("greedy", "top<m>+iid"), T is their mask on the union layout."""
    rows = _Rows(pl, ql)
    Tw = np.zeros((rows.R, rows.W), dtype=bool)  # T on the lump layout (never the lump)
    if T is not None:
        Tw[:, :-1] = T
    xp, xq = rows.flat()
    bp, bq = [x.copy() for x in xp], [x.copy() for x in xq]  # the best completion so far
    cuts: list[list[tuple[float, _F, _F]]] = [[] for _ in range(rows.R)]
    witness, high = np.full(rows.R, -np.inf), np.array(high, dtype=np.float64)
    taken = np.zeros(rows.R, dtype=np.int64)
    active = np.arange(rows.R)
    for step in range(max(1, steps)):
        # The LP's point and, after the first step, the midpoint toward the best one: Kelley's
        # points jump between vertices, the midpoints give the witness a steadier climb (on the
        # shipped top-20 rows they cut the slowest row's steps from > 200 to 110).
        points = [(xp, xq)]
        if step:
            points.append(
                (
                    [0.5 * (a + b) for a, b in zip(xp, bp, strict=True)],
                    [0.5 * (a + b) for a, b in zip(xq, bq, strict=True)],
                )
            )
        evals = []
        for ep, eq in points:
            P, Q = rows.dense(ep, eq)
            alpha, certs = _alpha(P[active], Q[active], n - m, Tw[active], threads)
            evals.append((ep, eq, P, Q, alpha, certs))
        still = []
        for j, r in enumerate(active):
            taken[r] += 1
            for ep, eq, P, Q, alpha, certs in evals:
                if float(alpha[j]) > witness[r]:
                    witness[r], bp[r], bq[r] = float(alpha[j]), ep[r].copy(), eq[r].copy()
                cuts[r].append(_tangent(P[r], Q[r], certs[j], rows.pcols[r], rows.qcols[r], ep[r], eq[r], n - m, Tw[r]))
            if high[r] - witness[r] <= TIGHT_GAP:
                continue
            xp[r], xq[r], lam = _kelley_lp(cuts[r], rows.pcap[r], rows.qcap[r], rows.pu[r], rows.qu[r])
            high[r] = min(high[r], _mixture_bound(cuts[r], lam, rows.pcap[r], rows.qcap[r], rows.pu[r], rows.qu[r]))
            if high[r] - witness[r] > TIGHT_GAP:
                still.append(r)
        active = np.asarray(still, dtype=np.int64)
        if not active.size:
            break
    bad = np.flatnonzero(high < witness - 1e-9)
    if bad.size:  # a witness is a completion and high bounds every completion: a defect, not data
        r = int(bad[0])
        raise RuntimeError(f"acceptance bounds: row {r}'s witness {witness[r]!r} exceeds its bound {high[r]!r}")
    P, Q = rows.dense(bp, bq)
    return Bracket(witness, high, taken, P, Q)
