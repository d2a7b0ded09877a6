"""Lossy acceptance rules that inference engines ship, priced exactly at one position.

RULES
    the rule names: "sglang" (SGLang's tree sampler with threshold_single / threshold_acc),
    "typical" (Medusa's typical acceptance as vLLM ported it), "entropy" (vLLM-Ascend's entropy
    verify), "relaxed" (TensorRT-LLM's relaxed acceptance for thinking tokens).
evaluate(rule, p, q, n=1, **settings) -> LossyResult
    one position: the exact output law, the acceptance and the distance from the target p.
evaluate_rows(rule, p, q, n=1, **settings) -> LossyRows
    the same over the rows of (B, V) arrays (acceptance, tv, kl per row; no laws kept).
simulate(rule, p, q, samples, rng, n=1, **settings) -> (tokens, accepted)
    the rule run step by step with its own random numbers, for checking the exact values.

Settings use the engines' own parameter names; ``drafts`` says which drafts are verified:
"sample" (one draft x ~ q, the default at n = 1) or "top" (the n most likely tokens of q in
descending order: a tree's children, the default at n > 1). docs/guide/lossy.md has the rules,
their sources and what each value means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.pairs import as_pair
from .rules import DEFAULTS, RULES, exact_rows, resolve
from .sampler import simulate

__all__ = ["RULES", "DEFAULTS", "LossyResult", "LossyRows", "evaluate", "evaluate_rows", "simulate"]

#: Rows per block in :func:`evaluate_rows` (a few (b, V) float64 temporaries at a time).
BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class LossyResult:
    """One position under a lossy rule."""

    rule: str
    settings: dict[str, Any]  #: the settings used (defaults filled in) and ``drafts``, ``n``
    acceptance: float  #: probability that the rule accepts a draft
    tv: float  #: total variation distance between the output law and p
    kl: float  #: KL(law || p) in nats (finite: a rule outputs only tokens with p > 0)
    kl_reverse: float  #: KL(p || law) in nats; inf when the law misses some token of p
    law: NDArray[np.float64]  #: (V,) the exact output law


@dataclass(frozen=True)
class LossyRows:
    """Per-row values of :func:`evaluate_rows`, each an array (B,)."""

    rule: str
    settings: dict[str, Any]
    acceptance: NDArray[np.float64]
    tv: NDArray[np.float64]
    kl: NDArray[np.float64]
    kl_reverse: NDArray[np.float64]


def _distances(p: NDArray[np.float64], delta: NDArray[np.float64]) -> tuple[Any, Any, Any, NDArray[np.float64]]:
    """TV, KL(law||p), KL(p||law) per row, and the law (clipped at 0 against rounding)."""
    law = np.maximum(p + delta, 0.0)
    tv = 0.5 * np.abs(delta).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = np.where(law > 0, law * np.log(np.where(law > 0, law, 1.0) / np.where(p > 0, p, 1.0)), 0.0)
        kl = np.where(((law > 0) & (p <= 0)).any(axis=1), np.inf, lp.sum(axis=1))
        pl = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / np.where(law > 0, law, 1.0)), 0.0)
        klr = np.where(((p > 0) & (law <= 0)).any(axis=1), np.inf, pl.sum(axis=1))
    return tv, np.maximum(kl, 0.0), np.maximum(klr, 0.0), law


def _settings(s: Any) -> dict[str, Any]:
    return {**s.values, "drafts": s.drafts, "n": s.n}


def evaluate(rule: str, p: Any, q: Any, n: int = 1, **settings: Any) -> LossyResult:
    """Exact output law, acceptance and distance from p of a lossy rule at one position.

    Parameters
    ----------
    rule : one of :data:`RULES`.
    p, q : target and draft distributions, (V,); rows within 1e-4 of summing to 1 are renormalised.
    n : drafts verified at the position (n > 1: the top n of q, for "sglang" and "typical").
    **settings : the rule's parameters by the engine's names (``threshold_single``,
        ``threshold_acc``; ``posterior_threshold``, ``posterior_alpha``; ``relaxed_topk``,
        ``relaxed_delta``) and ``drafts`` ("sample" or "top"); defaults in :data:`DEFAULTS`.

    Returns
    -------
    LossyResult with ``acceptance``, ``tv``, ``kl``, ``kl_reverse`` and ``law`` (V,).
    """
    s = resolve(rule, n, **settings)
    p2, q2, batched = as_pair(p, q)
    if batched:
        raise ValueError("p, q: evaluate takes one position (V,); use evaluate_rows for (B, V)")
    acc, delta = exact_rows(p2, q2, s)
    tv, kl, klr, law = _distances(p2, delta)
    return LossyResult(rule, _settings(s), float(acc[0]), float(tv[0]), float(kl[0]), float(klr[0]), law[0])


def evaluate_rows(rule: str, p: Any, q: Any, n: int = 1, **settings: Any) -> LossyRows:
    """:func:`evaluate` over the rows of (B, V) arrays (a single row broadcasts), in blocks of
    bounded memory; returns per-row acceptance, tv, kl and kl_reverse (no laws)."""
    s = resolve(rule, n, **settings)
    p2, q2, _ = as_pair(p, q)
    B, V = p2.shape
    block = max(1, BLOCK_BYTES // (8 * 8 * max(V, 1)))  # about 8 (b, V) float64 temporaries
    out = np.zeros((4, B))
    for a in range(0, B, block):
        acc, delta = exact_rows(p2[a : a + block], q2[a : a + block], s)
        tv, kl, klr, _ = _distances(p2[a : a + block], delta)
        out[:, a : a + block] = acc, tv, kl, klr
    return LossyRows(rule, _settings(s), out[0], out[1], out[2], out[3])
