"""The schemes engines draft with: "topk" (the top n of q) and the mixed schemes "top<m>+iid" /
"top<m>+wor" (the top m of q plus n - m random drafts over the rest).

alpha* by the dual against brute force over all 2^V token sets and against the flow LP; the
verifiers' exact output laws against p by enumeration of every tuple; chi-square tests with power
(and a negative control) at V = 49,152; the draft samplers against the schemes' tuple laws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.verifiers.run import _prepare
from reference import brute_alpha, q_of, random_case, set_law, tuple_law
from stats import LEVEL, STEPS, chi2_pvalue


def _schemes(n: int) -> list[str]:
    return ["topk"] + [f"top{m}+{r}" for m in range(1, n) for r in ("iid", "wor")]


def _cases(num: int, seed: int):
    """(p, q, n, scheme) with V in [2, 7], n in [1, 4], every scheme the support allows."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < num:
        V = int(rng.integers(2, 8))
        p, q = random_case(rng, V)
        n = int(rng.integers(1, 5))
        support = int(np.count_nonzero(q))
        for scheme in _schemes(n):
            need = n if scheme == "topk" or scheme.endswith("wor") else int(scheme[3 : scheme.index("+")]) + 1
            if support >= need and V**n <= 3000:
                out.append((p, q, n, scheme))
    return out


CASES = _cases(520, 7)


def test_cases_cover_the_families() -> None:
    kinds = {s if s == "topk" else s[s.index("+") :] for _, _, _, s in CASES}
    assert kinds == {"topk", "+iid", "+wor"}
    assert len(CASES) >= 500
    assert any((p == 0).any() for p, _, _, _ in CASES) and any((q == 0).any() for _, q, _, _ in CASES)
    assert any(len(np.unique(q)) < len(q) for _, q, _, _ in CASES)  # ties in q decide T


def test_alpha_equals_brute_force_and_lp() -> None:
    """alpha* of the dual == brute force (2^V sets) == the HiGHS LP == the native max-flow, and the
    dual's certificate H attains it: alpha* = 1 + p(H) - Pr[all drafts in H]."""
    worst = {"brute": 0.0, "lp": 0.0, "flow": 0.0, "cert": 0.0}
    for p, q, n, scheme in CASES:
        law = set_law(tuple_law(q, n, scheme))
        brute, _ = brute_alpha(p, law)
        a, H = mf.optimal_acceptance(p, q, n, scheme, return_certificate=True)
        worst["brute"] = max(worst["brute"], abs(a - brute))
        worst["lp"] = max(worst["lp"], abs(a - mf.solve_lp(p, q, n, scheme).alpha))
        worst["flow"] = max(worst["flow"], abs(a - mf.solve_lp(p, q, n, scheme, solver="flow").alpha))
        worst["cert"] = max(worst["cert"], abs(min(1.0, 1.0 + p[H].sum() - q_of(law, H)) - a))
    assert max(worst.values()) < 1e-9, worst


def test_topk_is_p_of_the_top_n() -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4])
    q = np.array([0.3, 0.3, 0.1, 0.3])  # ties: the lower ids win
    a, H = mf.optimal_acceptance(p, q, 2, "topk", return_certificate=True)
    assert H.tolist() == [0, 1] and a == pytest.approx(0.3, abs=1e-15)
    assert mf.optimal_acceptance(p, q, 3, "topk") == pytest.approx(0.7, abs=1e-15)


def test_greedy_is_the_mixed_scheme_with_one_draw() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        p, q = random_case(rng, int(rng.integers(3, 9)))
        n = min(int(rng.integers(2, 5)), int(np.count_nonzero(q)))
        if n < 2:
            continue
        g = mf.optimal_acceptance(p, q, n, "greedy")
        for rest in ("iid", "wor"):
            assert mf.optimal_acceptance(p, q, n, f"top{n - 1}+{rest}") == pytest.approx(g, abs=1e-13)


def test_mixed_at_full_vocabulary_against_the_lp_on_a_truncated_row() -> None:
    """A real shipped row with q truncated to 12 tokens (as an engine's top-k does): the dual at
    V = 49,152 equals the LP, whose draft sets stay few."""
    ds = mf.load_dataset()
    p, q = ds.p[3].astype(np.float64), ds.q[3].astype(np.float64)
    keep = np.argsort(-q, kind="stable")[:12]
    qt = np.zeros_like(q)
    qt[keep] = q[keep]
    qt /= qt.sum()
    for scheme in ("topk", "top1+iid", "top2+wor"):
        a = mf.optimal_acceptance(p, qt, 3, scheme)
        assert a == pytest.approx(mf.solve_lp(p, qt, 3, scheme).alpha, abs=1e-9), scheme


# ---------------------------------------------------------------------------------------------
# Exact output laws

PAIRS = [
    ("topk", "topk"),
    ("rrs", "top1+iid"),
    ("kseq", "top1+iid"),
    ("optimal", "top1+iid"),
    ("rrs-wor", "top1+wor"),
    ("sweep", "top1+wor"),
    ("optimal", "top1+wor"),
    ("optimal-lp", "topk"),
    ("optimal-lp", "top1+iid"),
    ("optimal-lp", "top1+wor"),
]


def _law_cases(scheme: str, num: int, seed: int):
    out = [c for c in _cases(4 * num, seed) if c[3] == scheme or (scheme != "topk" and c[3][-4:] == scheme[-4:])]
    return out[:num]


@pytest.mark.parametrize("name,family", PAIRS)
def test_exact_law_equals_p(name: str, family: str) -> None:
    """sum_t Q(t) law(.|t) == p to 1e-12 over every tuple of the scheme, the exact acceptance
    equals the enumerated Pr[output in drafts], and "optimal" / "topk" / "optimal-lp" reach alpha*."""
    cases = _law_cases(family, 30, 11 + PAIRS.index((name, family)))
    assert len(cases) >= 20
    reaches = name in ("optimal", "topk", "optimal-lp")
    for p, q, n, scheme in cases:
        if name == "sweep" and n > 3:
            continue
        batch, _ = _prepare(name, p, q, n, scheme, 1)
        tuples, probs = zip(*tuple_law(q, n, scheme), strict=True)
        T = np.array(tuples, dtype=np.int64).reshape(len(tuples), n)
        Q = np.array(probs)
        law = batch.law(T)
        np.testing.assert_allclose(Q @ law, p, atol=1e-12, err_msg=f"{name} {scheme}")
        member = np.zeros_like(law, dtype=bool)
        for k in range(n):
            member[np.arange(len(T)), T[:, k]] = True
        acc = float(Q @ (law * member).sum(axis=1))
        exact = float(batch.exact(mf.EXACT_BUDGET)[0])
        assert exact == pytest.approx(acc, abs=1e-12), (name, scheme)
        star = mf.optimal_acceptance(p, q, n, scheme)
        assert acc <= star + 1e-12
        if reaches:
            assert acc == pytest.approx(star, abs=1e-9), (name, scheme, acc, star)
        naive = Q @ batch.law(T, naive_residual=True)
        if abs(acc - 1.0) > 1e-6 and (p > 0).sum() > n:
            assert np.abs(naive - p).max() > 1e-6 or acc < 1e-9, (name, scheme)


def test_published_verifiers_stay_below_optimal_under_mixed_drafts() -> None:
    """On the worked example D (docs/theory/examples.md §10), n = 3: rrs <= kseq-ish <= optimal = alpha*."""
    p = np.array([0.4, 0.3, 0.2, 0.1, 0.0])
    q = np.array([0.1, 0.2, 0.3, 0.2, 0.2])
    star = mf.optimal_acceptance(p, q, 3, "top1+iid")
    assert mf.acceptance("optimal", p, q, 3, scheme="top1+iid") == pytest.approx(star, abs=1e-12)
    assert mf.acceptance("rrs", p, q, 3, scheme="top1+iid") < star - 1e-3
    star_w = mf.optimal_acceptance(p, q, 3, "top1+wor")
    assert mf.acceptance("optimal", p, q, 3, scheme="top1+wor") == pytest.approx(star_w, abs=1e-12)
    assert mf.acceptance("rrs-wor", p, q, 3, scheme="top1+wor") < star_w - 1e-3


# ---------------------------------------------------------------------------------------------
# At full vocabulary: chi-square with power, a negative control each


@pytest.fixture(scope="module")
def real_row() -> tuple[np.ndarray, np.ndarray]:
    ds = mf.load_dataset()
    assert ds.vocab_size == 49_152
    return ds.p[11].astype(np.float64), ds.q[11].astype(np.float64)


@pytest.mark.parametrize(
    "name,n,scheme",
    [("topk", 4, "topk"), ("optimal", 3, "top1+iid"), ("rrs", 4, "top2+iid"), ("optimal", 4, "top2+wor")],
)
def test_lossless_at_full_vocabulary(real_row, name: str, n: int, scheme: str) -> None:
    p, q = real_row
    batch, _ = _prepare(name, p, q, n, scheme, None)
    tokens, accepted, _ = batch.simulate(STEPS, 20261201, 0, False)
    pval, stat, df = chi2_pvalue(tokens[0], p)
    assert pval > LEVEL, (name, scheme, pval, stat, df)
    exact = float(batch.exact(mf.EXACT_BUDGET)[0])
    se = math.sqrt(exact * (1 - exact) / STEPS)
    assert abs(accepted.mean() - exact) <= 4 * se, (name, accepted.mean(), exact, se)
    assert exact <= mf.optimal_acceptance(p, q, n, scheme) + 1e-12
    bad, _, _ = batch.simulate(STEPS, 20261202, 0, True)  # the naive residual: resample from p
    bpval, bstat, bdf = chi2_pvalue(bad[0], p)
    assert bpval < LEVEL, (name, scheme, bpval, bstat, bdf)


# ---------------------------------------------------------------------------------------------
# Drafting, tuples and errors


@pytest.mark.parametrize("scheme", ["topk", "top1+iid", "top2+wor"])
def test_draft_sampler_follows_the_scheme(scheme: str) -> None:
    q = np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0])
    p = np.full(6, 1 / 6)
    name = {"topk": "topk", "top1+iid": "rrs", "top2+wor": "rrs-wor"}[scheme]
    law = dict(tuple_law(q, 3, scheme))
    drafts = mf.simulate(name, p, q, 3, 200_000, rng=5, scheme=scheme).drafts
    keys = list(law)
    index = {t: j for j, t in enumerate(keys)}
    codes = np.array([index.get(tuple(t), -1) for t in drafts.tolist()])
    assert (codes >= 0).all()
    counts = np.bincount(codes, minlength=len(keys)).astype(float)
    e = np.array([law[t] for t in keys]) * drafts.shape[0]
    stat = float(((counts - e) ** 2 / e).sum())
    assert stat < len(keys) + 6 * math.sqrt(2 * len(keys)) + 10, (scheme, stat)


def test_verify_checks_the_tuple() -> None:
    p = np.array([0.4, 0.3, 0.2, 0.1])
    q = np.array([0.1, 0.4, 0.3, 0.2])
    assert mf.verify("topk", p, q, [2, 1], rng=0)[0] in range(4)
    with pytest.raises(ValueError, match=r"drafts: topk drafts are the top n tokens of q \{1, 2\}"):
        mf.verify("topk", p, q, [1, 3], rng=0)
    with pytest.raises(ValueError, match=r"top1\+iid drafts are the top 1 tokens of q \{1\} plus 2 other"):
        mf.verify("rrs", p, q, [0, 2, 3], scheme="top1+iid", rng=0)
    token, _ = mf.verify("rrs", p, q, [1, 3, 3], scheme="top1+iid", rng=0)  # repeats: iid
    assert 0 <= token < 4
    with pytest.raises(ValueError, match="appears twice"):
        mf.verify("rrs-wor", p, q, [1, 3, 3], scheme="top1+wor", rng=0)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda p, q: mf.optimal_acceptance(p, q, 2, "top0+iid"), "scheme: expected one of"),
        (lambda p, q: mf.optimal_acceptance(p, q, 2, "top1+xyz"), "scheme: expected one of"),
        (lambda p, q: mf.optimal_acceptance(p, q, 2, "top2+iid"), "use 'topk'"),
        (lambda p, q: mf.optimal_acceptance(p, q, 3, "top3+wor"), "needs n > 3"),
        (lambda p, q: mf.optimal_acceptance(p, [1.0, 0, 0, 0], 2, "topk"), "only 1 tokens with positive"),
        (lambda p, q: mf.optimal_acceptance(p, [1.0, 0, 0, 0], 2, "top1+iid"), "only 1 tokens with positive"),
        (lambda p, q: mf.acceptance("kseq", p, q, 3, scheme="top1+wor"), "verifier 'kseq' verifies"),
        (lambda p, q: mf.acceptance("topk", p, q, 3, scheme="iid"), "verifier 'topk' verifies"),
        (lambda p, q: mf.solve_lp(p, q, 2, "top2+wor"), "use 'topk'"),
    ],
)
def test_errors_name_the_argument(call, match: str) -> None:
    p = np.array([0.4, 0.3, 0.2, 0.1])
    q = np.array([0.1, 0.4, 0.3, 0.2])
    with pytest.raises(ValueError, match=match):
        call(p, q)


def test_batch_and_threads_do_not_change_results() -> None:
    rng = np.random.default_rng(9)
    P = rng.dirichlet(np.ones(300), size=16)
    Q = rng.dirichlet(np.ones(300), size=16)
    for scheme in ("topk", "top1+iid", "top2+wor"):
        batch = mf.optimal_acceptance(P, Q, 4, scheme, threads=2)
        rows = [mf.optimal_acceptance(P[r], Q[r], 4, scheme, threads=1) for r in range(16)]
        np.testing.assert_array_equal(batch, rows)
