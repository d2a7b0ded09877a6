"""Property-based tests (hypothesis) over the public API.

Every property is checked on small vocabularies (V <= 6), where the HiGHS LP, the native max-flow
and the 2^V brute force are all cheap, with inputs drawn to include zeros, ties, one-hot rows and
masses down to 1e-300.

Determinism: every test runs with ``derandomize=True`` (examples are a fixed function of the test)
and no example database, so CI sees the same examples on every run. Example budget per test is
``EXAMPLES`` (the total is printed by ``test_example_budget``): 8 tests x 300 = 2,400 examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdsd_fast as mf
from reference import brute_alpha, set_law, tuple_law

EXAMPLES = 300
PROPERTY_TESTS = 8  # tests in this file that use PROFILE; checked below

PROFILE = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SCHEMES = ("iid", "wor", "greedy")

# Entry masses before normalisation: zeros, exact ties, tiny and ordinary values.
_MASS = st.one_of(
    st.sampled_from([0.0, 0.0, 1.0, 0.5, 0.25, 1e-300, 1e-12]),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False),
)


@st.composite
def distributions(draw: st.DrawFn, V: int) -> np.ndarray:
    x = np.array(draw(st.lists(_MASS, min_size=V, max_size=V)), dtype=np.float64)
    if not x.sum() > 0:
        x[draw(st.integers(0, V - 1))] = 1.0
    return x / x.sum()


@st.composite
def pairs(draw: st.DrawFn, max_v: int = 6) -> tuple[np.ndarray, np.ndarray, int]:
    V = draw(st.integers(1, max_v))
    p = draw(distributions(V))
    q = draw(distributions(V)) if draw(st.booleans()) else p.copy()
    if draw(st.integers(0, 3)) == 0:  # ties in the ratio p/q: q proportional to p on a subset
        mask = np.array(draw(st.lists(st.booleans(), min_size=V, max_size=V)))
        q = np.where(mask, p * draw(st.sampled_from([0.5, 1.0, 2.0])), q)
        if not q.sum() > 0:
            q = p.copy()
        q = q / q.sum()
    n = draw(st.integers(1, 4))
    return p, q, n


def _support(q: np.ndarray) -> int:
    return int(np.count_nonzero(q > 0))


def _valid(scheme: str, q: np.ndarray, n: int) -> bool:
    return scheme == "iid" or _support(q) >= n


@PROFILE
@given(pairs())
def test_dual_equals_lp_flow_and_bruteforce(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    """dual == HiGHS LP == native max-flow == 2^V brute force (1e-9), every scheme."""
    p, q, n = case
    for scheme in SCHEMES:
        if not _valid(scheme, q, n):
            with pytest.raises(ValueError, match="n: scheme"):
                mf.optimal_acceptance(p, q, n, scheme)
            continue
        bf, _ = brute_alpha(p, set_law(tuple_law(q, n, scheme)))
        dual = mf.optimal_acceptance(p, q, n, scheme)
        lp = mf.solve_lp(p, q, n, scheme)
        flow = mf.solve_lp(p, q, n, scheme, solver="flow")
        assert lp.status == "Optimal"
        assert dual == pytest.approx(bf, abs=1e-9), (scheme, n, p, q)
        assert lp.alpha == pytest.approx(bf, abs=1e-9), (scheme, n, p, q)
        assert flow.alpha == pytest.approx(bf, abs=1e-9), (scheme, n, p, q)
        assert mf.optimal_acceptance(p, q, n, scheme, method="lp") == pytest.approx(bf, abs=1e-9)
        if scheme == "wor":
            integral = mf.optimal_acceptance(p, q, n, scheme, wor_method="integral")
            assert integral == pytest.approx(bf, abs=1e-10)


@PROFILE
@given(pairs())
def test_alpha_invariants(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    """alpha* <= 1; >= sum min(p, q); n = 1 equals sum min(p, q); wor >= iid; p = q gives 1."""
    p, q, n = case
    sd = float(np.minimum(p, q).sum())
    a = {s: mf.optimal_acceptance(p, q, n, s) for s in SCHEMES if _valid(s, q, n)}
    for s, v in a.items():
        assert 0.0 <= v <= 1.0
        assert v >= sd - 1e-12, (s, v, sd)
    if "wor" in a:
        assert a["wor"] >= a["iid"] - 1e-12
    for s in SCHEMES:
        assert mf.optimal_acceptance(p, q, 1, s) == pytest.approx(sd, abs=1e-12)
        if _valid(s, p, n):
            assert mf.optimal_acceptance(p, p, n, s) == pytest.approx(1.0, abs=1e-12)


@PROFILE
@given(pairs(), st.integers(5, 12))
def test_alpha_monotone_in_n(case: tuple[np.ndarray, np.ndarray, int], n_max: int) -> None:
    """alpha*_iid and alpha*_wor are non-decreasing in n (docs/theory/dual.md §3.3)."""
    p, q, _ = case
    for scheme in ("iid", "wor"):
        prev = 0.0
        for n in range(1, n_max + 1):
            if not _valid(scheme, q, n):
                break
            a = mf.optimal_acceptance(p, q, n, scheme)
            assert a >= prev - 1e-12, (scheme, n, a, prev)
            prev = a


@PROFILE
@given(pairs(max_v=5))
def test_every_verifier_is_bounded_by_its_optimum(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    """acceptance(name) <= alpha* of verifiers[name].optimal_scheme; greedy, spechub, optimal-lp attain it."""
    p, q, n = case
    for name, v in mf.verifiers.items():
        nn = v.fixed_n or n
        sch = v.optimal_scheme
        if not _valid(sch, q, nn) or (name == "spechub" and _support(q) < 2):
            continue
        star = mf.optimal_acceptance(p, q, nn, sch)
        acc = mf.acceptance(name, p, q, nn)
        assert 0.0 <= acc <= star + 1e-12, (name, nn, acc, star)
        if name in ("greedy", "spechub", "optimal-lp", "sd"):
            assert acc == pytest.approx(star, abs=1e-9), (name, nn, acc, star)


@PROFILE
@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 3), st.data())
def test_batch_equals_rows(B: int, V: int, n: int, data: st.DataObject) -> None:
    """A (B, V) call equals B one-row calls bit for bit (alpha*, certificates, verifier acceptance)."""
    P = np.stack([data.draw(distributions(V)) for _ in range(B)])
    Q = np.stack([data.draw(distributions(V)) for _ in range(B)])
    for scheme in SCHEMES:
        if not all(_valid(scheme, Q[r], n) for r in range(B)):
            continue
        batch, certs = mf.optimal_acceptance(P, Q, n, scheme, return_certificate=True)
        assert batch.shape == (B,)
        for r in range(B):
            a, H = mf.optimal_acceptance(P[r], Q[r], n, scheme, return_certificate=True)
            assert a == batch[r]
            assert np.array_equal(H, certs[r])
    for name in ("rrs", "kseq", "greedy", "sd"):
        nn = mf.verifiers[name].fixed_n or n
        if not all(_valid(mf.verifiers[name].scheme, Q[r], nn) for r in range(B)):
            continue
        acc = mf.acceptance(name, P, Q, nn)
        for r in range(B):
            assert acc[r] == mf.acceptance(name, P[r], Q[r], nn)


@PROFILE
@given(pairs(), st.randoms(use_true_random=False))
def test_permutation_invariance(case: tuple[np.ndarray, np.ndarray, int], rnd) -> None:  # noqa: ANN001
    """Relabelling tokens leaves alpha*_iid and alpha*_wor unchanged (docs/theory/invariants.md §9.11)."""
    p, q, n = case
    perm = list(range(p.shape[0]))
    rnd.shuffle(perm)
    for scheme in ("iid", "wor"):
        if not _valid(scheme, q, n):
            continue
        a = mf.optimal_acceptance(p, q, n, scheme)
        b = mf.optimal_acceptance(p[perm], q[perm], n, scheme)
        assert a == pytest.approx(b, abs=1e-12)


@PROFILE
@given(pairs())
def test_certificate_reproduces_alpha(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    """The certificate H gives alpha* = 1 + p(H) - Pr[all drafts in H] (brute-force Pr)."""
    from reference import q_of

    p, q, n = case
    for scheme in SCHEMES:
        if not _valid(scheme, q, n):
            continue
        a, H = mf.optimal_acceptance(p, q, n, scheme, return_certificate=True)
        law = set_law(tuple_law(q, n, scheme))
        assert min(1.0, 1 + p[H].sum() - q_of(law, H)) == pytest.approx(a, abs=1e-9)


@PROFILE
@given(pairs(max_v=5), st.integers(0, 2**32 - 1))
def test_simulation_agrees_with_exact(case: tuple[np.ndarray, np.ndarray, int], seed: int) -> None:
    """Simulated acceptance is within 6 standard errors (+1e-3) of the exact value; outputs are valid."""
    p, q, n = case
    for name in ("rrs", "kseq", "greedy"):
        sch = mf.verifiers[name].scheme
        if not _valid(sch, q, n):
            continue
        exact = mf.acceptance(name, p, q, n)
        sim = mf.simulate(name, p, q, n, 4000, rng=seed)
        assert ((sim.tokens >= 0) & (sim.tokens < p.shape[0])).all()
        assert (p[sim.tokens] > 0).all()  # the output law is p: never a token with p = 0
        assert (q[sim.drafts] > 0).all()  # drafts come from q
        est = sim.accepted.mean()
        se = np.sqrt(max(exact * (1 - exact), 1e-12) / 4000)
        assert abs(est - exact) <= 6 * se + 1e-3, (name, n, est, exact)


def test_example_budget() -> None:
    """The example budget reported in the module docstring (and by CI's log) is what runs."""
    import sys

    mod = sys.modules[__name__]
    used = [f for f in vars(mod).values() if callable(f) and hasattr(f, "hypothesis")]
    assert len(used) == PROPERTY_TESTS, [f.__name__ for f in used]
    for f in used:
        assert f._hypothesis_internal_use_settings.max_examples == EXAMPLES
        assert f._hypothesis_internal_use_settings.derandomize
    print(f"hypothesis: {len(used)} property tests x {EXAMPLES} examples = {len(used) * EXAMPLES}")
