"""What p and q become before a kernel sees them: validated dense rows, or rows on their union support.

Every entry point takes p and q as dense arrays, :class:`~mdsd_fast.constraints.Logits` (the
distribution an engine samples from) or sparse / top-k rows (:mod:`mdsd_fast.sparse`); the functions
here turn any of them into the float64 rows the C++ core reads, with the rules of
:mod:`mdsd_fast.inputs.rules` and the error messages users see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .args import check_alloc, nbytes
from .kinds import is_logits, is_sparse
from .rules import MAX_V, SUM_TOL, _as_float_array, _float_array, check_pair_shapes, raise_row_error

if TYPE_CHECKING:
    from .sparse import SparseRows

__all__ = ["as_distribution", "as_pair", "raw_rows", "raw_batch", "raw_pair", "union_pair", "pair_rows"]


#: The dtypes the C++ kernels read in place (native byte order).
_NATIVE = (np.dtype(np.float64), np.dtype(np.float32))


def raw_rows(name: str, x: Any) -> NDArray[Any]:
    """``x`` (1-D or 2-D) C-contiguous in its own float width and native byte order, its dtype and
    shape checked but its values not: for kernels that validate and normalise in their own pass
    (``_core.verifiers.verify_direct``), which report a broken rule for :func:`raise_row_error`."""
    if (
        type(x) is np.ndarray
        and x.dtype in _NATIVE
        and 1 <= x.ndim <= 2
        and x.flags.c_contiguous
        and 0 < x.shape[-1] <= MAX_V
    ):
        return x  # the common case, as it is: no copy and nothing else to check
    arr = _float_array(name, _sampled(name, x), (1, 2))
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def raw_batch(pr: NDArray[Any], qr: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """:func:`raw_rows`' p and q (shapes checked by :func:`check_pair_shapes`) as (B, V) arrays of one
    float width, a single row broadcast against a batch; widening float32 to float64 is exact."""
    if pr.dtype != qr.dtype:
        pr, qr = pr.astype(np.float64), qr.astype(np.float64)
    B = pr.shape[0] if pr.ndim == 2 else (qr.shape[0] if qr.ndim == 2 else 1)
    V = pr.shape[-1]
    return np.ascontiguousarray(np.broadcast_to(pr, (B, V))), np.ascontiguousarray(np.broadcast_to(qr, (B, V)))


def raw_pair(p: Any, q: Any) -> tuple[NDArray[Any], NDArray[Any], bool]:
    """:func:`raw_rows`' p and q as (B, V) arrays of one float width, and whether the caller passed a
    batch: views where they already are (a single row is a batch of one), else :func:`raw_batch`."""
    pr, qr = raw_rows("p", p), raw_rows("q", q)
    check_pair_shapes(pr, qr)
    batched = pr.ndim == 2 or qr.ndim == 2
    if pr.ndim != qr.ndim or pr.dtype != qr.dtype:
        pr, qr = raw_batch(pr, qr)
    elif not batched:
        pr, qr = pr[None], qr[None]
    return pr, qr, batched


def _sampled(name: str, x: Any) -> Any:
    """A ``constraints.Logits`` becomes the distribution its engine samples from, a sparse or top-k
    input (``mdsd_fast.sparse``) a dense array; anything else passes through unchanged."""
    if type(x) is np.ndarray:
        return x
    if is_logits(x):
        return x.probabilities()
    if is_sparse(x):
        from .sparse import to_dense  # on first sparse input: dense calls do not load it

        return to_dense(name, x)
    return x


def as_distribution(name: str, x: Any, *, ndim: tuple[int, ...] = (1, 2), threads: int = 0) -> NDArray[np.float64]:
    """Validated, row-normalised, C-contiguous float64 copy of ``x`` (1-D or 2-D); ``x`` may be a
    ``constraints.Logits`` (logits plus an engine's sampling settings) or a sparse / top-k input
    (densified here; the main entry points run those on their union support instead).
    ``threads``: the C++ pass's threads, as :func:`check_threads` gives them (0 = all cores), so
    that a caller's ``threads=`` covers its validation too; the copy does not depend on it."""
    x2 = _sampled(name, x)
    if ndim == (1,) and x2 is not x and getattr(x2, "ndim", 0) == 2 and x2.shape[0] == 1:
        x2 = x2[0]  # a sparse (1, V) row where one row is expected
    arr = _as_float_array(name, x2, ndim)
    rows = arr.reshape(-1, arr.shape[-1])
    if rows.shape[0] == 0:
        return arr.copy()
    # One C++ pass per row: finite, non-negative, the exact sum of the entries rounded once (no
    # order changes it: the sum sparse rows share, mdsd_fast.sparse), then the division.
    out, status, r, value = _core.inputs.normalize_rows(rows, SUM_TOL, threads)
    if status != 0:
        raise_row_error(name, status, r, value, rows)
    return np.ascontiguousarray(out.reshape(arr.shape))


def as_pair(p: Any, q: Any, *, threads: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64], bool]:
    """Validated (B, V) float64 copies of p and q (a single row broadcasts against a batch),
    and whether the caller passed a batch (2-D) at all; ``threads`` as in :func:`as_distribution`."""
    pa = as_distribution("p", p, threads=threads)
    qa = as_distribution("q", q, threads=threads)
    check_pair_shapes(pa, qa)
    batched = pa.ndim == 2 or qa.ndim == 2
    B = pa.shape[0] if pa.ndim == 2 else (qa.shape[0] if qa.ndim == 2 else 1)
    V = pa.shape[-1]
    p2 = np.ascontiguousarray(np.broadcast_to(pa, (B, V)))
    q2 = np.ascontiguousarray(np.broadcast_to(qa, (B, V)))
    return p2, q2, batched


def _as_rows(name: str, x: Any, threads: int) -> SparseRows:
    """Sparse rows of any input: dense arrays are validated by the dense rules (on ``threads``), then read sparse."""
    from .sparse import SparseRows, sparse_rows

    if is_sparse(x):
        return sparse_rows(name, x)
    d = as_distribution(name, x, threads=threads)
    d2 = d.reshape(-1, d.shape[-1])
    r, c = np.nonzero(d2)
    counts = np.bincount(r, minlength=d2.shape[0]).astype(np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return SparseRows(ptr, c.astype(np.int64), d2[r, c], int(d2.shape[1]), d.ndim == 1)


def union_pair(
    p: Any, q: Any, *, threads: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], bool]:
    """(pc, qc, ids, batched): p and q on each row's union support, (B, L) float64, with ``ids[r, j]``
    the vocabulary id of column j of row r (-1 in the zero padding). A single row broadcasts.
    ``threads``: of the validation of a dense side (as ``as_distribution`` takes it)."""
    ps, qs = _as_rows("p", p, threads), _as_rows("q", q, threads)
    if ps.V != qs.V:
        raise ValueError(f"p, q: vocabulary sizes differ (p has V={ps.V}, q has V={qs.V})")
    if not ps.one_d and not qs.one_d and ps.B != qs.B and 1 not in (ps.B, qs.B):
        raise ValueError(f"p, q: batch sizes differ (p has {ps.B} rows, q has {qs.B})")
    B = max(ps.B, qs.B)
    batched = not (ps.one_d and qs.one_d)

    def keys(s: SparseRows) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        row = np.repeat(np.arange(s.B), np.diff(s.ptr))
        if s.B == 1 and B > 1:  # broadcast one row
            row = np.repeat(np.arange(B), s.ids.size)
            return row * s.V + np.tile(s.ids, B), np.tile(s.val, B)
        return row * s.V + s.ids, s.val

    kp, vp = keys(ps)
    kq, vq = keys(qs)
    uk = np.union1d(kp, kq)
    urow = uk // ps.V
    counts = np.bincount(urow, minlength=B)
    L = max(1, int(counts.max()) if counts.size else 1)
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    col = np.arange(uk.size) - start[urow]
    # rows padded to the longest: a ragged input can ask for far more than it holds
    check_alloc("p, q", nbytes(B, L, copies=3), "the rows on their union support, padded to the longest")
    pc = np.zeros((B, L))
    qc = np.zeros((B, L))
    ids = np.full((B, L), -1, dtype=np.int64)
    ids[urow, col] = uk % ps.V
    jp = np.searchsorted(uk, kp)
    jq = np.searchsorted(uk, kq)
    pc[urow[jp], col[jp]] = vp
    qc[urow[jq], col[jq]] = vq
    return pc, qc, ids, batched


def pair_rows(
    p: Any, q: Any, *, threads: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.float64], bool, NDArray[np.int64] | None]:
    """(p2, q2, batched, ids): validated (B, L) rows of any input. Dense input: ``as_pair``'s (B, V) rows
    and ids None; sparse or top-k input: :func:`union_pair`'s rows on the union support and their ids.
    ``threads``: of the validation (as ``as_distribution`` takes it)."""
    if is_sparse(p) or is_sparse(q):
        pc, qc, ids, batched = union_pair(p, q, threads=threads)
        return pc, qc, batched, ids
    p2, q2, batched = as_pair(p, q, threads=threads)
    return p2, q2, batched, None
