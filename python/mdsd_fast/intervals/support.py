"""The logged entries of ``acceptance_bounds``'s inputs in CSR form, and the compressed columns of
its candidate search, built from those entries (never through (rows, V) arrays).

Dense rows, TopK and scipy.sparse logs all become the same CSR parts (``dense_parts``,
``sparse_parts``: ids ascending, the unseen mass and cap from the same sums), so every route sees
the same numbers whatever the input type. A row's compressed columns (``column_groups``) are its
logged tokens (in p or q) and the ``keep_d`` smallest token ids logged in neither, in ascending id
order, padded with dead columns to the group's width; the other tokens logged in neither are only
counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.args import check_alloc, nbytes
from ..inputs.rules import SUM_TOL
from ..inputs.sparse import _csr_parts

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
    """The unseen mass 1 - mass per row (0 when complete up to rounding, docs/guide/intervals.md §5), after
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


#: One side of a batch in CSR form: (ptr, ids ascending per row, values > 0, unseen mass u, cap t).
Parts = tuple[_I, _I, _F, _F, _F]


def sparse_parts(p: Any, q: Any, complete_tol: float) -> tuple[Parts, Parts, int, bool]:
    """(p's parts, q's parts, V, batched) of TopK / scipy.sparse logs, validated with the dense
    route's messages."""
    pp, pi, pv, Vp, p1 = logged_entries("p", p)
    qp, qi, qv, Vq, q1 = logged_entries("q", q)
    if (pp.shape[0], Vp) != (qp.shape[0], Vq):
        raise ValueError(
            f"p, q: shapes differ ({(pp.shape[0] - 1, Vp)} and {(qp.shape[0] - 1, Vq)}); pass one logged row of each"
        )
    pu, pt = _mass("p", pp, pv, Vp, complete_tol)
    qu, qt = _mass("q", qp, qv, Vp, complete_tol)
    return (pp, pi, pv, pu, pt), (qp, qi, qv, qu, qt), Vp, not (p1 and q1)


def dense_parts(name: str, rows: _F, complete_tol: float) -> Parts:
    """The parts of validated dense rows (their non-zero entries), with the same (u, t) as
    ``sparse_parts`` gives for the same entries: both routes then run the same numbers."""
    r, ids = np.nonzero(rows)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=rows.shape[0]))]).astype(np.int64)
    val = rows[r, ids].astype(np.float64)
    u, t = _mass(name, ptr, val, rows.shape[1], complete_tol)
    return ptr, ids.astype(np.int64), val, u, t


def column_groups(
    P: Parts, Q: Parts, V: int, rows: _I, log_type: Any, keep: int, bytes_per_column: int = 1024
) -> list[Any]:
    """Groups ``(rows, p, q)`` of the given rows on their compressed columns (module docstring):
    rows of one width form a group, so a row's arrays do not depend on the other rows.
    ``bytes_per_column``: the memory the caller's work on the groups takes per column, refused
    above ``limits.MAX_ALLOC_BYTES`` before any column is built."""
    pp, pi, pv, pu, pt = P
    qp, qi, qv, qu, qt = Q
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.nan_to_num(pu / pt)) + np.ceil(np.nan_to_num(qu / qt))
    cols: dict[int, _I] = {}
    n_both = np.zeros(pu.shape[0], dtype=np.int64)
    keep_d = np.zeros(pu.shape[0], dtype=np.int64)
    logged_of = {r: np.union1d(pi[pp[r] : pp[r + 1]], qi[qp[r] : qp[r + 1]]) for r in rows.tolist()}
    columns = 0
    for r, logged in logged_of.items():
        n_both[r] = V - logged.size
        keep_d[r] = min(n_both[r], keep + int(need[r]) + 2)
        columns += int(keep_d[r]) + logged.size
    # a log whose unseen mass needs many tokens at its cap (a tiny smallest value, a huge V) needs
    # that many columns: p's and q's values and masks and the search's working copies of them
    check_alloc(
        "p, q",
        nbytes(columns, itemsize=bytes_per_column),
        f"the search on the {columns:,} columns that hold the unseen mass",
    )
    for r, logged in logged_of.items():
        cand = np.arange(min(V, keep_d[r] + logged.size))
        free = cand[~np.isin(cand, logged, assume_unique=True)][: keep_d[r]]
        cols[r] = np.union1d(logged, free)
    width = np.minimum(-(-np.array([cols[r].size for r in rows.tolist()], dtype=np.int64) // keep) * keep, V)
    hidden = n_both - keep_d
    groups = []
    for W in np.unique(width):
        grp = rows[width == W]
        sides = []
        for ptr, ids, val, u, t in (P, Q):
            x = np.zeros((grp.size, int(W)))
            live = np.zeros((grp.size, int(W)), dtype=bool)
            for j, i in enumerate(grp.tolist()):
                c = cols[i]
                live[j, : c.size] = True
                x[j, np.searchsorted(c, ids[ptr[i] : ptr[i + 1]])] = val[ptr[i] : ptr[i + 1]]
            sides.append(log_type(x, (x == 0) & live, u[grp], t[grp], hidden[grp]))
        groups.append((grp, sides[0], sides[1]))
    return groups
