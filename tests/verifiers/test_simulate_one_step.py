"""simulate(..., samples=1) of one (V,) pair without a plan: its law, its route, its errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.verifiers import run
from stats import LEVEL, chi2_pvalue

P = np.array([0.30, 0.05, 0.25, 0.10, 0.20, 0.10])
Q = np.array([0.10, 0.30, 0.05, 0.25, 0.10, 0.20])
STEPS = 12_000


def _steps(name: str, n: int, p: np.ndarray = P, q: np.ndarray = Q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    out = [mf.simulate(name, p, q, n, 1, rng=s) for s in range(STEPS)]
    return (
        np.concatenate([o.tokens for o in out]),
        np.concatenate([o.accepted for o in out]),
        np.concatenate([o.drafts for o in out]),
    )


@pytest.mark.parametrize(("name", "n"), [("rrs", 3), ("kseq", 2), ("optimal", 2), ("sd", 1)])
def test_one_step_follows_the_target_and_the_exact_acceptance(name: str, n: int) -> None:
    tokens, accepted, drafts = _steps(name, n)
    assert chi2_pvalue(tokens, P)[0] > LEVEL  # the output law is p
    assert chi2_pvalue(drafts.ravel(), Q)[0] > LEVEL  # the drafts are i.i.d. from q
    # the negative control: the same counts reject a law 0.05 away in total variation
    wrong = P.copy()
    wrong[0] -= 0.05
    wrong[1] += 0.05
    assert chi2_pvalue(tokens, wrong)[0] < LEVEL
    assert chi2_pvalue(drafts.ravel(), P)[0] < LEVEL
    # accepted means the output is one of the drafts, at the verifier's exact rate
    assert np.array_equal(accepted, (drafts == tokens[:, None]).any(axis=1))
    a = mf.acceptance(name, P, Q, n)
    assert abs(accepted.mean() - a) <= 5 * math.sqrt(a * (1 - a) / STEPS)


def test_one_step_builds_no_plan_and_more_samples_do(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_plan(*args: object, **kwargs: object) -> None:
        raise AssertionError("a plan was built")

    monkeypatch.setattr(run, "_prepare_ids", no_plan)
    s = mf.simulate("rrs", P.astype(np.float32), Q.astype(np.float32), 3, 1, rng=7)
    assert s.tokens.dtype == np.int64 and s.tokens.shape == (1,)
    assert s.accepted.dtype == np.bool_ and s.accepted.shape == (1,)
    assert s.drafts.dtype == np.int64 and s.drafts.shape == (1, 3)
    with pytest.raises(AssertionError, match="a plan was built"):
        mf.simulate("rrs", P, Q, 3, 2, rng=7)
    with pytest.raises(AssertionError, match="a plan was built"):  # keyed streams: the plan route
        mf.simulate("rrs", P, Q, 3, 1, rng=7, row_ids=[3])
    with pytest.raises(AssertionError, match="a plan was built"):  # drafts without replacement
        mf.simulate("rrs-wor", P, Q, 3, 1, rng=7)


def test_one_step_is_a_function_of_the_seed_alone() -> None:
    a = mf.simulate("kseq", P, Q, 3, 1, rng=11, threads=1)
    b = mf.simulate("kseq", P, Q, 3, 1, rng=11, threads=2)
    c = mf.simulate("kseq", P, Q, 3, 1, rng=np.random.default_rng(11))
    for x in (b, c):
        assert np.array_equal(a.tokens, x.tokens) and np.array_equal(a.drafts, x.drafts)
        assert np.array_equal(a.accepted, x.accepted)
    p, q = P.copy(), Q.copy()
    mf.simulate("rrs", p, q, 3, 1, rng=1)
    assert np.array_equal(p, P) and np.array_equal(q, Q) and p.flags.writeable


@pytest.mark.parametrize(
    ("p", "q", "n", "message"),
    [
        (np.array([0.5, 0.6, -0.1]), np.array([0.2, 0.3, 0.5]), 2, "p: row 0 has negative entries"),
        (np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.6, -0.1]), 2, "q: row 0 has negative entries"),
        (np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5, np.nan]), 2, "q: row 0 contains NaN or inf"),
        (np.array([0.2, 0.3, 0.5]), np.array([0.0, 0.0, 0.0]), 2, "q: row 0 sums to 0"),
        (np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3, 0.4]), 2, "q: row 0 sums to 0.9"),
        (np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3, 0.5]), 0, "n"),
    ],
)
def test_one_step_names_what_the_plan_route_names(p: np.ndarray, q: np.ndarray, n: int, message: str) -> None:
    errors = []
    for samples in (1, 2):  # no plan, then a plan
        with pytest.raises(ValueError) as exc:
            mf.simulate("rrs", p, q, n, samples, rng=1)
        errors.append(str(exc.value))
    assert errors[0] == errors[1]
    assert message in errors[0]


def test_one_step_names_a_bad_rng_and_sd_s_single_draft() -> None:
    with pytest.raises(TypeError, match="rng: expected anything numpy.random.default_rng accepts"):
        mf.simulate("rrs", P, Q, 2, 1, rng="seed")
    with pytest.raises(ValueError, match="handles n = 1"):
        mf.simulate("sd", P, Q, 2, 1, rng=1)
