"""Hostile input for every entry point: a ValueError/TypeError naming the problem, never a crash,
a hang or a wrong number.

Entry points: optimal_acceptance, solve_lp (incl. scheme="explicit" tuples/probs), acceptance,
simulate, verify. Strided and reversed views must give the same numbers as contiguous copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf

P = np.array([0.5, 0.3, 0.2])
Q = np.array([0.2, 0.3, 0.5])

# Each entry point as a function of (p, q, n), the rest fixed.
ENTRY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "optimal_acceptance": lambda p, q, n: mf.optimal_acceptance(p, q, n, "iid"),
    "optimal_acceptance_wor": lambda p, q, n: mf.optimal_acceptance(p, q, n, "wor"),
    "optimal_acceptance_lp": lambda p, q, n: mf.optimal_acceptance(p, q, n, "greedy", method="lp"),
    "solve_lp": lambda p, q, n: mf.solve_lp(p, q, n, "iid").alpha,
    "solve_lp_flow": lambda p, q, n: mf.solve_lp(p, q, n, "wor", solver="flow").alpha,
    "acceptance": lambda p, q, n: mf.acceptance("rrs", p, q, n),
    "acceptance_sim": lambda p, q, n: mf.acceptance("kseq", p, q, n, exact=False, samples=100, rng=0),
    "simulate": lambda p, q, n: mf.simulate("rrs-wor", p, q, n, 10, rng=0).tokens,
    "verify": lambda p, q, n: mf.verify("rrs", p, q, [0] * (n if isinstance(n, int) and 0 < n < 10 else 2), rng=0),
}

BAD_P: list[tuple[str, Any, type[Exception], str]] = [
    ("int", np.array([1, 0, 0]), TypeError, "p: expected float32 or float64"),
    ("bool", np.array([True, False, False]), TypeError, "p: expected float32 or float64.*bool"),
    ("object", np.array([0.5, 0.3, 0.2], dtype=object), TypeError, "p: .*dtype object"),
    ("complex", P.astype(np.complex128), TypeError, "p: .*complex128"),
    ("float16", P.astype(np.float16), TypeError, "p: .*float16"),
    ("longdouble", P.astype(np.longdouble), TypeError, "p: expected float32 or float64"),
    ("string", "abc", TypeError, "p: "),
    ("None", None, TypeError, "p: "),
    ("ragged", [[0.5, 0.5], [1.0]], ValueError, "p: cannot be read as an array"),
    ("scalar", np.float64(1.0), ValueError, r"p: expected shape .*got shape \(\)"),
    ("3-D", np.ones((1, 1, 3)) / 3, ValueError, r"p: expected shape .*\(1, 1, 3\)"),
    ("empty V", np.zeros(0), ValueError, r"p: the vocabulary is empty|p: expected shape"),
    ("NaN", np.array([0.5, np.nan, 0.5]), ValueError, "p: row 0 contains NaN or inf"),
    ("inf", np.array([0.5, np.inf, 0.5]), ValueError, "p: row 0 contains NaN or inf"),
    ("-inf", np.array([0.5, -np.inf, 0.5]), ValueError, "p: row 0 contains NaN or inf"),
    ("negative", np.array([0.6, 0.6, -0.2]), ValueError, "p: row 0 has negative entries"),
    ("-0.0 sum 0", np.array([0.0, -0.0, 0.0]), ValueError, "p: row 0 sums to 0"),
    ("sum 2", np.array([1.0, 0.6, 0.4]), ValueError, "p: row 0 sums to 2"),
    ("sum 1+2e-4", P * (1 + 2e-4), ValueError, "p: row 0 sums to 1.0002"),
    ("denormal sum", np.array([1e-320, 0.0, 0.0]), ValueError, "p: row 0 sums to"),
    ("V mismatch", np.array([0.5, 0.5]), ValueError, "vocabulary sizes differ|expected shape|p: "),
]


@pytest.mark.parametrize("entry", list(ENTRY))
@pytest.mark.parametrize("label, p, exc, match", BAD_P, ids=[b[0] for b in BAD_P])
def test_bad_p_is_refused(entry: str, label: str, p: Any, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        ENTRY[entry](p, Q, 2)


@pytest.mark.parametrize("entry", list(ENTRY))
@pytest.mark.parametrize("label, q, exc, match", BAD_P[:-1], ids=[b[0] for b in BAD_P[:-1]])
def test_bad_q_is_refused(entry: str, label: str, q: Any, exc: type[Exception], match: str) -> None:
    if entry.startswith("solve_lp") and label == "None":  # q=None is how "explicit" is called
        exc, match = ValueError, "q: required for scheme="
    with pytest.raises(exc, match=match.replace("p:", "q:")):
        ENTRY[entry](P, q, 2)


BAD_N: list[tuple[Any, type[Exception], str]] = [
    (0, ValueError, "n: the number of drafts must be >= 1, got 0"),
    (-3, ValueError, "n: the number of drafts must be >= 1, got -3"),
    (2**70, ValueError, "n: .*beyond any supported computation"),
    (2.0, TypeError, "n: expected an integer"),
    (True, TypeError, "n: expected an integer.*bool"),
    (np.bool_(True), TypeError, "n: expected an integer"),
    ("2", TypeError, "n: expected an integer"),
    (None, TypeError, "n: expected an integer"),
]


@pytest.mark.parametrize("entry", [e for e in ENTRY if e != "verify"])
@pytest.mark.parametrize("n, exc, match", BAD_N, ids=[repr(b[0]) for b in BAD_N])
def test_bad_n_is_refused(entry: str, n: Any, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        ENTRY[entry](P, Q, n)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: mf.optimal_acceptance(P, Q, 4, "wor"), ValueError, "n: scheme 'wor' draws 4 distinct tokens.*only 3"),
        (lambda: mf.optimal_acceptance(P, Q, 10**6, "greedy"), ValueError, "n: scheme 'greedy' draws 1000000"),
        (lambda: mf.solve_lp(P, Q, 171, "iid"), ValueError, "n: the iid flow-LP enumeration supports n <= 170"),
        (lambda: mf.solve_lp(P, Q, 21, "wor"), ValueError, "n: scheme 'wor' draws 21"),
        (lambda: mf.acceptance("sd", P, Q, 3), ValueError, "n: verifier 'sd' handles n = 1"),
        (lambda: mf.simulate("spechub", P, Q, 1, 5), ValueError, "n: verifier 'spechub' handles n = 2"),
        (
            lambda: mf.optimal_acceptance(P, Q, 2, return_certificate="yes"),
            TypeError,
            "return_certificate: expected a bool",
        ),
        (lambda: mf.optimal_acceptance(P, Q, 2, method=["dual"]), ValueError, "method: expected"),
        (lambda: mf.optimal_acceptance(P, Q, 2, wor_method=np.array([1, 2])), ValueError, "wor_method: expected"),
        (lambda: mf.optimal_acceptance(P, Q, 2, scheme=None), ValueError, "scheme: expected one of"),
        (lambda: mf.optimal_acceptance(P, Q, 2, threads=0), ValueError, "threads: expected a positive integer"),
        (lambda: mf.optimal_acceptance(P, Q, 2, threads=1.5), ValueError, "threads: expected a positive integer"),
        (lambda: mf.solve_lp(P, Q, 2, solver=np.array([1])), ValueError, "solver: expected"),
        (lambda: mf.solve_lp(P, Q, 2, max_sets=0), ValueError, "max_sets: expected a positive integer"),
        (lambda: mf.solve_lp(P, Q, 2, max_sets=1e6), ValueError, "max_sets: expected a positive integer"),
        (lambda: mf.solve_lp(P, Q, 2, time_limit=float("nan")), ValueError, "time_limit: expected a positive"),
        (lambda: mf.solve_lp(P, Q, 2, time_limit=-1), ValueError, "time_limit: expected a positive"),
        (lambda: mf.solve_lp(P, Q, 2, time_limit="1"), TypeError, "time_limit: expected a number"),
        (lambda: mf.solve_lp(np.tile(P, (2, 1)), Q, 2), ValueError, r"p: expected shape \(V,\)"),
        (lambda: mf.solve_lp(P, None, 2, "iid"), ValueError, "q: required for scheme='iid'"),
        (lambda: mf.solve_lp(P, Q, 2, "independent"), ValueError, r"q: expected shape \(B, V\)"),
        (
            lambda: mf.solve_lp(P, np.stack([Q, Q, Q]), 2, "independent"),
            ValueError,
            r"q: scheme='independent' expects shape \(n, V\) = \(2, 3\)",
        ),
        (lambda: mf.acceptance("rrs", P, Q, 2, exact="no"), TypeError, "exact: expected a bool"),
        (
            lambda: mf.acceptance("rrs", P, Q, 2, exact=False, samples=0),
            ValueError,
            "samples: expected an integer >= 1",
        ),
        (
            lambda: mf.acceptance("rrs", P, Q, 2, exact=False, samples=2**70),
            ValueError,
            "samples: .* more than the supported",
        ),
        (lambda: mf.simulate("rrs", P, Q, 2, -1), ValueError, "samples: expected an integer >= 0"),
        (lambda: mf.simulate("rrs", P, Q, 2, 10.0), TypeError, "samples: expected an integer"),
        (lambda: mf.simulate("rrs", P, Q, 2, True), TypeError, "samples: expected an integer"),
        (lambda: mf.simulate("rrs", P, Q, 2, 10, rng="abc"), TypeError, "rng: expected anything numpy.random"),
        (lambda: mf.acceptance("rrs", P, Q, 2, exact=False, rng=-1), ValueError, "rng: expected anything numpy"),
        (lambda: mf.simulate("nope", P, Q, 2, 10), ValueError, "name: expected one of"),
        (lambda: mf.simulate(None, P, Q, 2, 10), ValueError, "name: expected one of"),
        (
            lambda: mf.acceptance("optimal-lp", P, Q, 2, scheme="independent"),
            ValueError,
            "scheme: verifier 'optimal-lp' verifies",
        ),
        (
            lambda: mf.acceptance("greedy", P, Q, 2, scheme="iid"),
            ValueError,
            "scheme: verifier 'greedy' verifies 'greedy'",
        ),
    ],
)
def test_bad_arguments_are_refused(call: Callable[[], Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize(
    "tuples, probs, exc, match",
    [
        ([[0, 1], [0, 3]], [0.5, 0.5], ValueError, r"tuples: row 1 has a token id outside \[0, 3\)"),
        ([[0, 1], [-1, 0]], [0.5, 0.5], ValueError, r"tuples: row 1 has a token id outside \[0, 3\)"),
        (np.array([[0, 2**63 + 5]], dtype=np.uint64), [1.0], ValueError, r"tuples: row 0 has a token id outside"),
        ([[0, 1]], [0.9], ValueError, "probs: row 0 sums to 0.9"),
        ([[0, 1], [1, 2]], [0.5, -0.5], ValueError, "probs: row 0 has negative entries"),
        ([[0, 1], [1, 2]], [0.5, np.nan], ValueError, "probs: row 0 contains NaN"),
        ([[0, 1], [1, 2]], [1.0], ValueError, "probs: expected 2 probabilities"),
        ([[0, 1]], [1], TypeError, "probs: expected float32 or float64"),
        ([[0, 1]], [[1.0]], ValueError, r"probs: expected shape \(V,\)"),
        ([[0.0, 1.0]], [1.0], TypeError, "tuples: expected an integer array"),
        (np.ones((1, 2), dtype=bool), [1.0], TypeError, "tuples: expected an integer array.*bool"),
        ([[0, 1], [1]], [0.5, 0.5], ValueError, "tuples: cannot be read as an array"),
        ([0, 1], [1.0], ValueError, r"tuples: expected shape \(m, n\)"),
        (np.zeros((0, 2), dtype=int), np.zeros(0), ValueError, r"tuples: expected shape \(m, n\) with m, n >= 1"),
        (None, [1.0], ValueError, "tuples, probs: scheme='explicit' needs both"),
        ([[0, 1]], None, ValueError, "tuples, probs: scheme='explicit' needs both"),
    ],
)
def test_explicit_tuples_hostile(tuples: Any, probs: Any, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        mf.solve_lp(P, None, 2, "explicit", tuples=tuples, probs=probs)


@pytest.mark.parametrize(
    "drafts, exc, match",
    [
        ([0, 9], ValueError, r"drafts: token id 9 outside \[0, 3\)"),
        ([0, -1], ValueError, r"drafts: token id -1 outside \[0, 3\)"),
        (np.array([2**63 + 5, 0], dtype=np.uint64), ValueError, r"drafts: token id 9223372036854775813 outside"),
        ([0.0, 1.0], TypeError, "drafts: expected integer token ids"),
        ([True, False], TypeError, "drafts: expected integer token ids"),
        (np.array([0, 1], dtype=object), TypeError, "drafts: expected integer token ids"),
        ([[0, 1], [1]], ValueError, "drafts: cannot be read as an array"),
        ([], TypeError, r"drafts: expected integer token ids, got dtype float64"),
        (np.zeros(0, dtype=int), ValueError, r"drafts: expected shape \(n,\) or \(B, n\) with n >= 1"),
        (np.zeros((1, 1, 2), dtype=int), ValueError, r"drafts: expected shape"),
        (5, ValueError, r"drafts: expected shape"),
    ],
)
def test_verify_drafts_hostile(drafts: Any, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        mf.verify("rrs", P, Q, drafts, rng=0)


def test_verify_batch_mismatch_and_empty() -> None:
    P2, Q2 = np.tile(P, (2, 1)), np.tile(Q, (3, 1))
    with pytest.raises(ValueError, match="batch sizes differ"):
        mf.verify("rrs", P2, Q2, [[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="drafts: expected 2 tuples"):
        mf.verify("rrs", P2, np.tile(Q, (2, 1)), [[0, 1], [1, 2], [2, 2]])
    tok, acc = mf.verify("rrs", P, Q, np.zeros((0, 2), dtype=np.int64))
    assert tok.shape == acc.shape == (0,)
    with pytest.raises(ValueError, match="drafts: token 0 has q = 0"):
        mf.verify("rrs", P, np.array([0.0, 0.5, 0.5]), [0, 1])


def test_mismatched_batches_everywhere() -> None:
    A, B = np.tile(P, (2, 1)), np.tile(Q, (3, 1))
    for f in ENTRY.values():
        with pytest.raises(ValueError, match="batch sizes differ|expected shape"):
            f(A, B, 2)


# ---------------------------------------------------------------------------------------------
# Layout: strided, reversed, Fortran-order, byte-swapped and read-only inputs give the SAME numbers


def _layouts(x: np.ndarray) -> dict[str, np.ndarray]:
    """The same values in other memory layouts."""
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), dtype=x.dtype)
    wide[:, ::2] = x
    rev = np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    ro = x.copy()
    ro.setflags(write=False)
    return {
        "strided": wide[:, ::2],
        "reversed": rev,
        "fortran": np.asfortranarray(x),
        "byteswapped": x.astype(x.dtype.newbyteorder(">" if x.dtype.byteorder != ">" else "<")),
        "readonly": ro,
        "row-strided": np.repeat(x, 2, axis=0)[::2],
    }


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_layouts_give_identical_numbers(dtype: type) -> None:
    rng = np.random.default_rng(4)
    Pm = rng.dirichlet(np.ones(40), size=5).astype(dtype)
    Qm = rng.dirichlet(np.ones(40), size=5).astype(dtype)
    ref = {
        "iid": mf.optimal_acceptance(Pm, Qm, 3, "iid", return_certificate=True),
        "wor": mf.optimal_acceptance(Pm, Qm, 4, "wor"),
        "greedy": mf.optimal_acceptance(Pm, Qm, 3, "greedy"),
        "rrs": mf.acceptance("rrs", Pm, Qm, 3),
        "sim": mf.simulate("kseq", Pm, Qm, 2, 500, rng=1),
        "lp": mf.solve_lp(Pm[0], Qm[0], 2, "wor").alpha,
        "verify": mf.verify("rrs", Pm, Qm, np.tile([1, 2], (5, 1)), rng=3),
    }
    for name, (Pl, Ql) in {k: (v, _layouts(Qm)[k]) for k, v in _layouts(Pm).items()}.items():
        a, H = mf.optimal_acceptance(Pl, Ql, 3, "iid", return_certificate=True)
        assert np.array_equal(a, ref["iid"][0]), name
        assert all(np.array_equal(x, y) for x, y in zip(H, ref["iid"][1], strict=True)), name
        assert np.array_equal(mf.optimal_acceptance(Pl, Ql, 4, "wor"), ref["wor"]), name
        assert np.array_equal(mf.optimal_acceptance(Pl, Ql, 3, "greedy"), ref["greedy"]), name
        assert np.array_equal(mf.acceptance("rrs", Pl, Ql, 3), ref["rrs"]), name
        sim = mf.simulate("kseq", Pl, Ql, 2, 500, rng=1)
        for x, y in zip(sim, ref["sim"], strict=True):
            assert np.array_equal(x, y), name
        assert mf.solve_lp(Pl[0], Ql[0], 2, "wor").alpha == ref["lp"], name
        drafts = np.tile([1, 2], (5, 1))[:, ::-1][:, ::-1]  # a non-contiguous view of the same drafts
        for x, y in zip(mf.verify("rrs", Pl, Ql, drafts, rng=3), ref["verify"], strict=True):
            assert np.array_equal(x, y), name


def test_explicit_layouts_give_identical_numbers() -> None:
    tuples = np.array([[0, 1], [1, 2], [2, 2], [0, 0]])
    probs = np.array([0.4, 0.3, 0.2, 0.1])
    ref = mf.solve_lp(P, None, 2, "explicit", tuples=tuples, probs=probs).alpha
    t_f = np.asfortranarray(tuples)
    t_s = np.zeros((4, 4), dtype=np.int32)
    t_s[:, ::2] = tuples
    p_rev = np.ascontiguousarray(probs[::-1])[::-1]
    for t in (t_f, t_s[:, ::2], tuples.astype(np.uint8)):
        assert mf.solve_lp(P, None, 2, "explicit", tuples=t, probs=p_rev).alpha == ref


# ---------------------------------------------------------------------------------------------
# Degenerate but valid: V = 1, empty batches, one-token supports


def test_vocabulary_of_one() -> None:
    one = np.array([1.0])
    for s in ("iid", "greedy"):
        assert mf.optimal_acceptance(one, one, 1, s) == 1.0
    assert mf.optimal_acceptance(one, one, 7, "iid") == 1.0
    with pytest.raises(ValueError, match="n: scheme 'wor' draws 2 distinct tokens.*only 1"):
        mf.optimal_acceptance(one, one, 2, "wor")
    assert mf.solve_lp(one, one, 3, "iid").alpha == 1.0
    assert mf.solve_lp(one, one, 3, "iid", solver="flow").alpha == 1.0
    assert mf.solve_lp(one, None, 2, "explicit", tuples=[[0, 0]], probs=[1.0]).alpha == 1.0
    for name in ("sd", "rrs", "kseq"):
        n = mf.verifiers[name].fixed_n or 3
        assert mf.acceptance(name, one, one, n) == 1.0
        sim = mf.simulate(name, one, one, n, 50, rng=0)
        assert (sim.tokens == 0).all() and sim.accepted.all()
    assert mf.verify("sd", one, one, [0], rng=0) == (0, True)


def test_empty_batches() -> None:
    E = np.zeros((0, 4))
    a = mf.optimal_acceptance(E, E, 2, "wor")
    assert a.shape == (0,) and a.dtype == np.float64
    a, H = mf.optimal_acceptance(E, E, 2, "iid", return_certificate=True)
    assert a.shape == (0,) and list(H) == []
    assert mf.acceptance("rrs", E, E, 2).shape == (0,)
    est, se = mf.acceptance("rrs", E, E, 2, exact=False, samples=10)
    assert est.shape == se.shape == (0,)
    sim = mf.simulate("rrs", E, E, 2, 10)
    assert sim.tokens.shape == (0, 10) and sim.drafts.shape == (0, 10, 2)
    tok, acc = mf.verify("rrs", E, E, np.zeros((0, 2), dtype=int))
    assert tok.shape == (0,)


def test_huge_vocabulary_is_refused_before_copying() -> None:
    """V > 2^31 - 1 is refused from the shape alone (a zero-stride view: nothing is allocated)."""
    huge = np.broadcast_to(np.float64(0.0), (2**31,))
    with pytest.raises(ValueError, match=r"p: V = 2147483648 tokens is more than the supported"):
        mf.optimal_acceptance(huge, huge, 2)
    with pytest.raises(ValueError, match=r"p: V = 2147483648"):
        mf.acceptance("rrs", huge, huge, 2)


def test_threads_are_clamped_not_crashing() -> None:
    rng = np.random.default_rng(0)
    Pm, Qm = rng.dirichlet(np.ones(5), size=300), rng.dirichlet(np.ones(5), size=300)
    ref = mf.optimal_acceptance(Pm, Qm, 2, "wor", threads=1)
    assert np.array_equal(mf.optimal_acceptance(Pm, Qm, 2, "wor", threads=2**40), ref)
    assert np.array_equal(mf.acceptance("kseq", Pm, Qm, 2, threads=10**6), mf.acceptance("kseq", Pm, Qm, 2, threads=1))
