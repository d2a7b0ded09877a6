"""Lossy rules: exactly lossless where their settings make them so, equal to simulation on real
rows, and every argument checked."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import lossy


def _rows(seed: int, B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    p = g.dirichlet(np.full(V, 0.5), size=B)
    q = g.dirichlet(np.full(V, 0.5), size=B)
    p[:, 0] = 0.0  # a zero in every row
    return p / p.sum(axis=1, keepdims=True), q


@pytest.mark.parametrize(
    ("rule", "settings", "ns"),
    [
        ("sglang", {"threshold_single": 1.0, "threshold_acc": 1.0}, (1, 2, 3, 5)),
        ("entropy", {"posterior_threshold": 1.0, "posterior_alpha": 0.0}, (1,)),
    ],
)
def test_exactly_lossless_at_lossless_settings(rule: str, settings: dict, ns: tuple[int, ...]) -> None:
    p, q = _rows(1, 200, 9)
    for n in ns:
        for i in range(p.shape[0]):
            r = lossy.evaluate(rule, p[i], q[i], n, **settings)
            assert r.tv == 0.0 and r.kl == 0.0
            assert np.abs(r.law - p[i]).max() < 1e-15  # tv == 0: the law is the renormalised p itself
    # the negative control: the same rows with thresholds below 1 pay a distance
    lossy_settings = {"sglang": {"threshold_single": 0.5, "threshold_acc": 0.7}, "entropy": {}}[rule]
    rows = lossy.evaluate_rows(rule, p, q, 1, **lossy_settings)
    assert (rows.tv > 1e-3).mean() > 0.5


def test_sglang_acceptance_at_lossless_settings_is_mass_of_children() -> None:
    p, q = _rows(2, 50, 7)
    for i in range(50):
        top = np.argsort(-q[i], kind="stable")[:3]
        r = lossy.evaluate("sglang", p[i], q[i], 3)
        assert abs(r.acceptance - p[i][top].sum()) < 1e-12
        s = lossy.evaluate("sglang", p[i], q[i], 1)  # one child x ~ q: sum_x q(x) p(x)
        assert abs(s.acceptance - float(q[i] @ p[i])) < 1e-12


def test_entropy_at_tau_one_matches_standard_rejection_sampling() -> None:
    p, q = _rows(3, 100, 8)
    rows = lossy.evaluate_rows("entropy", p, q, posterior_threshold=1.0, posterior_alpha=0.0)
    np.testing.assert_allclose(rows.acceptance, mf.acceptance("sd", p, q, 1), atol=1e-12)


def test_batch_equals_single_and_thresholds_buy_acceptance() -> None:
    p, q = _rows(4, 40, 11)
    for rule in lossy.RULES:
        rows = lossy.evaluate_rows(rule, p, q)
        for i in (0, 17, 39):
            r = lossy.evaluate(rule, p[i], q[i])
            assert abs(rows.acceptance[i] - r.acceptance) < 1e-12 and abs(rows.tv[i] - r.tv) < 1e-12
    loose = lossy.evaluate_rows("sglang", p, q, threshold_single=0.3, threshold_acc=0.5)
    tight = lossy.evaluate_rows("sglang", p, q)
    assert (loose.acceptance >= tight.acceptance - 1e-12).all() and loose.acceptance.mean() > tight.acceptance.mean()


SIM = [
    ("sglang", {"threshold_single": 0.3, "threshold_acc": 0.5}, 1),
    ("sglang", {"threshold_single": 0.5, "threshold_acc": 0.8}, 3),
    ("typical", {"posterior_threshold": 0.09, "posterior_alpha": 0.3}, 1),
    ("typical", {"posterior_threshold": 0.09, "posterior_alpha": 0.3}, 2),
    ("entropy", {"posterior_threshold": 0.95, "posterior_alpha": 0.4}, 1),
    ("relaxed", {"relaxed_topk": 10, "relaxed_delta": 0.6}, 1),
]


@functools.cache
def _dataset() -> mf.LMDataset:
    return mf.load_dataset()


@functools.cache
def _support(i: int) -> tuple[np.ndarray, np.ndarray]:
    """A shipped row on its stored support (the tokens outside have p = q = 0)."""
    _, p, q = _dataset().sparse_row(i)
    p = p.astype(np.float64)
    q = q.astype(np.float64)
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize(("rule", "settings", "n"), SIM)
def test_simulation_on_real_rows_within_four_standard_errors(rule: str, settings: dict, n: int) -> None:
    N = 4000
    for k, i in enumerate((3, 40, 100)):  # three prompts, two drafts
        p, q = _support(i)
        r = lossy.evaluate(rule, p, q, n, **settings)
        toks, acc = lossy.simulate(rule, p, q, N, rng=[k, n], n=n, **settings)
        events = [(acc, r.acceptance)]
        for t in np.argsort(-r.law)[:4]:  # the most likely outputs, and everything else
            events.append((toks == t, r.law[t]))
        events.append((~np.isin(toks, np.argsort(-r.law)[:4]), 1.0 - np.sort(r.law)[::-1][:4].sum()))
        for hits, prob in events:
            se = max(np.sqrt(prob * (1 - prob) / N), 1.0 / N)
            assert abs(hits.mean() - prob) < 4 * se, (rule, i, prob, hits.mean())


def test_simulation_tells_a_lossy_rule_from_the_target() -> None:
    """Power: the same checks against p itself fail for a rule whose distance is large."""
    p, q = _support(3)
    r = lossy.evaluate("relaxed", p, q, relaxed_topk=10, relaxed_delta=0.6)
    assert r.tv > 0.05
    toks, _ = lossy.simulate("relaxed", p, q, 4000, rng=0, relaxed_topk=10, relaxed_delta=0.6)
    worst = max(abs((toks == t).mean() - p[t]) / np.sqrt(p[t] * (1 - p[t]) / 4000) for t in np.argsort(-p)[:4])
    assert worst > 4


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"rule": "nope"}, ValueError, "rule: expected one of"),
        ({"rule": "sglang", "threshold_acc": 1.5}, ValueError, "threshold_acc: expected a number in"),
        ({"rule": "sglang", "threshold_single": "x"}, TypeError, "threshold_single: expected a number"),
        ({"rule": "sglang", "posterior_alpha": 0.1}, ValueError, "posterior_alpha: not a setting of rule 'sglang'"),
        ({"rule": "relaxed", "relaxed_topk": 0}, ValueError, "relaxed_topk: expected an integer"),
        ({"rule": "relaxed", "n": 2}, ValueError, "n: rule 'relaxed' verifies one draft"),
        ({"rule": "entropy", "drafts": "top"}, ValueError, "drafts: rule 'entropy'"),
        ({"rule": "typical", "n": 2, "drafts": "sample"}, ValueError, "drafts: 'sample' is one draft"),
        ({"rule": "typical", "n": True}, TypeError, "n: expected an integer"),
        ({"rule": "typical", "n": 0}, ValueError, "n: expected 1 <= n"),
    ],
)
def test_arguments_are_checked(kwargs: dict, err: type, msg: str) -> None:
    p = np.array([0.5, 0.3, 0.2])
    with pytest.raises(err, match=msg):
        lossy.evaluate(p=p, q=p[::-1].copy(), **kwargs)


def test_inputs_are_checked_and_not_mutated() -> None:
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    p0, q0 = p.copy(), q.copy()
    lossy.evaluate("sglang", p, q, threshold_acc=0.5)
    assert np.array_equal(p, p0) and np.array_equal(q, q0)
    with pytest.raises(ValueError, match="p"):
        lossy.evaluate("sglang", np.array([0.5, 0.6, 0.2]), q)
    with pytest.raises(ValueError, match="evaluate_rows"):
        lossy.evaluate("sglang", np.tile(p, (2, 1)), q)
    with pytest.raises(ValueError, match="samples"):
        lossy.simulate("sglang", p, q, 0)
