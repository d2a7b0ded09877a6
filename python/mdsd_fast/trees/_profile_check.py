"""The two engines' rules for acceptance profiles, restated (used by :mod:`.profile`).

Model-Optimizer (``examples/specdec_bench/specdec_bench/speculation_profile.py`` and its exporter
``modelopt.torch.export.plugins.hf_spec_export``) and vLLM (``vllm/config/speculative.py``,
``_resolve_synthetic_acceptance_rates``); docs/guide/trees.md says where each rule comes from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SCHEMA_VERSION = "1.0"
#: The fields of a schema-1.0 profile, in build_profile's order.
PROFILE_FIELDS: tuple[str, ...] = (
    "schema_version", "measured", "method", "draft_checkpoint", "target_model", "num_speculative_tokens",
    "block_size", "max_supported_k", "verification_method", "conditional_accept_rates", "marginal_accept_rates",
    "vectors_unavailable_reason", "mean_accept_length", "mean_accept_length_per_request", "accept_length_model",
    "accept_length_by_k", "acceptance_length_histogram", "per_category", "measurement_conditions", "validation",
)  # fmt: skip
#: Model-Optimizer's tolerance of the mean-consistency check, and its slack on monotonicity.
MEAN_TOLERANCE = 0.02
MONOTONE_SLACK = 1e-9
LONGEST_PREFIX = "longest_prefix"
ACCEPT_LENGTH_MODELS = ("chain_analytic", "measured_per_k")
_ROUND = 6


def _mean_consistency(mean: float, marginal: Sequence[float]) -> dict[str, Any]:
    implied = 1.0 + math.fsum(marginal)
    delta = abs(implied - mean)
    return {
        "implied_mean_accept_length": round(implied, _ROUND),
        "reported_mean_accept_length": round(mean, _ROUND),
        "abs_delta": round(delta, _ROUND),
        "tolerance": MEAN_TOLERANCE,
        "passed": delta <= MEAN_TOLERANCE,
    }


def _monotonicity(marginal: Sequence[float]) -> dict[str, Any]:
    bad = [
        {"position": i, "value": marginal[i], "previous": marginal[i - 1]}
        for i in range(1, len(marginal))
        if marginal[i] > marginal[i - 1] + MONOTONE_SLACK
    ]
    return {"passed": not bad, "violations": bad}


def check_vllm_rates(rates: Any, num_speculative_tokens: Any) -> list[str]:
    """vLLM's checks of ``synthetic_acceptance_rates``: one entry per speculative token, each in
    [0, 1], non-increasing (no slack). Returns the problems found (empty: vLLM accepts them)."""
    if not isinstance(rates, list) or not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in rates):
        return [f"synthetic_acceptance_rates: expected a list of numbers, got {rates!r}"]
    out = []
    if len(rates) != num_speculative_tokens:
        out.append(
            f"synthetic_acceptance_rates: length {len(rates)} != num_speculative_tokens {num_speculative_tokens}"
        )
    if not all(0.0 <= r <= 1.0 for r in rates):  # NaN fails this too
        out.append(f"synthetic_acceptance_rates: entries must be in [0, 1], got {rates}")
    if any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
        out.append(f"synthetic_acceptance_rates: must be non-increasing, got {rates}")
    return out


def _rates(doc: Mapping[str, Any], name: str, K: int) -> tuple[list[float] | None, list[str]]:
    v = doc.get(name)
    if not isinstance(v, list) or len(v) != K:
        return None, [f"{name}: expected a list of num_speculative_tokens = {K} rates, got {v!r}"]
    bad = [
        f"{name}[{i}] is not a finite probability: {r!r}"
        for i, r in enumerate(v)
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or not 0.0 <= r <= 1.0
    ]
    return (None, bad) if bad else ([float(r) for r in v], [])


def check_speculation_profile(doc: Any) -> list[str]:
    """Model-Optimizer's rules for a schema-1.0 profile. Returns the problems (empty: it passes).

    The rules, each from its code: a JSON object with ``schema_version`` (the exporter refuses
    anything else); the schema's fields; rates finite probabilities (``_validate_rates``), one per
    speculative token (the dense vectors); marginals non-increasing within 1e-9
    (``_monotonicity_check``); conditionals the ratios of consecutive marginals (how
    ``build_profile`` derives them); the mean accept length within 0.02 of 1 + sum of the
    marginals (``_consistency_check``) and equal to the histogram's per-step mean
    (``per_step_mean_accept_length``); ``measured`` true exactly when the histogram holds steps;
    vectors withheld, with a reason, exactly when the verification method is not longest-prefix;
    and the ``validation`` block agreeing with these checks."""
    if not isinstance(doc, Mapping) or "schema_version" not in doc:
        return ["not a speculation profile: a JSON object with schema_version is required"]
    out: list[str] = []
    if doc["schema_version"] != SCHEMA_VERSION:
        out.append(f"schema_version: expected {SCHEMA_VERSION!r}, got {doc['schema_version']!r}")
    missing = [f for f in PROFILE_FIELDS if f not in doc]
    extra = [f for f in doc if f not in PROFILE_FIELDS]
    if missing or extra:
        return out + [f"fields: missing {missing}, unknown {extra}"]
    K = doc["num_speculative_tokens"]
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        return out + [f"num_speculative_tokens: expected a positive integer, got {K!r}"]
    mk = doc["max_supported_k"]
    if isinstance(mk, bool) or not isinstance(mk, int) or mk < K:
        out.append(f"max_supported_k: expected an integer >= num_speculative_tokens, got {mk!r}")
    if doc["accept_length_model"] not in ACCEPT_LENGTH_MODELS:
        out.append(f"accept_length_model: expected one of {ACCEPT_LENGTH_MODELS}, got {doc['accept_length_model']!r}")
    mean = doc["mean_accept_length"]
    if isinstance(mean, bool) or not isinstance(mean, (int, float)) or not 1.0 <= mean <= K + 1:
        return out + [f"mean_accept_length: expected a number in [1, {K + 1}], got {mean!r}"]
    hist = doc["acceptance_length_histogram"]
    try:
        h = {int(k): float(v) for k, v in hist.items()}
    except (AttributeError, TypeError, ValueError):
        return out + [f"acceptance_length_histogram: expected {{length: steps}}, got {hist!r}"]
    steps = math.fsum(h.values())
    if any(v < 0 or not math.isfinite(v) for v in h.values()) or any(k < 1 for k in h):
        out.append("acceptance_length_histogram: lengths must be >= 1 and steps finite and >= 0")
    elif doc["measured"] is not (steps > 0):
        out.append(f"measured: {doc['measured']!r} but the histogram holds {steps} steps")
    elif steps > 0:
        if max(h) > K + 1:
            out.append(f"acceptance_length_histogram: length {max(h)} > num_speculative_tokens + 1 (truncated K)")
        per_step = math.fsum(k * v for k, v in h.items()) / steps
        if abs(per_step - mean) > 1e-5:
            out.append(f"mean_accept_length {mean} is not the histogram's per-step mean {per_step:.6f}")
    vectors = doc["verification_method"] == LONGEST_PREFIX
    reason = doc["vectors_unavailable_reason"]
    if not vectors:
        if doc["marginal_accept_rates"] is not None or doc["conditional_accept_rates"] is not None or not reason:
            out.append("vectors: must be withheld, with a reason, for a verification method other than longest_prefix")
        return out
    if reason is not None:
        out.append(f"vectors_unavailable_reason: must be null for longest_prefix, got {reason!r}")
    m, bad_m = _rates(doc, "marginal_accept_rates", K)
    c, bad_c = _rates(doc, "conditional_accept_rates", K)
    out += bad_m + bad_c
    if m is None:
        return out
    mono = _monotonicity(m)
    if not mono["passed"]:
        out.append(
            f"marginal_accept_rates: not non-increasing at positions {[v['position'] for v in mono['violations']]}"
        )
    if c is not None:
        prev = [1.0] + m[:-1]
        off = [i for i in range(K) if abs(c[i] * prev[i] - m[i]) > 2e-6]
        if off:
            out.append(f"conditional_accept_rates: not the ratios of consecutive marginals at positions {off}")
    cons = _mean_consistency(float(mean), m)
    if not cons["passed"]:
        out.append(f"mean_accept_length {mean}: 1 + sum(marginal_accept_rates) = {cons['implied_mean_accept_length']}")
    val = doc["validation"]
    try:
        flags = (val["mean_consistency"]["passed"], val["marginal_monotonicity"]["passed"])
    except (TypeError, KeyError):
        return out + ["validation: expected the mean_consistency and marginal_monotonicity results"]
    if flags != (cons["passed"], mono["passed"]):
        out.append(f"validation: records {flags}, the checks give {(cons['passed'], mono['passed'])}")
    return out
