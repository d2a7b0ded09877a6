"""Lossless multi-draft verifiers: exact acceptance, simulation, and verification of given drafts.

A verifier takes n draft tokens, drawn by its draft scheme from the draft distribution q, and
outputs one token whose law is exactly the target p (docs/theory/verifiers.md §8). Its acceptance rate is the
probability that the output is one of the drafts. Every verifier runs in the C++ core; this module
validates input, dispatches and formats.

========== ============================================= ==========================================
name       drafts it verifies                            source
========== ============================================= ==========================================
sd         1 draft from q                                Leviathan et al. 2023; Chen et al. 2023
rrs        n i.i.d. drafts                               SpecInfer (Miao et al. 2024); MCSD (Yang et al. 2024)
rrs-wor    n drafts without replacement                  MCSD; RSD (Jeon et al. 2024); Sequoia; EAGLE-1
kseq       n i.i.d. drafts                               SpecTr K-SEQ, optimal rho (Sun et al. 2023)
spechub    SpecHub's sparse pair law, n = 2              SpecHub (Sun et al. 2024)
greedy     top n-1 of q plus one draw                    optimal for greedy drafts (Hu et al. 2025)
topk       the top n of q, deterministic                 deterministic-set rule (SGLang, EAGLE-2/3 trees)
optimal-lp any scheme but "spechub" (scheme=)            OT-optimal plan of ``solve_lp``
optimal    "iid", "wor" or mixed (scheme=)               certificate split + level race / tight-set sweep
sweep      n drafts without replacement                  "optimal"'s wor construction, never refused
========== ============================================= ==========================================

Mixed schemes "top<m>+iid" and "top<m>+wor" (the top m tokens of q, deterministic, plus n - m
drafts from q renormalised over the rest, i.i.d. or without replacement) are verified by rrs, kseq
and optimal ("+iid"), rrs-wor, sweep and optimal ("+wor"), and optimal-lp: the verifier runs on the
random drafts against the split pair (the top m tokens collapsed into one token that is never
drafted), and an output of that token becomes a draw from p restricted to the top m, which is
always a draft (docs/theory/greedy.md §5.2). "optimal" then reaches alpha* of the mixed scheme.

Randomness follows SPEC 7: ``rng`` is anything ``numpy.random.default_rng`` accepts. It is turned
into one 64-bit seed, and each block of 4,096 samples draws from its own counter-keyed stream, so a
seed gives the same result on any number of threads.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _core
from ..inputs.args import MAX_SAMPLES, TooLargeError, _row_ids, _samples, _seed, _threads, _work_budget
from ..inputs.kinds import is_sparse
from ..inputs.pairs import pair_rows, raw_pair
from ..inputs.rules import SUM_TOL, check_bool, check_n, check_support, mixed_parts, raise_row_error
from ..limits import WOR_WORK_BUDGET
from .direct import one_step
from .table import VerifierFacts, lookup

__all__ = [
    "Simulation",
    "acceptance",
    "simulate",
    "EXACT_BUDGET",
    "SIMULATE_BUDGET_BYTES",
    "MAX_SAMPLES",
    "WOR_WORK_BUDGET",
    "VerifierName",
]

VerifierName = Literal["sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "optimal-lp", "optimal", "sweep"]

#: Work budget of an exact acceptance route, in elementary steps (about a second of C++). Only the
#: rrs-wor recursion can exceed it (its cost grows like K^(n-1) for K tokens with q > 0).
EXACT_BUDGET = 2e8

#: ``simulate`` refuses (TooLargeError, stating the size) before allocating outputs larger than
#: this many bytes: B * samples * (8 + 1 + 8 n) for tokens, accepted flags and drafts. The same
#: budget bounds ``acceptance(exact=False)``'s per-block counters, 8 bytes per 4,096 samples.
SIMULATE_BUDGET_BYTES = 8 * 2**30


class Simulation(NamedTuple):
    """Output of :func:`simulate`. Shapes are (samples,) and (samples, n), with a leading B for batches."""

    tokens: NDArray[np.int64]  #: the verifier's output token at each step
    accepted: NDArray[np.bool_]  #: whether that token is one of the step's drafts
    drafts: NDArray[np.int64]  #: the draft tuple of each step, in the order it was drawn


def _prepare(
    name: Any,
    p: ArrayLike,
    q: ArrayLike,
    n: Any,
    scheme: str | None,
    threads: Any,
    work_budget: Any = None,
) -> tuple[Any, bool]:
    """Validate, broadcast (B, V), and prepare the C++ verifier for every row."""
    batch, batched, _ = _prepare_ids(name, p, q, n, scheme, threads, work_budget)
    return batch, batched


def _prepare_ids(
    name: Any,
    p: ArrayLike,
    q: ArrayLike,
    n: Any,
    scheme: str | None,
    threads: Any,
    work_budget: Any = None,
) -> tuple[Any, bool, NDArray[np.int64] | None]:
    """As :func:`_prepare`, plus the vocabulary id of each column for sparse input (mdsd_fast.sparse:
    the rows run on their union support), None for dense input."""
    v = lookup(name)
    sch = v.resolve_scheme(scheme)
    n = v.check_n(check_n(n))
    p2, q2, batched, ids = pair_rows(p, q, threads=_threads(threads))
    return _prepare_rows(v, sch, n, p2, q2, threads, work_budget), batched, ids


def _prepare_rows(
    v: VerifierFacts, sch: str, n: int, p2: NDArray[np.float64], q2: NDArray[np.float64], threads: Any, work_budget: Any
) -> Any:
    """The C++ verifier for every row of validated (B, V) arrays (as_pair's output)."""
    B = p2.shape[0]
    check_support("q", q2, n, "greedy" if sch == "spechub" else sch)
    lp = None
    if v.name == "optimal-lp":
        from ..bound.lp import DEFAULT_MAX_SETS, solve_lp  # HiGHS's LP loads on first use

        lp = []
        for r in range(B):
            try:
                res = solve_lp(p2[r], q2[r], n, sch, max_sets=DEFAULT_MAX_SETS)
            except TooLargeError as exc:
                raise TooLargeError(f"optimal-lp needs the flow LP of every position: {exc}") from None
            lp.append((res.set_ptr, res.set_tokens, res.flows, res.set_weights))
    budget = _work_budget(work_budget)
    return _core.verifiers.VerifierBatch(v.name, p2, q2, n, sch, lp, _threads(threads), budget)


#: Verifiers whose exact acceptance is a closed form or a per-row formula: computed in one
#: validated pass over each row (cpp/include/mdsd/verifiers/planless/exact.hpp), never from a plan.
CLOSED_FORMS = ("sd", "rrs", "kseq", "greedy", "topk", "spechub")
#: The closed forms that run the plans' own sums in the plans' own order: the plans' bits, on full
#: rows and on rows on their union support alike (zeros add nothing to a sum in token order). The
#: gap report's exact columns take these; rrs and kseq, whose closed forms sum in lanes (within
#: ~2e-13 of the plans), keep the plans there, so a log's report equals the dense report bit for bit.
PLAN_BITS = ("sd", "greedy", "topk", "spechub")


#: Verifiers whose exact acceptance under some schemes needs no plan beyond the closed forms
#: (cpp/include/mdsd/verifiers/planless/lifted.hpp): "rrs-wor" under "wor" and "top<m>+wor" (its
#: recursion on a ratio table of the row: the plans' bits), and the mixed lifts of "rrs" and "kseq"
#: under "top<m>+iid" (p(T) plus their closed form on the split pair: within the closed forms'
#: rounding of the plans). "rrs-wor" with n = 1 is "sd", whose closed form answers the public call.
LIFTED = ("rrs-wor", "rrs", "kseq")
#: Every verifier with a plan-free exact route under some scheme.
PLANLESS = CLOSED_FORMS + ("rrs-wor",)


def _route(v: VerifierFacts, sch: str, n: int, plan_bits: bool) -> tuple[bool, str] | None:
    """(lifted, kernel name) of the plan-free route of verifier ``v`` under scheme ``sch`` (resolved)
    with ``n`` drafts, or None where a plan must answer; ``plan_bits``: only routes with the plans' bits."""
    mp = mixed_parts(sch)
    if mp is not None and mp[0] >= n:
        return None  # the plan route names the scheme's error
    if v.name == "rrs-wor":
        return (False, "sd") if n == 1 and mp is None and not plan_bits else (True, v.name)
    if mp is not None:
        return (True, v.name) if v.name in LIFTED and not plan_bits else None
    if v.name in CLOSED_FORMS and sch == v.scheme and (v.name in PLAN_BITS or not plan_bits):
        return (False, v.name)
    return None


def _sparse(x: Any) -> bool:
    return type(x) is not np.ndarray and is_sparse(x)


#: Most bytes the closed forms of sparse rows may hold per thread: each row is scattered back into
#: a dense row of the vocabulary (so that it gives the dense rows' bits); above this, a plan.
SCATTER_BYTES = 2**28


def _closed(
    v: VerifierFacts,
    scheme: str | None,
    p: Any,
    q: Any,
    n: int,
    threads: Any,
    prepared: bool,
    ids: NDArray[np.int64] | None = None,
    vocab: int = 0,
    plan_bits: bool = False,
) -> Any:
    """Exact acceptance without a plan (:func:`_route`): an array (B,) for (B, V) rows, or None where
    the plan route must answer (another verifier or scheme, or a q short of tokens for the scheme's
    deterministic or distinct drafts, which that route names). ``ids``: the vocabulary id of each
    column of rows on their union support (sparse input), ``vocab`` their V. ``plan_bits``: only
    the routes that give the plans' bits (the gap report's exact columns)."""
    sch = v.resolve_scheme(scheme)
    route = _route(v, sch, n, plan_bits)
    if route is None:
        return None
    lifted, name = route
    if lifted and v.name == "rrs-wor":
        ids = None  # on the rows as given (union support), as its plans run: their bits and budget
    if ids is not None and 16 * vocab > SCATTER_BYTES:
        return None
    if lifted:
        out, err = _core.verifiers.exact_lifted(
            name, p, q, n, sch, SUM_TOL, _threads(threads), prepared, ids, vocab, EXACT_BUDGET
        )
    else:
        out, err = _core.verifiers.exact_closed(name, p, q, n, SUM_TOL, _threads(threads), prepared, ids, vocab)
    if err is None:
        return out
    if err[0] == 0:
        _, status, side, r, value = err
        raise_row_error("pq"[side], status, r, value, (p, q)[side])
    return None


def _acceptance_rows(
    name: str,
    p2: NDArray[np.float64],
    q2: NDArray[np.float64],
    n: int,
    *,
    exact: bool,
    samples: int = 100_000,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """:func:`acceptance` on validated (B, V) arrays (``as_pair``'s output), for callers that
    evaluate many verifiers on the same rows (the gap report): arrays of shape (B,)."""
    v = lookup(name)
    n = check_n(n)
    if exact and (v.name in PLAN_BITS or v.name == "rrs-wor"):
        out = _closed(v, scheme, p2, q2, v.check_n(n), threads, True, plan_bits=True)
        if out is not None:
            return out
    batch = _prepare_rows(v, v.resolve_scheme(scheme), n, p2, q2, threads, work_budget)
    if exact:
        return batch.exact(EXACT_BUDGET, _threads(threads))
    ids = _row_ids(row_ids, batch.B)
    return batch.estimate(_samples(samples, minimum=1), _seed(rng), _threads(threads), ids)


def acceptance(
    name: VerifierName,
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    *,
    exact: bool = True,
    samples: int = 100_000,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """Acceptance rate of a verifier: Pr[its output is one of the drafts].

    Parameters
    ----------
    name : a key of ``verifiers``.
    p, q : target and draft distributions, (V,) or (B, V), float32/float64 (computed in float64;
        rows within 1e-4 of summing to 1 are renormalised). A single row broadcasts over a batch.
    n : number of drafts.
    exact : True (default): the exact value by closed form, recursion or the verifier's own flow
        accounting; raises ``TooLargeError`` (a ValueError) when the exact route would cost more
        than ``EXACT_BUDGET`` (rrs-wor) or the LP more than ``DEFAULT_MAX_SETS`` draft sets
        (optimal-lp). False: estimate from ``samples`` simulated steps per row.
    samples, rng : simulation size and randomness for ``exact=False``.
    scheme : draft scheme, for "optimal-lp" ("iid", the default, "wor" or "greedy"); other
        verifiers accept only their own.
    threads : threads (default: all cores); results do not depend on it.
    work_budget : "optimal" and "sweep" with scheme "wor" at full vocabulary: the work per row
        their route may spend looking for a plan at alpha*_wor, in grid operations (default
        ``WOR_WORK_BUDGET`` for "sweep", ``limits.WOR_OPTIMAL_WORK_BUDGET`` for "optimal";
        bench/README.md says what they are in seconds). When it runs out the best plan so far is
        kept ("sweep") or the row refused if it is not certified ("optimal").
        Results depend on it, never on the machine or the thread count.
    row_ids : for ``exact=False``: a stable integer id per row (B,), in [0, 2^31). Row r's random
        stream is keyed by (rng's seed, row_ids[r]) instead of its position r in the batch, so the
        same row gives the same estimate in any batch, chunk or order.

    Returns
    -------
    exact=True: a float (1-D input) or an array (B,). exact=False: (estimate, standard error),
    floats or arrays.
    """
    exact = check_bool("exact", exact)
    if not exact:
        samples = _samples(samples, minimum=1)
    elif isinstance(name, str) and name in PLANLESS and (_sparse(p) or _sparse(q)):
        v = lookup(name)  # sparse rows: on their union support, with the dense rows' bits
        nn = v.check_n(check_n(n))
        _work_budget(work_budget)
        p2, q2, batched, col_ids = pair_rows(p, q, threads=_threads(threads))
        from ..inputs.sparse import sparse_vocab  # loaded by pair_rows' sparse route already

        out = _closed(v, scheme, p2, q2, nn, threads, True, col_ids, sparse_vocab(p, q))
        if out is not None:
            return out if batched else float(out[0])
    elif isinstance(name, str) and name in PLANLESS:
        # The closed forms and lifts: one validated pass over the raw rows, no copy and no plan.
        v = lookup(name)
        nn = v.check_n(check_n(n))
        _work_budget(work_budget)  # unused here, but named when wrong, as on the plan route
        pr, qr, batched = raw_pair(p, q)
        out = _closed(v, scheme, pr, qr, nn, threads, False)
        if out is not None:
            return out if batched else float(out[0])
    batch, batched = _prepare(name, p, q, n, scheme, threads, work_budget)
    if not exact:
        need = batch.B * -(-samples // 4096) * 8
        if need > SIMULATE_BUDGET_BYTES:
            raise TooLargeError(
                f"acceptance: {batch.B} row(s) x {samples} samples needs {need / 2**30:.3g} GiB of per-block "
                f"counters, above SIMULATE_BUDGET_BYTES = {SIMULATE_BUDGET_BYTES / 2**30:g} GiB; use fewer samples"
            )
    if exact:
        out = batch.exact(EXACT_BUDGET, _threads(threads))
        return out if batched else float(out[0])
    rate, se = batch.estimate(samples, _seed(rng), _threads(threads), _row_ids(row_ids, batch.B))
    return (rate, se) if batched else (float(rate[0]), float(se[0]))


def simulate(
    name: VerifierName,
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    samples: int,
    *,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Simulation:
    """Draw drafts with the verifier's scheme and verify them, ``samples`` times per position.

    Drafting and verification both run in C++ (GIL released, blocks of samples split over
    threads). Same arguments as :func:`acceptance` (``work_budget`` and ``row_ids`` included).

    One step of one (V,) pair (``samples=1``, float rows, no ``row_ids``) of "sd", "rrs", "kseq" or
    "optimal" with i.i.d. drafts builds no plan: its drafts are drawn from q and verified by
    :func:`verify`'s plan-free route (the same law; for a seed, other draws than a plan's).

    Returns
    -------
    Simulation(tokens, accepted, drafts): int64 (samples,), bool (samples,), int64 (samples, n);
    each with a leading batch axis B for (B, V) input.
    """
    samples = _samples(samples, minimum=0)
    if samples == 1 and row_ids is None:  # one step of one pair: no plan (verify's plan-free route)
        step = one_step(name, p, q, n, rng, scheme, threads, work_budget)
        if step is not None:
            return Simulation(*step)
    batch, batched, col_ids = _prepare_ids(name, p, q, n, scheme, threads, work_budget)
    need = batch.B * samples * (17 + 8 * batch.n)
    if need > SIMULATE_BUDGET_BYTES:
        raise TooLargeError(
            f"simulate: {batch.B} row(s) x {samples} samples x n = {batch.n} needs {need / 2**30:.3g} GiB of output, "
            f"above SIMULATE_BUDGET_BYTES = {SIMULATE_BUDGET_BYTES / 2**30:g} GiB; simulate in chunks, or use "
            "acceptance(..., exact=False), which keeps no per-sample output"
        )
    ids = _row_ids(row_ids, batch.B)
    tokens, accepted, drafts = batch.simulate(samples, _seed(rng), _threads(threads), False, ids)
    if col_ids is not None:  # sparse input: columns back to vocabulary ids
        rows = np.arange(batch.B)
        tokens = col_ids[rows[:, None], tokens]
        drafts = col_ids[rows[:, None, None], drafts]
    if not batched:
        tokens, accepted, drafts = tokens[0], accepted[0], drafts[0]
    return Simulation(tokens, accepted, drafts)
