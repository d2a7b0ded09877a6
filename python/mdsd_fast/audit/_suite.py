"""The audit's built-in cases and its draft schemes (one table: scheme name -> drafter and bound)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..bound.alpha import optimal_acceptance
from ..inputs.args import integer
from ..inputs.rules import check_support, mixed_parts
from ..verifiers.run import simulate


@dataclass(frozen=True)
class AuditCase:
    """One (p, q) pair of an audit: target p and draft q over the same V tokens."""

    name: str
    p: NDArray[np.float64]
    q: NDArray[np.float64]
    description: str = ""
    #: which known failure family the case exposes (for the table and docs/guide/audit.md)
    families: tuple[str, ...] = field(default=())

    @property
    def V(self) -> int:
        return int(self.p.size)


@dataclass(frozen=True)
class DraftScheme:
    """How a named scheme draws its draft tuples, and the alpha* that bounds any lossless verifier."""

    #: (p, q, n, samples, seed) -> drafts (samples, n): the C++ drafter of a registry verifier
    draw: Callable[[NDArray[np.float64], NDArray[np.float64], int, int, int], NDArray[np.int64]]
    #: (p, q, n) -> alpha* of the scheme's draft law
    bound: Callable[[NDArray[np.float64], NDArray[np.float64], int], float]
    n_range: tuple[int, int] = (1, 2**31)


def _drafter(
    verifier: str, scheme: str | None = None
) -> Callable[[NDArray[np.float64], NDArray[np.float64], int, int, int], NDArray[np.int64]]:
    """Draft tuples of ``verifier``'s scheme, drawn by the C++ core (the outputs are discarded)."""

    def draw(p: NDArray[np.float64], q: NDArray[np.float64], n: int, samples: int, seed: int) -> NDArray[np.int64]:
        return simulate(verifier, p, q, n, samples, rng=seed, scheme=scheme, threads=1).drafts  # type: ignore[arg-type]

    return draw


def _alpha(scheme: Any) -> Callable[[NDArray[np.float64], NDArray[np.float64], int], float]:
    def bound(p: NDArray[np.float64], q: NDArray[np.float64], n: int) -> float:
        return float(optimal_acceptance(p, q, n, scheme))

    return bound


#: Named draft schemes: adding one is one line (its drafter and its alpha*); mixed schemes
#: "top<m>+iid" / "top<m>+wor" are parsed by ``draft_scheme``.
SCHEMES: dict[str, DraftScheme] = {
    "iid": DraftScheme(_drafter("rrs"), _alpha("iid")),
    "wor": DraftScheme(_drafter("rrs-wor"), _alpha("wor")),
    "greedy": DraftScheme(_drafter("greedy"), _alpha("greedy")),
    "topk": DraftScheme(_drafter("topk"), _alpha("topk")),
    # SpecHub's ordered pair law; its set law is the greedy scheme's at n = 2.
    "spechub": DraftScheme(_drafter("spechub"), _alpha("greedy"), n_range=(2, 2)),
}


def draft_scheme(name: Any) -> DraftScheme:
    """A key of SCHEMES, or a mixed scheme "top<m>+iid" / "top<m>+wor" (the top m of q plus
    n - m random drafts; drawn by rrs / rrs-wor, which verify them)."""
    if isinstance(name, str) and name in SCHEMES:
        return SCHEMES[name]
    mp = mixed_parts(name) if isinstance(name, str) else None
    if mp is None:
        raise ValueError(
            f"scheme: expected one of {', '.join(map(repr, SCHEMES))}, 'top<m>+iid' or 'top<m>+wor', got {name!r}"
        )
    verifier = "rrs" if mp[1] == "iid" else "rrs-wor"
    return DraftScheme(_drafter(verifier, name), _alpha(name), n_range=(mp[0] + 1, 2**31))


def unsupported(scheme: str, q: NDArray[np.float64], n: int) -> str | None:
    """Why ``scheme`` cannot draw n drafts from q (too few tokens with q > 0), or None."""
    try:
        check_support("q", q[None, :], n, "greedy" if scheme == "spechub" else scheme)
    except ValueError as exc:
        return str(exc)
    return None


def _dist(values: Any) -> NDArray[np.float64]:
    a: NDArray[np.float64] = np.asarray(values, dtype=np.float64)
    out: NDArray[np.float64] = a / a.sum()
    return out


def _llm_like(V: int, seed: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A peaked Zipf-like target and a flatter, noisier draft over V tokens: about 40% of the
    draft's mass lies outside its top 50 tokens (where truncated-q bugs act), while the target's
    tail is light enough for the output-law test to keep its power."""
    g = np.random.default_rng(seed)
    log_rank = np.log(g.permutation(V) + 1.0)
    lp = -2.0 * log_rank + 0.3 * g.standard_normal(V)
    lq = -1.0 * log_rank + 0.5 * g.standard_normal(V)
    p, q = np.exp(lp - lp.max()), np.exp(lq - lq.max())
    return p / p.sum(), q / q.sum()


def builtin_cases(*, large: bool = True) -> list[AuditCase]:
    """The built-in suite: each case aimed at a known failure family (docs/guide/audit.md)."""
    g = np.random.default_rng(20260118)
    flat_p = _dist(1.0 + 0.3 * g.random(8))
    dir_p, dir_q = _dist(g.dirichlet(np.ones(6))), _dist(g.dirichlet(np.ones(6)))
    top3 = _dist([0.3, 0.2, 0.15, 0.1, 0.1, 0.07, 0.05, 0.03])
    cases = [
        AuditCase(
            "eagle-dup-skip",
            _dist([1, 1, 1]),
            _dist([0.6, 0.3, 0.1]),
            "published counterexample: skipping duplicate drafts gives (0.3333, 0.3533, 0.3133) at n = 2",
            ("duplicates",),
        ),
        AuditCase(
            "llama-index-sub",
            _dist([0.4, 0.3, 0.3, 0, 0]),
            _dist([0, 0.1, 0.2, 0.3, 0.4]),
            "published counterexample: residual p - q subtracted by list index, not token id (TV 0.185 at n = 2)",
            ("zeros", "q = 0 < p"),
        ),
        AuditCase(
            "peaked-q",
            _dist([0.2, 0.5, 0.3]),
            _dist([0.9, 0.06, 0.04]),
            "i.i.d. drafts mostly duplicates",
            ("duplicates",),
        ),
        AuditCase(
            "zeros",
            _dist([0.5, 0, 0.3, 0.2, 0, 0]),
            _dist([0.2, 0.3, 0, 0.25, 0.25, 0]),
            "zeros in p, in q and in both, at different tokens",
            ("zeros",),
        ),
        AuditCase(
            "q-zero-p-pos", _dist([0.3, 0.3, 0.2, 0.2]), _dist([0.6, 0.4, 0, 0]), "q = 0 where p > 0", ("q = 0 < p",)
        ),
        AuditCase(
            "disjoint",
            _dist([0.5, 0.5, 0, 0]),
            _dist([0, 0, 0.5, 0.5]),
            "disjoint supports: alpha* = 0, every output from the residual",
            ("zeros",),
        ),
        AuditCase(
            "ties",
            _dist([1, 1, 1, 1]),
            _dist([0.3, 0.3, 0.2, 0.2]),
            "ties in p and in q (tie-breaking rules)",
            ("ties",),
        ),
        AuditCase(
            "one-hot-q",
            _dist([0.1, 0.6, 0.2, 0.1]),
            _dist([0, 1, 0, 0]),
            "one-hot q (deterministic draft)",
            ("one-hot",),
        ),
        AuditCase(
            "one-hot-p", _dist([0, 0, 1, 0]), _dist([0.4, 0.3, 0.2, 0.1]), "one-hot p (greedy target)", ("one-hot",)
        ),
        AuditCase(
            "top3-truncated",
            top3,
            _dist([0.5, 0.3, 0.2, 0, 0, 0, 0, 0]),
            "q truncated to a top-3 candidate list, p over all 8 tokens",
            ("truncation",),
        ),
        AuditCase(
            "peaked-p", _dist([0.97, 0.01, 0.01, 0.01]), _dist([0.4, 0.3, 0.2, 0.1]), "peaked p, spread q", ("peaked",)
        ),
        AuditCase("flat", flat_p, _dist(np.ones(8)), "near-uniform p and uniform q, V = 8", ("flat",)),
        AuditCase(
            "equal", _dist([0.4, 0.25, 0.2, 0.1, 0.05]), _dist([0.4, 0.25, 0.2, 0.1, 0.05]), "p = q: alpha* = 1", ()
        ),
        AuditCase("dirichlet-6", dir_p, dir_q, "a random pair, V = 6", ()),
    ]
    if large:
        p, q = _llm_like(4096, 7)
        cases.append(
            AuditCase(
                "llm-like-4096",
                p,
                q,
                "V = 4,096, peaked Zipf-like p, flatter q with ~45% of its mass outside its top 50",
                ("large V", "truncation"),
            )
        )
    return cases


def real_cases(count: int = 2) -> list[AuditCase]:
    """The ``count`` rows of the shipped SmolLM2 dataset (V = 49,152) with the most draft mass
    outside the draft's top 50 tokens, where truncation bugs show (loading takes a few seconds)."""
    from ..data import load_dataset

    count = integer("real", count, 0)
    ds = load_dataset()
    if count > len(ds):
        raise ValueError(f"real: {count} rows asked for, but the shipped dataset has {len(ds)}")
    tail = np.empty(len(ds))
    for i in range(len(ds)):
        q = np.sort(np.asarray(ds.sparse_row(i)[2], dtype=np.float64))[::-1]
        tail[i] = q[50:].sum() / q.sum()
    rows = np.sort(np.argsort(-tail, kind="stable")[:count])
    P, Q = ds[rows].dense(renormalize=True)
    return [
        AuditCase(
            f"real-row-{r}",
            np.ascontiguousarray(P[k]),
            np.ascontiguousarray(Q[k]),
            f"row {r} of the shipped SmolLM2-135M dataset ({tail[r]:.0%} of q outside its top 50)",
            ("large V", "real"),
        )
        for k, r in enumerate(rows)
    ]
