"""What the cut of a sparse sample (``DatasetBuilder(max_tokens=k)``, the shipped Gemma data) can
do to alpha*: intervals that contain alpha* of the uncut rows, from :func:`acceptance_bounds`.

A cut distribution keeps its own k most probable tokens, so on the stored support of its context
its k largest stored values are exactly those, and every token it left out is at most as probable
as the smallest of them: the premise of :func:`mdsd_fast.acceptance_bounds`. The other stored
values of that distribution (tokens kept for another distribution of the same context) are dropped
here, which only widens the interval. A distribution that was not cut (truncation at most the
builder's tau, 1e-6) is passed whole; its tail may break the premise by at most that mass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import LMDataset
from .bounds import acceptance_bounds

__all__ = ["logged_rows", "sample_bounds"]


def _own_top(vals: NDArray[np.float64], k: int, cut: bool) -> NDArray[np.float64]:
    if not cut or vals.size <= k:
        return vals
    out = np.zeros_like(vals)
    top = np.argsort(-vals, kind="stable")[:k]
    out[top] = vals[top]
    return out


def logged_rows(ds: LMDataset) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Dense (B, V) p and q of ``ds`` holding, per distribution, only the entries
    :func:`acceptance_bounds` may treat as logged (not renormalised)."""
    k = ds.info.get("max_tokens")
    if k is None:
        raise ValueError("logged_rows: the dataset is not a cut sample (its info has no max_tokens)")
    tau = float(ds.info.get("tau", 1e-6))
    pt, qt = ds.p_truncation, ds.q_truncation
    P = np.zeros((len(ds), ds.vocab_size))
    Q = np.zeros((len(ds), ds.vocab_size))
    for i in range(len(ds)):
        ids, p, q = ds.sparse_row(i)
        P[i, ids] = _own_top(p.astype(np.float64), int(k), bool(pt[i] > tau))
        Q[i, ids] = _own_top(q.astype(np.float64), int(k), bool(qt[i] > tau))
    return P, Q


def sample_bounds(ds: LMDataset, n: int, scheme: str = "iid", **kw: Any) -> tuple[Any, Any]:
    """Per row (low, high) containing alpha* of the uncut rows, for the cut sample ``ds``
    (keywords go to :func:`acceptance_bounds`)."""
    P, Q = logged_rows(ds)
    return acceptance_bounds(P, Q, n, scheme, **kw)
