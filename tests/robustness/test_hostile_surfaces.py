"""Hostile input for the surfaces beyond the core entry points: TopK / sparse rows, Logits, draft
trees and tree drafting, acceptance_bounds, the audit and the extractor's --draft specs.

Every case ends in a clean TypeError / ValueError (``TooLargeError`` is one) naming the argument,
or in a result checked against an independent computation; never a crash, a silent wrong number,
a frozen or modified caller's array, or a large allocation from a tiny input (each call here runs
under tracemalloc, which sees numpy's buffers, and must stay below ``PEAK``).
"""

from __future__ import annotations

import functools
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import limits
from mdsd_fast.audit._run import _token_ids
from mdsd_fast.cli.extract import _split_draft
from mdsd_fast.inputs.args import check_alloc, int_array, integer
from mdsd_fast.trees import DraftTree, draft_branching, draft_kseq, draft_static, simulated_value
from mdsd_fast.trees._raw import check_tree
from mdsd_fast.trees.draft import enumerate_branching

#: Most bytes any call here may allocate: every input is far below 1 MiB.
PEAK = 64 * 2**20
BIG_V = 2**31 - 1
U64_MAX = np.uint64(2**64 - 1)
P3 = np.array([0.5, 0.3, 0.2])
Q3 = np.array([0.2, 0.3, 0.5])


def _bounded(fn: Callable[[], Any]) -> Any:
    """fn() with its peak traced allocation checked against PEAK (raised errors pass through)."""
    tracemalloc.start()
    try:
        return fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < PEAK, f"peak allocation {peak:,} bytes from a tiny input"


def _refused(fn: Callable[[], Any], exc: type[Exception] | tuple[type[Exception], ...], match: str) -> None:
    with pytest.raises(exc, match=match):
        _bounded(fn)


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
        _bounded(fn)
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


# --- draft trees ---------------------------------------------------------------------------


def _tree_args(**over: Any) -> dict[str, Any]:
    p = np.array([[0.6, 0.4], [0.5, 0.5], [0.3, 0.7]])
    q = np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    base = dict(
        parent=np.array([-1, 0, 0]),
        token=np.array([-1, 0, 1]),
        p=p,
        q=q,
        draw_ptr=np.array([0, 2, 2, 2]),
        draw_child=np.array([1, 2]),
        scheme=["wor", "", ""],
    )
    base.update(over)
    return base


def _tree(**over: Any) -> DraftTree:
    return DraftTree(**_tree_args(**over))


def _raw(**over: Any) -> Any:
    a = _tree_args(**over)
    return check_tree(a["parent"], a["token"], a["p"], a["q"], a["draw_ptr"], a["draw_child"], a["scheme"])


TREE_BAD: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("uint64 parent -1", dict(parent=np.array([U64_MAX, 0, 0], np.uint64)), ValueError, "parent"),
    ("uint64 token", dict(token=np.array([U64_MAX, 0, 1], np.uint64)), ValueError, "token"),
    ("uint64 draw_ptr", dict(draw_ptr=np.array([0, 2, 2, 2**63], np.uint64)), ValueError, "draw_ptr"),
    ("uint64 draw_child", dict(draw_child=np.array([1, U64_MAX], np.uint64)), ValueError, "draw_child"),
    ("int64 min parent", dict(parent=np.array([-1, -(2**63), 0])), ValueError, "parent"),
    ("bool parent", dict(parent=np.array([True, False, False])), TypeError, "parent"),
    ("float token", dict(token=np.array([-1.0, 0.0, 1.0])), TypeError, "token"),
    ("2-D parent", dict(parent=np.array([[-1, 0, 0]])), ValueError, "parent"),
    ("token = V", dict(token=np.array([-1, 0, 2])), ValueError, "token"),
    ("cycle", dict(parent=np.array([-1, 2, 0])), ValueError, "parent"),
    ("draw_ptr short", dict(draw_ptr=np.array([0, 2, 2])), ValueError, "draw_ptr"),
    ("child of another", dict(draw_child=np.array([1, 0])), ValueError, "draw_child"),
]


@pytest.mark.parametrize("label,over,exc,match", TREE_BAD, ids=[c[0] for c in TREE_BAD])
@pytest.mark.parametrize("build", [_tree, _raw], ids=["DraftTree", "check_tree"])
def test_tree_arrays_refused(label: str, over: dict[str, Any], exc: type[Exception], match: str, build: Any) -> None:
    _refused(lambda: build(**over), exc, match)


def test_tree_ids_of_any_integer_dtype() -> None:
    want = mf.trees.tree_value(_tree(), "rrs-wor").accepted
    for dt in (np.int8, np.int32, np.uint8, np.uint64):
        kw = dict(draw_ptr=np.array([0, 2, 2, 2], dt), draw_child=np.array([1, 2], dt))
        assert mf.trees.tree_value(_tree(**kw), "rrs-wor").accepted == want


def test_tree_neither_freezes_nor_aliases_the_callers_arrays() -> None:
    a = _tree_args()
    t = DraftTree(**a)
    value = mf.trees.tree_value(t, "rrs-wor").accepted
    for name in ("parent", "token", "p", "q", "draw_ptr", "draw_child"):
        assert a[name].flags.writeable, name
        assert not np.shares_memory(getattr(t, name), a[name]), name
        assert not getattr(t, name).flags.writeable, name
    a["token"][1:] = [1, 0]  # the caller's buffers are theirs: the tree does not change
    a["draw_child"][:] = [2, 1]
    assert mf.trees.tree_value(t, "rrs-wor").accepted == value
    r = _raw()
    src = _tree_args()
    assert not np.shares_memory(r.parent, src["parent"])


def test_tree_views_of_the_callers_buffer_stay_writable() -> None:
    buf = np.array([-1, 0, 0, -1, 0, 1])
    _tree(parent=buf[:3], token=buf[3:])
    assert buf.flags.writeable
    buf[4] = 1  # writing through the base is still allowed and cannot reach the tree


def test_choice_ranks_beyond_any_vocabulary() -> None:
    def oracle(prefix: tuple[int, ...]) -> tuple[Any, Any]:
        return P3, Q3

    _refused(lambda: draft_static(oracle, [[2**70]]), ValueError, "ranks are integers in")
    _refused(lambda: draft_static(oracle, [[U64_MAX]]), ValueError, "ranks are integers in")
    _refused(lambda: draft_static(oracle, [[5]]), ValueError, "beyond the vocabulary")
    assert draft_static(oracle, [[np.uint8(0)], [np.uint64(1)]]).N == 3


# --- tree drafting is bounded ----------------------------------------------------------------


def _oracle(V: int) -> Callable[[tuple[int, ...]], tuple[Any, Any]]:
    def oracle(prefix: tuple[int, ...]) -> tuple[Any, Any]:
        g = np.random.default_rng(len(prefix) * 7919 + sum(prefix))
        return g.dirichlet(np.ones(V)), g.dirichlet(np.ones(V))

    return oracle


def test_branching_is_bounded_by_max_nodes() -> None:
    _refused(
        lambda: draft_branching(_oracle(200), [64] * 4, rng=0, max_nodes=300),
        mf.TooLargeError,
        "branching: .*max_nodes = 300",
    )
    _refused(
        lambda: draft_kseq(_oracle(200), 64, 64, rng=0, max_nodes=100), mf.TooLargeError, "K, L: .*max_nodes = 100"
    )


def test_branching_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 2**20)
    _refused(
        lambda: draft_branching(_oracle(1000), [64] * 4, rng=0), mf.TooLargeError, "branching: the p and q rows of"
    )


def test_branching_within_the_budget_still_drafts() -> None:
    t = draft_branching(_oracle(2), [64] * 4, rng=0)  # V = 2: duplicates merge into a small tree
    assert t.N <= 1 + 2 + 4 + 8 + 16
    t = draft_branching(_oracle(50), [3, 2], "wor", rng=0, max_nodes=np.uint16(10))
    assert t.N == 10


def test_enumeration_counts_every_tree_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 40_000)
    _refused(lambda: enumerate_branching(_oracle(6), [3, 3]), mf.TooLargeError, "branching")


DRAFT_ARGS_BAD: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("max_nodes 0", lambda: draft_kseq(_oracle(3), 2, 2, max_nodes=0), ValueError, "max_nodes"),
    ("max_nodes bool", lambda: draft_kseq(_oracle(3), 2, 2, max_nodes=True), TypeError, "max_nodes"),
    ("max_nodes float", lambda: draft_kseq(_oracle(3), 2, 2, max_nodes=1e9), TypeError, "max_nodes"),
    ("K uint64 max", lambda: draft_kseq(_oracle(3), U64_MAX, 2), ValueError, "K"),
    ("L bool", lambda: draft_kseq(_oracle(3), 2, True), ValueError, "L"),
    ("width uint64 max", lambda: draft_branching(_oracle(3), [U64_MAX]), ValueError, "drafts|branching"),
    ("width negative", lambda: draft_branching(_oracle(3), [np.int8(-1)]), ValueError, r"branching\[0\]"),
]


@pytest.mark.parametrize("label,fn,exc,match", DRAFT_ARGS_BAD, ids=[c[0] for c in DRAFT_ARGS_BAD])
def test_drafting_arguments_refused(label: str, fn: Callable[[], Any], exc: type[Exception], match: str) -> None:
    _refused(fn, exc, match)


def test_simulated_value_takes_numpy_integers() -> None:
    def draw(g: np.random.Generator) -> DraftTree:
        return draft_kseq(_oracle(4), 2, 2, rng=g)

    ref = simulated_value(draw, "rrs", 3, rng=5)
    for s in (np.int64(3), np.uint8(3), np.uint64(3)):
        got = simulated_value(draw, "rrs", s, rng=5)
        assert (got.accepted, got.se) == (ref.accepted, ref.se)
    for bad, exc in ((np.uint64(1), ValueError), (True, TypeError), (3.0, TypeError), (np.int8(-3), ValueError)):
        with pytest.raises(exc, match="samples"):
            simulated_value(draw, "rrs", bad, rng=5)


# --- the audit -----------------------------------------------------------------------------


def _case() -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.array([0.5, 0.5]), np.array([0.5, 0.5]))]


def test_audit_takes_a_mix_of_integer_types() -> None:
    def verify(p: Any, q: Any, d: Any, g: np.random.Generator) -> Any:
        return np.uint64(0) if g.random() < 0.5 else 1

    out = mf.audit(verify, "iid", 2, cases=_case(), samples=400, rng=0)
    assert out.lossless


TOKEN_IDS: list[tuple[str, list[Any], Any]] = [
    ("int and uint64", [1, np.uint64(0), np.int8(1)], [1, 0, 1]),
    ("uint64 max among ints", [1, U64_MAX, 0], "call 2\\): token ids are in"),
    ("int and float", [1, 0.0, 1], "call 2\\); expected an int token id"),
    ("bool", [1, True, 0], "call 2\\); expected an int token id|call 2"),
    ("too large", [1, 2, 0], "call 2\\): token ids are in"),
    ("negative int8", [np.int8(-1), 0, 0], "call 1\\): token ids are in"),
    ("array value", [1, np.array([0, 1]), 0], "call 2"),
]


@pytest.mark.parametrize("label,values,want", TOKEN_IDS, ids=[c[0] for c in TOKEN_IDS])
def test_audit_token_ids(label: str, values: list[Any], want: Any) -> None:
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want):  # AuditError is a ValueError
            _token_ids(values, 2, "verify", "c", (3,))
    else:
        got = _token_ids(values, 2, "verify", "c", (3,))
        assert got.tolist() == want and got.dtype == np.int64


def test_audit_real_is_not_clamped_nor_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    import mdsd_fast.data

    monkeypatch.setattr(mdsd_fast.data, "load_dataset", lambda: [None] * 537)  # only its length is read
    rrs = mf.audit.registry_verifier("rrs")
    with pytest.raises(ValueError, match="real: 1000000000 rows asked for, but the shipped dataset has 537"):
        mf.audit(rrs, real=10**9, samples=100)
    with pytest.raises(ValueError, match="real: 538 rows asked for"):
        mf.audit.suite(real=np.uint64(538))
    with pytest.raises(ValueError, match="real: adds shipped rows"):
        mf.audit(rrs, cases=_case(), real=1, samples=100)
    with pytest.raises(ValueError, match="real"):
        mf.audit(rrs, real=np.int8(-1), samples=100)


def test_audit_samples_are_bounded_in_bytes() -> None:
    rrs = mf.audit.registry_verifier("rrs")
    _refused(
        lambda: mf.audit(rrs, "iid", 8, cases=[(np.full(9, 1 / 9), np.full(9, 1 / 9))], samples=10**8),
        mf.TooLargeError,
        "samples: ",
    )
    _refused(lambda: mf.audit(rrs, samples=np.uint64(2**64 - 1)), ValueError, "samples")


def test_audit_cases_are_not_frozen() -> None:
    p, q = np.array([0.5, 0.5]), np.array([0.5, 0.5])
    mf.audit(mf.audit.registry_verifier("rrs"), "iid", 2, cases=[(p, q)], samples=200, rng=0)
    assert p.flags.writeable and q.flags.writeable


# --- the extractor's --draft specs -----------------------------------------------------------

DRAFT_SPECS: list[tuple[str, Any]] = [
    ("a=layerskip:", "layerskip takes 0-based layer indices"),
    ("a=layerskip:-3", "layerskip takes 0-based layer indices"),
    ("a=layerskip:1,,2", "layerskip takes 0-based layer indices"),
    ("a=layerskip:1.5", "layerskip takes 0-based layer indices"),
    ("a=layerskip: 3", ("a", "layerskip", [3])),
    ("a=layerskip:3,5", ("a", "layerskip", [3, 5])),
    ("layerskip:0", ("", "layerskip", [0])),
    ("a=bogus:1", "--draft: expected"),
    ("a=model:", "--draft: expected"),
    ("a=ngram:0:x.txt", "--draft: expected"),
]


@pytest.mark.parametrize("spec,want", DRAFT_SPECS, ids=[c[0] for c in DRAFT_SPECS])
def test_draft_specs(spec: str, want: Any) -> None:
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want):
            _split_draft(spec)
    else:
        assert _split_draft(spec) == want


# --- tree files ------------------------------------------------------------------------------


@functools.cache
def _shipped_tree_arrays() -> dict[str, np.ndarray]:
    from mdsd_fast.trees.data import default_trees_path

    with np.load(default_trees_path(), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _tree_file(tmp_path: Any, **over: Any) -> Any:
    arrays = dict(_shipped_tree_arrays())
    for k, v in over.items():
        if v is None:
            del arrays[k]
        else:
            arrays[k] = v(arrays[k]) if callable(v) else v
    path = tmp_path / "trees.npz"
    np.savez(path, **arrays)
    return path


TREE_FILES: list[tuple[str, dict[str, Any], str]] = [
    ("vocab uint64 max", dict(vocab_size=np.array(U64_MAX, np.uint64)), "vocab_size: expected an integer in"),
    ("vocab huge", dict(vocab_size=np.array(2**40)), "vocab_size"),
    ("vocab zero", dict(vocab_size=np.array(0)), "vocab_size"),
    ("tree sizes understated", dict(tree_size=lambda a: a - 1), "expected .* entries"),
    ("tree size negative", dict(tree_size=lambda a: np.where(np.arange(a.size) == 0, -a[0], a)), "tree_size"),
    ("tree size uint64 max", dict(tree_size=lambda a: np.full(a.shape, U64_MAX, np.uint64)), "tree_size"),
    ("draw counts overstated", dict(draw_count=lambda a: a + 1), "draw_child: expected"),
    ("node lengths lie", dict(node_lengths=lambda a: a * 2), "token_gaps: expected"),
    ("prompt index out of range", dict(tree_prompt=lambda a: a + 10**6), "tree_prompt"),
    ("scheme index out of range", dict(scheme=lambda a: a + 99), "scheme"),
    ("a per-tree field short", dict(tree_position=lambda a: a[:-1]), "tree_position"),
    ("missing array", dict(parent=None), "no 'parent' array"),
]


@pytest.mark.parametrize("label,over,match", TREE_FILES, ids=[c[0] for c in TREE_FILES])
def test_tree_files_that_lie(tmp_path: Any, label: str, over: dict[str, Any], match: str) -> None:
    from mdsd_fast.trees.data import load_trees

    path = _tree_file(tmp_path, **over)
    with pytest.raises(ValueError, match=match) as exc:
        load_trees(path)
    assert str(path) in str(exc.value)


def test_tree_file_with_a_large_vocabulary_is_bounded_when_densified(tmp_path: Any) -> None:
    from mdsd_fast.trees.data import load_trees

    ts = load_trees(_tree_file(tmp_path, vocab_size=np.array(2**31 - 1)))
    _refused(lambda: ts.tree(0), mf.TooLargeError, "vocab_size: tree 0's dense")
    tree, vocab = ts.compact_tree(0)  # the compact form never allocates V
    assert tree.V == vocab.size


# --- more tree entry points and batched maps ---------------------------------------------------


def test_sibling_arrays_of_unsigned_dtype() -> None:
    first = np.array([1, -1, -1])
    sib = np.array([-1, 2, -1])
    p = np.array([[0.6, 0.4], [0.5, 0.5], [0.3, 0.7]])
    tok = np.array([-1, 0, 1])
    t = DraftTree.from_sibling_arrays(tok, first, sib, p, p)
    assert t.N == 3 and tok.flags.writeable
    with pytest.raises(ValueError, match="retrive_next_token"):
        DraftTree.from_sibling_arrays(tok, np.array([1, U64_MAX, U64_MAX], np.uint64), sib, p, p)
    with pytest.raises(ValueError, match="token"):
        DraftTree.from_sibling_arrays(np.array([0, U64_MAX, 1], np.uint64), first, sib, p, p)


def test_block_draft_of_unsigned_dtype() -> None:
    from mdsd_fast.trees.block import block_expected_accepted

    p = np.array([[0.6, 0.4], [0.5, 0.5]])
    q = np.array([[0.5, 0.5]])
    want = block_expected_accepted(np.array([0]), p, q)
    assert block_expected_accepted(np.array([0], np.uint64), p, q) == want
    with pytest.raises(ValueError, match="draft"):
        block_expected_accepted(np.array([U64_MAX], np.uint64), p, q)


def test_batched_logits_map_counts_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    z = np.zeros((64, 3))
    lg = mf.Logits(z, token_map=[0, 1, 2], vocab_size=4096)
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 64 * 4096 * 8 * 4 - 1)
    _refused(lg.probabilities, mf.TooLargeError, r"vocab_size: the distribution on the \(64, 4096\)")
    monkeypatch.setattr(limits, "MAX_ALLOC_BYTES", 64 * 4096 * 8 * 4)
    out = lg.probabilities()
    np.testing.assert_array_equal(out[:, :3], np.full((64, 3), 1 / 3))
    assert (out[:, 3:] == 0).all()
