"""The full-vocabulary ``wor`` route on held-out rows (tests/_support/heldout.py): certification floor, gap ceiling.

The route (``"sweep"``; ``"optimal"`` with scheme ``"wor"`` refuses the rows it cannot certify) was
tuned on the shipped dataset. Here it is run on 20 synthetic LLM-like rows it was never tuned on
(seed 0, rows 0-19 of ``heldout_rows``: V = 49,152, every (T, top-k) pair of T in {0.6, 1.0, 1.3}
and k in {full, 20, 100, 1000}, mild and strong drafts) at n = 2 and n = 4, 40 (row, n) cases.

Two budgets. With a large work budget (LARGE_BUDGET, every order the route has) the 40 cases
measured 40 certified, mean gap 1.5e-15, max 1.9e-14 (the unbounded route of 0.1.0 certified every
held-out case of bench/README.md but one, 4.0e-6 short), so:

- FLOOR: at least 38 of the 40 cases (95 %) certified. Three refused rows fail it.
- CEILING: mean gap ≤ 1e-10, i.e. the gaps sum to at most 4e-9: any one case more than 4e-9 short
  of α*_wor fails it, while 40 certified rows at the shipped data's worst certified gap (2e-10)
  would still pass.

With the default budget (WOR_WORK_BUDGET, ~0.25 s per row at most) the route stops after about its
first order: measured 34 of 40 certified, mean gap 2.0e-3, max 4.1e-2; FLOOR_DEFAULT = 0.80 and
CEILING_DEFAULT = 4e-3 keep a margin and fail if the first order gets worse.

``test_thresholds_catch_a_weaker_route`` shows that the check can fail: the same thresholds
applied to ``rrs-wor`` (a lossless but not optimal without-replacement verifier) on the cases whose
exact acceptance it can afford fail both.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from heldout import heldout_rows
from mdsd_fast import _core

SEED, ROWS, NS = 0, 20, (2, 4)
CERT_TOL = 1e-9
FLOOR = 0.95  # share of (row, n) cases within CERT_TOL of alpha*_wor; measured 1.0 (large budget)
CEILING = 1e-10  # mean of max(alpha*_wor - acceptance, 0); measured 1.5e-15 (large budget)
# With the default work budget (mf.WOR_WORK_BUDGET: ~0.25 s per row at most) the route stops after
# about its first order: measured 34 of 40 cases certified, mean gap 2.0e-3, max 4.1e-2.
FLOOR_DEFAULT = 0.80
CEILING_DEFAULT = 4e-3
LARGE_BUDGET = 1e11  # grid operations: enough for every order the route has on these rows


@pytest.fixture(scope="module")
def rows():
    return heldout_rows(ROWS, SEED)


def _stars(P, Q):
    return {n: [float(mf.optimal_acceptance(P[i], Q[i], n, "wor", threads=1)) for i in range(len(P))] for n in NS}


def check(gaps: list[float], floor: float = FLOOR, ceiling: float = CEILING) -> list[str]:
    """The failures of the floor and the ceiling (empty: pass)."""
    g = np.maximum(np.asarray(gaps, dtype=np.float64), 0.0)
    share, mean = float(np.mean(g <= CERT_TOL)), float(g.mean())
    fails = []
    if share < floor:
        fails.append(f"certified share {share:.3f} < floor {floor} ({int((g <= CERT_TOL).sum())}/{g.size})")
    if mean > ceiling:
        fails.append(f"mean gap {mean:.2e} > ceiling {ceiling:g} (max {g.max():.2e})")
    return fails


def test_heldout_rows_look_llm_like(rows):
    from heldout import describe

    P, Q, meta = rows
    assert P.shape == Q.shape == (ROWS, 49_152)
    assert np.allclose(P.sum(1), 1.0, atol=1e-12) and np.allclose(Q.sum(1), 1.0, atol=1e-12)
    d = describe(P, Q)
    assert 0.3 <= np.median(d["overlap"]) <= 0.95  # the shipped skip drafts: medians 0.37-0.63
    assert 0.2 <= np.median(d["entropy_p"]) <= 5.0  # shipped: 1.1 (T = 0.7) and 3.1 nats (T = 1.0)
    assert {m["top_k"] for m in meta} == {0, 20, 100, 1000}
    assert {m["temperature"] for m in meta} == {0.6, 1.0, 1.3}
    assert {m["mismatch"] for m in meta} == {"mild", "strong"}
    P2, Q2, _ = heldout_rows(3, SEED, start=5)  # deterministic, independent of the count
    assert np.array_equal(P2, P[5:8]) and np.array_equal(Q2, Q[5:8])


@pytest.mark.parametrize(
    "budget, floor, ceiling",
    [(None, FLOOR_DEFAULT, CEILING_DEFAULT), (LARGE_BUDGET, FLOOR, CEILING)],
    ids=["default-budget", "large-budget"],
)
def test_wor_route_certifies_heldout_rows(rows, budget, floor, ceiling):
    P, Q, meta = rows
    stars = _stars(P, Q)
    gaps, worst = [], []
    work = mf.WOR_WORK_BUDGET if budget is None else budget
    for n in NS:
        for i in range(ROWS):
            b = _core.verifiers.VerifierBatch("sweep", P[i : i + 1], Q[i : i + 1], n, "wor", None, 1, work)
            gap = stars[n][i] - float(b.exact(2e8, 1)[0])
            gaps.append(gap)
            worst.append((gap, n, meta[i]["index"], meta[i]["draft"], meta[i]["temperature"]))
    worst.sort(reverse=True)
    fails = check(gaps, floor, ceiling)
    assert not fails, f"{fails}; worst (gap, n, index, draft, T): {worst[:5]}"


def test_thresholds_catch_a_weaker_route(rows):
    # rrs-wor is lossless for these drafts but not optimal; its exact acceptance costs ~K^(n-1) for
    # K draft tokens, so only the cases within the exact budget are used (top-k rows, full rows at n = 2).
    P, Q, _ = rows
    stars = _stars(P, Q)
    gaps = []
    for n in NS:
        for i in range(ROWS):
            try:
                acc = float(mf.acceptance("rrs-wor", P[i], Q[i], n, threads=1))
            except mf.TooLargeError:
                continue
            gaps.append(stars[n][i] - acc)
    assert len(gaps) >= 20
    fails = check(gaps)
    assert len(fails) == 2, f"the thresholds let rrs-wor pass: {fails}, gaps {sorted(gaps)[-5:]}"
