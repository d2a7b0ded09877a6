"""Numerical extremes: one-hot and disjoint rows, masses down to 1e-300 and below (subnormals),
one q close to 1, V = 262,144 with n = 8, float32 rows summing to 1 +- 1e-5, tied ratios.

Values are compared with float64 references: the 2^V brute force of tests/_support/reference.py (small V),
the HiGHS LP and the native max-flow, a numpy sorted-prefix scan (i.i.d.), and the exact
level-count DP of test_bound.py (without replacement, V = 262,144).

The regression cases at the top are inputs on which earlier versions returned wrong numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from cases import exact_wor_levels, levels_case
from reference import brute_alpha, set_law, tuple_law

SCHEMES = ("iid", "wor", "greedy")


def _bf(p: np.ndarray, q: np.ndarray, n: int, scheme: str) -> float:
    return brute_alpha(p, set_law(tuple_law(q, n, scheme)))[0]


def _all_routes(p: np.ndarray, q: np.ndarray, n: int, scheme: str) -> dict[str, float]:
    out = {
        "dual": mf.optimal_acceptance(p, q, n, scheme),
        "lp": mf.solve_lp(p, q, n, scheme).alpha,
        "flow": mf.solve_lp(p, q, n, scheme, solver="flow").alpha,
    }
    if scheme == "wor":
        out["integral"] = mf.optimal_acceptance(p, q, n, scheme, wor_method="integral")
    return out


# ---------------------------------------------------------------------------------------------
# Regressions: each of these returned a wrong number before the fix noted


def test_regression_race_grid_with_subnormal_mass() -> None:
    """wor, exponential-race integral: a q below ~2.5e-307 made the grid end 45/lam overflow to inf
    (G = ceil(inf) cast to int64, undefined) and alpha* came out wrong by up to 0.85."""
    rng = np.random.default_rng(0)
    for tiny in (1e-300, 1e-307, 1e-308, 1e-310, 1e-320, 5e-324):
        for _ in range(10):
            V = int(rng.integers(5, 8))
            p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
            q[0] = tiny
            q /= q.sum()
            for n in range(2, min(V, 5) + 1):
                want = _bf(p, q, n, "wor")
                got = mf.optimal_acceptance(p, q, n, "wor", wor_method="integral")
                assert got == pytest.approx(want, abs=1e-10), (tiny, n, p, q)


def test_regression_subnormal_rest_mass() -> None:
    """q = (1, 1e-320, 1e-320): q_a / (1 - q_a) overflowed (n = 2 closed form), the LP's set
    weights became inf (1 / remaining mass), the race never rang the tiny clocks. alpha* = 0.8."""
    p = np.array([0.1, 0.2, 0.7])
    q = np.array([1.0, 1e-320, 1e-320])
    assert _bf(p, q, 2, "wor") == pytest.approx(0.8, abs=1e-15)
    for wm in ("auto", "exact", "integral"):
        assert mf.optimal_acceptance(p, q, 2, "wor", wor_method=wm) == pytest.approx(0.8, abs=1e-12), wm
    assert mf.solve_lp(p, q, 2, "wor").alpha == pytest.approx(0.8, abs=1e-9)
    assert mf.solve_lp(p, q, 2, "wor", solver="flow").alpha == pytest.approx(0.8, abs=1e-12)
    res = mf.solve_lp(p, q, 2, "wor", solver="flow")
    assert np.isfinite(res.set_weights).all() and res.set_weights.sum() == pytest.approx(1.0, abs=1e-15)


def test_regression_exact3_two_token_cancellation() -> None:
    """wor n = 3 closed form: 1 - q_a - q_c computed as (1 - q_a) - q_c cancelled to 0 when two
    tokens hold all but 1e-290 of q (alpha* came out 1.0 instead of 0.9663)."""
    p = np.array(
        [0.0008452574538707307, 0.03283866792236872, 0.8915167373488643, 0.06913091756403793, 0.005668419710858443]
    )
    q = np.array(
        [
            3.4671005227048683e-308,
            4.034620237268243e-298,
            1.1765574277750805e-290,
            0.7118457545777682,
            0.2881542454222318,
        ]
    )
    want = _bf(p, q, 3, "wor")
    assert want == pytest.approx(0.9663161089155002, abs=1e-12)
    for wm in ("auto", "exact", "integral"):
        assert mf.optimal_acceptance(p, q, 3, "wor", wor_method=wm) == pytest.approx(want, abs=1e-12), wm
    # two tokens hold all but two subnormal masses: 1 / (outside mass) overflowed (found by
    # test_properties; alpha* came out 1.0 instead of 0.5)
    p = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    q = np.array([0.0, 2 / 3, 1 / 3, 5e-324, 5e-324])
    assert _bf(p, q, 3, "wor") == pytest.approx(0.5, abs=1e-15)
    for wm in ("auto", "exact", "integral"):
        assert mf.optimal_acceptance(p, q, 3, "wor", wor_method=wm) == pytest.approx(0.5, abs=1e-12), wm
    # the same cancellation at ordinary magnitudes: two tokens hold all but eps of q
    rng = np.random.default_rng(1)
    for eps in (1e-6, 1e-9, 1e-12, 1e-15):
        for _ in range(20):
            V = int(rng.integers(4, 8))
            q = np.zeros(V)
            q[0] = rng.uniform(0.3, 0.7)
            q[1] = 1 - q[0] - eps
            q[2:] = rng.dirichlet(np.ones(V - 2)) * eps
            p = rng.dirichlet(np.full(V, 0.5))
            want = _bf(p, q, 3, "wor")
            for wm in ("exact", "integral"):
                assert mf.optimal_acceptance(p, q, 3, "wor", wor_method=wm) == pytest.approx(want, abs=1e-12)


def test_regression_exact3_refuses_when_one_token_holds_everything() -> None:
    """Where no rounding-safe n = 3 closed form exists (1 - q_a < 1e-150), "exact" refuses and
    "auto" uses the integral, which is right."""
    p = np.array([0.1, 0.2, 0.3, 0.4])
    q = np.array([1.0, 1e-200, 2e-200, 3e-200])
    want = _bf(p, q, 3, "wor")
    with pytest.raises(ValueError, match="wor_method: the exact n = 3 evaluator needs every 1 - q"):
        mf.optimal_acceptance(p, q, 3, "wor", wor_method="exact")
    assert mf.optimal_acceptance(p, q, 3, "wor") == pytest.approx(want, abs=1e-12)


def test_regression_iid_lp_factorial_overflow() -> None:
    """iid LP weights use n!; for n > 170 it overflowed (inf / inf = NaN weights) and solve_lp
    returned alpha = 0.0 where alpha* = 1. Now n <= 170 is exact and larger n is refused."""
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    for n in (100, 150, 170):
        want = mf.optimal_acceptance(p, q, n, "iid")
        assert mf.solve_lp(p, q, n, "iid").alpha == pytest.approx(want, abs=1e-9)
        assert mf.solve_lp(p, q, n, "iid", solver="flow").alpha == pytest.approx(want, abs=1e-12)
    for n in (171, 200, 1000):
        with pytest.raises(ValueError, match=f"n: the iid flow-LP enumeration supports n <= 170.*n = {n}"):
            mf.solve_lp(p, q, n, "iid")


def test_regression_optimal_lp_subnormal_residual() -> None:
    """optimal-lp's exact acceptance divided by a subnormal residual mass (1/total = inf, times 0
    = NaN): acceptance came out NaN."""
    p = np.array([1.0, 2.22507386e-311])
    q = np.array([1.0, 1e-12])
    a = mf.acceptance("optimal-lp", p, q, 2)
    assert a == pytest.approx(mf.optimal_acceptance(p, q, 2, "iid"), abs=1e-12)
    sim = mf.simulate("optimal-lp", p, q, 2, 2000, rng=0)
    assert (sim.tokens == 0).all()


# ---------------------------------------------------------------------------------------------
# Masses down to 1e-300 and subnormals, against brute force, for every route


@pytest.mark.parametrize("seed", range(6))
def test_tiny_masses_all_routes(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    worst = 0.0
    for _ in range(40):
        V = int(rng.integers(2, 7))
        vecs = []
        for _ in range(2):
            x = rng.dirichlet(np.full(V, rng.uniform(0.2, 2.0)))
            k = int(rng.integers(1, V))
            x[rng.choice(V, k, replace=False)] = 10.0 ** -rng.uniform(250, 323.5, k)
            vecs.append(x / x.sum())
        p, q = vecs
        n = int(rng.integers(1, 5))
        for scheme in SCHEMES:
            if scheme != "iid" and np.count_nonzero(q) < n:
                continue
            want = _bf(p, q, n, scheme)
            for route, got in _all_routes(p, q, n, scheme).items():
                worst = max(worst, abs(got - want))
                assert got == pytest.approx(want, abs=1e-9), (route, scheme, n, p, q)
            for name in ("rrs", "kseq", "greedy", "rrs-wor"):
                v = mf.verifiers[name]
                if v.scheme != scheme or (name == "rrs-wor" and n > 3):
                    continue
                acc = mf.acceptance(name, p, q, n)
                assert np.isfinite(acc) and 0.0 <= acc <= want + 1e-12, (name, acc, want)
    assert worst < 1e-9


def test_q_close_to_one() -> None:
    """One q = 1 - 1e-12 (and 1 - 1e-15): every route against brute force, verifiers bounded."""
    rng = np.random.default_rng(7)
    for gap in (1e-9, 1e-12, 1e-15):
        for _ in range(25):
            V = int(rng.integers(3, 7))
            q = rng.dirichlet(np.ones(V)) * gap
            i = int(rng.integers(V))
            q[i] = 0.0
            q[i] = 1.0 - q.sum()
            p = rng.dirichlet(np.full(V, 0.7))
            for n in (2, 3, 4):
                for scheme in SCHEMES:
                    if scheme != "iid" and n > V:
                        continue
                    want = _bf(p, q, n, scheme)
                    for route, got in _all_routes(p, q, n, scheme).items():
                        assert got == pytest.approx(want, abs=1e-9), (route, scheme, n, gap)
                    assert mf.optimal_acceptance(p, q, n, scheme) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# One-hot and disjoint rows


def test_one_hot_rows() -> None:
    V = 6
    rng = np.random.default_rng(3)
    for i in range(V):
        e_i = np.eye(V)[i]
        q = rng.dirichlet(np.ones(V))
        for n in (1, 2, 4):
            # p one-hot: alpha* = Pr[i is drafted]
            assert mf.optimal_acceptance(e_i, q, n, "iid") == pytest.approx(1 - (1 - q[i]) ** n, abs=1e-14)
            for s in ("wor", "greedy"):
                assert mf.optimal_acceptance(e_i, q, n, s) == pytest.approx(_bf(e_i, q, n, s), abs=1e-12)
            # q one-hot: every draft is i, so alpha* = p(i) (iid; wor/greedy need n tokens)
            assert mf.optimal_acceptance(q, e_i, n, "iid") == pytest.approx(q[i], abs=1e-15)
            assert mf.solve_lp(q, e_i, n, "iid").alpha == pytest.approx(q[i], abs=1e-12)
            for name in ("rrs", "kseq"):
                assert mf.acceptance(name, q, e_i, n) == pytest.approx(q[i], abs=1e-12)
        assert mf.optimal_acceptance(e_i, e_i, 3, "iid") == 1.0
        with pytest.raises(ValueError, match="only 1 tokens"):
            mf.optimal_acceptance(e_i, e_i, 2, "wor")
        assert mf.optimal_acceptance(q, e_i, 1, "greedy") == pytest.approx(q[i], abs=1e-15)


def test_disjoint_supports() -> None:
    """p and q on disjoint tokens: nothing can ever be accepted."""
    p = np.array([0.5, 0.5, 0.0, 0.0, 0.0])
    q = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    for n in (1, 2, 3):
        for s in SCHEMES:
            assert mf.optimal_acceptance(p, q, n, s) == 0.0
            r = mf.solve_lp(p, q, n, s)
            assert r.alpha == 0.0 and r.rejected_mass == pytest.approx(1.0, abs=1e-15)
            assert mf.solve_lp(p, q, n, s, solver="flow").alpha == 0.0
        for name in ("rrs", "rrs-wor", "kseq", "greedy"):
            assert mf.acceptance(name, p, q, n) == 0.0
            sim = mf.simulate(name, p, q, n, 2000, rng=0)
            assert not sim.accepted.any() and set(np.unique(sim.tokens)) <= {0, 1}


# ---------------------------------------------------------------------------------------------
# Large V


def _numpy_iid(p: np.ndarray, q: np.ndarray, n: int) -> float:
    """Independent float64 sorted-prefix scan: 1 + min_k P_k - S_k^n over the ratio order."""
    sup = np.flatnonzero(q > 0)
    order = sup[np.argsort(p[sup] / q[sup], kind="stable")]
    F = np.cumsum(p[order]) - np.cumsum(q[order]) ** n
    return min(1.0, 1.0 + min(0.0, float(F.min())))


@pytest.mark.parametrize("n", [2, 8])
def test_v262k_iid(n: int) -> None:
    rng = np.random.default_rng(n)
    V = 262_144
    logits = rng.standard_normal(V) * 2.5
    p = np.exp(logits - logits.max())
    q = np.exp(logits + rng.standard_normal(V) - logits.max())
    q[rng.choice(V, 1000, replace=False)] = 1e-300  # tiny masses in the tail
    p, q = p / p.sum(), q / q.sum()
    a = mf.optimal_acceptance(p, q, n, "iid")
    assert a == pytest.approx(_numpy_iid(p, q, n), abs=1e-12)
    assert mf.optimal_acceptance(p, q, n, "wor") >= a - 1e-12


def test_v262k_wor_n8_with_subnormal_tail() -> None:
    """wor n = 8 at V = 262,144 (exact level DP) with 16 extra tokens of q = 1e-310, p = 1e-12:
    they change alpha* by at most 16e-12 + 1e-290, and they put lam_min = 1e-310 under the race
    (before the fix: a 3-node grid and a wrong value)."""
    V = 262_144
    m = 16
    p0, q0, level, c = levels_case(V - m, 8)
    want = exact_wor_levels(p0, q0, level, c, 8)
    p = np.concatenate([p0 * (1 - m * 1e-12), np.full(m, 1e-12)])
    q = np.concatenate([q0, np.full(m, 1e-310)])
    got = mf.optimal_acceptance(p, q, 8, "wor")
    assert got == pytest.approx(want, abs=1e-9)
    got_plain = mf.optimal_acceptance(p0, q0, 8, "wor")
    assert got_plain == pytest.approx(want, abs=1e-9)


# ---------------------------------------------------------------------------------------------
# float32 rows that sum to 1 +- 1e-5, and ties


def test_float32_rows_off_by_1e5() -> None:
    rng = np.random.default_rng(5)
    V = 50_000
    P = rng.dirichlet(np.ones(V), size=4)
    Q = rng.dirichlet(np.full(V, 0.5), size=4)
    P32 = (P * np.array([1 + 1e-5, 1 - 1e-5, 1 + 9e-6, 1.0])[:, None]).astype(np.float32)
    Q32 = (Q * np.array([1 - 1e-5, 1 + 1e-5, 1.0, 1 - 9e-6])[:, None]).astype(np.float32)
    assert np.abs(P32.astype(np.float64).sum(axis=1) - 1).max() > 5e-6  # really off by ~1e-5
    for s, n in (("iid", 4), ("wor", 4), ("greedy", 3)):
        got = mf.optimal_acceptance(P32, Q32, n, s)
        # reference: the same float32 values, upcast and normalised in float64 (exactly what the
        # package does: bit for bit), and after a second normalisation (to rounding)
        P64, Q64 = P32.astype(np.float64), Q32.astype(np.float64)
        assert np.array_equal(got, mf.optimal_acceptance(P64, Q64, n, s))
        ref = mf.optimal_acceptance(P64 / P64.sum(1, keepdims=True), Q64 / Q64.sum(1, keepdims=True), n, s)
        assert np.allclose(got, ref, rtol=0, atol=1e-14)
        assert np.allclose(got, mf.optimal_acceptance(P, Q, n, s), atol=1e-5)
    for name in ("rrs", "kseq"):
        assert np.allclose(mf.acceptance(name, P32, Q32, 3), mf.acceptance(name, P, Q, 3), atol=1e-5)


def test_tied_ratios() -> None:
    """q proportional to p on blocks (many equal ratios) and exact duplicate values: brute force on
    small V; at V = 100,000 the value does not depend on the order of tied tokens."""
    rng = np.random.default_rng(9)
    for _ in range(60):
        V = int(rng.integers(3, 8))
        p = rng.integers(1, 4, V).astype(float)
        p /= p.sum()
        q = p * rng.choice([0.5, 1.0, 2.0], V)
        q /= q.sum()
        for n in (2, 3):
            for s in SCHEMES:
                if s != "iid" and n > V:
                    continue
                want = _bf(p, q, n, s)
                for route, got in _all_routes(p, q, n, s).items():
                    assert got == pytest.approx(want, abs=1e-9), (route, s, n)
    V = 100_000
    p = rng.integers(1, 5, V).astype(float)
    p /= p.sum()
    q = p * rng.choice([0.25, 1.0, 4.0], V)
    q /= q.sum()
    perm = rng.permutation(V)
    for s, n in (("iid", 4), ("wor", 4), ("wor", 2), ("greedy", 4)):
        a = mf.optimal_acceptance(p, q, n, s)
        b = mf.optimal_acceptance(p[perm], q[perm], n, s)
        assert a == pytest.approx(b, abs=1e-12), (s, n)


def test_regression_rrs_wor_subnormal_rest() -> None:
    """rrs-wor: after drafting the big token, the undrafted mass was subnormal, T = T + M / rest
    overflowed to inf and inf * 0 wiped the residual: exact acceptance 1.0 where the verifier
    (and alpha*) give 0 and 0.5. Found by test_properties."""
    cases = [
        (np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.22507386e-313, 0.0]), 0.0),
        (np.array([0.5, 0.0, 0.5]), np.array([0.0, 1.0, 2.22507386e-313]), 0.5),
    ]
    for p, q, want in cases:
        assert mf.optimal_acceptance(p, q, 2, "wor") == pytest.approx(want, abs=1e-15)
        assert mf.acceptance("rrs-wor", p, q, 2) == pytest.approx(want, abs=1e-12)
        sim = mf.simulate("rrs-wor", p, q, 2, 40_000, rng=1)
        assert abs(sim.accepted.mean() - want) < 0.01
        assert (p[sim.tokens] > 0).all()


def test_regression_ratio_overflow_ordering() -> None:
    """p / q overflowed to inf for subnormal q, so tokens 3 and 4 tied in the ratio order although
    p3/q3 = 2 p4/q4: the scan missed H = {1, 2, 4} and every wor route returned 1.0, not 5/6
    (found by test_properties under the sanitizer job's hypothesis version)."""
    p = np.array([0.0, 0.0, 0.0, 2 / 3, 1 / 3])
    q = np.array([0.0, 2 / 3, 1 / 3, 5e-324, 5e-324])
    want = _bf(p, q, 3, "wor")
    assert want == pytest.approx(5 / 6, abs=1e-15)
    for wm in ("auto", "exact", "integral"):
        assert mf.optimal_acceptance(p, q, 3, "wor", wor_method=wm) == pytest.approx(want, abs=1e-12), wm
    assert mf.acceptance("rrs-wor", p, q, 3) <= want + 1e-12
    rng = np.random.default_rng(12)
    for _ in range(200):
        V = int(rng.integers(3, 7))
        q = rng.dirichlet(np.ones(V))
        k = int(rng.integers(1, V))
        q[rng.choice(V, k, replace=False)] = rng.choice([5e-324, 1e-320, 3e-310, 2e-308], k)
        q /= q.sum()
        p = rng.dirichlet(np.full(V, 0.7))
        n = int(rng.integers(1, 4))
        for s in SCHEMES:
            if s != "iid" and np.count_nonzero(q) < n:
                continue
            assert mf.optimal_acceptance(p, q, n, s) == pytest.approx(_bf(p, q, n, s), abs=1e-12), (s, n, p, q)
