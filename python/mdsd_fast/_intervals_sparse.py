"""The union-support route of ``acceptance_bounds``: TopK / scipy.sparse logs straight to the
compressed groups of ``intervals._compress``, never through (rows, V) arrays.

A row's compressed columns are its logged tokens (in p or q) and the ``keep_d`` smallest token ids
logged in neither, in ascending id order, padded with dead columns to the group's width. That is
exactly the layout ``_compress`` picks from the dense row (it keeps the lowest-id unlogged-in-both
tokens), so both routes hand the same arrays to the same code; only the row sums differ in rounding
(the dense route sums V entries), which is why the tests compare to 1e-12, not bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validate import SUM_TOL
from .sparse import _csr_parts

_I = NDArray[np.int64]
_F = NDArray[np.float64]


def logged_entries(name: str, x: Any) -> tuple[_I, _I, _F, int, bool]:
    """(ptr, ids, values) of the logged (non-zero) entries, ids ascending per row, validated with
    the dense route's messages."""
    ptr, ids, val, V, one_d = _csr_parts(name, x)
    B = ptr.shape[0] - 1
    row = np.repeat(np.arange(B), np.diff(ptr))
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        raise ValueError(f"{name}: row {int(row[np.argmax((ids < 0) | (ids >= V))])} has a token id outside [0, {V})")
    order = np.lexsort((ids, row))
    row, ids, val = row[order], ids[order], val[order]
    dup = (row[1:] == row[:-1]) & (ids[1:] == ids[:-1])
    if dup.any():
        raise ValueError(f"{name}: row {int(row[1:][np.argmax(dup)])} lists a token twice")
    if not np.isfinite(val).all():
        raise ValueError(f"{name}: row {int(row[np.argmin(np.isfinite(val))])} contains NaN or inf")
    if (val < 0).any():
        r = int(row[np.argmax(val < 0)])
        raise ValueError(f"{name}: row {r} has negative entries (min {val[row == r].min():.3g})")
    nz = val != 0  # a stored zero is an unlogged token, as in a dense row
    row, ids, val = row[nz], ids[nz], val[nz]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=B))]).astype(np.int64)
    return ptr, ids, val, V, one_d


def check_logged_mass(name: str, mass: _F) -> None:
    """Each row's logged mass is positive and at most 1 (within SUM_TOL): the rule of both routes."""
    if (mass <= 0).any():
        raise ValueError(f"{name}: row {int(np.argmax(mass <= 0))} has no logged entry (its logged mass is 0)")
    if (mass > 1 + SUM_TOL).any():
        r = int(np.argmax(mass > 1 + SUM_TOL))
        raise ValueError(f"{name}: row {r} has logged mass {mass[r]:.9g} > 1 (more than {SUM_TOL:g} over)")


def unseen_mass(name: str, mass: _F, t: _F, unlogged: _I, complete_tol: float) -> _F:
    """The unseen mass 1 - mass per row (0 when complete up to rounding, docs/intervals.md §5), after
    checking that the row's ``unlogged`` tokens, each at most ``t``, can hold it."""
    u = 1.0 - mass
    u[u < complete_tol] = 0.0
    room = t * unlogged
    short = u > room * (1 + 1e-12) + 1e-15
    if short.any():
        r = int(np.argmax(short))
        raise ValueError(
            f"{name}: row {r} leaves mass {u[r]:.6g} unseen but its {int(unlogged[r])} unlogged tokens "
            f"can hold at most {room[r]:.6g} (each <= the smallest logged value {t[r]:.6g})"
        )
    return u


def _mass(name: str, ptr: _I, val: _F, V: int, complete_tol: float) -> tuple[_F, _F]:
    """(u, t) per row with the dense route's checks: unseen mass and the cap of an unseen token."""
    B = ptr.shape[0] - 1
    cnt = np.diff(ptr)
    mass = np.array([val[ptr[r] : ptr[r + 1]].sum() for r in range(B)], dtype=np.float64)
    check_logged_mass(name, mass)
    t = np.where(cnt == V, 0.0, np.minimum.reduceat(val, ptr[:-1]) if val.size else 0.0)
    return unseen_mass(name, mass, t, V - cnt, complete_tol), t


def sparse_groups(p: Any, q: Any, log_type: Any, keep: int, complete_tol: float) -> tuple[list[Any], int, bool, _I]:
    """(groups ``(rows, p, q)`` as ``_compress`` returns them, B, batched, logged q tokens per row)."""
    pp, pi, pv, Vp, p1 = logged_entries("p", p)
    qp, qi, qv, Vq, q1 = logged_entries("q", q)
    if (pp.shape[0], Vp) != (qp.shape[0], Vq):
        raise ValueError(
            f"p, q: shapes differ ({(pp.shape[0] - 1, Vp)} and {(qp.shape[0] - 1, Vq)}); pass one logged row of each"
        )
    B, V = pp.shape[0] - 1, Vp
    pu, pt = _mass("p", pp, pv, V, complete_tol)
    qu, qt = _mass("q", qp, qv, V, complete_tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.nan_to_num(pu / pt)) + np.ceil(np.nan_to_num(qu / qt))
    cols: list[_I] = []
    n_both = np.empty(B, dtype=np.int64)
    keep_d = np.empty(B, dtype=np.int64)
    for r in range(B):
        logged = np.union1d(pi[pp[r] : pp[r + 1]], qi[qp[r] : qp[r + 1]])
        n_both[r] = V - logged.size
        keep_d[r] = min(n_both[r], keep + int(need[r]) + 2)
        cand = np.arange(min(V, keep_d[r] + logged.size))
        free = cand[~np.isin(cand, logged, assume_unique=True)][: keep_d[r]]
        cols.append(np.union1d(logged, free))
    width = np.minimum(-(-np.array([c.size for c in cols]) // keep) * keep, V)
    hidden = n_both - keep_d
    groups = []
    for W in np.unique(width):
        rows = np.flatnonzero(width == W)
        sides = []
        for ptr, ids, val, u, t in ((pp, pi, pv, pu, pt), (qp, qi, qv, qu, qt)):
            x = np.zeros((rows.size, int(W)))
            live = np.zeros((rows.size, int(W)), dtype=bool)
            for j, i in enumerate(rows.tolist()):
                c = cols[i]
                live[j, : c.size] = True
                lid, lval = ids[ptr[i] : ptr[i + 1]], val[ptr[i] : ptr[i + 1]]
                x[j, np.searchsorted(c, lid)] = lval
            sides.append(log_type(x, (x == 0) & live, u[rows], t[rows], hidden[rows]))
        groups.append((rows, sides[0], sides[1]))
    return groups, B, not (p1 and q1), np.diff(qp)
