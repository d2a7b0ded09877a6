"""The optimal acceptance rate alpha* and the LP that certifies it.

``optimal_acceptance`` computes alpha* by the fast dual (the sorted-prefix scan of the C++ core,
docs/theory.md §4) or by the flow LP over draft sets solved with HiGHS (``solve_lp``, docs/theory.md §7).
It owns the HiGHS objects (``_highs()``: one silent, reusable instance per thread); the small LPs of
trees/bound.py and _intervals_tight.py are built on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal, overload

import highspy
import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core
from ._validate import (
    LP_SCHEMES,
    SCHEMES,
    SUM_TOL,
    as_array,
    as_distribution,
    check_bool,
    check_n,
    check_pair_shapes,
    check_scheme,
    check_support,
    check_threads,
    mixed_parts,
    raise_row_error,
    raw_batch,
    raw_rows,
)
from .sparse import is_sparse, pair_rows, sparse_vocab, union_pair

__all__ = ["optimal_acceptance", "solve_lp", "LPResult", "SolverError", "TooLargeError", "DEFAULT_MAX_SETS"]

#: Default budget for ``solve_lp``: at most this many draft sets (or enumerated tuples) are built.
#: A set costs about 40 bytes plus 40 bytes per token in the C++ model and HiGHS's copy, so the
#: default stays well under 1 GiB for n <= 8.
DEFAULT_MAX_SETS = 2_000_000

#: An LP whose flow value and cut value differ by more than this is refused.
LP_GAP_TOL = 1e-8

TooLargeError = _core.bound.TooLargeError
TooLargeError.__doc__ = "The enumeration would exceed max_sets (a ValueError). The message gives the size needed."


class SolverError(RuntimeError):
    """HiGHS did not return a certified optimum. ``status`` holds the HiGHS model status name."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LPResult:
    """Optimal solution of the flow LP over draft sets (docs/theory.md §7.2).

    The accepted flow of draft set ``s`` is ``flows[set_ptr[s]:set_ptr[s+1]]``, the mass accepted on
    each of its tokens ``set_tokens[set_ptr[s]:set_ptr[s+1]]``; the set has probability
    ``set_weights[s]``. Sets are draft sets with p = 0 tokens removed; ``rejected_mass`` is the
    probability of draft sets made only of p = 0 tokens.
    """

    alpha: float  #: accepted flow value = alpha* (a feasible flow; certified by ``cut_value``)
    cut_value: float  #: p(H) + Pr[S not inside H] for the certificate H; equals alpha within LP_GAP_TOL
    status: str  #: HiGHS model status name ("Optimal"; anything else raises SolverError)
    scheme: str
    n: int
    num_sets: int
    num_flows: int
    certificate: NDArray[np.int64]  #: H, sorted token ids, with alpha* = 1 + p(H) - Pr[all drafts in H]
    set_ptr: NDArray[np.int64]
    set_tokens: NDArray[np.int32]
    set_weights: NDArray[np.float64]
    flows: NDArray[np.float64]
    accepted: NDArray[np.float64]  #: a(y): total accepted mass on each token, shape (V,)
    rejected_mass: float
    solve_seconds: float
    highs_version: str = field(default="")
    solver: str = field(default="highs")

    def sets(self) -> Iterator[tuple[NDArray[np.int32], float, NDArray[np.float64]]]:
        """Iterate over ``(tokens, weight, accepted flow per token)`` for every draft set."""
        for s in range(self.num_sets):
            a, b = int(self.set_ptr[s]), int(self.set_ptr[s + 1])
            yield self.set_tokens[a:b], float(self.set_weights[s]), self.flows[a:b]


_local = threading.local()
_construct_lock = threading.Lock()


def _quiet_highs() -> Any:
    """A Highs object, built with the C-level stdout silenced: HiGHS prints its banner on construction."""
    import os
    import sys

    with _construct_lock:
        try:
            sys.stdout.flush()
        except (AttributeError, OSError, ValueError):
            pass
        fd = 1  # the C-level stdout, whatever object sys.stdout is
        try:
            saved = os.dup(fd)
        except OSError:  # no stdout at all: nothing to silence
            return highspy.Highs()
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), fd)
                try:
                    return highspy.Highs()
                finally:
                    os.dup2(saved, fd)
        finally:
            os.close(saved)


def _highs() -> Any:
    """One reusable, silent Highs object per OS thread (saves the ~0.5 ms set-up per solve)."""
    h = getattr(_local, "highs", None)
    if h is None:
        h = _quiet_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        _local.highs = h
    else:
        h.clearModel()
    return h


def _highs_version() -> str:
    try:
        h = _highs()
        return f"{h.version()}" if hasattr(h, "version") else ""
    except Exception:  # pragma: no cover - informational only
        return ""


def solve_lp(
    p: ArrayLike,
    q: ArrayLike | None,
    n: int,
    scheme: str = "iid",
    *,
    tuples: ArrayLike | None = None,
    probs: ArrayLike | None = None,
    max_sets: int = DEFAULT_MAX_SETS,
    time_limit: float | None = None,
    solver: Literal["highs", "flow"] = "highs",
) -> LPResult:
    """Solve the flow LP over draft sets (HiGHS or the native max-flow) and certify it with a cut.

    Parameters
    ----------
    p : (V,) target distribution.
    q : draft distribution, (V,) for "iid", "wor", "greedy", "topk" and the mixed schemes; (n, V)
        for "independent" (row k is the law of draft k); ignored (may be None) for "explicit".
    n : number of drafts (for "explicit", the tuple width is taken from ``tuples``).
    scheme : "iid", "wor", "greedy", "topk", a mixed scheme "top<m>+iid" / "top<m>+wor" (as in
        ``optimal_acceptance``), "independent" or "explicit".
    tuples, probs : for "explicit": int array (m, n) of draft tuples and their m probabilities
        (non-negative, summing to 1 within 1e-4; renormalised).
    max_sets : refuse (``TooLargeError``, a ValueError stating the size needed) before enumerating
        more draft sets or tuples than this.
    time_limit : seconds for HiGHS; hitting it raises ``SolverError``.
    solver : "highs" (the LP solved by HiGHS through highspy) or "flow" (the native exact
        push-relabel max-flow of the C++ core, no HiGHS; for "iid", "wor" and "greedy" it is
        steered by the dual's certificate, which splits the network into two saturated halves).
        Both return the same optimum and an optimal flow (not always the same one).

    Returns
    -------
    LPResult with alpha, status, the certificate H and the optimal accepted flow of every set.
    Raises ``SolverError`` when HiGHS's model status is not Optimal or when the flow value and the
    cut value of the rounded dual disagree by more than ``LP_GAP_TOL``.
    """
    scheme = check_scheme(scheme, LP_SCHEMES)
    if not isinstance(solver, str) or solver not in ("highs", "flow"):
        raise ValueError(f"solver: expected 'highs' or 'flow', got {solver!r}")
    if scheme not in ("independent", "explicit") and (is_sparse(p) or is_sparse(q)):
        # Sparse input (mdsd_fast.sparse): solve on the union support, report vocabulary ids.
        pc, qc, col, _ = union_pair(p, q)
        if pc.shape[0] != 1:
            raise ValueError(f"p, q: solve_lp takes one row, got {pc.shape[0]}")
        res = solve_lp(pc[0], qc[0], n, scheme, max_sets=max_sets, time_limit=time_limit, solver=solver)
        ids, V = col[0], sparse_vocab(p, q)
        accepted = np.zeros(V)
        accepted[ids[ids >= 0]] = res.accepted[ids >= 0]
        return replace(
            res,
            certificate=ids[res.certificate],
            set_tokens=ids[res.set_tokens].astype(np.int32),
            accepted=accepted,
        )
    p1 = as_distribution("p", p, ndim=(1,))
    V = p1.shape[0]
    if isinstance(max_sets, bool) or not isinstance(max_sets, (int, np.integer)) or max_sets < 1:
        raise ValueError(f"max_sets: expected a positive integer, got {max_sets!r}")
    if time_limit is not None:
        if isinstance(time_limit, (bool, np.bool_)) or not isinstance(
            time_limit, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"time_limit: expected a number of seconds or None, got {type(time_limit).__name__}")
        if not float(time_limit) > 0:  # also refuses NaN, which HiGHS would ignore (keeping a stale limit)
            raise ValueError(f"time_limit: expected a positive number of seconds, got {time_limit!r}")
    q1: NDArray[np.float64] | None = None
    t_arr: NDArray[np.int64] | None = None
    pr_arr: NDArray[np.float64] | None = None
    if scheme == "explicit":
        if tuples is None or probs is None:
            raise ValueError("tuples, probs: scheme='explicit' needs both the draft tuples and their probabilities")
        t_raw = as_array("tuples", tuples)
        if t_raw.dtype.kind not in "iu":
            raise TypeError(f"tuples: expected an integer array of token ids, got dtype {t_raw.dtype}")
        if t_raw.ndim != 2 or t_raw.shape[0] == 0 or t_raw.shape[1] == 0:
            raise ValueError(f"tuples: expected shape (m, n) with m, n >= 1, got {t_raw.shape}")
        if t_raw.min() < 0 or t_raw.max() >= V:
            bad = int(np.argmax((t_raw < 0).any(axis=1) | (t_raw >= V).any(axis=1)))
            raise ValueError(f"tuples: row {bad} has a token id outside [0, {V})")
        t_arr = np.ascontiguousarray(t_raw, dtype=np.int64)
        pr_arr = as_distribution("probs", probs, ndim=(1,))
        if pr_arr.shape[0] != t_arr.shape[0]:
            raise ValueError(f"probs: expected {t_arr.shape[0]} probabilities (one per tuple), got {pr_arr.shape[0]}")
        n = int(t_arr.shape[1])
    else:
        n = check_n(n)
        if q is None:
            raise ValueError(f"q: required for scheme={scheme!r}")
        if scheme == "independent":
            q1 = as_distribution("q", q, ndim=(2,))
            if q1.shape != (n, V):
                raise ValueError(f"q: scheme='independent' expects shape (n, V) = ({n}, {V}), got {q1.shape}")
        else:
            q1 = as_distribution("q", q, ndim=(1,))
            if q1.shape != (V,):
                raise ValueError(f"q: expected shape ({V},) to match p, got {q1.shape}")
            check_support("q", q1[None, :], n, scheme)

    t0 = time.perf_counter()
    model = _core.bound.FlowModel(p1, q1, n, scheme, float(max_sets), t_arr, pr_arr)
    num_col = model.num_edges  # one LP column per (set, token) edge
    cut: float | None = None
    if solver == "flow":
        hint = None
        if scheme in SCHEMES or mixed_parts(scheme) is not None:
            assert q1 is not None
            _, certs = _core.bound.dual_batch(p1[None, :], q1[None, :], n, scheme, "auto", True, 1)
            hint = certs[0]
        mf = model.max_flow(hint)
        flows = mf["flows"]
        accepted_flow = mf["accepted"]
        alpha = float(mf["value"])
        cut, H = float(mf["cut"]), mf["certificate"]
        status = "Optimal"
    elif num_col == 0:
        # No draft can ever be accepted (no draft token has p > 0): alpha* = 0, H = the p = 0 tokens.
        v = np.zeros(model.num_row)
        flows = np.zeros(0)
        status = "Optimal"
        alpha = 0.0
    else:
        num_row = model.num_row  # assembles the CSC LP
        h = _highs()
        limit = float("inf") if time_limit is None else float(time_limit)
        if h.setOptionValue("time_limit", limit) != highspy.HighsStatus.kOk:
            raise SolverError(f"HiGHS refused time_limit={limit!r}", "OptionError")
        inf = highspy.kHighsInf
        st = h.passModel(
            num_col,
            num_row,
            2 * num_col,
            int(highspy.MatrixFormat.kColwise),
            int(highspy.ObjSense.kMaximize),
            0.0,
            np.ones(num_col),
            np.zeros(num_col),
            np.full(num_col, inf),
            np.full(num_row, -inf),
            model.row_upper,
            model.a_start,
            model.a_index,
            np.ones(2 * num_col),
            np.zeros(num_col, dtype=np.int32),
        )
        if st == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected the flow LP (passModel returned kError)", "ModelError")
        h.run()
        ms = h.getModelStatus()
        status = h.modelStatusToString(ms)
        if ms != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS did not solve the flow LP to optimality: model status {status!r}", status)
        sol = h.getSolution()
        flows = np.clip(np.asarray(sol.col_value, dtype=np.float64), 0.0, None)
        v = np.asarray(sol.row_dual, dtype=np.float64)[model.num_sets :]
        # HiGHS reports duals of a maximisation with its own sign convention; the flow LP's (u, v)
        # are non-negative, so take magnitudes (checked against the cut below, never trusted alone).
        v = np.abs(v)
        alpha = float(flows.sum())
    if cut is None:
        cut, H = model.certificate(v)
    seconds = time.perf_counter() - t0
    if abs(cut - alpha) > LP_GAP_TOL:
        raise SolverError(
            f"HiGHS reported {status!r} but the flow value {alpha:.12g} and the cut value {cut:.12g} differ by "
            f"{abs(cut - alpha):.3g} > {LP_GAP_TOL:g}",
            status,
        )
    set_ptr = model.set_ptr
    set_tokens = model.set_tokens
    if solver == "flow":
        accepted = accepted_flow
    else:
        accepted = np.bincount(set_tokens, weights=flows, minlength=V).astype(np.float64, copy=False)
    return LPResult(
        alpha=min(alpha, 1.0),
        cut_value=float(cut),
        status=status,
        scheme=scheme,
        n=n,
        num_sets=int(model.num_sets),
        num_flows=int(num_col),
        certificate=np.asarray(H, dtype=np.int64),
        set_ptr=set_ptr,
        set_tokens=set_tokens,
        set_weights=model.set_weights,
        flows=flows,
        accepted=accepted,
        rejected_mass=float(model.rejected_mass),
        solve_seconds=seconds,
        highs_version=_highs_version() if solver == "highs" else "",
        solver=solver,
    )


def _alpha_direct(
    p: Any, q: Any, n: int, scheme: str, wor_method: str, certificate: bool, threads: int
) -> tuple[NDArray[np.float64], Any, bool] | None:
    """alpha* of dense p, q without a validated copy of the batch: the C++ pass validates and
    normalises each row into its thread's scratch (float32 kept float32 until then), the rows of
    ``as_pair`` bit for bit, so the results are the validated route's. None for sparse input (its
    union support takes the validated route) and when the kernel refused a valid row (too few
    tokens with q > 0 for the scheme: the validated route names the problem)."""
    if is_sparse(p) or is_sparse(q):
        return None
    pr, qr = raw_rows("p", p), raw_rows("q", q)
    check_pair_shapes(pr, qr)
    batched = pr.ndim == 2 or qr.ndim == 2
    pr, qr = raw_batch(pr, qr)
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

    alpha* is the highest acceptance rate any lossless verifier can reach (docs/theory.md §3):
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
        into one token that is never drafted (docs/theory.md §5.2).
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
