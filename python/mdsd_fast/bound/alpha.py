"""The optimal acceptance rate alpha*: ``optimal_acceptance``.

alpha* comes from the fast dual (the sorted-prefix scan of the C++ core, docs/theory/sorted_prefix.md §4) or from
the flow LP over draft sets solved with HiGHS (:func:`~mdsd_fast.bound.lp.solve_lp`, docs/theory/lp.md §7).
"""

from __future__ import annotations

from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _core
from ..inputs.kinds import is_sparse
from ..inputs.pairs import pair_rows, raw_pair
from ..inputs.rules import (
    SCHEMES,
    SUM_TOL,
    check_bool,
    check_n,
    check_scheme,
    check_support,
    check_threads,
    mixed_parts,
    raise_row_error,
)

__all__ = ["optimal_acceptance"]


def _alpha_direct(
    p: Any, q: Any, n: int, scheme: str, wor_method: str, certificate: bool, threads: int
) -> tuple[NDArray[np.float64], Any, bool] | None:
    """alpha* of dense p, q without a validated copy of the batch: the C++ pass validates and
    normalises each row into its thread's scratch (float32 kept float32 until then), the rows of
    ``as_pair`` bit for bit, so the results are the validated route's. None for sparse input (its
    union support takes the validated route) and when the kernel refused a valid row (too few
    tokens with q > 0 for the scheme: the validated route names the problem)."""
    if (type(p) is not np.ndarray and is_sparse(p)) or (type(q) is not np.ndarray and is_sparse(q)):
        return None
    pr, qr, batched = raw_pair(p, q)
    alphas, certs, err = _core.bound.dual_direct(pr, qr, n, scheme, wor_method, certificate, threads, SUM_TOL)
    if err is not None:
        status, side, r, value = err
        raise_row_error("pq"[side], status, r, value, (pr, qr)[side])
    if alphas is None:
        return None
    check_support("q", qr, n, scheme)  # (q > 0 where its normalised row is: the divisor is within 1e-4 of 1)
    return alphas, certs, batched


@overload
def optimal_acceptance(
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    scheme: str = ...,
    *,
    method: str = ...,
    return_certificate: Literal[False] = ...,
    wor_method: str = ...,
    threads: int | None = ...,
) -> Any: ...
@overload
def optimal_acceptance(
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    scheme: str = ...,
    *,
    method: str = ...,
    return_certificate: Literal[True],
    wor_method: str = ...,
    threads: int | None = ...,
) -> tuple[Any, Any]: ...


def optimal_acceptance(
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    scheme: str = "iid",
    *,
    method: str = "auto",
    return_certificate: bool = False,
    wor_method: str = "auto",
    threads: int | None = None,
) -> Any:
    """Optimal acceptance rate alpha* of n drafts under a draft sampling scheme.

    alpha* is the highest acceptance rate any lossless verifier can reach (docs/theory/dual.md §3):
    ``alpha* = 1 + min_H [p(H) - Pr[all drafts in H]]``.

    Parameters
    ----------
    p, q : target and draft distributions, shape (V,) or (B, V), float32 or float64 (upcast to
        float64; rows within 1e-4 of summing to 1 are renormalised). A single row broadcasts
        against a batch.
    n : number of drafts (>= 1).
    scheme : "iid" (independent draws from q, with replacement), "wor" (sequentially without
        replacement, each draw from q renormalised over the tokens not yet drawn: the Gumbel-top-n
        law), "greedy" (the n-1 most probable tokens of q, ties to the lower id, plus one token
        drawn from q renormalised over the rest), "topk" (the n most probable tokens of q, ties to
        the lower id, no randomness: alpha* = p of those tokens), or a mixed scheme "top<m>+iid" /
        "top<m>+wor" with 1 <= m < n (the m most probable tokens plus n - m tokens drawn from q
        renormalised over the rest, i.i.d. or without replacement; "greedy" is "top<n-1>+iid").
        For a mixed scheme alpha* = p(T) + alpha* of the random drafts against p with T merged
        into one token that is never drafted (docs/theory/greedy.md §5.2).
    method : "dual" (sorted-prefix scan / closed form, O(V log V)), "lp" (the flow LP over
        enumerated draft sets, solved by HiGHS: small V only), or "auto" (= "dual").
    return_certificate : also return H (sorted int64 token ids; a list of arrays for a batch)
        with alpha* = 1 + p(H) - Pr[all drafts in H].
    wor_method : evaluator of Pr[all drafts in H] for "wor": "exact" (closed forms, n <= 3),
        "integral" (the exponential-race integral, any n, ~1e-12 absolute), or "auto"
        (exact for n = 2, and n = 3 with at most 2,048 support tokens; the integral otherwise).
    threads : threads for a batch (default: all cores). Results do not depend on it.

    Returns
    -------
    float for 1-D input, float64 array of shape (B,) for 2-D input; with the certificate as a
    second value when ``return_certificate`` is true.
    """
    scheme = check_scheme(scheme, SCHEMES)
    n = check_n(n)
    return_certificate = check_bool("return_certificate", return_certificate)
    if not isinstance(method, str) or method not in ("auto", "dual", "lp"):
        raise ValueError(f"method: expected 'auto', 'dual' or 'lp', got {method!r}")
    if not isinstance(wor_method, str) or wor_method not in ("auto", "exact", "integral"):
        raise ValueError(f"wor_method: expected 'auto', 'exact' or 'integral', got {wor_method!r}")
    mp = mixed_parts(scheme)
    random_wor = n if scheme == "wor" else (n - mp[0] if mp is not None and mp[1] == "wor" else 0)
    if wor_method == "exact" and random_wor > 3:
        raise ValueError(
            "wor_method: 'exact' covers n <= 3 random without-replacement drafts; use 'integral' or 'auto'"
        )
    nthreads = check_threads(threads)
    if method != "lp":
        direct = _alpha_direct(p, q, n, scheme, wor_method, return_certificate, nthreads)
        if direct is not None:
            da, dc, dbatched = direct
            if not dbatched:
                return (float(da[0]), dc[0]) if return_certificate else float(da[0])
            return (da, dc) if return_certificate else da
    p2, q2, batched, col_ids = pair_rows(p, q, threads=nthreads)
    B = p2.shape[0]
    check_support("q", q2, n, scheme)

    if method == "lp":
        from .lp import solve_lp  # HiGHS's LP loads on first use

        alphas = np.empty(B)
        certs: list[NDArray[np.int64]] = []
        for r in range(B):
            res = solve_lp(p2[r], q2[r], n, scheme)
            alphas[r] = res.alpha
            certs.append(res.certificate)
        cert_out: Any = certs
    else:
        alphas, cert_out = _core.bound.dual_batch(p2, q2, n, scheme, wor_method, return_certificate, nthreads)
    if col_ids is not None and return_certificate:  # sparse input: columns back to vocabulary ids
        cert_out = [col_ids[r][np.asarray(c, dtype=np.int64)] for r, c in enumerate(cert_out)]
    if not batched:
        a0 = float(alphas[0])
        return (a0, cert_out[0]) if return_certificate else a0
    return (alphas, cert_out) if return_certificate else alphas
