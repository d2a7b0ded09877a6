"""The verifier registry: one :class:`Verifier` per lossless verifier, its facts read from the C++
core's verifier table (:mod:`~mdsd_fast.verifiers.table`), its methods the functions that run it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from numpy.typing import ArrayLike

from .. import _core
from .given_drafts import verify
from .run import Simulation, _prepare, acceptance, simulate
from .table import FACTS, VerifierFacts, _from_table

__all__ = ["Simulation", "Verifier", "verifiers"]


class Verifier(VerifierFacts):
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
    (``_core.verifiers.table()``), the one table the registry, this module and the report read.
    """

    def acceptance(self, p: ArrayLike, q: ArrayLike, n: int, **kwargs: Any) -> Any:
        """Same as ``mdsd_fast.acceptance(self.name, p, q, n, **kwargs)``."""
        return acceptance(self.name, p, q, n, **kwargs)  # type: ignore[arg-type]

    def simulate(self, p: ArrayLike, q: ArrayLike, n: int, samples: int, **kwargs: Any) -> Simulation:
        """Same as ``mdsd_fast.simulate(self.name, p, q, n, samples, **kwargs)``."""
        return simulate(self.name, p, q, n, samples, **kwargs)  # type: ignore[arg-type]

    def verify(self, p: ArrayLike, q: ArrayLike, drafts: ArrayLike, **kwargs: Any) -> Any:
        """Same as ``mdsd_fast.verify(self.name, p, q, drafts, **kwargs)``."""

        return verify(self.name, p, q, drafts, **kwargs)  # type: ignore[arg-type]


class SpeculativeSampling(Verifier):
    """``sd``: single-draft speculative sampling (docs/theory/verifiers.md §8.1).

    Scheme: one draft X ~ q (n = 1). Accept X with probability min(1, p(X)/q(X)); otherwise output
    Y ~ norm((p - q)_+). Acceptance sum_x min(p(x), q(x)) = 1 - TV(p, q), optimal for n = 1.

    Source: Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding"
    (ICML 2023); Chen et al., "Accelerating Large Language Model Decoding with Speculative
    Sampling" (2023).
    """

    name = "sd"
    source = "Leviathan et al. 2023; Chen et al. 2023"


class RecursiveRejection(Verifier):
    """``rrs``: recursive rejection sampling with replacement (docs/theory/verifiers.md §8.2).

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
    """``rrs-wor``: recursive rejection sampling without replacement (docs/theory/verifiers.md §8.3).

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
    """``kseq``: K-SEQ of SpecTr with the optimal rho (docs/theory/verifiers.md §8.4).

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
    """``spechub``: SpecHub's verifier for its sparse pair law, n = 2 (docs/theory/verifiers.md §8.5).

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
    r"""``greedy``: the optimal verifier for greedy drafts (docs/theory/greedy.md §5, §8.6).

    Scheme "greedy": T = the n-1 most probable tokens of q (ties: lower id) plus one draft
    X ~ q~ = q renormalised over V \ T. Accept X with probability min(1, p(X)/q~(X)); otherwise
    output Y ~ r, r ∝ p on T and (p - q~)_+ off T (an output in T is a draft). Acceptance
    p(T) + sum_{x not in T} min(p(x), q~(x)) = alpha*_greedy, in O(V) with no solver.

    Source: Hu et al., "Towards Optimal Multi-draft Speculative Decoding" (ICLR 2025).
    """

    name = "greedy"
    source = "Hu et al. 2025"


class DeterministicSet(Verifier):
    r"""``topk``: the deterministic-set rule for "topk" drafts (docs/theory/greedy.md §5.2).

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
    """``optimal-lp``: the OT-optimal verifier read off the flow LP (docs/theory/transport.md §2.3, §8.8).

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
    """``optimal``: an optimal verifier without a solver (docs/theory/verifiers.md §8.10, §12, §13, §15).

    Scheme: "iid" (default, ``scheme=``) at full vocabulary, or "wor". The certificate H* of
    ``optimal_acceptance`` splits the plan (complementary slackness): a tuple with a draft outside H*
    outputs one of those drafts; a tuple inside H* outputs one of its drafts or rejects to the
    residual r ∝ p - a.

    - "iid": the level race (docs/theory/level_race.md §12). Every draft gets an independent random level and
      the highest level wins; each token's level pieces are placed once per position (O(V log V))
      so that token y wins with mass p(y) on H* and at most p(y) outside. Acceptance alpha*_iid.
      Verification of a tuple: O(n log pieces). ``verify`` with one tuple per row of a (B, V)
      batch places no plan: it cuts only the drafts' windows, each from the levels the tokens
      before it leave (docs/theory/level_race.md §12.6), with the plan's law given the tuple and, for a seed,
      the plan's outputs.
    - "wor": a random-utility race of chunks (docs/theory/tight_set_sweep.md §13): each token's level mass is laid
      top down in chunks, a drafted token draws one of its chunks and the earliest chunk wins.
      On supports small enough to enumerate (at most 12 tokens on each side of H*) the tight-set
      sweep lays them exactly: acceptance alpha*_wor. Larger rows take the full-vocabulary route
      (docs/theory/wor_route.md §15), which climbs a ladder of orders of the same race within a work budget
      per row (``work_budget=``, default ``limits.WOR_OPTIMAL_WORK_BUDGET``, 100x the bounded
      ``WOR_WORK_BUDGET`` of "sweep"); its plan's acceptance is checked
      against alpha*_wor, and a row that falls short by more than 1e-9 raises ValueError saying
      which order got closest and whether the budget ran out (``sweep`` keeps such plans). The
      share certified at each budget, on shipped and held-out rows: bench/README.md.

    The reported acceptance is the plan's accepted mass from the pieces/chunks actually built.

    Source: this package (cpp/include/mdsd/verifiers/optimal_iid/plan.hpp, optimal_wor/); the split is
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


def _make_registry() -> Mapping[str, Verifier]:
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
    if [v.name for v in items] != list(FACTS):
        raise ImportError(f"mdsd_fast: the verifier table ({list(FACTS)}) and the registry disagree")
    rows = {str(row["name"]): row for row in _core.verifiers.table()}
    return MappingProxyType({v.name: _from_table(v, rows[v.name]) for v in items})


#: Registry: verifier name -> :class:`Verifier` (read-only).
verifiers: Mapping[str, Verifier] = _make_registry()
