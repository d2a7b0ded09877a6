"""Hostile input for the input surfaces beyond the core entry points: the integer and size
boundary, TopK / sparse rows, Logits and acceptance_bounds (tests/robustness/test_hostile_trees.py
has trees, tree drafting, tree files, the audit and the extractor's specs).

Every case ends in a clean TypeError / ValueError (``TooLargeError`` is one) naming the argument,
or in a result checked against an independent computation; never a crash, a silent wrong number,
a frozen or modified caller's array, or a large allocation from a tiny input (each call runs
under tracemalloc and must stay below ``bounded.PEAK``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from bounded import BIG_V, U64_MAX, bounded
from bounded import refused as _refused

import mdsd_fast as mf
from mdsd_fast import limits
from mdsd_fast.inputs.args import check_alloc, int_array, integer
from mdsd_fast.trees import DraftTree
from mdsd_fast.trees._raw import check_tree

P3 = np.array([0.5, 0.3, 0.2])
Q3 = np.array([0.2, 0.3, 0.5])

# --- one boundary for integers ---------------------------------------------------------------

INTEGER_CASES: list[tuple[str, Any, int | None, int | None, Any]] = [
    ("python int", 5, 1, 10, 5),
    ("int8", np.int8(5), 1, 10, 5),
    ("uint8", np.uint8(5), 1, 10, 5),
    ("int64", np.int64(5), 1, 10, 5),
    ("uint64 small", np.uint64(5), 1, 10, 5),
    ("uint64 max", U64_MAX, 1, 10, ValueError),
    ("uint64 max unbounded above", U64_MAX, 0, None, 2**64 - 1),
    ("huge python int", 10**30, 1, 2**31, ValueError),
    ("negative", -3, 0, None, ValueError),
    ("int64 min", np.int64(-(2**63)), 0, None, ValueError),
    ("bool", True, 0, 10, TypeError),
    ("numpy bool", np.bool_(True), 0, 10, TypeError),
    ("float", 5.0, 0, 10, TypeError),
    ("numpy float", np.float64(5), 0, 10, TypeError),
    ("string", "5", 0, 10, TypeError),
    ("none", None, 0, 10, TypeError),
    ("0-d array", np.array(5), 0, 10, TypeError),
]


@pytest.mark.parametrize("label,value,lo,hi,want", INTEGER_CASES, ids=[c[0] for c in INTEGER_CASES])
def test_integer(label: str, value: Any, lo: int | None, hi: int | None, want: Any) -> None:
    if isinstance(want, type):
        with pytest.raises(want, match="^x: "):
            integer("x", value, lo, hi)
    else:
        got = integer("x", value, lo, hi)
        assert got == want and type(got) is int


INT_ARRAY_CASES: list[tuple[str, Any, int, int, Any]] = [
    ("int64", np.array([0, 3]), 0, 9, [0, 3]),
    ("int8", np.array([-1, 3], np.int8), -1, 9, [-1, 3]),
    ("uint16", np.array([1, 3], np.uint16), 0, 9, [1, 3]),
    ("uint64 max", np.array([0, U64_MAX], np.uint64), 0, 9, "entry 1 is 18446744073709551615"),
    ("uint64 past int64", np.array([2**63], np.uint64), -(2**63), 2**63 - 1, "entry 0 is 9223372036854775808"),
    ("below", np.array([[0, -5]]), -1, 9, r"entry \(0, 1\) is -5; expected >= -1|expected in"),
    ("list", [1, 2], 0, 9, [1, 2]),
    ("empty list", [], 0, 9, []),
    ("bool", np.array([True]), 0, 9, TypeError),
    ("float", np.array([1.0]), 0, 9, TypeError),
    ("object", np.array([1], dtype=object), 0, 9, TypeError),
    ("ragged", [[1], [1, 2]], 0, 9, "cannot be read"),
]


@pytest.mark.parametrize("label,x,lo,hi,want", INT_ARRAY_CASES, ids=[c[0] for c in INT_ARRAY_CASES])
def test_int_array(label: str, x: Any, lo: int, hi: int, want: Any) -> None:
    if isinstance(want, type):
        with pytest.raises(want, match="^ids: "):
            int_array("ids", x, lo, hi)
    elif isinstance(want, str):
        with pytest.raises(ValueError, match=want):
            int_array("ids", x, lo, hi)
    else:
        got = int_array("ids", x, lo, hi)
        assert got.dtype == np.int64 and got.tolist() == want
        if isinstance(x, np.ndarray):
            assert not np.shares_memory(got, x)  # always a copy


def test_check_alloc_states_the_size_and_reads_the_limit_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(mf.TooLargeError, match=r"V: the rows would need 2\.0 GiB \(2,147,483,648 bytes\)"):
        check_alloc("V", 2**31, "the rows")
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 2**32)
    check_alloc("V", 2**31, "the rows")
    assert limits.LIMITS["max_alloc_bytes"] == 2**30


# --- TopK and sparse rows -----------------------------------------------------------------


def _alpha(p: Any, q: Any = Q3) -> Any:
    return mf.optimal_acceptance(p, q, 2, "iid")


TOPK_BAD: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("id -5 (not padding)", lambda: mf.TopK([[0, -5, 1]], [[0.5, 0.3, 0.2]], 3), ValueError, "-1 is the only padding"),
    ("id -2", lambda: mf.TopK([0, -2], [0.5, 0.5], 3), ValueError, "-1 is the only padding"),
    ("ragged id -7", lambda: mf.TopK([np.array([0, -7])], [np.array([0.5, 0.5])], 3), ValueError, "padding"),
    (
        "uint64 id wraps",
        lambda: mf.TopK(np.array([0, U64_MAX], np.uint64), [0.5, 0.5], 3),
        ValueError,
        "18446744073709551615",
    ),
    ("int64 min id", lambda: mf.TopK(np.array([0, -(2**63)]), [0.5, 0.5], 3), ValueError, "padding"),
    ("id = V", lambda: mf.TopK([0, 3], [0.5, 0.5], 3), ValueError, "outside"),
    ("float ids", lambda: mf.TopK(np.array([0.0, 1.0]), [0.5, 0.5], 3), TypeError, "TopK.ids"),
    ("bool ids", lambda: mf.TopK(np.array([True, False]), [0.5, 0.5], 3), TypeError, "TopK.ids"),
    ("uint64 V huge", lambda: mf.TopK([0, 1], [0.5, 0.5], U64_MAX), ValueError, "vocab_size"),
    ("V 0", lambda: mf.TopK([0], [1.0], 0), ValueError, "vocab_size"),
    ("V float", lambda: mf.TopK([0], [1.0], 3.0), TypeError, "vocab_size"),
    ("V bool", lambda: mf.TopK([0], [1.0], True), TypeError, "vocab_size"),
    ("logprobs not bool", lambda: mf.TopK([0], [0.0], 3, logprobs="yes"), TypeError, "logprobs"),
    ("shapes differ", lambda: mf.TopK([[0, 1]], [[0.5, 0.3, 0.2]], 3), ValueError, "same number of entries"),
    ("ragged values flat", lambda: mf.TopK([np.array([0, 1])], np.array([0.5, 0.5]), 3), ValueError, "ragged"),
    ("int values", lambda: mf.TopK([0, 1], [1, 0], 3), TypeError, "floats"),
    ("nan value", lambda: mf.TopK([0, 1], [np.nan, 0.5], 3), ValueError, "NaN"),
    ("positive logprob", lambda: mf.TopK([0, 1], [0.1, -1.0], 3, logprobs=True), ValueError, "log-prob"),
    ("duplicate id", lambda: mf.TopK([1, 1], [0.5, 0.5], 3), ValueError, "twice"),
]


@pytest.mark.parametrize("label,make,exc,match", TOPK_BAD, ids=[c[0] for c in TOPK_BAD])
def test_topk_refused_everywhere(label: str, make: Callable[[], Any], exc: type[Exception], match: str) -> None:
    x = make()
    for fn in (
        lambda: _alpha(x),
        lambda: mf.acceptance_bounds(x, Q3, 2),
        lambda: mf.acceptance_bounds(x, x, 2),
        lambda: mf.simulate("rrs", x, Q3, 2, 5, rng=0),
    ):
        _refused(fn, exc, f"^p: .*{match}|{match}")


def test_topk_padding_keeps_the_dense_numbers() -> None:
    padded = mf.TopK([[0, -1, 1, 2]], [[0.5, 0.9, 0.3, 0.2]], 3)  # a pad's value is ignored
    assert _alpha(padded)[0] == _alpha(P3)


def test_topk_ids_of_any_integer_dtype() -> None:
    want = _alpha(P3)
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.uint64):
        assert _alpha(mf.TopK(np.array([2, 0, 1], dt), [0.2, 0.5, 0.3], np.array(3, dt)[()])) == want


def test_topk_is_not_modified() -> None:
    ids = np.array([[2, 0, 1]])
    vals = np.array([[0.2, 0.5, 0.3]])
    ids0, vals0 = ids.copy(), vals.copy()
    _alpha(mf.TopK(ids, vals, 3))
    assert ids.flags.writeable and vals.flags.writeable
    np.testing.assert_array_equal(ids, ids0)
    np.testing.assert_array_equal(vals, vals0)


HUGE_V: list[tuple[str, Callable[[], Any], str]] = [
    ("bounds dense p, huge TopK q", lambda: mf.acceptance_bounds(P3, mf.TopK([0, 1], [0.6, 0.39], BIG_V), 2), "V"),
    ("bounds huge TopK p, dense q", lambda: mf.acceptance_bounds(mf.TopK([0, 1], [0.6, 0.39], BIG_V), Q3, 2), "V"),
    (
        "tree from huge TopK",
        lambda: DraftTree([-1], [-1], mf.TopK([[0]], [[1.0]], BIG_V), mf.TopK([[0]], [[1.0]], BIG_V), [0, 0], [], [""]),
        "p: the dense",
    ),
    (
        "check_tree from huge TopK",
        lambda: check_tree([-1], [-1], *[mf.TopK([[0]], [[1.0]], BIG_V)] * 2, [0, 0], [], [""]),
        "p: the dense",
    ),
    (
        "audit case huge TopK",
        lambda: mf.audit(
            mf.audit.registry_verifier("rrs"),
            cases=[(mf.TopK([0], [1.0], BIG_V), mf.TopK([0], [1.0], BIG_V))],
            samples=100,
        ),
        "dense",
    ),
    (
        "lp explicit huge TopK",
        lambda: mf.solve_lp(mf.TopK([[0]], [[1.0]], BIG_V), None, 1, "explicit", tuples=[[0]], probs=[1.0]),
        "dense",
    ),
    (
        "logits token_map huge vocab",
        lambda: mf.Logits(np.zeros(3), token_map=[0, 1, 2], vocab_size=BIG_V).probabilities(),
        "vocab_size: ",
    ),
    ("logits d2t huge vocab", lambda: np.asarray(mf.Logits(np.zeros(2), d2t=[0, 5], vocab_size=BIG_V)), "vocab_size: "),
]


@pytest.mark.parametrize("label,fn,match", HUGE_V, ids=[c[0] for c in HUGE_V])
def test_huge_declared_sizes_are_refused_before_allocating(label: str, fn: Callable[[], Any], match: str) -> None:
    with pytest.raises(ValueError) as exc:  # TooLargeError is a ValueError
        bounded(fn)
    assert match in str(exc.value)


def test_ragged_rows_padded_to_the_longest_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 2**22)
    ids = [np.arange(400)] + [np.array([0])] * 400
    vals = [np.full(400, 1 / 400)] + [np.array([1.0])] * 400
    x = mf.TopK(ids, vals, 1000)
    _refused(lambda: mf.acceptance_bounds(x, x, 2), mf.TooLargeError, "padded to their longest")


@pytest.mark.parametrize("scheme", ["iid", "wor"])
def test_bounds_search_columns_of_a_tiny_cap_are_refused(scheme: str) -> None:
    """300 logged entries, the smallest 1e-9 and V = 2**31 - 1: the unseen mass needs ~8e8
    columns at that cap, far beyond memory; refused before any column is built."""
    g = np.random.default_rng(0)
    v = np.sort(g.dirichlet(np.ones(300)))[::-1] * 0.5
    w = np.sort(g.dirichlet(np.ones(300)))[::-1] * 0.7
    v[-1] = w[-1] = 1e-9
    p, q = mf.TopK(np.arange(300), v, BIG_V), mf.TopK(np.arange(150, 450), w, BIG_V)
    _refused(lambda: mf.acceptance_bounds(p, q, 3, scheme), mf.TooLargeError, "p, q: the search on the 800,0")


# --- Logits --------------------------------------------------------------------------------

LOGITS_BAD: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    (
        "uint64 d2t wraps to -1",
        dict(d2t=np.array([0, U64_MAX, 0], np.uint64), vocab_size=3),
        ValueError,
        "d2t: draft token 1 maps to target id 18446744073709551616",
    ),
    (
        "uint64 d2t first",
        dict(d2t=np.array([U64_MAX, 0, 0], np.uint64), vocab_size=3),
        ValueError,
        "18446744073709551615",
    ),
    ("int64 d2t near max", dict(d2t=np.array([0, 2**63 - 1, 0]), vocab_size=9), ValueError, "d2t: draft token 1"),
    ("int64 d2t min", dict(d2t=np.array([0, -(2**63), 0]), vocab_size=9), ValueError, "d2t: draft token 1"),
    (
        "uint64 token_map",
        dict(token_map=np.array([0, 1, U64_MAX], np.uint64), vocab_size=9),
        ValueError,
        "token_map: draft token 2",
    ),
    ("negative token_map", dict(token_map=[0, -1, 2], vocab_size=9), ValueError, "token_map: draft token 1"),
    ("bool token_map", dict(token_map=np.array([True, False, True]), vocab_size=9), TypeError, "token_map"),
    ("float d2t", dict(d2t=[0.0, 1.0, 2.0], vocab_size=9), TypeError, "d2t"),
    ("duplicate map", dict(token_map=[0, 0, 2], vocab_size=9), ValueError, "distinct"),
    ("vocab uint64 max", dict(token_map=[0, 1, 2], vocab_size=U64_MAX), ValueError, "vocab_size"),
    ("vocab float", dict(token_map=[0, 1, 2], vocab_size=9.0), TypeError, "vocab_size"),
    ("top_k bool", dict(top_k=True), TypeError, "top_k"),
    ("top_k 0", dict(top_k=np.uint8(0)), ValueError, "top_k"),
    ("top_k float", dict(top_k=2.0), TypeError, "top_k"),
    ("min_tokens bool", dict(engine="hf", min_tokens_to_keep=np.bool_(True)), TypeError, "min_tokens_to_keep"),
    ("temperature inf", dict(temperature=np.inf), ValueError, "temperature"),
    ("temperature nan", dict(temperature=np.nan), ValueError, "temperature"),
    ("temperature negative", dict(temperature=-1e-300), ValueError, "temperature"),
]


@pytest.mark.parametrize("label,kw,exc,match", LOGITS_BAD, ids=[c[0] for c in LOGITS_BAD])
def test_logits_refused(label: str, kw: dict[str, Any], exc: type[Exception], match: str) -> None:
    _refused(lambda: mf.Logits(np.array([0.5, 0.1, -0.2]), **kw).probabilities(), exc, match)


def test_logits_top_k_of_any_integer_type() -> None:
    z = np.array([3.0, 1.0, 2.0, 0.0])
    want = mf.Logits(z, top_k=2).probabilities()
    for k in (np.int8(2), np.uint64(2), np.int64(2)):
        np.testing.assert_array_equal(mf.Logits(z, top_k=k).probabilities(), want)
    huge = mf.Logits(z, top_k=U64_MAX).probabilities()  # k >= V keeps everything
    np.testing.assert_array_equal(huge, mf.Logits(z).probabilities())


def _shifted_softmax(z: np.ndarray, t: float) -> np.ndarray:
    """Reference: the softmax of (z - max) / t, with Python floats (no overflow on the way)."""
    m = max(z)
    with np.errstate(over="ignore"):
        e = np.array([0.0 if x == -np.inf else np.exp(max((x - m) / t, -800.0)) for x in z.tolist()])
    return e / e.sum()


EXTREME_LOGITS = [
    ([1e308, 0.0], 0.5),
    ([1e308, -1e308], 0.5),
    ([1e308, 1e308], 0.5),
    ([1.7e308, 1.6e308, -np.inf], 0.9),
    ([-1e308, -1e308 + 1e292], 0.25),
    ([1e300, 9.99e299], 1e-8),
    ([5.0, 4.0, 3.0], 1e-300),
]


@pytest.mark.parametrize("z,t", EXTREME_LOGITS)
@pytest.mark.parametrize("engine", ["vllm", "sglang", "hf"])
def test_logits_finite_logits_give_a_distribution(z: list[float], t: float, engine: str) -> None:
    arr = np.array(z)
    got = mf.Logits(arr, temperature=t, engine=engine).probabilities()
    assert np.isfinite(got).all() and got.sum() == pytest.approx(1.0)
    if t >= 1e-5:  # above every engine's greedy threshold
        np.testing.assert_allclose(got, _shifted_softmax(arr, t), atol=1e-12)
    filt = mf.Logits(arr, temperature=t, engine=engine, top_k=2, top_p=0.9, min_p=0.01).probabilities()
    assert np.isfinite(filt).all() and filt.sum() == pytest.approx(1.0)


def test_logits_ordinary_rows_keep_their_bits() -> None:
    z = np.random.default_rng(3).normal(size=(4, 50)) * 10
    got = mf.Logits(z, temperature=0.7).probabilities()
    zt = z / 0.7
    e = np.exp(zt - zt.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(got, e / e.sum(axis=1, keepdims=True))


def test_logits_keep_the_callers_arrays() -> None:
    z = np.array([[0.5, 0.1, -0.2]])
    d2t = np.array([0, 1, 2])
    z0 = z.copy()
    lg = mf.Logits(z, temperature=0.3, top_k=2, d2t=d2t, vocab_size=6)
    lg.probabilities()
    np.testing.assert_array_equal(z, z0)
    assert z.flags.writeable and d2t.flags.writeable and d2t.tolist() == [0, 1, 2]


def test_batched_logits_map_counts_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    z = np.zeros((64, 3))
    lg = mf.Logits(z, token_map=[0, 1, 2], vocab_size=4096)
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 64 * 4096 * 8 * 4 - 1)
    _refused(lg.probabilities, mf.TooLargeError, r"vocab_size: the distribution on the \(64, 4096\)")
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 64 * 4096 * 8 * 4)
    out = lg.probabilities()
    np.testing.assert_array_equal(out[:, :3], np.full((64, 3), 1 / 3))
    assert (out[:, 3:] == 0).all()
