"""Lossless multi-draft verifiers: exact acceptance, simulation, and verification of given drafts.

A verifier takes n draft tokens, drawn by its draft scheme from the draft distribution q, and
outputs one token whose law is exactly the target p (docs/theory.md §8). Its acceptance rate is the
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
always a draft (docs/theory.md §5.2). "optimal" then reaches alpha* of the mixed scheme.

Randomness follows SPEC 7: ``rng`` is anything ``numpy.random.default_rng`` accepts. It is turned
into one 64-bit seed, and each block of 4,096 samples draws from its own counter-keyed stream, so a
seed gives the same result on any number of threads.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core
from ._validate import (
    SUM_TOL,
    as_array,
    check_bool,
    check_n,
    check_pair_shapes,
    check_support,
    check_threads,
    raise_row_error,
    raw_rows,
    scheme_family,
)
from .bound import DEFAULT_MAX_SETS, TooLargeError, solve_lp
from .limits import WOR_WORK_BUDGET
from .sparse import is_sparse, pair_rows, sparse_vocab

__all__ = [
    "Verifier",
    "Simulation",
    "verifiers",
    "acceptance",
    "simulate",
    "verify",
    "EXACT_BUDGET",
    "SIMULATE_BUDGET_BYTES",
    "MAX_SAMPLES",
    "WOR_WORK_BUDGET",
    "VerifierName",
    "route_report",
]

VerifierName = Literal["sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "optimal-lp", "optimal", "sweep"]

#: Work budget of an exact acceptance route, in elementary steps (about a second of C++). Only the
#: rrs-wor recursion can exceed it (its cost grows like K^(n-1) for K tokens with q > 0).
EXACT_BUDGET = 2e8

#: ``simulate`` refuses (TooLargeError, stating the size) before allocating outputs larger than
#: this many bytes: B * samples * (8 + 1 + 8 n) for tokens, accepted flags and drafts. The same
#: budget bounds ``acceptance(exact=False)``'s per-block counters, 8 bytes per 4,096 samples.
SIMULATE_BUDGET_BYTES = 8 * 2**30

#: Most samples per row that ``simulate`` and ``acceptance(exact=False)`` accept (the C++ core's
#: limit: block keys of 32 bits times 4,096-sample blocks).
MAX_SAMPLES = 2**44 - 1


class Simulation(NamedTuple):
    """Output of :func:`simulate`. Shapes are (samples,) and (samples, n), with a leading B for batches."""

    tokens: NDArray[np.int64]  #: the verifier's output token at each step
    accepted: NDArray[np.bool_]  #: whether that token is one of the step's drafts
    drafts: NDArray[np.int64]  #: the draft tuple of each step, in the order it was drawn


class Verifier:
    """A lossless verifier and the draft scheme it verifies (base class; see ``verifiers``).

    Attributes
    ----------
    name : registry name.
    scheme : draft scheme used when ``scheme=`` is not given ("iid", "wor", "greedy" or, for
        SpecHub, "spechub", its own pair law).
    schemes : the schemes it accepts.
    optimal_scheme : scheme of ``optimal_acceptance`` whose alpha* bounds this verifier.
    fixed_n : the only number of drafts it handles, or None.
    n_min, n_max : the number of drafts it handles.
    report_schemes : the schemes under which the gap report lists it.
    exact_route : how its exact acceptance is computed.
    source : the papers it comes from.

    Every attribute but ``source`` comes from the C++ core's verifier table
    (``_core.verifier_table()``), the one table the registry, this module and the report read.
    """

    name: str = ""
    scheme: str = "iid"
    schemes: tuple[str, ...] = ("iid",)
    optimal_scheme: str = "iid"
    fixed_n: int | None = None
    n_min: int = 1
    n_max: int = 1
    report_schemes: tuple[str, ...] = ()
    exact_route: str = ""
    source: str = ""

    def acceptance(self, p: ArrayLike, q: ArrayLike, n: int, **kwargs: Any) -> Any:
        """Same as ``mdsd_fast.acceptance(self.name, p, q, n, **kwargs)``."""
        return acceptance(self.name, p, q, n, **kwargs)  # type: ignore[arg-type]

    def simulate(self, p: ArrayLike, q: ArrayLike, n: int, samples: int, **kwargs: Any) -> Simulation:
        """Same as ``mdsd_fast.simulate(self.name, p, q, n, samples, **kwargs)``."""
        return simulate(self.name, p, q, n, samples, **kwargs)  # type: ignore[arg-type]

    def verify(self, p: ArrayLike, q: ArrayLike, drafts: ArrayLike, **kwargs: Any) -> Any:
        """Same as ``mdsd_fast.verify(self.name, p, q, drafts, **kwargs)``."""
        return verify(self.name, p, q, drafts, **kwargs)  # type: ignore[arg-type]

    def resolve_scheme(self, scheme: str | None) -> str:
        """``scheme`` (or the default) once this verifier serves it; mixed schemes by their family."""
        if scheme is None:
            return self.scheme
        if not isinstance(scheme, str) or scheme_family(scheme) not in self.schemes:
            allowed = ", ".join(map(repr, self.schemes))
            raise ValueError(f"scheme: verifier {self.name!r} verifies {allowed} drafts, got {scheme!r}")
        return scheme

    def bound_scheme(self, scheme: str | None = None) -> str:
        """The scheme of ``optimal_acceptance`` whose alpha* bounds this verifier under ``scheme``."""
        sch = self.resolve_scheme(scheme)
        return self.optimal_scheme if sch == self.scheme else sch

    def __repr__(self) -> str:
        return f"<verifier {self.name!r}: {self.scheme} drafts; {self.source}>"


class SpeculativeSampling(Verifier):
    """``sd``: single-draft speculative sampling (docs/theory.md §8.1).

    Scheme: one draft X ~ q (n = 1). Accept X with probability min(1, p(X)/q(X)); otherwise output
    Y ~ norm((p - q)_+). Acceptance sum_x min(p(x), q(x)) = 1 - TV(p, q), optimal for n = 1.

    Source: Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding"
    (ICML 2023); Chen et al., "Accelerating Large Language Model Decoding with Speculative
    Sampling" (2023).
    """

    name = "sd"
    source = "Leviathan et al. 2023; Chen et al. 2023"


class RecursiveRejection(Verifier):
    """``rrs``: recursive rejection sampling with replacement (docs/theory.md §8.2).

    Scheme: n i.i.d. drafts from q. With p_1 = p, for i = 1..n accept X_i with probability
    min(1, p_i(X_i)/q(X_i)), else move to p_{i+1} = norm((p_i - q)_+); if every draft is
    rejected, output Y ~ p_{n+1}. Exact acceptance 1 - prod_i (1 - beta_i), beta_i = sum min(p_i, q),
    in O(V log V). Weakness: a rejected token has p_{i+1} = 0, so its duplicates are rejected again.

    Source: SpecInfer's multi-step speculative sampling (Miao et al., ASPLOS 2024); MCSD
    (Yang et al. 2024).
    """

    name = "rrs"
    source = "SpecInfer (Miao et al. 2024); MCSD (Yang et al. 2024)"


class RecursiveRejectionWor(Verifier):
    """``rrs-wor``: recursive rejection sampling without replacement (docs/theory.md §8.3).

    Scheme: n drafts without replacement (sequential; the Gumbel-top-n law). As "rrs", with
    q_i = q renormalised over the tokens not drafted before step i and p_{i+1} = norm((p_i - q_i)_+).
    Exact acceptance by the recursion alpha_n = beta + sum_x (q(x) - p(x))_+ alpha_{n-1}(p', q_{-x}),
    whose cost is exponential in n: ``acceptance(..., exact=True)`` refuses (TooLargeError) when
    it would exceed ``EXACT_BUDGET``; use ``exact=False`` then.

    Source: MCSD (Yang et al. 2024); Recursive Speculative Decoding (Jeon et al. 2024); used by
    Sequoia and EAGLE-1.
    """

    name = "rrs-wor"
    source = "MCSD (Yang et al. 2024); RSD (Jeon et al. 2024); Sequoia; EAGLE-1"


class KSeq(Verifier):
    """``kseq``: K-SEQ of SpecTr with the optimal rho (docs/theory.md §8.4).

    Scheme: n i.i.d. drafts from q. With beta(rho) = sum_x min(q(x), p(x)/rho) and rho* the
    smallest rho in [1, n] with 1 - (1 - beta)^n <= rho beta, accept each X_i in turn with
    probability min(1, p(X_i)/(rho* q(X_i))); if all are rejected, output Y from
    p_res ∝ p - min(q, p/rho*) (1 - (1 - beta)^n)/beta. Acceptance 1 - (1 - beta(rho*))^n, at least
    (1 - 1/e) alpha*_iid.

    Source: Sun, Suresh, Ro, Beirami, Jain & Yu, "SpecTr: Fast Speculative Decoding via Optimal
    Transport" (NeurIPS 2023).
    """

    name = "kseq"
    source = "SpecTr (Sun et al. 2023)"

    def rho(self, p: ArrayLike, q: ArrayLike, n: int) -> Any:
        """rho* of each row: a float for 1-D input, an array of shape (B,) for (B, V) input."""
        batch, batched = _prepare(self.name, p, q, n, None, None)
        rho = batch.rho()
        return rho if batched else float(rho[0])


class SpecHub(Verifier):
    """``spechub``: SpecHub's verifier for its sparse pair law, n = 2 (docs/theory.md §8.5).

    Scheme "spechub": the hub a = argmax q (lowest id on ties) is always drafted. The pair is
    (i, a) with probability q(i), or (a, i) with probability q(a) q(i)/(1 - q(a)), i != a; its set
    law equals the greedy scheme's for n = 2. Each pair type tests its non-hub token, then the hub
    against the rejected mass of the other pair type, then samples the common residual p''.
    Acceptance p(a) + sum_{i != a} min(p(i), q(i)/(1 - q(a))) = alpha*_greedy (n = 2): optimal.

    Source: Sun, Zhou, Chen & Sun, "SpecHub: Provable Acceleration to Multi-Draft Speculative
    Decoding" (EMNLP 2024).
    """

    name = "spechub"
    source = "SpecHub (Sun et al. 2024)"


class GreedyOptimal(Verifier):
    r"""``greedy``: the optimal verifier for greedy drafts (docs/theory.md §5, §8.6).

    Scheme "greedy": T = the n-1 most probable tokens of q (ties: lower id) plus one draft
    X ~ q~ = q renormalised over V \ T. Accept X with probability min(1, p(X)/q~(X)); otherwise
    output Y ~ r, r ∝ p on T and (p - q~)_+ off T (an output in T is a draft). Acceptance
    p(T) + sum_{x not in T} min(p(x), q~(x)) = alpha*_greedy, in O(V) with no solver.

    Source: Hu et al., "Towards Optimal Multi-draft Speculative Decoding" (ICLR 2025).
    """

    name = "greedy"
    source = "Hu et al. 2025"


class DeterministicSet(Verifier):
    r"""``topk``: the deterministic-set rule for "topk" drafts (docs/theory.md §5.2).

    Scheme "topk": the drafts are T = the n most probable tokens of q (ties: lower id), with no
    randomness. The output is drawn from p itself (the tuple's tokens tested in order, each with
    its share of the mass not yet ruled out, then p restricted to V \ T), and it is accepted when
    it lands in T. Acceptance p(T) = alpha*_topk: no lossless verifier does better, since every
    accepted output is in T. SGLang's tree sampler with threshold_single = threshold_acc = 1 is this
    rule with one coin per node (EAGLE-2/3 and SGLang draft the top tokens of q).

    Source: SGLang's tree speculative sampling (threshold_single = threshold_acc = 1); the
    deterministic-draft bound of Hu et al. 2025.
    """

    name = "topk"
    source = "deterministic-set rule (SGLang tree sampling, thresholds 1)"


class OptimalLP(Verifier):
    """``optimal-lp``: the OT-optimal verifier read off the flow LP (docs/theory.md §2.3, §8.8).

    Scheme: any of "iid" (default), "wor", "greedy", "topk" or a mixed scheme (``scheme=``). ``solve_lp`` gives the optimal
    accepted flow x(A, y) of every draft set A; a tuple maps to A = S(tuple) ∩ supp p and outputs
    y in A with probability x(A, y)/Pr[S = A], otherwise Y ~ r = (p - a)/(1 - alpha*) with
    a(y) = sum_A x(A, y). Acceptance alpha* of the scheme. One LP solve per position, so small
    vocabularies only: the set enumeration is refused (TooLargeError) beyond ``DEFAULT_MAX_SETS`` sets.

    Source: the optimal-transport formulation of SpecTr (Sun et al. 2023) and Hu et al. 2025.
    """

    name = "optimal-lp"
    source = "OT plan of the flow LP (SpecTr's OTM; Hu et al. 2025)"


class Optimal(Verifier):
    """``optimal``: an optimal verifier without a solver (docs/theory.md §8.10, §12, §13, §15).

    Scheme: "iid" (default, ``scheme=``) at full vocabulary, or "wor". The certificate H* of
    ``optimal_acceptance`` splits the plan (complementary slackness): a tuple with a draft outside H*
    outputs one of those drafts; a tuple inside H* outputs one of its drafts or rejects to the
    residual r ∝ p - a.

    - "iid": the level race (docs/theory.md §12). Every draft gets an independent random level and
      the highest level wins; each token's level pieces are placed once per position (O(V log V))
      so that token y wins with mass p(y) on H* and at most p(y) outside. Acceptance alpha*_iid.
      Verification of a tuple: O(n log pieces). ``verify`` with one tuple per row of a (B, V)
      batch places no plan: it cuts only the drafts' windows, each from the levels the tokens
      before it leave (docs/theory.md §12.6), with the plan's law given the tuple and, for a seed,
      the plan's outputs.
    - "wor": a random-utility race of chunks (docs/theory.md §13): each token's level mass is laid
      top down in chunks, a drafted token draws one of its chunks and the earliest chunk wins.
      On supports small enough to enumerate (at most 12 tokens on each side of H*) the tight-set
      sweep lays them exactly: acceptance alpha*_wor. Larger rows take the full-vocabulary route
      (docs/theory.md §15), which climbs a ladder of orders of the same race within a work budget
      per row (``work_budget=``, default ``WOR_WORK_BUDGET``); its plan's acceptance is checked
      against alpha*_wor, and a row that falls short by more than 1e-9 raises ValueError saying
      which order got closest and whether the budget ran out (``sweep`` keeps such plans). The
      share certified at each budget, on shipped and held-out rows: bench/README.md.

    The reported acceptance is the plan's accepted mass from the pieces/chunks actually built.

    Source: this package (cpp/include/mdsd/verifiers/optimal_iid.hpp, optimal_wor/); the split is
    Global Resolution's (Thomas & Pal).
    """

    name = "optimal"
    source = "certificate split (Thomas & Pal) + level race (this package)"


class TightSetSweep(Verifier):
    """``sweep``: the without-replacement plan of ``optimal``, kept where it falls short.

    Scheme: n drafts without replacement ("wor", the Gumbel-top-n law). The same plan as
    ``optimal`` with ``scheme="wor"`` under the keep policy: ``optimal`` refuses a
    full-vocabulary row whose plan is not certified to reach alpha*_wor; ``sweep`` keeps that
    plan. It is lossless on every row, its exact acceptance is the plan's accepted mass (at most
    alpha*_wor, equal to it on every certified row), and its cost is bounded by the work budget
    (``work_budget=``): the way to run the construction over a whole dataset (the report's wor
    column). ``route_report("sweep", p, q, n)`` says per row what the route did. Verification of a
    tuple: O(n log chunks).

    Source: this package (cpp/include/mdsd/verifiers/optimal_wor/).
    """

    name = "sweep"
    source = "tight-set sweep (this package)"


def _from_table(v: Verifier, row: Mapping[str, Any]) -> Verifier:
    """The facts of a verifier from its row of the C++ verifier table."""
    v.schemes = tuple(str(row["schemes"]).split(","))
    v.scheme = v.schemes[0]
    v.optimal_scheme = str(row["bound"])
    v.n_min, v.n_max = int(row["n_min"]), int(row["n_max"])
    v.fixed_n = v.n_min if v.n_min == v.n_max else None
    v.report_schemes = tuple(str(row["report"]).split(","))
    v.exact_route = str(row["exact"])
    return v


def _make_registry() -> Mapping[str, Verifier]:
    table = {str(row["name"]): row for row in _core.verifier_table()}
    items: list[Verifier] = [
        SpeculativeSampling(),
        RecursiveRejection(),
        RecursiveRejectionWor(),
        KSeq(),
        SpecHub(),
        GreedyOptimal(),
        DeterministicSet(),
        OptimalLP(),
        Optimal(),
        TightSetSweep(),
    ]
    if sorted(table) != sorted(v.name for v in items):
        raise ImportError(f"mdsd_fast: the verifier table ({sorted(table)}) and verifiers.py disagree")
    return MappingProxyType({v.name: _from_table(v, table[v.name]) for v in items})


#: Registry: verifier name -> :class:`Verifier` (read-only).
verifiers: Mapping[str, Verifier] = _make_registry()


def _lookup(name: Any) -> Verifier:
    if not isinstance(name, str) or name not in verifiers:
        raise ValueError(f"name: expected one of {', '.join(map(repr, verifiers))}, got {name!r}")
    return verifiers[name]


def _seed(rng: Any) -> int:
    """One 64-bit seed from anything numpy.random.default_rng accepts (SPEC 7)."""
    try:
        gen = np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"rng: expected anything numpy.random.default_rng accepts, got {rng!r} ({exc})") from None
    return int(gen.integers(0, 2**64, dtype=np.uint64))


def _threads(threads: Any) -> int:
    return check_threads(threads)


def _samples(samples: Any, *, minimum: int) -> int:
    if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, numbers.Integral):
        raise TypeError(f"samples: expected an integer, got {type(samples).__name__}")
    count = int(samples)
    if count < minimum:
        raise ValueError(f"samples: expected an integer >= {minimum}, got {samples}")
    if count > MAX_SAMPLES:
        raise ValueError(f"samples: {samples} samples per row is more than the supported {MAX_SAMPLES}")
    return count


def _row_ids(row_ids: Any, count: int) -> NDArray[np.int64] | None:
    """Stable per-row stream keys: ``count`` distinct-or-not integers in [0, 2^31), or None."""
    if row_ids is None:
        return None
    ids = as_array("row_ids", row_ids)
    if ids.dtype == np.bool_ or ids.dtype.kind not in "iu":
        raise TypeError(f"row_ids: expected integer ids, got dtype {ids.dtype}")
    if ids.shape != (count,):
        raise ValueError(f"row_ids: expected shape ({count},) (one id per row), got {ids.shape}")
    if count and (ids.min() < 0 or ids.max() >= 2**31):
        raise ValueError("row_ids: ids must be in [0, 2^31)")
    return np.ascontiguousarray(ids, dtype=np.int64)


def _work_budget(work_budget: Any) -> float:
    if work_budget is None:
        return WOR_WORK_BUDGET
    if isinstance(work_budget, (bool, np.bool_)) or not isinstance(work_budget, numbers.Real):
        raise TypeError(f"work_budget: expected a positive number of grid operations, got {type(work_budget).__name__}")
    b = float(work_budget)
    if not (b > 0.0 and np.isfinite(b)):
        raise ValueError(f"work_budget: expected a positive finite number of grid operations, got {work_budget!r}")
    return b


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
    v = _lookup(name)
    sch = v.resolve_scheme(scheme)
    n = check_n(n)
    if v.fixed_n is not None and n != v.fixed_n:
        raise ValueError(f"n: verifier {v.name!r} handles n = {v.fixed_n} drafts only, got n = {n}")
    if not v.n_min <= n <= v.n_max:
        raise ValueError(f"n: verifier {v.name!r} handles {v.n_min} <= n <= {v.n_max} drafts, got n = {n}")
    p2, q2, batched, ids = pair_rows(p, q, threads=_threads(threads))
    return _prepare_rows(v, sch, n, p2, q2, threads, work_budget), batched, ids


def _prepare_rows(
    v: Verifier, sch: str, n: int, p2: NDArray[np.float64], q2: NDArray[np.float64], threads: Any, work_budget: Any
) -> Any:
    """The C++ verifier for every row of validated (B, V) arrays (as_pair's output)."""
    B = p2.shape[0]
    check_support("q", q2, n, "greedy" if sch == "spechub" else sch)
    lp = None
    if v.name == "optimal-lp":
        lp = []
        for r in range(B):
            try:
                res = solve_lp(p2[r], q2[r], n, sch, max_sets=DEFAULT_MAX_SETS)
            except TooLargeError as exc:
                raise TooLargeError(f"optimal-lp needs the flow LP of every position: {exc}") from None
            lp.append((res.set_ptr, res.set_tokens, res.flows, res.set_weights))
    budget = _work_budget(work_budget)
    return _core.VerifierBatch(v.name, p2, q2, n, sch, lp, _threads(threads), budget)


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
    v = _lookup(name)
    batch = _prepare_rows(v, v.resolve_scheme(scheme), check_n(n), p2, q2, threads, work_budget)
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
        ``WOR_WORK_BUDGET``; bench/README.md says what it is in seconds). When it runs out the
        best plan so far is kept ("sweep") or the row refused if it is not certified ("optimal").
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

    Returns
    -------
    Simulation(tokens, accepted, drafts): int64 (samples,), bool (samples,), int64 (samples, n);
    each with a leading batch axis B for (B, V) input.
    """
    samples = _samples(samples, minimum=0)
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


def _drafts(drafts: ArrayLike) -> NDArray[Any]:
    """Type and shape of the draft tuples (no copy: their range is checked before conversion)."""
    d = as_array("drafts", drafts)
    if d.dtype == np.bool_ or d.dtype.kind not in "iu":
        raise TypeError(f"drafts: expected integer token ids, got dtype {d.dtype}")
    if d.ndim not in (1, 2) or d.shape[-1] == 0:
        raise ValueError(f"drafts: expected shape (n,) or (B, n) with n >= 1, got {d.shape}")
    return d


#: Verifiers whose one-tuple-per-row case runs without a plan (cpp/include/mdsd/verifiers/direct*.hpp;
#: "optimal" with its default i.i.d. scheme: shadow_verify.hpp, docs/theory.md §12.6).
_DIRECT = ("sd", "rrs", "rrs-wor", "kseq", "optimal")


def _verify_direct(
    name: Any,
    p: Any,
    q: Any,
    d: NDArray[Any],
    rng: Any,
    scheme: str | None,
    threads: Any,
    row_ids: Any,
    work_budget: Any = None,
) -> Any:
    """The engine case, one tuple per row of dense (B, V) p, q, for "sd", "rrs", "rrs-wor", "kseq"
    and "optimal" with i.i.d. drafts: no plan, and no validated copy of p and q either (the C++
    kernel validates and normalises each row in its own pass, float32 kept float32 until then).
    "optimal" cuts only the drafts' level windows, each from the levels left before it, with the
    plan's law given each tuple and the plan's draws for a seed. None where it does not apply."""
    if not isinstance(name, str) or name not in _DIRECT or is_sparse(p) or is_sparse(q) or d.ndim != 2:
        return None
    v = _lookup(name)
    if scheme is not None and v.resolve_scheme(scheme) != v.scheme:
        return None
    _work_budget(work_budget)  # unused by these routes, but named when wrong, as on the planned route
    pr, qr = raw_rows("p", p), raw_rows("q", q)
    check_pair_shapes(pr, qr)
    if pr.ndim == 1 and qr.ndim == 1:
        return None  # one pair, many tuples: the prepared plan serves them all
    B, V = (pr if pr.ndim == 2 else qr).shape
    if d.shape[0] != B:
        return None  # the planned route says what is wrong
    if d.size and (d.min() < 0 or d.max() >= V):
        bad = int(d[(d < 0) | (d >= V)].flat[0])  # read in the input dtype: no int64 wrap-around
        raise ValueError(f"drafts: token id {bad} outside [0, {V})")
    n = check_n(d.shape[1])
    if not v.n_min <= n <= v.n_max:
        if v.fixed_n is not None:
            raise ValueError(f"n: verifier {v.name!r} handles n = {v.fixed_n} drafts only, got n = {n}")
        raise ValueError(f"n: verifier {v.name!r} handles {v.n_min} <= n <= {v.n_max} drafts, got n = {n}")
    if pr.dtype != qr.dtype:  # one float width for the kernel; widening is exact
        pr, qr = pr.astype(np.float64), qr.astype(np.float64)
    pr, qr = (np.ascontiguousarray(np.broadcast_to(x, (B, V))) for x in (pr, qr))
    d64 = np.ascontiguousarray(d, dtype=np.int64)
    ids = _row_ids(row_ids, B)
    tokens, accepted, err = _core.verify_direct(name, pr, qr, d64, _seed(rng), _threads(threads), ids, SUM_TOL)
    if err is not None:
        status, side, r, value = err
        raise_row_error("pq"[side], status, r, value, (pr, qr)[side])
    return tokens, accepted


def _to_columns(d2: NDArray[np.int64], col_ids: NDArray[np.int64], rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """Draft ids as columns of each row's union support; a draft outside it has q = 0."""
    out = np.empty_like(d2)
    for k in range(d2.shape[1]):
        ids_r = col_ids[rows]
        pos = np.argmax(ids_r == d2[:, k : k + 1], axis=1)
        found = ids_r[np.arange(d2.shape[0]), pos] == d2[:, k]
        if not found.all():
            bad = int(d2[np.argmin(found), k])
            raise ValueError(f"drafts: token {bad} has q = 0, so it cannot have been drafted from q")
        out[:, k] = pos
    return out


def verify(
    name: VerifierName,
    p: ArrayLike,
    q: ArrayLike,
    drafts: ArrayLike,
    *,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """Verify draft tuples drawn by the caller: the output token and whether it is a draft.

    Parameters
    ----------
    p, q : (V,) or (B, V) target and draft distributions.
    drafts : int token ids, (n,) for one tuple, or (B, n): one tuple per row of p, q (or B tuples
        for a single (V,) pair). Each tuple must be possible under the verifier's scheme (ids in
        [0, V), q > 0, distinct for "wor", containing the top n-1 of q for "greedy", the hub for
        "spechub"); otherwise ValueError.
    rng, scheme, threads, work_budget : as in :func:`acceptance`.
    row_ids : a stable integer id per tuple (B,): tuple i's random stream is keyed by row_ids[i]
        instead of its position i, so results do not depend on batching or order.

    Returns
    -------
    (token, accepted): (int, bool) for one tuple, arrays of shape (B,) otherwise.
    """
    d = _drafts(drafts)
    direct = _verify_direct(name, p, q, d, rng, scheme, threads, row_ids, work_budget)
    if direct is not None:
        return direct
    return _verify_planned(
        name, p, q, d, rng=rng, scheme=scheme, threads=threads, work_budget=work_budget, row_ids=row_ids
    )


def _verify_planned(
    name: Any,
    p: ArrayLike,
    q: ArrayLike,
    d: NDArray[Any],
    *,
    rng: Any = None,
    scheme: str | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    row_ids: ArrayLike | None = None,
) -> Any:
    """:func:`verify` through a prepared plan per row, every case included: the route the direct
    ones are tested against (their reference, kept reachable), and the route of every case they
    do not serve. ``d``: the output of ``_drafts``."""
    batch, batched, col_ids = _prepare_ids(name, p, q, d.shape[-1], scheme, threads, work_budget)
    V = batch.V if col_ids is None else sparse_vocab(p, q)
    if d.size and (d.min() < 0 or d.max() >= V):
        bad = int(d[(d < 0) | (d >= V)].flat[0])  # read in the input dtype: no int64 wrap-around
        raise ValueError(f"drafts: token id {bad} outside [0, {V})")
    d = np.ascontiguousarray(d, dtype=np.int64)
    d2 = d if d.ndim == 2 else d[None, :]
    if batched and d2.shape[0] != batch.B:
        raise ValueError(f"drafts: expected {batch.B} tuples (one per row of p, q), got {d2.shape[0]}")
    rows = np.arange(d2.shape[0]) if batch.B != 1 else np.zeros(d2.shape[0], dtype=np.int64)
    if col_ids is not None:  # sparse input: vocabulary ids to the columns of each row's support
        d2 = _to_columns(d2, col_ids, rows)
    tokens, accepted = batch.verify(d2, _seed(rng), _threads(threads), _row_ids(row_ids, d2.shape[0]))
    if col_ids is not None:
        tokens = col_ids[rows, tokens]
    if d.ndim == 1 and not batched:
        return int(tokens[0]), bool(accepted[0])
    return tokens, accepted


def route_report(
    name: Literal["optimal", "sweep"],
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    *,
    threads: int | None = None,
    work_budget: float | None = None,
) -> dict[str, Any]:
    """What the without-replacement route of "optimal" / "sweep" does with each row.

    Prepares the verifier with scheme "wor" and returns a dict of arrays (shape (B,), or scalars
    for 1-D input): ``work`` (grid operations spent), ``out_of_budget`` (the budget was spent, or
    too small for the next order or run, which is then not started), ``best_order`` (the inner
    order whose plan was kept; ``best_order_name`` spells it), ``orders_run``, ``alpha_star``,
    ``alpha_plan`` (the plan's exact acceptance) and ``gap`` = alpha_star - alpha_plan. With
    "optimal" a row that is not certified raises ValueError instead, saying the same.
    """
    if name not in ("optimal", "sweep"):
        raise ValueError(f"name: route_report describes 'optimal' or 'sweep', got {name!r}")
    batch, batched = _prepare(name, p, q, n, "wor", threads, work_budget)
    out: dict[str, Any] = dict(batch.route())
    out["gap"] = np.asarray(out["alpha_star"]) - np.asarray(out["alpha_plan"])
    if not batched:
        out = {k: (v[0] if isinstance(v, list) else np.asarray(v)[0].item()) for k, v in out.items()}
    return out
