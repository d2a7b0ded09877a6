"""Hostile input for trees and tree drafting, tree files, the audit and the extractor's --draft
specs (the input surfaces are in tests/robustness/test_hostile_surfaces.py, with the same rules:
a clean error naming the argument or a checked result, nothing large allocated from a tiny input).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from bounded import U64_MAX
from bounded import refused as _refused

import mdsd_fast as mf
from mdsd_fast import limits
from mdsd_fast.audit._run import _token_ids
from mdsd_fast.cli.extract import _split_draft
from mdsd_fast.trees import DraftTree, draft_branching, draft_kseq, draft_static, simulated_value
from mdsd_fast.trees._raw import check_tree
from mdsd_fast.trees.draft import enumerate_branching

P3 = np.array([0.5, 0.3, 0.2])
Q3 = np.array([0.2, 0.3, 0.5])

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
