"""The without-replacement route of ``acceptance_bounds`` ("wor" and "top<m>+wor").

Both ends run in the C++ core on each row's union support (``iid.union``), one row at
a time, so no row's result depends on the others, on the padding or on the chunking:

* ``wor_low``: q's unseen mass as a Poisson bucket of its mass that is in every H (the limit of
  infinitely many phantoms, docs/guide/intervals.md §2), instead of J = 32,768 phantom columns and the
  C(k, 2) / J their split could cost. Rows with no unseen q mass need no bucket: alpha* of the
  pair with p's unseen mass on one never-drafted phantom, as for i.i.d. drafts.
* ``wor_high``: the smallest cut bound over §3.2's structured sets H (holding T for "top<m>+wor"),
  instead of the certificates of a candidate search, with the q mass forced into H at the cap in at
  most ``WOR_HIGH_PIECES`` pieces (docs/design/intervals.md §3.5; 1 is §3's single lump).
* ``wor_set_high``: the same cap-aware cut bound of one given set H per row, for the candidate
  search of the rows beyond ``WOR_MAX_ROW_CELLS`` (``intervals._cut``), by the same kernel.
* ``wor_box_high``: on those rows, a descent inside §3.2's family from the candidate search's best
  set (``family_start``), by boxes of the same kernel, under ``WOR_BOX_BUDGET`` (§3.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..bound.alpha import optimal_acceptance
from ..inputs.rules import check_threads
from .iid import row_cells

_F = NDArray[np.float64]
_B = NDArray[np.bool_]

#: A row with more structured candidates than this keeps the candidate search for ``high``
#: (top-20 rows have at most ~1,800; the kernel spends ~0.3 us on each).
WOR_MAX_ROW_CELLS = 1 << 18
#: Pieces of the q mass forced into H at most (equal lumps beyond: still a valid bound, §3.5). The
#: kernel's cost does not grow with it; a completion needs at most |U_q| pieces, so 2^20 is the exact
#: fill at the cap up to V = 2^20 (the Python reference :mod:`~mdsd_fast.intervals.wor_capped` caps at 64: it pays per piece).
WOR_HIGH_PIECES = 1 << 20
#: Work per row of ``wor_box_high`` (race steps plus sets tried): on held-out top-1,000 rows (seed 7,
#: bench/intervals/wor_high_beyond_limit.py --budget) 2^12 to 2^18 give the same high, so the smallest (§6).
WOR_BOX_BUDGET = 1 << 12


def wor_low(p: Any, q: Any, T: _B, n: int, m: int, threads: int | None = None) -> _F:
    """alpha* of the pessimistic pair (p's unseen mass never drafted, q's a bucket in every H)
    for ``n - m`` draws without replacement after the top ``m`` tokens T of q (docs/theory/index.md
    §5.2: alpha*_mixed = p(T) + alpha* of the split pair; the split's renormalisation off T
    is not needed, the race is invariant to the scale of the weights)."""
    B = p.x.shape[0]
    low = np.empty(B)
    bucket = q.u > 0
    if bucket.any():
        pT = (p.x[bucket] * T[bucket]).sum(axis=1)
        off = ~T[bucket]
        alpha = _core.intervals.wor_low_end(
            np.where(off, p.x[bucket], 0.0),
            np.where(off, q.x[bucket], 0.0),
            q.u[bucket],
            n - m,
            threads=check_threads(threads),
        )
        low[bucket] = np.minimum(1.0, pT + alpha)
    if (~bucket).any():  # q complete: only p's unseen mass, on one phantom that q never drafts
        rows = ~bucket
        scheme = f"top{m}+wor" if m else "wor"
        pt = np.concatenate([p.x[rows], p.u[rows, None]], axis=1)
        qt = np.concatenate([q.x[rows], np.zeros((int(rows.sum()), 1))], axis=1)
        low[rows] = np.asarray(optimal_acceptance(pt, qt, n, scheme, threads=threads), dtype=np.float64)
    return low


def wor_high_rows(p: Any, q: Any) -> _B:
    """Rows small enough for ``wor_high`` (the others keep the candidate search)."""
    a = ((p.x > 0) & (q.x > 0)).sum(axis=1)
    lumps = q.unseen.sum(axis=1) + 2  # one per h_B, both ends of D
    return np.asarray(row_cells(a, np.zeros_like(a), p.unseen.sum(axis=1)) * lumps <= WOR_MAX_ROW_CELLS)


def wor_high(p: Any, q: Any, T: _B, n: int, m: int, threads: int | None = None) -> _F:
    """min over every H holding T of ``1 + p_max(H) - Q_min(H)`` for n - m draws without
    replacement after the top m tokens T of q, on the union layout (``p.hidden``: the tokens logged
    in neither). T's columns are zeroed and enter as p(T) and its p-unseen count; Q is the random
    part's, on q off T (docs/design/intervals.md §3.2), with the forced q mass at the cap (§3.5)."""
    return np.asarray(
        _core.intervals.wor_cut_min(
            *_family_args(p, q, T, n, m), pieces=WOR_HIGH_PIECES, threads=check_threads(threads)
        ),
        dtype=np.float64,
    )


def _family_args(p: Any, q: Any, T: _B, n: int, m: int) -> tuple[Any, Any, Any, Any, Any, Any, Any, int, Any, Any]:
    """The kernel's row arguments (p, q, hidden, up, tp, uq, tq, k, p_top, n_tc): T's columns zeroed."""
    off = ~T
    return (
        np.where(off, p.x, 0.0),
        np.where(off, q.x, 0.0),
        p.hidden.astype(np.int64),
        p.u,
        p.t,
        q.u,
        q.t,
        n - m,
        (p.x * T).sum(axis=1),
        (T & p.unseen).sum(axis=1).astype(np.int64),
    )


def family_start(p: Any, q: Any, H: _B, T: _B) -> NDArray[np.int64]:
    """(h_B, h_C, |H ∩ A|) of each row's H off T, (B, 3): the coordinates in §3.2's family of the set
    that takes as many tokens of each class (and the A prefix of that length)."""
    both = (p.x > 0) & (q.x > 0)
    Hf = H & ~T
    return np.stack(
        [(Hf & (p.x > 0) & ~both).sum(axis=1), (Hf & (q.x > 0) & ~both).sum(axis=1), (Hf & both).sum(axis=1)], axis=1
    ).astype(np.int64)


def wor_box_high(
    p: Any,
    q: Any,
    T: _B,
    n: int,
    m: int,
    start: NDArray[np.int64],
    budget: int | None = None,
    threads: int | None = None,
    hold_a: bool = False,
) -> tuple[_F, NDArray[np.int64], _B]:
    """(high, work, whole) per row: the smallest cut bound of ``wor_high``'s family over the sets a
    descent from ``start`` (``family_start``) visits within ``budget`` (docs/design/intervals.md §3.2), each
    a valid bound; ``whole``: a box covered the family, so high is ``wor_high``'s. ``budget``:
    ``WOR_BOX_BUDGET`` if None. ``hold_a`` keeps the A prefix at the start's (the tests' negative
    control)."""
    high, work, whole, _ = _core.intervals.wor_cut_descent(
        *_family_args(p, q, T, n, m),
        np.ascontiguousarray(start, dtype=np.int64),
        int(WOR_BOX_BUDGET if budget is None else budget),
        pieces=WOR_HIGH_PIECES,
        hold_a=hold_a,
        threads=check_threads(threads),
    )
    return np.asarray(high, dtype=np.float64), np.asarray(work), np.asarray(whole)


def wor_set_high(p_max: _F, w: _F, forced: _F, cap: _F, out: _F, k: int, threads: int | None = None) -> _F:
    """``min(1, 1 + p_max - Q_cap(H))`` of one set H per row (docs/design/intervals.md §3.5): Q of k draws
    without replacement from H's logged q weights ``w`` (B, L; 0 = no token) and the ``forced`` mass
    as pieces at the ``cap`` t_q, against the ``out`` total off H.

    ``wor_cut_min``'s own pieces, on a row built so that its family's minimum is that one set: w as
    tokens in q only (their prefixes, all of them the best), ``forced`` as all of the unseen q mass
    with no token to hold it off H (so all of it is forced, at the cap), the outside as one token
    whose p of 2 keeps every set holding it above 1, p_max as p(T) with no p-unseen room."""
    B, L = w.shape
    pp, qq = np.zeros((B, L + 1)), np.zeros((B, L + 1))
    qq[:, :L] = w
    qq[:, L] = out
    pp[:, L] = np.where(out > 0, 2.0, 0.0)  # an outside of 0 stays padding, not a token of p only
    z = np.zeros(B)
    return np.asarray(
        _core.intervals.wor_cut_min(
            pp, qq, np.zeros(B, dtype=np.int64), z, z, forced, cap, k, p_max, np.zeros(B, dtype=np.int64),
            pieces=WOR_HIGH_PIECES, threads=check_threads(threads),
        ),
        dtype=np.float64,
    )  # fmt: skip
