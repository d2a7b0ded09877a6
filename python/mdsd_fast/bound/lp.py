"""The flow LP over draft sets, solved by HiGHS: ``solve_lp`` and its certificate (docs/theory/lp.md §7).

This module owns the HiGHS objects (``_highs()``: one silent, reusable instance per thread); the small
LPs of the tree bound (:mod:`mdsd_fast.trees.bound`) and of the intervals' iid bracket
(:mod:`mdsd_fast.intervals.iid_max`) are built on it too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _core
from ..inputs.args import TooLargeError
from ..inputs.pairs import as_distribution, union_pair
from ..inputs.rules import (
    LP_SCHEMES,
    SCHEMES,
    as_array,
    check_n,
    check_scheme,
    check_support,
    mixed_parts,
)
from ..inputs.sparse import is_sparse, sparse_vocab

__all__ = ["solve_lp", "LPResult", "SolverError", "TooLargeError", "DEFAULT_MAX_SETS"]

#: Default budget for ``solve_lp``: at most this many draft sets (or enumerated tuples) are built.
#: A set costs about 40 bytes plus 40 bytes per token in the C++ model and HiGHS's copy, so the
#: default stays well under 1 GiB for n <= 8.
DEFAULT_MAX_SETS = 2_000_000


#: An LP whose flow value and cut value differ by more than this is refused.
LP_GAP_TOL = 1e-8


class SolverError(RuntimeError):
    """HiGHS did not return a certified optimum. ``status`` holds the HiGHS model status name."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LPResult:
    """Optimal solution of the flow LP over draft sets (docs/theory/lp.md §7.2).

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

    import highspy  # on first use: `import mdsd_fast` does not load HiGHS

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
        import highspy

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
