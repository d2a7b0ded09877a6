"""Acceptance profiles engines load: vLLM's ``synthetic_acceptance_rates`` and NVIDIA
Model-Optimizer's ``speculation_profile.json`` (schema 1.0).

Both describe the law of the number of drafts accepted in one verification step through its
survival function m_d = P(accepted >= d), d = 1..K (the *marginal* per-position rates):

* vLLM (``SpeculativeConfig.synthetic_acceptance_rates``, read when ``rejection_sample_method``
  is "synthetic"): a list of exactly ``num_speculative_tokens`` values in [0, 1], non-increasing
  (``_resolve_synthetic_acceptance_rates`` in vllm/config/speculative.py refuses anything else;
  the rejection sampler turns them into conditional rates m_d / m_{d-1}).
* Model-Optimizer (``examples/specdec_bench/specdec_bench/speculation_profile.py``,
  ``build_profile``): the marginal and conditional vectors, the mean accept length per step
  1 + sum_d m_d, the accepted-length histogram keyed by tokens emitted per step (accepted + 1),
  provenance, and a ``validation`` block with its two consistency checks.

The writer takes any per-depth marginal vector (:func:`profile_from_marginals`), so every source
of exact per-depth acceptance can be written the same way: the tree report
(:func:`tree_report_profiles`), the gap report's one-level rows (``mdsd_fast.report.profile``),
or any other rule. :func:`check_speculation_profile` and :func:`check_vllm_rates` are
Model-Optimizer's and vLLM's own rules, restated here (docs/guide/trees.md, "Profiles engines
load").
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._profile_check import (
    ACCEPT_LENGTH_MODELS,
    LONGEST_PREFIX,
    PROFILE_FIELDS,
    SCHEMA_VERSION,
    _mean_consistency,
    _monotonicity,
    check_speculation_profile,
    check_vllm_rates,
)

__all__ = [
    "SCHEMA_VERSION",
    "PROFILE_FIELDS",
    "AcceptanceProfile",
    "profile_from_marginals",
    "speculation_profile",
    "vllm_speculative_config",
    "check_speculation_profile",
    "check_vllm_rates",
    "tree_report_profiles",
    "write_profiles",
    "write_json_atomic",
]

_ROUND = 6  # Model-Optimizer rounds the vectors and means to 6 decimals
_MAX_K = 64


@dataclass(frozen=True)
class AcceptanceProfile:
    """The per-depth acceptance of one rule on one kind of step.

    ``marginal[d - 1]`` = P(accepted >= d); ``marginal_ci`` (K, 2) or None where the values are
    exact; ``mean_ci`` the interval of tokens per step or None; ``conditions`` free provenance
    (it goes into ``measurement_conditions``)."""

    key: str
    marginal: NDArray[np.float64]
    marginal_ci: NDArray[np.float64] | None = None
    mean_ci: tuple[float, float] | None = None
    verification_method: str = LONGEST_PREFIX
    accept_length_model: str = "measured_per_k"
    method: str | None = None
    conditions: dict[str, Any] = field(default_factory=dict)

    @property
    def K(self) -> int:
        """Draft positions (``num_speculative_tokens``)."""
        return int(self.marginal.size)

    @property
    def mean_accept_length(self) -> float:
        """Tokens emitted per step, 1 + sum_d P(accepted >= d)."""
        return 1.0 + float(self.marginal.sum())


def profile_from_marginals(
    marginal: Sequence[float] | NDArray[np.float64],
    *,
    key: str,
    marginal_ci: Any = None,
    mean_ci: tuple[float, float] | None = None,
    verification_method: str = LONGEST_PREFIX,
    accept_length_model: str = "measured_per_k",
    method: str | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> AcceptanceProfile:
    """Validate per-depth rates m_d = P(accepted >= d), d = 1..K, into an :class:`AcceptanceProfile`.

    The rates must be finite, in [0, 1] and non-increasing (a survival function); 1 <= K <= 64.
    ``marginal_ci``: (K, 2) interval ends or None (exact). The input is copied, never changed.
    """
    m = np.array(marginal, dtype=np.float64, copy=True).reshape(-1)
    if not 1 <= m.size <= _MAX_K:
        raise ValueError(f"marginal: expected 1..{_MAX_K} per-depth rates, got {m.size}")
    if not np.all(np.isfinite(m)) or np.any(m < 0.0) or np.any(m > 1.0):
        raise ValueError(f"marginal: every rate must be a finite probability, got {m.tolist()}")
    if np.any(np.diff(m) > 0.0):
        raise ValueError(f"marginal: P(accepted >= d) cannot increase with d, got {m.tolist()}")
    ci = None
    if marginal_ci is not None:
        ci = np.array(marginal_ci, dtype=np.float64, copy=True)
        if ci.shape != (m.size, 2) or not np.all(ci[:, 0] <= ci[:, 1]):
            raise ValueError(f"marginal_ci: expected ({m.size}, 2) ordered interval ends, got shape {ci.shape}")
    if accept_length_model not in ACCEPT_LENGTH_MODELS:
        raise ValueError(f"accept_length_model: expected one of {ACCEPT_LENGTH_MODELS}, got {accept_length_model!r}")
    if not isinstance(verification_method, str) or not verification_method:
        raise ValueError(f"verification_method: expected a name, got {verification_method!r}")
    m.flags.writeable = False
    return AcceptanceProfile(
        key, m, ci, mean_ci, verification_method, accept_length_model, method, dict(conditions or {})
    )


def _conditional(m: NDArray[np.float64]) -> list[float]:
    prev = np.concatenate(([1.0], m[:-1]))
    return [float(a / b) if b > 0 else 0.0 for a, b in zip(m, prev, strict=True)]


def _histogram(m: NDArray[np.float64]) -> dict[str, float]:
    """P(tokens emitted = l), l = 1..K+1, keyed as JSON keys (Model-Optimizer's lengths)."""
    surv = np.concatenate(([1.0], m, [0.0]))
    return {str(length): round(float(surv[length - 1] - surv[length]), 9) for length in range(1, m.size + 2)}


def speculation_profile(
    prof: AcceptanceProfile, *, draft_checkpoint: Any = None, target_model: Any = None
) -> dict[str, Any]:
    """The Model-Optimizer schema-1.0 dict of ``prof``, field for field.

    The histogram holds probabilities per step (they sum to 1) where Model-Optimizer's benchmark
    writes step counts; every quantity Model-Optimizer derives from it (the per-step mean, the
    survival function) is the same for either. Intervals and what is exact go into
    ``measurement_conditions``. For a verification method other than longest-prefix the two
    vectors are withheld with a reason, as Model-Optimizer does."""
    m = prof.marginal
    marginal = [round(float(v), _ROUND) for v in m]
    conditional = [round(v, _ROUND) for v in _conditional(m)]
    mean = prof.mean_accept_length
    vectors = prof.verification_method == LONGEST_PREFIX
    cond: dict[str, Any] = dict(prof.conditions)
    cond["histogram_units"] = "probability per verification step"
    if prof.marginal_ci is not None:  # a probability's interval, clipped to [0, 1]
        ci = np.clip(prof.marginal_ci, 0.0, 1.0)
        cond["marginal_accept_rates_ci95"] = [[round(float(a), _ROUND), round(float(b), _ROUND)] for a, b in ci]
    if prof.mean_ci is not None:
        lo, hi = (min(max(float(v), 1.0), prof.K + 1.0) for v in prof.mean_ci)
        cond["mean_accept_length_ci95"] = [round(lo, _ROUND), round(hi, _ROUND)]
    return {
        "schema_version": SCHEMA_VERSION,
        "measured": True,
        "method": prof.method,
        "draft_checkpoint": draft_checkpoint,
        "target_model": target_model,
        "num_speculative_tokens": prof.K,
        "block_size": None,
        "max_supported_k": prof.K,
        "verification_method": prof.verification_method,
        "conditional_accept_rates": conditional if vectors else None,
        "marginal_accept_rates": marginal if vectors else None,
        "vectors_unavailable_reason": None
        if vectors
        else (
            f"verification_method={prof.verification_method!r} does not produce a longest-prefix acceptance "
            "distribution, so per-position rates are not defined for it"
        ),
        "mean_accept_length": round(mean, _ROUND),
        "mean_accept_length_per_request": round(mean, _ROUND),
        "accept_length_model": prof.accept_length_model,
        "accept_length_by_k": {str(prof.K): round(mean, _ROUND)},
        "acceptance_length_histogram": _histogram(m),
        "per_category": None,
        "measurement_conditions": cond,
        "validation": {
            "mean_consistency": _mean_consistency(mean, marginal),
            "marginal_monotonicity": _monotonicity(marginal),
        },
    }


def vllm_speculative_config(prof: AcceptanceProfile) -> dict[str, Any]:
    """The keys of vLLM's ``--speculative-config`` that replay ``prof`` (add ``method`` and
    ``model``): synthetic rejection sampling at these per-position marginal rates."""
    rates = [float(v) for v in prof.marginal]
    return {
        "num_speculative_tokens": prof.K,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_rates": rates,
    }


def tree_report_profiles(rep: Any) -> list[AcceptanceProfile]:
    """One profile per (shape, scheme, verifier) row of a :class:`~mdsd_fast.trees.report.TreeReport`
    that has values (refused rows and the bound's interval have none): its per-depth
    P(accepted >= d), the mean over the shape's trees of each tree's exact value, with the t
    interval over trees. Block verification is written with verification_method "block" and
    traversal with "traversal" (not longest-prefix: Model-Optimizer withholds their vectors)."""
    out = []
    by_row: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rep.profiles:
        by_row.setdefault((r["shape"], r["scheme"], r["verifier"]), []).append(r)
    for rec in rep.records:
        rows = by_row.get((rec["shape"], rec["scheme"], rec["verifier"]))
        if rec["kind"] == "bound" or not rows or not math.isfinite(rec["tokens_per_call"]):
            continue
        rows = sorted(rows, key=lambda r: r["depth"])
        m = np.array([r["p_accepted_ge"] for r in rows])
        m = np.minimum.accumulate(np.clip(m, 0.0, 1.0))  # a no-op on exact means; guards rounding
        ci = np.array([[r["ci_low"], r["ci_high"]] for r in rows], dtype=np.float64)
        v = rec["verifier"]
        vm = {"block": "block", "traversal": "traversal"}.get(v, LONGEST_PREFIX)
        chain = rec["shape"].startswith("chain") and vm == LONGEST_PREFIX
        conditions = {
            "source": "mdsd_fast tree report", "data": rep.metadata.get("data", ""), "shape": rec["shape"],
            "scheme": rec["scheme"], "verifier": v, "drafts": rec["drafts"], "trees": int(rec["trees"]),
            "exact": "each tree's per-depth acceptance is exact (no simulation); the rates are their mean over the "
            "shape's drafted trees, a sample of contexts, hence the intervals",
            "interval": "Student t, 95 %, over trees",
        }  # fmt: skip
        out.append(
            profile_from_marginals(
                m,
                key=f"{rec['shape']}/{v}",
                marginal_ci=ci if np.all(np.isfinite(ci)) else None,  # one tree: no interval
                mean_ci=(float(rec["ci_low"]), float(rec["ci_high"])) if math.isfinite(rec["ci_low"]) else None,
                verification_method=vm,
                accept_length_model="chain_analytic" if chain else "measured_per_k",
                method="draft_model",
                conditions=conditions,
            )
        )
    return out


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a temporary file in the same directory, then
    a rename): a reader never sees half a file."""
    path = Path(path)
    text = json.dumps(obj, indent=1, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_profiles(
    path: str | os.PathLike[str], profiles: Sequence[AcceptanceProfile], *, producer: str, target_model: Any = None
) -> dict[str, Any]:
    """Write a bundle of profiles to ``path`` (atomic) and return it: one entry per profile with
    its ``speculation_profile`` (schema 1.0) and its ``vllm_speculative_config``. The bundle itself
    has no ``schema_version``, so Model-Optimizer's exporter refuses it rather than mistaking it for
    one profile; write one entry's ``speculation_profile`` with :func:`write_json_atomic`."""
    if not profiles:
        raise ValueError("profiles: nothing to write (no row has per-depth values)")
    entries = []
    for prof in profiles:
        drafts = prof.conditions.get("drafts")
        sp = speculation_profile(
            prof, draft_checkpoint={"drafts": drafts} if drafts else None, target_model=target_model
        )
        problems = check_speculation_profile(sp) + check_vllm_rates(
            vllm_speculative_config(prof)["synthetic_acceptance_rates"], prof.K
        )
        if problems:  # never written silently wrong
            raise ValueError(f"profile {prof.key}: {problems[0]}")
        entries.append(
            {"key": prof.key, "speculation_profile": sp, "vllm_speculative_config": vllm_speculative_config(prof)}
        )
    bundle = {"producer": producer, "profiles": entries}
    write_json_atomic(path, bundle)
    return bundle
