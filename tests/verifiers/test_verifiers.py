"""Verifiers: exact losslessness by enumeration, docs/theory/examples.md §10 values, orderings, API and input rules.

The exact-law tests enumerate every draft tuple with its probability under the scheme (computed
here, independently of the C++ draft samplers) and ask the C++ core for the verifier's exact
conditional output law given each tuple: the same walk that samples, run with every branch
followed. Summing Q(tuple) * law(. | tuple) must give p.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.verifiers.run import _prepare
from reference import random_case, tuple_law

NAMES = ("sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "topk", "optimal-lp")


# ---------------------------------------------------------------------------------------------
# Independent references (pure Python, literal transcriptions of docs/theory/verifiers.md §8)


def spechub_tuples(q: np.ndarray):
    """SpecHub's ordered pair law (docs/theory/verifiers.md §8.5): Q(i, a) = q(i), Q(a, i) = q(a) q(i) / (1 - q(a))."""
    V = q.shape[0]
    a = min(range(V), key=lambda i: (-q[i], i))
    rest = math.fsum(q[i] for i in range(V) if i != a)
    for i in range(V):
        if i != a and q[i] > 0:
            yield (i, a), q[i]
            yield (a, i), q[a] * q[i] / rest


def scheme_tuples(q: np.ndarray, n: int, scheme: str):
    return spechub_tuples(q) if scheme == "spechub" else tuple_law(q, n, scheme)


def ref_rrs(p: np.ndarray, q: np.ndarray, n: int) -> float:
    pi, keep = p.copy(), 1.0
    for _ in range(n):
        beta = float(np.minimum(pi, q).sum())
        keep *= 1.0 - beta
        if beta >= 1.0 - 1e-15:
            return 1.0
        pi = np.maximum(pi - q, 0.0) / (1.0 - beta)
    return 1.0 - keep


def ref_rrs_wor(p: np.ndarray, q: np.ndarray, n: int) -> float:
    if n == 0 or q.sum() <= 0:
        return 0.0
    beta = float(np.minimum(p, q).sum())
    if beta >= 1.0 - 1e-15:
        return beta
    p2 = np.maximum(p - q, 0.0) / (1.0 - beta)
    total = beta
    for x in np.flatnonzero(q > p):
        qx = q.copy()
        qx[x] = 0.0
        if qx.sum() > 0:
            total += (q[x] - p[x]) * ref_rrs_wor(p2, qx / qx.sum(), n - 1)
    return total


def ref_kseq(p: np.ndarray, q: np.ndarray, n: int) -> tuple[float, float]:
    def h(r: float) -> float:
        b = float(np.minimum(q, p / r).sum())
        return 1 - (1 - b) ** n - r * b

    lo, hi = 1.0, float(n)
    if h(1.0) <= 0:
        hi = 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if h(mid) <= 0 else (mid, hi)
    b = float(np.minimum(q, p / hi).sum())
    return hi, 1 - (1 - b) ** n


# ---------------------------------------------------------------------------------------------
# Exact losslessness


def _cases(name: str, num: int, seed: int, scheme: str | None = None):
    rng = np.random.default_rng(seed)
    v = mf.verifiers[name]
    sch = v.resolve_scheme(scheme)
    out = []
    while len(out) < num:
        V = int(rng.integers(2, 9))
        p, q = random_case(rng, V)
        support = int(np.count_nonzero(q))
        n = v.fixed_n or int(rng.integers(1, 5))
        if sch in ("wor", "greedy", "spechub", "topk") and n > support:
            if v.fixed_n:
                continue
            n = support
        # keep the enumeration small (V^n ordered tuples)
        if V**n > 5000:
            continue
        out.append((p, q, n))
    return sch, out


def _exact_law_check(name: str, cases, scheme: str) -> tuple[float, float]:
    worst_law, worst_alpha = 0.0, 0.0
    for p, q, n in cases:
        batch, _ = _prepare(name, p, q, n, None if name != "optimal-lp" else scheme, 1)
        tuples, probs = zip(*scheme_tuples(q, n, scheme), strict=True)
        T = np.array(tuples, dtype=np.int64).reshape(len(tuples), n)
        Q = np.array(probs)
        assert abs(Q.sum() - 1.0) < 1e-12
        law = batch.law(T)
        assert (law >= 0).all()
        np.testing.assert_allclose(law.sum(axis=1), 1.0, atol=1e-12)
        out = Q @ law
        worst_law = max(worst_law, float(np.abs(out - p).max()))
        member = np.zeros_like(law, dtype=bool)
        for k in range(n):
            member[np.arange(len(T)), T[:, k]] = True
        alpha_enum = float(Q @ (law * member).sum(axis=1))
        alpha = float(batch.exact(mf.EXACT_BUDGET)[0])
        worst_alpha = max(worst_alpha, abs(alpha_enum - alpha))
    return worst_law, worst_alpha


@pytest.mark.parametrize("name", [n for n in NAMES if n != "optimal-lp"])
def test_exact_law_equals_p(name: str) -> None:
    """>= 30 random cases, V <= 8, n <= 4 (zeros in p and q, ties): sum_t Q(t) law(.|t) == p to 1e-12,
    and the exact acceptance equals the enumerated Pr[output in drafts] to 1e-12."""
    scheme, cases = _cases(name, 30, 1000 + NAMES.index(name))
    kinds = {"p0": False, "q0": False, "tie": False}
    for p, q, _ in cases:
        kinds["p0"] |= bool((p == 0).any())
        kinds["q0"] |= bool((q == 0).any())
        kinds["tie"] |= len(np.unique(q)) < len(q) or len(np.unique(p)) < len(p)
    assert all(kinds.values()), kinds
    worst_law, worst_alpha = _exact_law_check(name, cases, scheme)
    assert worst_law < 1e-12, worst_law
    assert worst_alpha < 1e-12, worst_alpha


@pytest.mark.parametrize("scheme", ["iid", "wor", "greedy"])
def test_exact_law_optimal_lp(scheme: str) -> None:
    """The LP-plan verifier is lossless on every scheme it serves (>= 20 cases each)."""
    _, cases = _cases("optimal-lp", 20, 2000 + ["iid", "wor", "greedy"].index(scheme), scheme)
    worst_law, worst_alpha = _exact_law_check("optimal-lp", cases, scheme)
    assert worst_law < 1e-12, worst_law
    assert worst_alpha < 1e-12, worst_alpha


@pytest.mark.parametrize("name", NAMES)
def test_law_check_has_power(name: str) -> None:
    """The same enumeration rejects the classic bug (resampling from p instead of the residual)."""
    p, q = CASES["D"]
    p, q = np.array(p), np.array(q)
    n = mf.verifiers[name].fixed_n or 3
    scheme = mf.verifiers[name].scheme
    batch, _ = _prepare(name, p, q, n, None, 1)
    tuples, probs = zip(*scheme_tuples(q, n, scheme), strict=True)
    T = np.array(tuples, dtype=np.int64)
    good = np.array(probs) @ batch.law(T)
    bad = np.array(probs) @ batch.law(T, naive_residual=True)
    assert np.abs(good - p).max() < 1e-12
    assert np.abs(bad - p).max() > 1e-3


# ---------------------------------------------------------------------------------------------
# Reference values (docs/theory/examples.md §10) and independent references

CASES = {
    "A": ([1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 6, 1 / 2]),
    "B": ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]),
    "C": ([0.6, 0.2, 0.1, 0.1], [0.3, 0.3, 0.3, 0.1]),
    "D": ([0.4, 0.3, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.2, 0.2]),
    "E": ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]),
    "F": ([0.6, 0.25, 0.1, 0.05], [0.3, 0.4, 0.2, 0.1]),
}
# case, n: SD, RRS-wr, K-SEQ, rho*, OPT iid, RRS-wor, OPT w/o, greedy
TABLE = {
    ("A", 2): (0.833333, 0.861111, 0.888889, 1.333333, 0.972222, 0.888889, 1.000000, 1.000000),
    ("A", 3): (0.833333, 0.884259, 0.930206, 1.581239, 1.000000, 1.000000, 1.000000, 1.000000),
    ("B", 2): (0.700000, 0.760000, 0.791355, 1.456776, 0.860000, 0.820000, 0.985714, 0.900000),
    ("B", 3): (0.700000, 0.808000, 0.858519, 1.792593, 0.988000, 1.000000, 1.000000, 1.000000),
    ("C", 2): (0.700000, 0.790000, 0.825367, 1.417891, 0.910000, 0.828571, 0.990476, 1.000000),
    ("C", 3): (0.700000, 0.853000, 0.902043, 1.673476, 1.000000, 0.946429, 1.000000, 1.000000),
    ("D", 2): (0.600000, 0.720000, 0.750000, 1.500000, 0.790000, 0.751786, 0.817857, 0.728571),
    ("D", 3): (0.600000, 0.768000, 0.793950, 1.939500, 0.871000, 0.798929, 0.964286, 0.800000),
    ("E", 2): (0.600000, 0.720000, 0.750000, 1.500000, 0.790000, 0.764286, 0.834524, 0.766667),
    ("E", 3): (0.600000, 0.768000, 0.793950, 1.939500, 0.871000, 0.840298, 1.000000, 0.933333),
    ("F", 2): (0.700000, 0.790000, 0.825367, 1.417891, 0.910000, 0.829167, 1.000000, 0.900000),
    ("F", 3): (0.700000, 0.853000, 0.902043, 1.673476, 1.000000, 0.942619, 1.000000, 1.000000),
}


@pytest.mark.parametrize("key", sorted(TABLE))
def test_theory_table(key: tuple[str, int]) -> None:
    """Exact acceptance of every verifier equals docs/theory/examples.md §10 to 1e-6 (the table's precision)."""
    p, q = CASES[key[0]]
    n = key[1]
    sd, rrs, kseq, rho, opt_iid, rrs_wor, opt_wor, greedy = TABLE[key]
    got = {
        "sd": mf.acceptance("sd", p, q, 1),
        "rrs": mf.acceptance("rrs", p, q, n),
        "kseq": mf.acceptance("kseq", p, q, n),
        "rho": mf.verifiers["kseq"].rho(p, q, n),
        "rrs-wor": mf.acceptance("rrs-wor", p, q, n),
        "greedy": mf.acceptance("greedy", p, q, n),
        "lp-iid": mf.acceptance("optimal-lp", p, q, n, scheme="iid"),
        "lp-wor": mf.acceptance("optimal-lp", p, q, n, scheme="wor"),
    }
    want = {
        "sd": sd,
        "rrs": rrs,
        "kseq": kseq,
        "rho": rho,
        "rrs-wor": rrs_wor,
        "greedy": greedy,
        "lp-iid": opt_iid,
        "lp-wor": opt_wor,
    }
    if n == 2:
        got["spechub"] = mf.acceptance("spechub", p, q, 2)
        want["spechub"] = greedy
    for k in want:
        assert abs(got[k] - want[k]) < 1e-6, (k, got[k], want[k])


def test_against_literal_references() -> None:
    """C++ exact routes (threshold form of the residuals, bisection via a ratio table) equal the
    literal pseudocode of docs/theory/index.md on random cases, to 1e-11."""
    rng = np.random.default_rng(77)
    worst = 0.0
    for _ in range(60):
        V = int(rng.integers(2, 9))
        p, q = random_case(rng, V)
        n = int(rng.integers(1, 5))
        worst = max(worst, abs(mf.acceptance("rrs", p, q, n) - ref_rrs(p, q, n)))
        rho, a = ref_kseq(p, q, n)
        worst = max(worst, abs(mf.acceptance("kseq", p, q, n) - a))
        assert abs(mf.verifiers["kseq"].rho(p, q, n) - rho) < 1e-9
        if n <= np.count_nonzero(q):
            worst = max(worst, abs(mf.acceptance("rrs-wor", p, q, n) - ref_rrs_wor(p, q, n)))
    assert worst < 1e-11, worst


def test_exact_matches_simulation_small() -> None:
    """Exact acceptance within 4 standard errors of 200,000 simulated steps, every verifier, cases B-D."""
    for case in ("B", "C", "D"):
        p, q = CASES[case]
        for name in NAMES:
            v = mf.verifiers[name]
            n = v.fixed_n or 3
            exact = mf.acceptance(name, p, q, n)
            est, se = mf.acceptance(name, p, q, n, exact=False, samples=200_000, rng=11)
            sd = math.sqrt(exact * (1 - exact) / 200_000)
            assert abs(est - exact) <= 4 * sd + 1e-12, (case, name, est, exact, se)


# ---------------------------------------------------------------------------------------------
# Orderings (docs/theory/invariants.md §9)


def _ordering_cases():
    rng = np.random.default_rng(4242)
    out = []
    for _ in range(40):
        V = int(rng.integers(2, 8))
        p, q = random_case(rng, V)
        out.append((p, q))
    for V in (50, 300):
        for _ in range(3):
            p = rng.dirichlet(np.full(V, 0.3))
            q = rng.dirichlet(np.full(V, 0.3))
            out.append((p, q))
    return out


def test_orderings() -> None:
    """alpha <= alpha*(scheme) + 1e-12; greedy, spechub and optimal-lp equal alpha* to 1e-9;
    every verifier >= sum min(p, q) - 1e-12."""
    for p, q in _ordering_cases():
        V = p.shape[0]
        support = int(np.count_nonzero(q))
        floor = float(np.minimum(p, q).sum())
        for name in NAMES:
            v = mf.verifiers[name]
            for n in [v.fixed_n] if v.fixed_n else [1, 2, 3, 4]:
                schemes = ("iid", "wor", "greedy") if name == "optimal-lp" else (v.scheme,)
                for sch in schemes:
                    opt_scheme = sch if name == "optimal-lp" else v.optimal_scheme
                    if sch != "iid" and n > support:
                        continue
                    if name == "optimal-lp" and (V > 8 and not (sch == "greedy" or n == 1)):
                        continue  # LP on enumerated sets: small vocabularies
                    if name == "rrs-wor" and V > 50 and n > 3:
                        continue
                    a = mf.acceptance(name, p, q, n, scheme=sch if name == "optimal-lp" else None)
                    star = mf.optimal_acceptance(p, q, n, opt_scheme)
                    assert a <= star + 1e-12, (name, sch, n, a, star)
                    if name != "topk":  # deterministic drafts: no sum min(p, q) floor
                        assert a >= floor - 1e-12, (name, sch, n, a, floor)
                    if name in ("greedy", "spechub", "optimal-lp", "topk"):
                        assert abs(a - star) < 1e-9, (name, sch, n, a, star)


# ---------------------------------------------------------------------------------------------
# API: registry, batches, determinism, verify, input rules


def test_registry() -> None:
    # "optimal" (the full-vocabulary optimal verifier) and "sweep" are tested in tests/verifiers/test_optimal.py
    assert tuple(mf.verifiers) == NAMES + ("optimal", "sweep")
    for name, v in mf.verifiers.items():
        assert v.name == name
        assert v.__doc__ and "Source" in v.__doc__ and "Scheme" in v.__doc__
        assert v.scheme in v.schemes
    assert mf.verifiers["spechub"].optimal_scheme == "greedy"
    with pytest.raises(TypeError):
        mf.verifiers["new"] = mf.verifiers["sd"]  # type: ignore[index]


def test_batches_match_rows() -> None:
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(6), size=4)
    Q = rng.dirichlet(np.ones(6), size=4)
    for name in NAMES:
        n = mf.verifiers[name].fixed_n or 3
        a = mf.acceptance(name, P, Q, n)
        assert a.shape == (4,)
        for r in range(4):
            assert a[r] == pytest.approx(mf.acceptance(name, P[r], Q[r], n), abs=1e-15)
        # a single row broadcasts against a batch
        b = mf.acceptance(name, P[0], Q, n)
        assert b[1] == pytest.approx(mf.acceptance(name, P[0], Q[1], n), abs=1e-15)
        est, se = mf.acceptance(name, P, Q, n, exact=False, samples=1000, rng=0)
        assert est.shape == se.shape == (4,)
        sim = mf.simulate(name, P, Q, n, 100, rng=0)
        assert sim.tokens.shape == (4, 100) and sim.accepted.shape == (4, 100)
        assert sim.drafts.shape == (4, 100, n)
        assert sim.tokens.dtype == np.int64 and sim.accepted.dtype == np.bool_
        # accepted means "the output is one of this step's drafts"
        assert (sim.accepted == (sim.drafts == sim.tokens[..., None]).any(axis=-1)).all()
    empty = mf.acceptance("rrs", np.zeros((0, 3)), np.zeros((0, 3)), 2)
    assert empty.shape == (0,)


def test_same_seed_same_result_any_threads() -> None:
    rng = np.random.default_rng(8)
    p, q = rng.dirichlet(np.ones(50)), rng.dirichlet(np.ones(50))
    for name in ("rrs", "rrs-wor", "kseq"):
        a = mf.simulate(name, p, q, 3, 20_000, rng=123, threads=1)
        b = mf.simulate(name, p, q, 3, 20_000, rng=123, threads=2)
        c = mf.simulate(name, p, q, 3, 20_000, rng=124, threads=2)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
        assert not np.array_equal(a.tokens, c.tokens)
    g = np.random.default_rng(3)
    s1 = mf.simulate("rrs", p, q, 2, 100, rng=g)
    s2 = mf.simulate("rrs", p, q, 2, 100, rng=g)  # a Generator advances between calls
    assert not np.array_equal(s1.drafts, s2.drafts)
    e1 = mf.acceptance("rrs", p, q, 2, exact=False, samples=10_000, rng=9, threads=1)
    e2 = mf.acceptance("rrs", p, q, 2, exact=False, samples=10_000, rng=9, threads=2)
    assert e1 == e2


def test_verify_follows_the_law() -> None:
    """100,000 verifications of one tuple: frequencies match the exact conditional law (chi-square)."""
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0])
    q = np.array([0.05, 0.1, 0.4, 0.25, 0.1, 0.1])
    for name, t in [
        ("sd", [2]),
        ("rrs", [2, 2, 5]),
        ("rrs-wor", [2, 3, 5]),
        ("kseq", [3, 2, 4]),
        ("spechub", [2, 0]),
        ("greedy", [2, 3, 5]),
        ("optimal-lp", [5, 2, 2]),
    ]:
        n = len(t)
        drafts = np.tile(np.array(t), (100_000, 1))
        tok, acc = mf.verify(name, p, q, drafts, rng=1)
        assert tok.shape == acc.shape == (100_000,)
        batch, _ = _prepare(name, p, q, n, None, 1)
        law = batch.law(np.array([t], dtype=np.int64))[0]
        counts = np.bincount(tok, minlength=6)
        assert counts[law == 0].sum() == 0
        keep = law > 0
        e = law[keep] * 100_000
        chi2 = float(((counts[keep] - e) ** 2 / e).sum())
        assert chi2 < 40, (name, chi2)  # df <= 5: P(chi2 > 40) < 1e-6
    token, accepted = mf.verify("rrs", p, q, [2, 3], rng=0)
    assert isinstance(token, int) and isinstance(accepted, bool)


def test_errors_name_the_argument() -> None:
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    with pytest.raises(ValueError, match="name: expected one of"):
        mf.acceptance("nope", p, q, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scheme: verifier 'rrs' verifies 'iid'"):
        mf.acceptance("rrs", p, q, 2, scheme="wor")
    with pytest.raises(ValueError, match="scheme"):
        mf.acceptance("optimal-lp", p, q, 2, scheme="independent")
    with pytest.raises(ValueError, match="n: verifier 'sd' handles n = 1"):
        mf.acceptance("sd", p, q, 2)
    with pytest.raises(ValueError, match="n: verifier 'spechub' handles n = 2"):
        mf.simulate("spechub", p, q, 3, 10)
    with pytest.raises(ValueError, match="n: scheme 'wor' draws 3 distinct tokens"):
        mf.acceptance("rrs-wor", p, [0.5, 0.5, 0.0], 3)
    with pytest.raises(TypeError, match="n:"):
        mf.acceptance("rrs", p, q, 2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="p:"):
        mf.acceptance("rrs", [1, 0, 0], q, 2)
    with pytest.raises(ValueError, match="q: row 0 sums to"):
        mf.acceptance("rrs", p, [0.2, 0.3, 0.6], 2)
    with pytest.raises(ValueError, match="samples"):
        mf.acceptance("rrs", p, q, 2, exact=False, samples=0)
    with pytest.raises(TypeError, match="samples"):
        mf.simulate("rrs", p, q, 2, 10.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        mf.simulate("rrs", p, q, 2, 10, threads=0)
    with pytest.raises(ValueError, match=r"drafts: token id 9 outside \[0, 3\)"):
        mf.verify("rrs", p, q, [0, 9])
    with pytest.raises(TypeError, match="drafts: expected integer"):
        mf.verify("rrs", p, q, [0.0, 1.0])
    with pytest.raises(ValueError, match="drafts: token 1 has q = 0"):
        mf.verify("rrs", p, [0.5, 0.0, 0.5], [0, 1])
    with pytest.raises(ValueError, match="drafts: token 2 appears twice"):
        mf.verify("rrs-wor", p, q, [2, 2])
    with pytest.raises(ValueError, match=r"drafts: greedy drafts are the top n-1 tokens of q \{2\}"):
        mf.verify("greedy", p, q, [0, 1])
    with pytest.raises(ValueError, match="drafts: a SpecHub pair holds the hub token 2"):
        mf.verify("spechub", p, q, [0, 1])
    with pytest.raises(ValueError, match="drafts: row 1: token 2 appears twice"):
        mf.verify("rrs-wor", np.tile(p, (2, 1)), np.tile(q, (2, 1)), [[0, 1], [2, 2]])
    with pytest.raises(ValueError, match="drafts: expected 2 tuples"):
        mf.verify("rrs", np.tile(p, (2, 1)), np.tile(q, (2, 1)), [[0, 1], [2, 2], [1, 1]])


def test_exact_refuses_costly_routes() -> None:
    rng = np.random.default_rng(0)
    V = 1000
    p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    with pytest.raises(mf.TooLargeError, match="rrs-wor: the exact recursion .* exact=False"):
        mf.acceptance("rrs-wor", p, q, 4)
    with pytest.raises(ValueError):  # TooLargeError is a ValueError
        mf.acceptance("rrs-wor", p, q, 4)
    est, se = mf.acceptance("rrs-wor", p, q, 4, exact=False, samples=20_000, rng=0)
    assert 0 < se < 0.01 and 0 < est <= 1
    p3, q3 = np.full(3000, 1 / 3000), np.full(3000, 1 / 3000)
    with pytest.raises(mf.TooLargeError, match="optimal-lp needs the flow LP .* max_sets"):
        mf.acceptance("optimal-lp", p3, q3, 2)


def test_float32_and_identity() -> None:
    """float32 input is upcast; p = q gives acceptance 1 for every verifier with random drafts
    (docs/theory/invariants.md §9.12); "topk" drafts the top 3 of 4 tokens, so it accepts p(top 3) = 0.9."""
    p = np.array([0.4, 0.3, 0.2, 0.1], dtype=np.float32)
    assert mf.acceptance("topk", p, p, 3) == pytest.approx(0.9, abs=1e-7)
    for name in NAMES:
        if name == "topk":
            continue
        n = mf.verifiers[name].fixed_n or 3
        assert mf.acceptance(name, p, p, n) == pytest.approx(1.0, abs=1e-12)
        sim = mf.simulate(name, p, p, n, 2000, rng=1)
        assert sim.accepted.all()


def test_every_tuple_of_the_scheme_is_possible() -> None:
    """The C++ draft samplers only produce tuples of positive probability, all of them eventually."""
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    q = np.array([0.35, 0.05, 0.35, 0.25, 0.0])
    for name, n in [("rrs", 2), ("rrs-wor", 3), ("greedy", 3), ("spechub", 2)]:
        sch = mf.verifiers[name].scheme
        want = {t for t, _ in scheme_tuples(q, n, sch)}
        got = set(map(tuple, mf.simulate(name, p, q, n, 50_000, rng=2).drafts.tolist()))
        assert got == want, name
    assert len(list(itertools.islice(spechub_tuples(q), 3))) == 3
