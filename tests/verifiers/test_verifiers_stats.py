"""Verifiers at scale: statistical losslessness (V = 1,000, 10^6 steps each) with a power check.

For each verifier, 10^6 draft-and-verify steps are simulated in C++ and the output frequencies are
tested against p (Pearson chi-square, cells with expected count < 5 pooled). The test must not
reject at the 1e-6 level, and the same test must reject the deliberately biased variant
(rejections resampled from p instead of the residual), so it has power. The acceptance rate of
the same run must be within 4 standard errors of the exact value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.verifiers.run import _prepare
from reference import tuple_law
from stats import LEVEL, STEPS, chi2_pvalue, chi2_sf


def test_chi2_sf_reference_values() -> None:
    # values of scipy.stats.chi2.sf (scipy 1.17)
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-12)
    assert chi2_sf(1000.0, 1000) == pytest.approx(0.49405285382923964, rel=1e-12)
    assert chi2_sf(1300.0, 1000) == pytest.approx(3.8897364994868366e-10, rel=1e-10)
    assert chi2_sf(1200.0, 900) == pytest.approx(6.586367297779949e-11, rel=1e-10)
    assert chi2_sf(50.0, 10) == pytest.approx(2.669083424904495e-07, rel=1e-12)
    assert chi2_sf(2.0, 4) == pytest.approx(0.7357588823428847, rel=1e-12)


def _pair(seed: int, V: int = 1000, zeros: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """A draft that is half a perturbed copy of the target; zeros in p and in q."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(V, 0.5))
    q = 0.5 * p[rng.permutation(V)] + 0.5 * rng.dirichlet(np.full(V, 0.5))
    p[rng.choice(V, zeros, replace=False)] = 0.0
    q[rng.choice(V, zeros, replace=False)] = 0.0
    return p / p.sum(), q / q.sum()


# name, n, scheme; rrs-wor at n = 3 so that its exact recursion is affordable at V = 1,000
CONFIGS = [
    ("sd", 1, None),
    ("rrs", 4, None),
    ("rrs-wor", 3, None),
    ("kseq", 4, None),
    ("spechub", 2, None),
    ("greedy", 4, None),
    ("optimal-lp", 4, "greedy"),
    ("optimal-lp", 2, "iid"),
]


@pytest.mark.parametrize("name,n,scheme", CONFIGS)
def test_lossless_at_scale(name: str, n: int, scheme: str | None) -> None:
    p, q = _pair(31 + n)
    if scheme == "iid":  # keep the LP small: q on 40 tokens, p on all 1,000
        q = np.zeros_like(q)
        q[np.argsort(-p)[5:45]] = 1.0 / 40
    batch, _ = _prepare(name, p, q, n, scheme, None)
    tokens, accepted, _ = batch.simulate(STEPS, 20260101, 0, False)
    pval, stat, df = chi2_pvalue(tokens[0], p)
    assert pval > LEVEL, (name, pval, stat, df)

    exact = float(batch.exact(mf.EXACT_BUDGET)[0])
    assert 0.05 < exact < 0.95  # the residual matters in this case
    se = math.sqrt(exact * (1 - exact) / STEPS)
    assert abs(accepted.mean() - exact) <= 4 * se, (name, accepted.mean(), exact, se)

    btokens, _, _ = batch.simulate(STEPS, 20260102, 0, True)
    bpval, bstat, bdf = chi2_pvalue(btokens[0], p)
    assert bpval < LEVEL, (name, bpval, bstat, bdf)


@pytest.mark.parametrize("name,n", [("rrs", 3), ("rrs-wor", 3), ("greedy", 3), ("spechub", 2)])
def test_draft_samplers_follow_their_scheme(name: str, n: int) -> None:
    """Tuple frequencies of the C++ draft samplers match the scheme's law (brute force, small V),
    including a q with one dominant token, which exercises the exact fallback of the
    without-replacement rejection sampler."""
    for q in (np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0]), np.array([0.996, 0.001, 0.001, 0.001, 0.0005, 0.0005])):
        p = np.full(6, 1 / 6)
        scheme = mf.verifiers[name].scheme
        if scheme == "spechub":
            a = int(np.argmax(q))
            rest = q.sum() - q[a]
            law = {}
            for i in range(6):
                if i != a and q[i] > 0:
                    law[(i, a)] = q[i]
                    law[(a, i)] = q[a] * q[i] / rest
        else:
            law = dict(tuple_law(q, n, scheme))
        drafts = mf.simulate(name, p, q, n, 400_000, rng=5).drafts
        keys = list(law)
        index = {t: j for j, t in enumerate(keys)}
        codes = np.array([index.get(tuple(t), -1) for t in drafts.tolist()])
        assert (codes >= 0).all(), name
        counts = np.bincount(codes, minlength=len(keys)).astype(float)
        e = np.array([law[t] for t in keys]) * drafts.shape[0]
        big = e >= 5
        o = np.append(counts[big], counts[~big].sum())
        ex = np.append(e[big], e[~big].sum())
        if ex[-1] == 0:
            o, ex = o[:-1], ex[:-1]
        stat = float(((o - ex) ** 2 / ex).sum())
        assert chi2_sf(stat, len(o) - 1) > LEVEL, (name, stat, len(o) - 1)
