"""Sparse and top-k inputs: p and q given as scipy.sparse rows or as (token ids, values) per row.

Logs rarely hold dense rows. Wherever ``optimal_acceptance``, ``solve_lp``, ``acceptance``,
``simulate`` and ``verify`` take p and q they also take

* a ``scipy.sparse`` matrix or array of shape (B, V) (CSR or anything with ``tocsr()``), and
* a :class:`TopK`: the token ids and probabilities (or log-probabilities) of each row, padded with
  id -1 or ragged, plus the vocabulary size.

The kernels then run on each row's union support (the tokens where p or q is positive), relabelled
0..L-1 in ascending id order and zero-padded to the longest row, never on V; certificates, output
tokens and drafts are mapped back to vocabulary ids. The relabelling keeps every scheme's tie rule
(ties go to the lower id) and tokens with p = q = 0 take part in nothing, so exact results (alpha*,
its certificate, exact acceptance) equal the dense ones, bit for bit: rows are normalised by the same
sum either way (the exact sum of the entries, rounded once, which no order or grouping of the terms
changes: ``_core.inputs.normalize_rows`` and ``_core.inputs.csr_row_sums``). Sampled results
(``simulate``, ``verify``) follow the same laws, but their random numbers go to the union-support
columns, so one seed gives other samples than on dense rows.

A row must hold the whole distribution (its sum within 1e-4 of 1). For truncated top-k logs, whose
rows sum to the logged mass, alpha* is an interval: see ``acceptance_bounds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .args import check_alloc, int_array, integer, nbytes
from .kinds import is_sparse
from .rules import MAX_V, SUM_TOL, as_array

__all__ = ["TopK", "is_sparse", "SparseRows", "sparse_rows", "sparse_vocab", "to_dense"]


@dataclass(frozen=True)
class TopK:
    """The logged entries of each row: ``ids`` and ``values`` of shape (B, k) padded with id -1, a
    sequence of B 1-D arrays (ragged), or (k,) for one row; ``values`` are probabilities, or natural
    log-probabilities with ``logprobs=True`` (-inf = probability 0). Ids within a row are distinct."""

    ids: Any
    values: Any
    vocab_size: int
    logprobs: bool = False


@dataclass(frozen=True)
class SparseRows:
    """Validated, normalised rows in CSR form: row r holds ``ids[ptr[r]:ptr[r+1]]`` (ascending, distinct,
    positive values only) with values ``val[...]``."""

    ptr: NDArray[np.int64]
    ids: NDArray[np.int64]
    val: NDArray[np.float64]
    V: int
    one_d: bool

    @property
    def B(self) -> int:
        return int(self.ptr.shape[0] - 1)


def _topk_ids(name: str, ids: Any) -> NDArray[np.int64]:
    """TopK ids as int64, range-checked in their own dtype before the cast: -1 pads, any other
    negative id is an error (never read as padding), and so is an id beyond int64."""
    try:
        out = int_array(f"{name}: TopK.ids", ids, lo=-1)
    except ValueError as exc:
        raise ValueError(f"{exc} (-1 is the only padding id; token ids are >= 0)") from None
    return out


def _topk_row(name: str, r: int, ids: NDArray[Any]) -> NDArray[np.int64]:
    try:
        return _topk_ids(name, ids)
    except (TypeError, ValueError) as exc:
        raise type(exc)(str(exc).replace("TopK.ids:", f"TopK.ids row {r}:", 1)) from None


def _topk_parts(name: str, x: TopK) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[Any], bool]:
    """(counts per row, ids, values) of the logged (non-padding) entries of a TopK, and whether it is one 1-D row."""
    ragged = isinstance(x.ids, (list, tuple)) and any(np.ndim(a) >= 1 for a in x.ids)
    if not ragged:
        ids2 = np.atleast_2d(_topk_ids(name, x.ids))
        vals2 = np.atleast_2d(as_array(f"{name}: TopK.values", x.values))
        one_d = np.ndim(x.ids) == 1
        if ids2.shape != vals2.shape or ids2.ndim != 2:
            raise ValueError(f"ids and values have shapes {ids2.shape} and {vals2.shape}")
        keep = ids2 >= 0
        return keep.sum(axis=1).astype(np.int64), ids2[keep], vals2[keep], one_d
    raw = [np.asarray(a).reshape(-1) for a in x.ids]
    raw = [a if a.size else a.astype(np.int64) for a in raw]  # an empty row ([] is float64) logs nothing
    if not isinstance(x.values, (list, tuple)) and np.ndim(x.values) < 2:
        raise ValueError("ids are ragged rows, so values must be too (one 1-D array per row)")
    rows_v = [np.asarray(a).reshape(-1) for a in x.values]
    if len(raw) != len(rows_v) or any(a.shape != b.shape for a, b in zip(raw, rows_v, strict=True)):
        raise ValueError("ids and values must hold the same number of entries per row")
    lengths = np.array([a.size for a in raw], dtype=np.int64)
    try:  # one check of every id when the rows share a dtype (concatenating mixed ones may promote them)
        if len({a.dtype for a in raw}) != 1:
            raise ValueError("mixed dtypes")
        ids_all = _topk_ids(name, np.concatenate(raw))
    except (TypeError, ValueError):  # row by row: the error names the row
        ids_all = np.concatenate([_topk_row(name, r, a) for r, a in enumerate(raw)])
    keep = ids_all >= 0  # -1 pads here too
    row = np.repeat(np.arange(len(raw)), lengths)
    counts = np.bincount(row[keep], minlength=len(raw)).astype(np.int64)
    return counts, ids_all[keep], np.concatenate(rows_v)[keep], False


def _csr_parts(name: str, x: Any) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], int, bool]:
    if isinstance(x, TopK):
        if not isinstance(x.logprobs, (bool, np.bool_)):
            raise TypeError(f"{name}: TopK.logprobs must be a bool, got {type(x.logprobs).__name__}")
        try:
            V = integer(f"{name}: TopK.vocab_size", x.vocab_size, 1, MAX_V)
        except (TypeError, ValueError) as exc:
            raise type(exc)(
                f"{name}: TopK.vocab_size must be an integer in [1, {MAX_V}], got {x.vocab_size!r}"
            ) from None
        try:
            counts, ids_flat, vals_flat, one_d = _topk_parts(name, x)
        except (TypeError, ValueError) as exc:
            msg = str(exc)  # the checks of ids name the argument already
            raise type(exc)(msg if msg.startswith(f"{name}: ") else f"{name}: not a valid TopK ({exc})") from None
        if vals_flat.size and (vals_flat.dtype.kind != "f"):
            raise TypeError(f"{name}: TopK.values must be floats, got dtype {vals_flat.dtype}")
        vals_flat = vals_flat.astype(np.float64)
        if x.logprobs:
            if np.isnan(vals_flat).any() or (vals_flat > 0).any():
                raise ValueError(f"{name}: log-probabilities must be <= 0 and not NaN")
            vals_flat = np.exp(vals_flat)
        ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    else:
        csr = x.tocsr()
        if csr.ndim == 1:  # scipy >= 1.14 sparse arrays may be 1-D
            csr = csr.reshape(1, -1).tocsr()
            one_d = True
        else:
            one_d = False
        csr = csr.copy()
        csr.sum_duplicates()
        csr.sort_indices()
        B, V = csr.shape
        if V < 1 or V > MAX_V:
            raise ValueError(f"{name}: V = {V} tokens is outside [1, {MAX_V}]")
        if csr.dtype.kind != "f":
            raise TypeError(f"{name}: expected float32 or float64 probabilities, got dtype {csr.dtype}")
        ptr = csr.indptr.astype(np.int64)
        ids_flat = csr.indices.astype(np.int64)
        vals_flat = csr.data.astype(np.float64)
        V = int(V)
    return ptr, ids_flat, vals_flat, int(V), one_d


def sparse_rows(name: str, x: Any) -> SparseRows:
    """Validate a sparse or top-k input: ids in range and distinct per row, values finite and
    non-negative, every row summing to 1 within 1e-4 (then normalised by their sums, as dense rows are)."""
    ptr, ids, val, V, one_d = _csr_parts(name, x)
    B = ptr.shape[0] - 1
    row = np.repeat(np.arange(B), np.diff(ptr))
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        r = int(row[np.argmax((ids < 0) | (ids >= V))])
        raise ValueError(f"{name}: row {r} has a token id outside [0, {V})")
    if not np.isfinite(val).all():
        raise ValueError(f"{name}: row {int(row[np.argmax(~np.isfinite(val))])} contains NaN or inf")
    if (val < 0).any():
        raise ValueError(f"{name}: row {int(row[np.argmax(val < 0)])} has negative entries")
    order = np.lexsort((ids, row))  # ascending ids within each row
    ids, val = ids[order], val[order]
    dup = (np.diff(ids) == 0) & (np.diff(row) == 0)
    if dup.any():
        raise ValueError(f"{name}: row {int(row[1:][dup][0])} lists token {int(ids[1:][dup][0])} twice")
    pos = val > 0
    counts = np.bincount(row[pos], minlength=B).astype(np.int64)
    ids, val = ids[pos], val[pos]
    new_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    sums = _core.inputs.csr_row_sums(val, new_ptr)
    bad = np.abs(sums - 1.0) > SUM_TOL
    if bad.any():
        r = int(np.argmax(bad))
        raise ValueError(
            f"{name}: row {r} sums to {sums[r]:.9g}, not within {SUM_TOL:g} of 1; a truncated log (only the "
            "top-k entries) has no single alpha*: use mdsd_fast.acceptance_bounds for its interval"
        )
    val = val / np.repeat(sums, counts)
    return SparseRows(new_ptr, ids, val, V, one_d)


def sparse_vocab(p: Any, q: Any) -> int:
    """V of a (p, q) pair, read off its sparse side (:func:`union_pair` checks both sides agree)."""
    x = p if is_sparse(p) else q
    return int(x.vocab_size) if isinstance(x, TopK) else int(x.shape[-1])


def to_dense(name: str, x: Any) -> NDArray[np.float64]:
    """A validated sparse or top-k input as a dense float64 array, (B, V) or (V,) for one 1-D row
    (for the functions that need dense rows: the audit's cases, trees)."""
    s = sparse_rows(name, x)
    check_alloc(name, nbytes(s.B, s.V), f"the dense ({s.B}, {s.V}) float64 rows of this sparse input")
    out = np.zeros((s.B, s.V))
    out[np.repeat(np.arange(s.B), np.diff(s.ptr)), s.ids] = s.val
    return out[0] if s.one_d else out
