"""The native max-flow (solve_lp(solver="flow")) against HiGHS and brute force."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core
from reference import brute_alpha, random_case, set_law, tuple_law


def _check_plan(res: mf.LPResult, p: np.ndarray) -> None:
    sums = np.add.reduceat(res.flows, res.set_ptr[:-1]) if res.num_sets else np.zeros(0)
    assert np.all(res.flows >= 0)
    assert np.all(sums <= res.set_weights * (1 + 1e-12) + 1e-15)
    assert np.all(res.accepted <= p * (1 + 1e-12) + 1e-15)
    assert res.cut_value == pytest.approx(res.alpha, abs=1e-12)


@pytest.mark.parametrize("seed", range(150))
def test_flow_equals_highs_and_bruteforce(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    V = int(rng.integers(2, 9))
    n = int(rng.integers(1, 5))
    p, q = random_case(rng, V)
    for scheme in ("iid", "wor", "greedy"):
        if scheme != "iid" and n > np.count_nonzero(q):
            continue
        bf, _ = brute_alpha(p, set_law(tuple_law(q, n, scheme)))
        fl = mf.solve_lp(p, q, n, scheme, solver="flow")
        hi = mf.solve_lp(p, q, n, scheme, solver="highs")
        assert fl.solver == "flow" and hi.solver == "highs"
        assert fl.alpha == pytest.approx(bf, abs=1e-12)
        assert hi.alpha == pytest.approx(bf, abs=1e-9)
        _check_plan(fl, p)
    qs = np.stack([random_case(rng, V)[1] for _ in range(min(n, 3))])
    bf, _ = brute_alpha(p, set_law(tuple_law(qs, len(qs), "independent")))
    fl = mf.solve_lp(p, qs, len(qs), "independent", solver="flow")
    assert fl.alpha == pytest.approx(bf, abs=1e-12)
    _check_plan(fl, p)


@pytest.mark.parametrize("k, n", [(10, 4), (10, 5), (50, 3), (200, 2), (1000, 2)])
def test_flow_at_benchmark_sizes(k: int, n: int) -> None:
    """Both routes (with and without the dual's certificate) reach alpha* to 1e-12 at the benchmark sizes."""
    rng = np.random.default_rng(k * 10 + n)
    p = rng.dirichlet(np.full(k, 0.5))
    q = rng.dirichlet(np.full(k, 0.5))
    for scheme in ("iid", "wor"):
        a, H = mf.optimal_acceptance(p, q, n, scheme, return_certificate=True)
        model = _core.bound.FlowModel(p, q, n, scheme, 1e8)
        hinted = model.max_flow(H)
        plain = model.max_flow()
        assert hinted["used_hint"] and not plain["used_hint"]
        for r in (hinted, plain):
            assert r["value"] == pytest.approx(a, abs=1e-12)
            assert r["cut"] == pytest.approx(a, abs=1e-12)
        if k <= 50:
            assert mf.solve_lp(p, q, n, scheme).alpha == pytest.approx(a, abs=1e-9)


def test_wrong_hint_falls_back_to_the_plain_max_flow() -> None:
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.full(30, 0.5))
    q = rng.dirichlet(np.full(30, 0.5))
    a = mf.optimal_acceptance(p, q, 3, "iid")
    model = _core.bound.FlowModel(p, q, 3, "iid", 1e8)
    for wrong in (np.arange(30), np.arange(0), np.arange(0, 30, 2)):
        r = model.max_flow(wrong)
        assert not r["used_hint"]
        assert r["value"] == pytest.approx(a, abs=1e-12)
