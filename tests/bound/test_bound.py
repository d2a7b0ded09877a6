"""alpha*: fast dual == HiGHS flow LP == brute force, reference values, invariants, batches."""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from cases import exact_wor_levels, levels_case
from reference import brute_alpha, q_of, random_case, set_law, tuple_law

SCHEMES = ("iid", "wor", "greedy")


def _cases(num: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < num:
        V = int(rng.integers(2, 9))
        n = int(rng.integers(1, 5))
        p, q = random_case(rng, V)
        out.append((p, q, n))
    return out


CASES = _cases(600, 20261130)


def test_random_cases_dual_lp_bruteforce() -> None:
    """>= 500 random small cases: dual == LP == brute force (2^V subsets) within 1e-9, all three schemes."""
    checked = dict.fromkeys(SCHEMES, 0)
    worst = 0.0
    for p, q, n in CASES:
        support = int(np.count_nonzero(q))
        for scheme in SCHEMES:
            if scheme != "iid" and n > support:
                with pytest.raises(ValueError, match="n"):
                    mf.optimal_acceptance(p, q, n, scheme)
                continue
            law = set_law(tuple_law(q, n, scheme))
            bf, _ = brute_alpha(p, law)
            dual, H = mf.optimal_acceptance(p, q, n, scheme, return_certificate=True)
            lp = mf.solve_lp(p, q, n, scheme)
            assert lp.status == "Optimal"
            worst = max(worst, abs(dual - bf), abs(lp.alpha - bf))
            assert dual == pytest.approx(bf, abs=1e-9), (scheme, n, p, q)
            assert lp.alpha == pytest.approx(bf, abs=1e-9), (scheme, n, p, q)
            # Both certificates reproduce the value: alpha* = 1 + p(H) - Q(all drafts in H).
            assert 1 + p[H].sum() - q_of(law, H) == pytest.approx(bf, abs=1e-9)
            Hl = lp.certificate
            assert 1 + p[Hl].sum() - q_of(law, Hl) == pytest.approx(bf, abs=1e-9)
            if scheme == "wor":
                integ = mf.optimal_acceptance(p, q, n, "wor", wor_method="integral")
                assert integ == pytest.approx(bf, abs=1e-10)
                if n <= 3:
                    assert mf.optimal_acceptance(p, q, n, "wor", wor_method="exact") == pytest.approx(bf, abs=1e-12)
            checked[scheme] += 1
    assert min(checked.values()) >= 500, checked
    assert worst < 1e-9


@pytest.mark.parametrize("seed", range(40))
def test_independent_and_explicit_lp_vs_bruteforce(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    V = int(rng.integers(2, 7))
    n = int(rng.integers(1, 4))
    p, _ = random_case(rng, V)
    qs = np.stack([random_case(rng, V)[1] for _ in range(n)])
    law = set_law(tuple_law(qs, n, "independent"))
    bf, _ = brute_alpha(p, law)
    res = mf.solve_lp(p, qs, n, "independent")
    assert res.alpha == pytest.approx(bf, abs=1e-9)
    # The same law given as an explicit tuple table (ordered tuples, some repeated rows).
    tl = list(tuple_law(qs, n, "independent"))
    tuples = np.array([t for t, _ in tl], dtype=np.int64)
    probs = np.array([w for _, w in tl])
    res2 = mf.solve_lp(p, None, n, "explicit", tuples=tuples, probs=probs)
    assert res2.alpha == pytest.approx(bf, abs=1e-9)
    H = res2.certificate
    assert 1 + p[H].sum() - q_of(law, H) == pytest.approx(bf, abs=1e-9)


# docs/theory/examples.md §10: (p, q, n) -> (OPT iid, OPT w/o, greedy)
WORKED = {
    "A": ([1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 6, 1 / 2], {2: (0.972222, 1.0, 1.0), 3: (1.0, 1.0, 1.0)}),
    "B": ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], {2: (0.86, 0.985714, 0.9), 3: (0.988, 1.0, 1.0)}),
    "C": ([0.6, 0.2, 0.1, 0.1], [0.3, 0.3, 0.3, 0.1], {2: (0.91, 0.990476, 1.0), 3: (1.0, 1.0, 1.0)}),
    "D": (
        [0.4, 0.3, 0.2, 0.1, 0.0],
        [0.1, 0.2, 0.3, 0.2, 0.2],
        {2: (0.79, 0.817857, 0.728571), 3: (0.871, 0.964286, 0.8)},
    ),
    "E": ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], {2: (0.79, 0.834524, 0.766667), 3: (0.871, 1.0, 0.933333)}),
    "F": ([0.6, 0.25, 0.1, 0.05], [0.3, 0.4, 0.2, 0.1], {2: (0.91, 1.0, 0.9), 3: (1.0, 1.0, 1.0)}),
}


@pytest.mark.parametrize("case", sorted(WORKED))
@pytest.mark.parametrize("method", ["dual", "lp"])
def test_worked_examples(case: str, method: str) -> None:
    p, q, table = WORKED[case]
    for n, expected in table.items():
        for scheme, want in zip(SCHEMES, expected, strict=True):
            got = mf.optimal_acceptance(np.array(p), np.array(q), n, scheme, method=method)
            assert got == pytest.approx(want, abs=1e-6), (case, n, scheme)
        # n = 1 is single-draft speculative sampling for every scheme.
        for scheme in SCHEMES:
            sd = np.minimum(p, q).sum()
            assert mf.optimal_acceptance(np.array(p), np.array(q), 1, scheme, method=method) == pytest.approx(
                sd, abs=1e-12
            )


def test_hand_check_case_b_certificate() -> None:
    a, H = mf.optimal_acceptance([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 2, "iid", return_certificate=True)
    assert a == pytest.approx(0.86, abs=1e-15)
    assert H.dtype == np.int64 and H.tolist() == [1, 2]


def _llm_like(rng: np.random.Generator, V: int, noise: float = 1.0):
    logits = rng.standard_normal(V) * 2.5
    p = np.exp(logits - logits.max())
    q = np.exp(logits + rng.standard_normal(V) * noise - logits.max())
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("V", [1000, 20000])
def test_invariants_large(V: int) -> None:
    rng = np.random.default_rng(V)
    p, q = _llm_like(rng, V)
    sd = float(np.minimum(p, q).sum())
    prev = dict.fromkeys(SCHEMES, 0.0)
    for n in range(1, 9):
        a = {s: mf.optimal_acceptance(p, q, n, s) for s in SCHEMES}
        for s in SCHEMES:
            assert a[s] <= 1.0
            assert a[s] >= sd - 1e-12
            if s != "greedy":
                assert a[s] >= prev[s] - 1e-12, (s, n)  # non-decreasing in n
            prev[s] = a[s]
        assert a["wor"] >= a["iid"] - 1e-12
        if n == 1:
            assert a["iid"] == pytest.approx(sd, abs=1e-12)
            assert a["wor"] == pytest.approx(sd, abs=1e-12)
        # iid certificate reproduces the value with Q(H) = q(H)^n.
        ai, H = mf.optimal_acceptance(p, q, n, "iid", return_certificate=True)
        assert 1 + p[H].sum() - q[H].sum() ** n == pytest.approx(ai, abs=1e-12)
    for s in SCHEMES:
        assert mf.optimal_acceptance(p, p, 3, s) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
def test_wor_exact_at_262k(n: int) -> None:
    """wor at V = 262,144 against an exact level-count DP: 1e-9 absolute."""
    V = 262_144
    p, q, level, c = levels_case(V, n)
    want = exact_wor_levels(p, q, level, c, n)
    got = mf.optimal_acceptance(p, q, n, "wor")
    assert got == pytest.approx(want, abs=1e-9)
    if n == 2:
        assert mf.optimal_acceptance(p, q, n, "wor", wor_method="integral") == pytest.approx(want, abs=1e-9)


def test_wor_integral_vs_exact_formulas_large() -> None:
    """On heavy-tailed LLM-like rows: exponential-race integral == exact n = 2 (V = 262,144) and
    exact n = 3 (V = 20,000) within 1e-10."""
    rng = np.random.default_rng(7)
    p, q = _llm_like(rng, 262_144, noise=1.5)
    a_ex = mf.optimal_acceptance(p, q, 2, "wor", wor_method="exact")
    a_in = mf.optimal_acceptance(p, q, 2, "wor", wor_method="integral")
    assert a_in == pytest.approx(a_ex, abs=1e-10)
    p, q = _llm_like(rng, 20_000, noise=1.5)
    a_ex = mf.optimal_acceptance(p, q, 3, "wor", wor_method="exact")
    a_in = mf.optimal_acceptance(p, q, 3, "wor", wor_method="integral")
    assert a_in == pytest.approx(a_ex, abs=1e-10)


def test_batch_equals_rows_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    B, V = 48, 3000
    P = np.empty((B, V))
    Q = np.empty((B, V))
    for b in range(B):
        P[b], Q[b] = _llm_like(rng, V)
    for scheme in SCHEMES:
        for n in (1, 2, 4, 8):
            batch, certs = mf.optimal_acceptance(P, Q, n, scheme, return_certificate=True)
            one = mf.optimal_acceptance(P, Q, n, scheme, threads=1)
            assert batch.dtype == np.float64 and batch.shape == (B,)
            assert np.array_equal(batch, one)
            for b in range(0, B, 7):
                a, H = mf.optimal_acceptance(P[b], Q[b], n, scheme, return_certificate=True)
                assert a == batch[b]  # bit for bit
                assert np.array_equal(H, certs[b])


def test_float32_input_is_computed_in_float64() -> None:
    rng = np.random.default_rng(11)
    p, q = _llm_like(rng, 5000)
    p32, q32 = p.astype(np.float32), q.astype(np.float32)
    a32 = mf.optimal_acceptance(p32, q32, 4, "wor")
    a64 = mf.optimal_acceptance(p32.astype(np.float64), q32.astype(np.float64), 4, "wor")
    assert a32 == a64  # the float32 values are upcast before anything is summed
    assert a32 == pytest.approx(mf.optimal_acceptance(p, q, 4, "wor"), abs=1e-6)


def test_broadcast_single_row_against_batch() -> None:
    rng = np.random.default_rng(5)
    p, q = _llm_like(rng, 500)
    Q = np.stack([q, p, q])
    got = mf.optimal_acceptance(p, Q, 2, "iid")
    assert got.shape == (3,)
    assert got[1] == pytest.approx(1.0)
    assert got[0] == got[2] == mf.optimal_acceptance(p, q, 2, "iid")


def test_lp_flow_is_a_feasible_optimal_plan() -> None:
    rng = np.random.default_rng(9)
    p, q = random_case(rng, 7)
    for scheme in SCHEMES:
        res = mf.solve_lp(p, q, 3, scheme)
        sums = np.add.reduceat(res.flows, res.set_ptr[:-1]) if res.num_sets else np.zeros(0)
        assert np.all(sums <= res.set_weights + 1e-9)
        assert np.all(res.accepted <= p + 1e-9)
        assert res.accepted.sum() == pytest.approx(res.alpha, abs=1e-12)
        assert res.cut_value == pytest.approx(res.alpha, abs=1e-9)
        assert res.num_flows == len(res.set_tokens) == len(res.flows)
        for toks, w, x in res.sets():
            assert len(toks) == len(x) and w > 0


def test_lp_refuses_before_enumerating_too_much() -> None:
    V = 400
    p = np.full(V, 1 / V)
    with pytest.raises(mf.TooLargeError, match=r"needs 10667000 draft sets") as ei:
        mf.solve_lp(p, p, 3, "iid", max_sets=1000)
    assert isinstance(ei.value, ValueError)
    with pytest.raises(ValueError, match="max_sets"):
        mf.solve_lp(p, p, 3, "wor", max_sets=10)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(p=[0.5, 0.5], q=[0.5, 0.5, 0.0], n=2), ValueError, "vocabulary sizes differ"),
        (dict(p=[0.5, np.nan], q=[0.5, 0.5], n=2), ValueError, "p: row 0 contains NaN"),
        (dict(p=[0.5, 0.5], q=[1.5, -0.5], n=2), ValueError, "q: row 0 has negative"),
        (dict(p=[0.0, 0.0], q=[0.5, 0.5], n=2), ValueError, "p: row 0 sums to 0"),
        (dict(p=[0.5, 0.6], q=[0.5, 0.5], n=2), ValueError, r"p: row 0 sums to 1.1"),
        (dict(p=[0.5, 0.5], q=[0.5, 0.5], n=0), ValueError, "n: the number of drafts must be >= 1"),
        (dict(p=[0.5, 0.5], q=[0.5, 0.5], n=2.0), TypeError, "n: expected an integer"),
        (dict(p=[0.5, 0.5], q=[1.0, 0.0], n=2, scheme="wor"), ValueError, "only 1 tokens with positive"),
        (dict(p=[0.5, 0.5], q=[0.5, 0.5], n=2, scheme="bogus"), ValueError, "scheme: expected one of"),
        (dict(p=np.array([1, 0]), q=[0.5, 0.5], n=2), TypeError, "p: expected float32 or float64"),
        (dict(p=np.ones((2, 2)) / 2, q=np.ones((3, 2)) / 2, n=2), ValueError, "batch sizes differ"),
    ],
)
def test_bad_input_is_refused_with_a_named_error(kwargs, exc, match) -> None:
    with pytest.raises(exc, match=match):
        mf.optimal_acceptance(**kwargs)


def test_rows_close_to_one_are_renormalised() -> None:
    p = np.array([0.5, 0.3, 0.2]) * (1 + 5e-5)
    q = np.array([0.2, 0.3, 0.5])
    assert mf.optimal_acceptance(p, q, 2) == pytest.approx(0.86, abs=1e-14)


def test_explicit_tuples_validation() -> None:
    p = np.array([0.5, 0.5])
    with pytest.raises(ValueError, match=r"tuples: row 1 has a token id outside \[0, 2\)"):
        mf.solve_lp(p, None, 2, "explicit", tuples=[[0, 1], [0, 2]], probs=[0.5, 0.5])
    with pytest.raises(ValueError, match="probs: row 0 sums to 0.9"):
        mf.solve_lp(p, None, 2, "explicit", tuples=[[0, 1], [0, 0]], probs=[0.5, 0.4])
    res = mf.solve_lp(p, None, 2, "explicit", tuples=[[0, 1], [1, 1]], probs=[0.5, 0.5])
    assert res.alpha == pytest.approx(1.0)
