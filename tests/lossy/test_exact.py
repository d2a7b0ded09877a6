"""The closed-form laws of mdsd_fast.lossy against exact enumeration of each rule's step-by-step
procedure (lossy/sampler.py): every draft, every interval of the coin between its breakpoints,
and every token of the final draw, each weighted by its exact probability."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mdsd_fast import lossy
from mdsd_fast.lossy.rules import resolve
from mdsd_fast.lossy.sampler import row_constants, step

RULE_SETTINGS = {
    "sglang": lambda g: {
        "threshold_single": float(g.choice([1.0, g.uniform(0.05, 1)])),
        "threshold_acc": float(g.choice([1.0, g.uniform(0.05, 1)])),
    },
    "typical": lambda g: {
        "posterior_threshold": float(g.uniform(0.01, 0.6)),
        "posterior_alpha": float(g.uniform(0, 1)),
    },
    "entropy": lambda g: {
        "posterior_threshold": float(g.choice([1.0, g.uniform(0.3, 1)])),
        "posterior_alpha": float(g.choice([0.0, g.uniform(0, 2)])),
    },
    "relaxed": lambda g: {"relaxed_topk": int(g.integers(1, 7)), "relaxed_delta": float(g.uniform(0, 0.8))},
}


def _row(g: np.random.Generator, V: int) -> np.ndarray:
    x = g.dirichlet(np.full(V, float(g.choice([0.3, 1.0, 3.0]))))
    if g.random() < 0.3:
        x[g.integers(V)] = 0.0  # zeros in the support
    if g.random() < 0.1:
        x = np.round(x * 4) + (np.arange(V) == 0)  # ties
    return x / x.sum()


def _enumerate(
    rule: str, p: np.ndarray, q: np.ndarray, n: int, settings: dict, drafts: str
) -> tuple[float, np.ndarray]:
    """(acceptance, law) of the procedure by exact enumeration of its random numbers."""
    s = resolve(rule, n, drafts, **settings)
    const = row_constants(p, s)
    V = p.size
    if s.drafts == "sample":
        draws = [([x], q[x]) for x in range(V) if q[x] > 0]
    else:
        draws = [([int(i) for i in np.argsort(-q, kind="stable")[:n] if q[i] > 0], 1.0)]
    law = np.zeros(V)
    acc = 0.0
    for drafts, w in draws:
        # every value the coin is compared with, whatever the rule
        ta = max(settings.get("threshold_acc", 1.0), 1e-9)
        cuts = {0.0, 1.0}
        cuts |= {float(c) / ta for c in np.cumsum(p[drafts])}
        if "tau" in const and const["tau"] > 0 and q[drafts[0]] > 0:
            cuts.add(float(p[drafts[0]] / q[drafts[0]] / const["tau"]))
        cuts = sorted(c for c in cuts if 0.0 <= c <= 1.0)
        for lo, hi in itertools.pairwise(cuts):
            if hi <= lo:
                continue
            seen: list[np.ndarray] = []

            def final(weights: np.ndarray, seen: list[np.ndarray] = seen) -> int:
                seen.append(weights)
                return -1

            tok, ok = step(s, p, q, drafts, 0.5 * (lo + hi), final, const)
            mass = w * (hi - lo)
            if tok >= 0:
                law[tok] += mass
            else:  # the final draw: each token with its share of the weights
                law += mass * seen[0] / seen[0].sum()
            acc += mass * ok
    return acc, law


CASES = [(rule, seed) for rule in lossy.RULES for seed in range(60)]


@pytest.mark.parametrize(("rule", "seed"), CASES)
def test_law_equals_enumeration(rule: str, seed: int) -> None:
    g = np.random.default_rng([seed, len(rule)])
    V = int(g.integers(2, 7))
    p, q = _row(g, V), _row(g, V)
    settings = RULE_SETTINGS[rule](g)
    ns = [1, int(g.integers(1, V + 1))] if rule in ("sglang", "typical") else [1]
    for n in ns:
        for drafts in ("sample", "top") if n == 1 and rule != "entropy" else ("top" if n > 1 else "sample",):
            r = lossy.evaluate(rule, p, q, n, drafts=drafts, **settings)
            acc, law = _enumerate(rule, p, q, n, settings, drafts)
            np.testing.assert_allclose(r.law, law, atol=1e-12, err_msg=f"{rule} {settings} n={n} {drafts}")
            assert abs(r.acceptance - acc) < 1e-12
            assert abs(r.tv - 0.5 * np.abs(law - p).sum()) < 1e-12
