"""mdsd_fast: exact optimal acceptance (alpha*) and verifiers for multi-draft speculative decoding.

Public API
----------
optimal_acceptance(p, q, n, scheme="iid", *, method="auto", return_certificate=False)
    alpha*: the best acceptance any lossless verifier reaches for a draft scheme.
solve_lp(p, q, n, scheme, *, max_sets=...)
    the flow LP over draft sets, solved by HiGHS, with its cut certificate and optimal flow.
verifiers
    registry of lossless verifiers: "sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "optimal-lp",
    "optimal", "sweep".
acceptance(name, p, q, n, *, exact=True, samples=100_000, rng=None, scheme=None)
    a verifier's acceptance rate, exactly or by simulation.
simulate(name, p, q, n, samples, *, rng=None, scheme=None)
    draft and verify in C++: output tokens, accepted flags and the drafts.
verify(name, p, q, drafts, *, rng=None, scheme=None)
    verify draft tuples drawn by the caller: (token, accepted).
route_report(name, p, q, n, *, work_budget=None)
    what the without-replacement route of "optimal" / "sweep" did with each row (work, order, gap).
limits
    the package's limits, one table shared with the C++ core.
TopK(ids, values, vocab_size, logprobs=False), scipy.sparse rows
    sparse and top-k inputs, accepted wherever p or q is (run on each row's union support).
load_dataset(path=None)
    real next-token distributions (the shipped SmolLM2-135M dataset by default).
Logits(values, temperature=1.0, top_k=None, top_p=None, min_p=None, d2t=None, ..., engine="vllm")
    logits plus an engine's sampling settings (vLLM, SGLang or HF rules); accepted wherever p or
    q is, as the distribution that engine samples from. constraints.pair(target, draft, **settings)
    applies the same settings to both.
engines
    reference kernels in the engines' own tensor contracts, every uniform an argument:
    rejection_sample (vLLM V1), tree_speculative_sampling (SGLang's token trees, with SGLang's rule
    or any registry verifier at each node).
acceptance_bounds(p, q, n, scheme="iid", *, verifier=None) -> (low, high)
    rigorous bounds on alpha* (or a verifier's acceptance) from truncated top-k logs: the interval
    holding every completion of the unseen mass (docs/guide/intervals.md).
audit(verify, scheme="iid", n=2, *, draft=None, cases=None, samples=None, rng=None) -> AuditResult
    a statistical audit of any verifier callable for losslessness (output law and acceptance
    tested on cases built to expose the known bugs); ``audit.registry_verifier(name)`` wraps a
    registry verifier in the callable's contract.
lossy
    engines' lossy acceptance rules priced exactly (docs/guide/lossy.md): ``lossy.evaluate(rule, p,
    q, n, **settings)`` gives the output law, the acceptance and the total variation from p.
check_served(path, *, alpha=0.01, workers=1, ...) -> ServedCheck
    does a served log (OpenAI-style JSONL with top_logprobs, or a log directory) follow the
    distributions it logged? An exact test with its power stated (docs/guide/served.md).
ISA
    which build of the C++ core this process runs: "avx2" (chosen where the CPU has it) or
    "baseline"; the environment variable MDSD_FAST_ISA=baseline|avx2|auto overrides (same bits).
trees
    draft trees for one target call (docs/guide/trees.md): ``DraftTree`` (parent / token / draw arrays,
    SGLang and EAGLE layouts), drafting (K i.i.d. sequences, per-depth branching, static choice
    lists), top-down ``verify_tree``, and ``tree_value``: the exact expected accepted length and
    per-depth profile of a drafted tree for every registry verifier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._isa import load_core as _load_core

_load_core()  # the build of the core this CPU runs best becomes mdsd_fast._core, before any import of it

from . import _core, limits
from ._version import __version__
from .bound import optimal_acceptance
from .inputs.args import TooLargeError
from .verifiers import (
    EXACT_BUDGET,
    WOR_WORK_BUDGET,
    Simulation,
    Verifier,
    acceptance,
    route_report,
    simulate,
    verifiers,
    verify,
)

# Loaded on first use (PEP 562), so that `import mdsd_fast` costs little more than numpy: the flow LP, the
# logits and sparse inputs, the trees, the audit, the engines' kernels, the datasets and the bounds from
# truncated logs.
_LAZY: dict[str, tuple[str, str | None]] = {
    "solve_lp": ("bound.lp", "solve_lp"),
    "LPResult": ("bound.lp", "LPResult"),
    "SolverError": ("bound.lp", "SolverError"),
    "DEFAULT_MAX_SETS": ("bound.lp", "DEFAULT_MAX_SETS"),
    "Logits": ("inputs.logits", "Logits"),
    "TopK": ("inputs.sparse", "TopK"),
    "LMDataset": ("data", "LMDataset"),
    "load_dataset": ("data", "load_dataset"),
    "from_arrays": ("data", "from_arrays"),
    "constraints": ("constraints", None),
    "sparse": ("sparse", None),
    "engines": ("engines", None),
    "trees": ("trees", None),
    "lossy": ("lossy", None),
    "rejection_sample": ("engines", "rejection_sample"),
    "tree_speculative_sampling": ("engines", "tree_speculative_sampling"),
    "TreeVerification": ("engines", "TreeVerification"),
    "audit": ("audit", "audit"),
    "AuditResult": ("audit", "AuditResult"),
    "acceptance_bounds": ("intervals", "acceptance_bounds"),
    "check_served": ("served", "check_served"),
    "ServedCheck": ("served", "ServedCheck"),
}


def __getattr__(name: str) -> Any:
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'mdsd_fast' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(f".{spec[0]}", __name__)
    value = mod if spec[1] is None else getattr(mod, spec[1])
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from . import constraints, engines, lossy, sparse, trees
    from .audit import AuditResult, audit
    from .bound.lp import DEFAULT_MAX_SETS, LPResult, SolverError, solve_lp
    from .data import LMDataset, from_arrays, load_dataset
    from .engines import TreeVerification, rejection_sample, tree_speculative_sampling
    from .inputs.logits import Logits
    from .inputs.sparse import TopK
    from .intervals import acceptance_bounds
    from .served import ServedCheck, check_served

ISA: str = _core.ISA

__all__ = [
    "__version__",
    "ISA",
    "optimal_acceptance",
    "solve_lp",
    "LPResult",
    "SolverError",
    "TooLargeError",
    "DEFAULT_MAX_SETS",
    "verifiers",
    "acceptance",
    "simulate",
    "verify",
    "Verifier",
    "Simulation",
    "EXACT_BUDGET",
    "WOR_WORK_BUDGET",
    "route_report",
    "limits",
    "LMDataset",
    "load_dataset",
    "from_arrays",
    "Logits",
    "constraints",
    "sparse",
    "TopK",
    "engines",
    "trees",
    "lossy",
    "rejection_sample",
    "tree_speculative_sampling",
    "TreeVerification",
    "audit",
    "AuditResult",
    "acceptance_bounds",
    "check_served",
    "ServedCheck",
]
