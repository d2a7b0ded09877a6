"""What the cut supports of a tree file can do to the root's acceptance (docs/guide/trees_report.md §2).

A shipped tree stores, per node, each distribution's own most probable tokens (until 1 - mass_cut of
its mass, at most kmax) and their union, so its exact values belong to the rows conditioned on that
support. At the root the uncut rows are bracketed rigorously: a distribution's own stored top tokens
are exactly its top, every token it left out is at most as probable as the smallest of them, and
that is the premise of :func:`mdsd_fast.acceptance_bounds`. The other stored values of that
distribution (tokens kept for the other one, or drafted) are dropped here, which only widens the
interval. Below the root no such interval is claimed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..intervals.bounds import _VERIFIER_SCHEMES, acceptance_bounds
from .data import TreeDataset, _mass_prefix

__all__ = ["root_intervals"]

#: the encoding's L1 error per stored row (docs/guide/data.md): a prefix found on the stored values with a
#: threshold lowered by twice that never goes past the model's own prefix
_SLACK = 2e-6


def _own_top(vals: NDArray[np.float64], trunc: float, mass_cut: float, kmax: int) -> NDArray[np.float64]:
    """``vals`` with everything but the distribution's own kept tokens set to 0 (not renormalised)."""
    order = np.argsort(-vals, kind="stable")
    m = kmax if trunc > mass_cut else _mass_prefix(vals[order], 1.0, mass_cut + _SLACK, kmax)
    out = np.zeros_like(vals)
    out[order[:m]] = vals[order[:m]]
    return out


def _logged_roots(ts: TreeDataset, idx: Sequence[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mass_cut, kmax = float(ts.info["mass_cut"]), int(ts.info["kmax"])
    P = np.zeros((len(idx), ts.vocab_size))
    Q = np.zeros((len(idx), ts.vocab_size))
    for k, t in enumerate(idx):
        s, p, q = ts.sparse_rows(t)[0]
        pt, qt = ts.truncation(t)
        P[k, s] = _own_top(p, float(pt[0]), mass_cut, kmax)
        Q[k, s] = _own_top(q, float(qt[0]), mass_cut, kmax)
    return P, Q


def root_intervals(
    ts: TreeDataset, idx: Sequence[int], n: int, scheme: str, verifier: str | None, *, threads: int | None = None
) -> tuple[float, float, str]:
    """(mean low, mean high, note) over trees ``idx`` (roots of the same n and scheme) of intervals
    holding the root acceptance of ``verifier`` (None: alpha* of the scheme) on the uncut root rows;
    NaN ends and a note where :func:`acceptance_bounds` does not bound that verifier or scheme.
    ``threads``: of :func:`acceptance_bounds`."""
    if "kmax" not in ts.info or "mass_cut" not in ts.info:
        return math.nan, math.nan, "no cut recorded in the file"
    if verifier is not None and verifier not in _VERIFIER_SCHEMES:
        return math.nan, math.nan, f"acceptance_bounds does not bound {verifier!r}"
    P, Q = _logged_roots(ts, idx)
    try:
        low: Any
        low, high = acceptance_bounds(P, Q, n, scheme, verifier=verifier, threads=threads)
    except ValueError as exc:  # e.g. a topk root whose drafted set is not fixed by the logged q
        return math.nan, math.nan, f"no root interval: {exc}"
    return float(np.mean(low)), float(np.mean(high)), ""
