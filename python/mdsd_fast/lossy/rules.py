"""Exact output laws of the engines' lossy acceptance rules, one position, rows vectorised.

Every law is written as ``p + delta``: ``delta`` is the rule's departure from the lossless law
(from the rule's extra acceptance, which is computed as a difference that is exactly 0 at the
settings where the rule is lossless), so the law is bitwise ``p`` there and its total variation
exactly 0. docs/guide/lossy.md gives each rule, its source and its derivation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["RULES", "DEFAULTS", "resolve", "exact_rows", "draft_order"]

Array = NDArray[np.float64]

#: Each rule's settings (the engine's own parameter names) with their defaults, and ``drafts``.
DEFAULTS: dict[str, dict[str, Any]] = {
    "sglang": {"threshold_single": 1.0, "threshold_acc": 1.0},
    "typical": {"posterior_threshold": 0.09, "posterior_alpha": 0.3},
    "entropy": {"posterior_threshold": 0.95, "posterior_alpha": 0.4},
    "relaxed": {"relaxed_topk": 1, "relaxed_delta": 0.0},
}
#: The lossy rules, in the order the docs present them.
RULES: tuple[str, ...] = tuple(DEFAULTS)
#: Which drafts a rule verifies: "sample" (one draft x ~ q) or "top" (the n most likely tokens of
#: q, in descending q order: the tree's children), and the n each allows.
_TREE_RULES = ("sglang", "typical")  # defined for several candidates at one position
_SAMPLE_ONLY = ("entropy",)  # its accept test reads q(x): a sampled draft
TYPICAL_EPS = 1e-5  # vLLM's TypicalAcceptanceSampler: log(p + 1e-5) in the entropy
ENTROPY_EPS = 1e-10  # vLLM-Ascend's EPSILON in the entropy of entropy verify
SGLANG_MIN_ACC = 1e-9  # SGLang clamps threshold_acc to at least this (no division by 0)


@dataclass(frozen=True)
class Setting:
    """A validated rule, its settings, the draft kind and n."""

    rule: str
    values: Mapping[str, Any]
    drafts: str
    n: int


def _number(name: str, x: Any, lo: float, hi: float) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(x).__name__}")
    v = float(x)
    if not (lo <= v <= hi):
        raise ValueError(f"{name}: expected a number in [{lo:g}, {hi:g}], got {x!r}")
    return v


def resolve(rule: str, n: Any = 1, drafts: str | None = None, **settings: Any) -> Setting:
    """Validate ``rule``, ``n``, ``drafts`` and the settings (unknown names are refused)."""
    if not isinstance(rule, str) or rule not in DEFAULTS:
        raise ValueError(f"rule: expected one of {', '.join(map(repr, RULES))}, got {rule!r}")
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n: expected an integer, got {type(n).__name__}")
    n = int(n)
    if not 1 <= n <= 64:
        raise ValueError(f"n: expected 1 <= n <= 64, got {n}")
    unknown = set(settings) - set(DEFAULTS[rule])
    if unknown:
        known = ", ".join(DEFAULTS[rule])
        raise ValueError(f"{sorted(unknown)[0]}: not a setting of rule {rule!r} (its settings: {known}, drafts)")
    vals = {**DEFAULTS[rule], **settings}
    if rule == "sglang":
        vals = {k: _number(k, vals[k], 0.0, 1.0) for k in vals}
    elif rule in ("typical", "entropy"):
        vals = {
            "posterior_threshold": _number("posterior_threshold", vals["posterior_threshold"], 0.0, 1.0),
            "posterior_alpha": _number("posterior_alpha", vals["posterior_alpha"], 0.0, math.inf),
        }
    else:
        k = vals["relaxed_topk"]
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= 2**31 - 1:
            raise ValueError(f"relaxed_topk: expected an integer >= 1, got {k!r}")
        vals = {"relaxed_topk": int(k), "relaxed_delta": _number("relaxed_delta", vals["relaxed_delta"], 0.0, 1.0)}
    if drafts is None:
        drafts = "sample" if n == 1 else "top"
    if drafts not in ("sample", "top"):
        raise ValueError(f"drafts: expected 'sample' or 'top', got {drafts!r}")
    if drafts == "sample" and n != 1:
        raise ValueError("drafts: 'sample' is one draft x ~ q (n = 1); several candidates are the top n of q")
    if rule in _SAMPLE_ONLY and drafts != "sample":
        raise ValueError(f"drafts: rule {rule!r} tests p(x) / q(x) of a sampled draft; only drafts='sample'")
    if n > 1 and rule not in _TREE_RULES:
        raise ValueError(f"n: rule {rule!r} verifies one draft per position (a chain); n = 1 only")
    return Setting(rule, vals, drafts, n)


def draft_order(q: Array, n: int) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """(B, n) token ids of the n most likely draft tokens (descending q, lower id first on ties)
    and which of them exist: a drafter proposes no token of probability 0, so a row with fewer
    than n such tokens has fewer children (they come last in this order)."""
    order = np.argsort(-q, axis=1, kind="stable")[:, :n]
    real: NDArray[np.bool_] = np.take_along_axis(q, order, axis=1) > 0
    return order, real


def _argmax_first(p: Array) -> NDArray[np.int64]:
    return np.asarray(np.argmax(p, axis=1), dtype=np.int64)  # numpy returns the first maximum


def _entropy_threshold(p: Array, s: Setting, eps: float, inside: bool) -> Array:
    """Typical acceptance: min(threshold, alpha * exp(-H)); entropy verify: min(exp(-alpha H), threshold)."""
    h = -(p * np.log(p + eps)).sum(axis=1)
    a, t = s.values["posterior_alpha"], s.values["posterior_threshold"]
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = a * np.exp(-h) if inside else np.exp(-h * a)
    return np.asarray(np.minimum(t, np.nan_to_num(scaled, nan=0.0)), dtype=np.float64)


def _point_fallback(p: Array, q: Array, acc: Array, fallback: NDArray[np.int64]) -> Array:
    """delta of a law that outputs the draft x when accepted (prob acc[x] per unit of q) and the
    token ``fallback`` otherwise; the drafts are x ~ q."""
    law = q * acc
    rows = np.arange(p.shape[0])
    law[rows, fallback] += 1.0 - law.sum(axis=1)
    return law - p


def _point_fallback_top(p: Array, cand: NDArray[np.int64], ok: NDArray[np.bool_], fallback: NDArray[np.int64]) -> Array:
    """delta when the output is the first candidate that passes, else ``fallback``."""
    B = p.shape[0]
    rows = np.arange(B)
    law = np.zeros_like(p)
    first = np.argmax(ok, axis=1)
    hit = ok[rows, first]
    law[rows[hit], cand[rows[hit], first[hit]]] = 1.0
    law[rows[~hit], fallback[~hit]] = 1.0
    return law - p


def _sglang_sample(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    """One child x ~ q; rejected: the final token from p with x removed (target-only residual)."""
    ts = s.values["threshold_single"]
    ta = max(s.values["threshold_acc"], SGLANG_MIN_ACC)
    acc = np.where(p >= ts, 1.0, np.minimum(1.0, p / ta))
    acc = np.where(p > 0, acc, 0.0)
    e = acc - p  # extra acceptance over the lossless min(1, p) = p: exactly 0 at (1, 1)
    denom = 1.0 - p
    safe = denom > 0
    w = np.where(safe, q * e / np.where(safe, denom, 1.0), 0.0)  # rejections sent to the residual
    T = w.sum(axis=1, keepdims=True)
    delta = q * e - p * (T - w)
    return (q * acc).sum(axis=1), delta


def _sglang_top(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    """Children = the top n of q in sibling order; one coin, cumulative p over siblings."""
    ts = s.values["threshold_single"]
    ta = max(s.values["threshold_acc"], SGLANG_MIN_ACC)
    cand, real = draft_order(q, s.n)
    B = p.shape[0]
    rows = np.arange(B)[:, None]
    pc = np.where(real, p[rows, cand], 0.0)
    A = np.minimum(np.cumsum(pc, axis=1), 1.0)  # a probability's prefix sums never exceed 1
    A_prev = np.concatenate([np.zeros((B, 1)), A[:, :-1]], axis=1)
    single = (pc >= ts) & (pc > 0)
    blocked = np.cumsum(single, axis=1) - single > 0  # an earlier child passed surely
    low = np.minimum(A_prev / ta, 1.0)
    straddle = np.where(A <= ta, pc / ta, 1.0 - low)  # P(A_prev/ta <= u < A/ta); p/ta when no clip
    prob = np.where(single, 1.0 - low, np.where(A_prev >= ta, 0.0, straddle))
    prob = np.where(blocked | (pc <= 0), 0.0, prob)
    noclip = ~blocked & (pc > 0) & ~single & (A <= ta)
    e = np.where(noclip, pc / ta - pc, prob - pc)  # pc / ta - pc: exactly 0 at threshold_acc = 1
    e = np.where(real, e, 0.0)
    rest = p.copy()
    r, c = np.nonzero(real)
    rest[r, cand[r, c]] = 0.0
    R = rest.sum(axis=1, keepdims=True)
    E = e.sum(axis=1, keepdims=True)
    delta = -np.where(R > 0, rest * E / np.where(R > 0, R, 1.0), 0.0)
    delta[r, cand[r, c]] = e[r, c]
    return prob.sum(axis=1), delta


def _typical(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    """Accept iff p(x) > tau; rejected: the token the target's own sampler drew (a draw from p)."""
    tau = _entropy_threshold(p, s, TYPICAL_EPS, inside=True)[:, None]
    if s.drafts == "sample":
        acc = (p > tau).astype(np.float64)
        A = (q * acc).sum(axis=1)
        return A, q * acc - A[:, None] * p
    cand, real = draft_order(q, s.n)
    ok: NDArray[np.bool_] = (p[np.arange(p.shape[0])[:, None], cand] > tau) & real
    hit = np.asarray(np.any(ok, axis=1), dtype=bool)
    law = np.zeros_like(p)
    rows = np.flatnonzero(hit)
    law[rows, cand[rows, np.argmax(ok[rows], axis=1)]] = 1.0
    return hit.astype(np.float64), law - hit[:, None] * p


def _relaxed_accepts(p: Array, s: Setting) -> NDArray[np.bool_]:
    """(B, V): token accepted by TensorRT-LLM's relaxed test: rank 0, or rank < relaxed_topk with
    p >= p_max - relaxed_delta (ranks by descending p, lower id first on ties)."""
    B, V = p.shape
    k = min(s.values["relaxed_topk"], V)
    order = np.argsort(-p, axis=1, kind="stable")[:, :k]
    rows = np.arange(B)[:, None]
    vals = p[rows, order]
    ok_rank = vals >= (vals[:, :1] - s.values["relaxed_delta"])
    ok_rank[:, 0] = True
    out = np.zeros((B, V), dtype=bool)
    out[rows, order] = ok_rank
    return out


def _relaxed(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    ok = _relaxed_accepts(p, s)
    top = _argmax_first(p)
    if s.drafts == "sample":
        acc = ok.astype(np.float64)
        return (q * acc).sum(axis=1), _point_fallback(p, q, acc, top)
    cand, _ = draft_order(q, 1)  # q sums to 1: its most likely token has q > 0
    okc = ok[np.arange(p.shape[0])[:, None], cand]
    return okc[:, 0].astype(np.float64), _point_fallback_top(p, cand, okc, top)


def _entropy(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    """vLLM-Ascend's entropy verify: accept iff q(x) > 0 and p(x)/q(x) >= tau * u; rejected: the
    recovered token from max(p - q, 0)."""
    tau = _entropy_threshold(p, s, ENTROPY_EPS, inside=False)[:, None]
    pos = q > 0
    qs = np.where(pos, q, 1.0)
    base = np.where(pos, np.minimum(1.0, p / qs), 0.0)
    with np.errstate(divide="ignore"):
        acc = np.where(pos, np.where(tau > 0, np.minimum(1.0, p / (tau * qs)), 1.0), 0.0)
    e = q * (acc - base)  # exactly 0 when tau == 1
    resid = np.maximum(p - q, 0.0)
    Z = resid.sum(axis=1, keepdims=True)
    E = e.sum(axis=1, keepdims=True)
    delta = e - np.where(Z > 0, resid * E / np.where(Z > 0, Z, 1.0), 0.0)
    return (q * acc).sum(axis=1), delta


_EXACT = {"typical": _typical, "relaxed": _relaxed, "entropy": _entropy}


def exact_rows(p: Array, q: Array, s: Setting) -> tuple[Array, Array]:
    """(acceptance (B,), delta (B, V)) for renormalised float64 rows; law = p + delta."""
    if s.rule == "sglang":
        return _sglang_sample(p, q, s) if s.drafts == "sample" else _sglang_top(p, q, s)
    return _EXACT[s.rule](p, q, s)
