""" "optimal" with without-replacement drafts where the user asks for it: its own default budget.

"optimal" refuses a row whose plan it does not certify, so its default work budget
(``mf.limits.WOR_OPTIMAL_WORK_BUDGET``) is larger than the one "sweep" keeps for the report's bounded
time per position (``mf.WOR_WORK_BUDGET``); docs/guide/verifiers.md gives the share of held-out real
rows each certifies. A refusal names the scheme the caller asked for and that scheme's alpha*.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mdsd_fast as mf


@pytest.fixture(scope="module")
def first8() -> tuple[np.ndarray, np.ndarray]:
    return mf.load_dataset()[:8].dense(renormalize=True)


def test_optimal_top1_wor_on_the_first_shipped_rows(first8) -> None:
    P, Q = first8
    got = mf.acceptance("optimal", P, Q, 4, scheme="top1+wor")
    bound = mf.optimal_acceptance(P, Q, 4, "top1+wor")
    assert got.shape == (8,)
    assert np.all(np.abs(got - bound) <= 1e-9)
    # not alpha*_wor: the mixed scheme's own bound (they differ on these rows)
    assert np.max(np.abs(bound - mf.optimal_acceptance(P, Q, 4, "wor"))) > 1e-3


def test_each_verifier_has_its_own_default(first8) -> None:
    P, Q = first8
    small = mf.acceptance("sweep", P, Q, 4, scheme="top1+wor", work_budget=mf.WOR_WORK_BUDGET)
    assert np.array_equal(mf.acceptance("sweep", P, Q, 4, scheme="top1+wor"), small)
    bound = mf.optimal_acceptance(P, Q, 4, "top1+wor")
    short = np.flatnonzero(bound - small > 1e-9)
    assert short.size > 0  # rows the report's bounded budget does not certify ...
    big = mf.acceptance(
        "sweep", P[short], Q[short], 4, scheme="top1+wor", work_budget=mf.limits.WOR_OPTIMAL_WORK_BUDGET
    )
    assert np.all(np.abs(big - bound[short]) <= 1e-9)  # ... certified at the default of "optimal"
    assert mf.limits.WOR_OPTIMAL_WORK_BUDGET > mf.WOR_WORK_BUDGET


@pytest.mark.parametrize("scheme", ["top1+wor", "wor"])
def test_refusal_names_the_scheme_and_its_alpha(first8, scheme: str) -> None:
    P, Q = first8
    kept = mf.acceptance("sweep", P, Q, 4, scheme=scheme, work_budget=1.0)
    bound = mf.optimal_acceptance(P, Q, 4, scheme)
    i = int(np.argmax(bound - kept))
    assert bound[i] - kept[i] > 1e-9
    with pytest.raises(ValueError) as err:
        mf.acceptance("optimal", P[i], Q[i], 4, scheme=scheme, work_budget=1.0)
    msg = str(err.value)
    want = f"'optimal' for '{scheme}' drafts reaches acceptance {kept[i]:.6f}, below alpha*_{scheme} = {bound[i]:.6f}"
    assert want in msg, msg
    assert len(re.findall(r"alpha\*_", msg)) == 1  # no other scheme's bound
