"""Ports of two public multi-draft verifiers under the audit contract
(mdsd_fast.audit.thirdparty.spectr_gbv and .subspec_traversal; docs/findings/public_verifiers.md).

Each port's exact output law is computed by enumeration and checked two ways: against the port
sampled (4.5 standard errors per token), and against an independent formula where one exists
(GBV with one candidate is the published lossless block verification, so its law must be p; the
gamma = 1 SpecTr step has a closed form). The audit's verdict must then follow the exact law: a
case whose exact TV exceeds the audit's stated detectable TV fails, a lossless configuration
passes."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.audit import AuditCase
from mdsd_fast.audit.thirdparty import spectr_gbv as G
from mdsd_fast.audit.thirdparty import subspec_traversal as S


def _ro(x: list[float]) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    a.flags.writeable = False
    return a


CASES = [
    (_ro([0.5, 0.3, 0.2]), _ro([0.2, 0.3, 0.5])),
    (_ro([0.1, 0.6, 0.3, 0.0]), _ro([0.4, 0.3, 0.2, 0.1])),
    (_ro([0.25, 0.25, 0.25, 0.25]), _ro([0.7, 0.1, 0.1, 0.1])),
]


def _tv(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a - b).sum())


def _sampled(verify, p, q, n, scheme, N, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    out = np.zeros(p.size)
    for _ in range(N):
        d = rng.choice(p.size, size=n, replace=scheme == "iid", p=q)
        out[verify(p, q, d, rng)] += 1
    return out / N


def _close(freq: np.ndarray, law: np.ndarray, N: int) -> bool:
    se = np.sqrt(law * (1 - law) / N) + 1e-12
    return bool(np.all(np.abs(freq - law) <= 4.5 * se))


@pytest.mark.parametrize("p, q", CASES)
def test_gbv_law_is_p_with_one_candidate_and_not_with_two(p: np.ndarray, q: np.ndarray) -> None:
    for gamma in (1, 2, 3):
        np.testing.assert_allclose(G.first_token_law(p, q, 1, gamma), p, atol=1e-13)
    # gamma = 1 by a closed form: candidates tried in order, each kept with its own probability
    a = np.zeros_like(p)
    pos = q > 0
    r = np.minimum(q[pos] / (p[pos] + G.EPS), 1.0)
    a[pos] = np.clip(p[pos] * (1 - (1 - r) ** 2) / (1 - (1 - q[pos]) ** 2 + G.EPS), 0, 1)
    A = float((q * a).sum())
    res = p * (1 - np.minimum(q / (p + G.EPS), 1.0) ** 2)
    closed = q * a * (1 + (1 - A)) + (1 - A) ** 2 * res / res.sum()
    np.testing.assert_allclose(G.first_token_law(p, q, 2, 1), closed, atol=1e-13)
    assert _tv(G.first_token_law(p, q, 2, 2), p) > 0.01


def test_gbv_sampled_port_matches_its_exact_law() -> None:
    p, q = CASES[0]
    law = G.first_token_law(p, q, 2, 2)
    assert _close(_sampled(G.verify, p, q, 2, "iid", 4000, 1), law, 4000)
    assert not _close(_sampled(G.verify, p, q, 2, "iid", 4000, 1), p, 4000)  # negative control
    with pytest.raises(ValueError, match="all zero"):  # p = q: a rejection leaves no residual
        for seed in range(50):
            _sampled(G.verify_gamma1, q, q, 2, "iid", 20, seed)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_traversal_sampled_port_matches_its_exact_law(n: int) -> None:
    p, q = CASES[1]
    law, acc = S.output_law(p, q, n)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    assert _close(_sampled(S.verify, p, q, n, "wor", 4000, 2), law, 4000)
    if n == 1:  # one child: keep it with min(1, p/q), otherwise draw from p itself (no residual)
        keep = np.minimum(1.0, np.divide(p, q, out=np.zeros_like(p), where=q > 0))
        alpha = float((q * keep).sum())
        np.testing.assert_allclose(law, q * keep + (1 - alpha) * p, atol=1e-14)
        assert acc == pytest.approx(alpha, abs=1e-14) and acc == pytest.approx(mf.acceptance("sd", p, q, 1))
    assert _tv(law, p) > 0.01


def test_audit_verdicts_follow_the_exact_laws() -> None:
    cases = [AuditCase(f"c{i}", p, q) for i, (p, q) in enumerate(CASES)]
    runs = [
        (G.verify, "iid", 2, lambda p, q: G.first_token_law(p, q, 2, 2)),
        (S.verify, "wor", 2, lambda p, q: S.output_law(p, q, 2)[0]),
        (S.verify, "wor", 1, lambda p, q: S.output_law(p, q, 1)[0]),
    ]
    for verify, scheme, n, law in runs:
        res = mf.audit(verify, scheme, n, cases=cases, samples=4000, rng=5)
        detectable = 0
        for c, (p, q) in zip(res.cases, CASES, strict=True):
            tv = _tv(law(p, q), p)
            if tv > c.tv_detectable:
                detectable += 1
                assert c.verdict == "FAIL", (verify, n, c.name, tv, c.tv_detectable)
            lo, hi = c.tv_ci
            assert lo - c.pooled_mass <= tv <= hi + c.pooled_mass, (c.name, tv, c.tv_ci)
        assert detectable >= 1 and not res.lossless
    assert mf.audit(G.SpecTrGBV(2), "iid", 1, cases=cases, samples=4000, rng=5).lossless  # GBV alone is lossless
