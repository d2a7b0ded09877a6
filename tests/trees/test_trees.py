"""Draft trees: sequence-level losslessness by enumeration, exact values against simulation and
closed forms, drafting laws against brute force, conversions and errors."""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import trees as T


@functools.cache
def _rows(prefix: tuple[int, ...], V: int, salt: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(int(hashlib.sha256(repr((prefix, V, salt)).encode()).hexdigest()[:12], 16))
    p, q = g.dirichlet(np.ones(V)), g.dirichlet(np.ones(V))
    if g.random() < 0.3:  # a token the target never emits
        p[g.integers(V)] = 0.0
    if g.random() < 0.3:  # a tie in q, to exercise the lowest-id rule
        q[1] = q[2]
    if g.random() < 0.25 and V > 4:  # a token the draft never drafts
        q[g.integers(V)] = 0.0
    return p / p.sum(), q / q.sum()


def toy(V: int, salt: int = 0) -> Any:
    return lambda prefix: _rows(tuple(prefix), V, salt)


def sequence_law(
    trees: list[tuple[float, T.DraftTree]], oracle: Any, depth: int, laws_of: Any
) -> dict[tuple[int, ...], float]:
    """Exact law of the first depth + 1 tokens: draft, verify, then continue from the target."""
    out: Counter[tuple[int, ...]] = Counter()

    def complete(seq: tuple[int, ...], w: float) -> None:
        if len(seq) == depth + 1:
            out[seq] += w
            return
        p = np.asarray(oracle(seq)[0])
        for y in np.flatnonzero(p > 0):
            complete(seq + (int(y),), w * p[y])

    for w, tree in trees:
        laws = laws_of(tree)
        stack = [(0, w)]
        while stack:
            i, wi = stack.pop()
            kids = {int(tree.token[c]): int(c) for c in tree.children(i)}
            for y in np.flatnonzero(laws[i] > 0):
                if int(y) in kids:
                    stack.append((kids[int(y)], wi * laws[i, y]))
                else:
                    complete(tree.path(i) + (int(y),), wi * laws[i, y])
    return dict(out)


def target_law(oracle: Any, depth: int, V: int) -> dict[tuple[int, ...], float]:
    out = {}
    for seq in itertools.product(range(V), repeat=depth + 1):
        w = math.prod(float(np.asarray(oracle(seq[:k])[0])[seq[k]]) for k in range(depth + 1))
        if w > 0:
            out[seq] = w
    return out


def max_gap(a: dict[tuple[int, ...], float], b: dict[tuple[int, ...], float]) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


# (enumeration, V, depth, verifiers serving its schemes)
CASES = [
    ("kseq K=2 L=2", lambda o: T.enumerate_kseq(o, 2, 2), 3, 2, ["rrs", "kseq", "optimal", "optimal-lp"]),
    ("chain L=3", lambda o: T.enumerate_kseq(o, 1, 3), 3, 3, ["sd", "rrs", "kseq", "optimal"]),
    ("wor [2, 2]", lambda o: T.enumerate_branching(o, [2, 2], "wor"), 4, 2, ["rrs-wor", "sweep", "optimal"]),
    ("wor [2, 1]", lambda o: T.enumerate_branching(o, [2, 1], "wor"), 3, 2, ["optimal-lp"]),
    ("greedy [3, 2]", lambda o: T.enumerate_branching(o, [3, 2], "greedy"), 4, 2, ["greedy", "optimal-lp"]),
    ("topk [2, 2, 1]", lambda o: T.enumerate_branching(o, [2, 2, 1], "topk"), 4, 3, ["topk", "optimal-lp"]),
    ("top1+iid [3, 2]", lambda o: T.enumerate_branching(o, [3, 2], "top1+iid"), 4, 2, ["rrs", "kseq", "optimal"]),
    ("top1+wor [3]", lambda o: T.enumerate_branching(o, [3], "top1+wor"), 5, 1, ["rrs-wor", "sweep", "optimal"]),
    ("spechub [2, 2]", lambda o: T.enumerate_branching(o, [2, 2], "spechub"), 4, 2, ["spechub"]),
    (
        "static",
        lambda o: [(1.0, T.draft_static(o, [[0], [2], [0, 1], [2, 0], [0, 1, 0]]))],
        3,
        3,
        ["topk", "optimal-lp"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sequence_lossless_exact(case: Any) -> None:
    _, enum, V, depth, names = case
    oracle = toy(V, salt=V * 7 + depth)
    trees = enum(oracle)
    assert math.fsum(w for w, _ in trees) == pytest.approx(1.0, abs=1e-12)
    want = target_law(oracle, depth, V)
    for name in names:
        got = sequence_law(trees, oracle, depth, lambda t, name=name: T.node_laws(t, name))
        assert max_gap(got, want) < 1e-12, name


def test_negative_control_naive_residual_fails() -> None:
    """The check above has power: resampling from p on rejection breaks the sequence law."""
    oracle = toy(3, salt=2 * 7 + 3)
    trees = T.enumerate_kseq(oracle, 2, 2)
    want = target_law(oracle, 2, 3)
    for name in ("rrs", "kseq"):
        got = sequence_law(trees, oracle, 2, lambda t, name=name: T.node_laws(t, name, naive_residual=True))
        assert max_gap(got, want) > 1e-3, name


def test_value_recursion_matches_reach_and_profile() -> None:
    oracle = toy(6, salt=11)
    tree = T.draft_branching(oracle, [3, 2, 2], "iid", rng=5)
    for name in ("rrs", "kseq", "optimal"):
        v = T.tree_value(tree, name)
        assert v.accepted == pytest.approx(v.reach[1:].sum(), abs=1e-12)
        assert v.accepted == pytest.approx(v.profile.sum(), abs=1e-12)
        assert np.all(np.diff(v.profile) <= 1e-15) and v.tokens_per_call == v.accepted + 1


@pytest.mark.parametrize(
    "scheme, widths, names",
    [
        ("iid", [3, 2], ["sd", "rrs", "kseq", "optimal"]),
        ("wor", [3, 2], ["rrs-wor", "sweep", "optimal"]),
        ("greedy", [3, 2], ["greedy"]),
        ("topk", [2, 2], ["topk"]),
        ("top1+iid", [3, 2], ["rrs", "kseq", "optimal"]),
        ("top2+wor", [3, 3], ["rrs-wor", "sweep", "optimal"]),
        ("spechub", [2, 2], ["spechub"]),
    ],
)
def test_cpp_recursion_matches_node_laws(scheme: str, widths: list[int], names: list[str]) -> None:
    """The C++ recursion (value.hpp) against reach products of the per-node laws, in the test."""
    for seed in range(3):
        tree = T.draft_branching(toy(7, salt=seed), widths if scheme != "iid" or seed else [1, 1], scheme, rng=seed)
        for name in names:
            if name == "sd" and max(np.diff(tree.draw_ptr)) > 1:
                continue
            for naive in (False, True):
                laws = T.node_laws(tree, name, naive_residual=naive)
                reach = np.ones(tree.N)
                for c in range(1, tree.N):
                    reach[c] = reach[tree.parent[c]] * laws[tree.parent[c], tree.token[c]]
                v = T.tree_value(tree, name, naive_residual=naive)
                assert np.allclose(v.reach, reach, rtol=0, atol=1e-12), (name, naive)
                assert v.accepted == pytest.approx(reach[1:].sum(), abs=1e-12)


def test_tree_values_independent_of_threads() -> None:
    oracle = toy(9, salt=13)
    batch = [T.draft_branching(oracle, [3, 2, 2], "iid", rng=s) for s in range(7)]
    one = T.tree_values(batch, "optimal", threads=1)
    two = T.tree_values(batch, "optimal", threads=2)
    assert [v.accepted for v in one] == [v.accepted for v in two]
    assert all(np.array_equal(a.reach, b.reach) for a, b in zip(one, two, strict=True))
    assert [v.accepted for v in one] == [T.tree_value(t, "optimal").accepted for t in batch]


def test_sd_chain_closed_form() -> None:
    """Given the drafted chain x, sd accepts x_k with min(1, p/q) at each step, so
    L = sum_k prod_{j <= k} min(1, p_j(x_j) / q_j(x_j))."""
    for seed in range(5):
        oracle = toy(5, salt=seed)
        tree = T.draft_kseq(oracle, 1, 4, rng=seed)
        assert tree.N == 5 and list(tree.parent) == [-1, 0, 1, 2, 3]
        ratios = [min(1.0, tree.p[k - 1, tree.token[k]] / tree.q[k - 1, tree.token[k]]) for k in range(1, 5)]
        want = sum(math.prod(ratios[: k + 1]) for k in range(4))
        assert T.tree_value(tree, "sd").accepted == pytest.approx(want, abs=1e-12)


SIM_TREES = [
    ("iid", [4, 2, 2], ["rrs", "kseq", "optimal"]),
    ("wor", [3, 2], ["rrs-wor", "sweep", "optimal"]),
    ("greedy", [3, 2], ["greedy"]),
    ("topk", [2, 2], ["topk"]),
]


@pytest.mark.parametrize("scheme, widths, names", SIM_TREES, ids=[s[0] for s in SIM_TREES])
def test_exact_value_matches_simulation(scheme: str, widths: list[int], names: list[str]) -> None:
    """verify_tree (C++ verify per node) against tree_value (C++ laws): mean accepted length and
    the per-depth profile within 4 SE, 1,500 verifications (SE about 0.02 tokens)."""
    tree = T.draft_branching(toy(8, salt=3), widths, scheme, rng=1)
    gen = np.random.default_rng(7)
    for name in names:
        exact = T.tree_value(tree, name)
        acc = np.array([T.verify_tree(tree, name, rng=gen).accepted for _ in range(1500)])
        se = max(acc.std(ddof=1), 1e-3) / math.sqrt(acc.size)
        assert abs(acc.mean() - exact.accepted) < 4 * se, name
        for d, pr in enumerate(exact.profile, start=1):
            se_d = max(math.sqrt(pr * (1 - pr) / acc.size), 1e-3)
            assert abs((acc >= d).mean() - pr) < 4 * se_d, (name, d)


def test_verify_tree_emits_path_plus_one() -> None:
    tree = T.draft_branching(toy(5, salt=4), [2, 2], "wor", rng=2)
    for seed in range(20):
        out = T.verify_tree(tree, "rrs-wor", rng=seed)
        assert out.tokens.shape == (out.accepted + 1,)
        assert tree.path(out.node) == tuple(int(x) for x in out.tokens[:-1])


def test_drafting_expectation_exact_vs_simulated() -> None:
    oracle = toy(3, salt=9)
    exact = T.expected_value(T.enumerate_kseq(oracle, 2, 2), "kseq")
    sim = T.simulated_value(lambda g: T.draft_kseq(oracle, 2, 2, rng=g), "kseq", 600, rng=3)
    assert exact.se == 0.0 and sim.se > 0
    assert abs(sim.accepted - exact.accepted) < 4 * sim.se
    assert exact.accepted == pytest.approx(exact.profile.sum(), abs=1e-12)


def _tree_key(tree: T.DraftTree) -> frozenset[tuple[tuple[int, ...], tuple[int, ...]]]:
    return frozenset((tree.path(i), tuple(int(x) for x in tree.draft_tokens(i))) for i in range(tree.N))


def test_kseq_drafting_law_brute_force() -> None:
    """K i.i.d. sequences of length L, merged by prefix, give the same ordered-tuple tree law as
    enumerate_kseq; and draft_kseq samples it (chi-square, 2,000 draws)."""
    V, K, L = 3, 2, 2
    oracle = toy(V, salt=21)
    brute: Counter[Any] = Counter()
    seqs = list(itertools.product(range(V), repeat=L))
    for combo in itertools.product(seqs, repeat=K):
        w = math.prod(math.prod(oracle(s[:j])[1][s[j]] for j in range(L)) for s in combo)
        if w == 0:
            continue
        nexts: dict[tuple[int, ...], list[int]] = {}
        for s in combo:
            for j in range(L + 1):
                nexts.setdefault(s[:j], []).extend([s[j]] if j < L else [])
        brute[frozenset((k, tuple(v)) for k, v in nexts.items())] += w
    enum = Counter()
    for w, tree in T.enumerate_kseq(oracle, K, L):
        enum[_tree_key(tree)] += w
    assert set(brute) == set(enum)
    assert max(abs(brute[k] - enum[k]) for k in brute) < 1e-14
    gen = np.random.default_rng(0)
    draws = Counter(_tree_key(T.draft_kseq(oracle, K, L, rng=gen)) for _ in range(2000))
    keys = [k for k in brute if brute[k] * 2000 >= 5]
    chi2 = sum((draws[k] - 2000 * brute[k]) ** 2 / (2000 * brute[k]) for k in keys)
    assert chi2 < len(keys) + 6 * math.sqrt(2 * len(keys))  # about a 1e-5 false alarm rate


@pytest.mark.parametrize(
    "scheme, n", [("iid", 2), ("wor", 3), ("greedy", 3), ("top1+iid", 3), ("top2+wor", 3), ("spechub", 2)]
)
def test_tuple_law_matches_simulate(scheme: str, n: int) -> None:
    """The ordered-tuple laws of the enumeration are the ones simulate draws (20,000 draws;
    negative control: the iid law fails the same test for the distinct-draft schemes)."""
    p, q = _rows((9,), 5, 1)
    q = np.array([0.3, 0.25, 0.25, 0.15, 0.05])
    law = dict(T.tuple_law(q, n, scheme))
    assert math.fsum(law.values()) == pytest.approx(1.0, abs=1e-12)
    name = {"iid": "rrs", "wor": "rrs-wor", "greedy": "greedy", "spechub": "spechub"}.get(
        scheme, "rrs" if "iid" in scheme else "rrs-wor"
    )
    drafts = mf.simulate(name, p, q, n, 20000, rng=4, scheme=scheme).drafts  # type: ignore[arg-type]
    seen = Counter(tuple(int(x) for x in d) for d in drafts)

    def chi2(ref: dict[tuple[int, ...], float]) -> float:
        return sum((seen[k] - 20000 * w) ** 2 / (20000 * w) for k, w in ref.items() if w > 0) + 1e9 * sum(
            c for k, c in seen.items() if ref.get(k, 0.0) == 0
        )

    assert chi2(law) < len(law) + 6 * math.sqrt(2 * len(law))
    if scheme not in ("iid",):
        iid = dict(T.tuple_law(q, n, "iid"))
        assert chi2(iid) > len(iid) + 6 * math.sqrt(2 * len(iid))


def test_sibling_arrays_round_trip() -> None:
    tree = T.draft_branching(toy(6, salt=5), [3, 2], "iid", rng=3)
    first, sib = tree.to_sibling_arrays()
    back = T.DraftTree.from_sibling_arrays(tree.token, first, sib, tree.p, tree.q)
    assert np.array_equal(back.parent, tree.parent) and np.array_equal(back.token, tree.token)
    assert all(set(back.draws(i).tolist()) == set(tree.draws(i).tolist()) for i in range(tree.N))
    assert set(back.scheme) <= {"static", ""}
    f2, s2 = back.to_sibling_arrays()
    assert np.array_equal(f2, first) and np.array_equal(s2, sib)


def test_choices_round_trip_and_static_scheme() -> None:
    choices = [[0], [1], [2], [0, 0], [0, 1], [1, 0], [0, 0, 0]]
    tree = T.draft_static(toy(5, salt=6), choices)
    assert tree.to_choices() == sorted(choices, key=lambda c: (len(c), c))
    assert tree.scheme[0] == "topk" and tree.depth.tolist() == [0, 1, 1, 1, 2, 2, 2, 3]
    gap = T.draft_static(toy(5, salt=6), [[1], [3]])  # not the top 2: the deterministic-set rule
    assert gap.scheme[0] == "static"
    assert np.allclose(T.node_laws(gap, "rrs")[0], gap.p[0])
    parent, rank = T.choices_to_parent([[1, 0], [1], [0]])
    assert parent.tolist() == [-1, 0, 0, 2] and rank.tolist() == [-1, 0, 1, 0]


def _chain(**over: Any) -> dict[str, Any]:
    V = 3
    base = dict(
        parent=np.array([-1, 0, 0]),
        token=np.array([-1, 1, 2]),
        p=np.full((3, V), 1 / V),
        q=np.full((3, V), 1 / V),
        draw_ptr=np.array([0, 2, 2, 2]),
        draw_child=np.array([1, 2]),
        scheme=["iid", "", ""],
    )
    base.update(over)
    return base


@pytest.mark.parametrize(
    "over, match",
    [
        (dict(parent=np.array([-1, 0, 2])), "parent: node 2"),
        (dict(token=np.array([-1, 1, 1])), "nodes 1 and 2 are siblings"),
        (dict(token=np.array([-1, 1, 3])), "token: node 2 has token 3"),
        (dict(draw_child=np.array([1, 1])), "node 2 is in no draft tuple"),
        (dict(scheme=["iid", "iid", ""]), "scheme: node 1 has no drafts"),
        (dict(scheme=["bogus", "", ""]), "scheme: node 0"),
        (dict(draw_ptr=np.array([0, 3, 2, 2])), "draw_ptr"),
        (dict(p=np.full((2, 3), 1 / 3)), "p, q"),
    ],
)
def test_tree_errors_name_argument_and_node(over: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        T.DraftTree(**_chain(**over))


def test_verifier_errors() -> None:
    tree = T.DraftTree(**_chain())
    with pytest.raises(ValueError, match="'sd' handles 1 <= n <= 1 drafts; node 0 has n = 2"):
        T.tree_value(tree, "sd")
    with pytest.raises(ValueError, match="'rrs-wor' verifies"):
        T.tree_value(tree, "rrs-wor")
    with pytest.raises(ValueError, match="mapping does not name"):
        T.tree_value(tree, {"wor": "rrs-wor"})
    assert T.tree_value(tree, {"iid": "kseq"}).accepted == pytest.approx(T.tree_value(tree, "kseq").accepted)
    with pytest.raises(ValueError, match="verifier: expected one of"):
        T.verify_tree(tree, "nope")
    with pytest.raises(ValueError, match="branching"):
        T.draft_branching(toy(3), [2, 0])
    with pytest.raises(ValueError, match=r"branching\[1\]: scheme 'top1\+iid' needs n > 1"):
        T.draft_branching(toy(3), [3, 1], "top1+iid")
    with pytest.raises(ValueError, match="lacks its prefix"):
        T.draft_static(toy(3), [[0, 1]])
    with pytest.raises(mf.TooLargeError):
        T.enumerate_kseq(toy(5), 10, 1)
    bad = T.DraftTree(**_chain(scheme=["topk", "", ""]))  # tokens 1, 2 are not the top 2 of a uniform q
    with pytest.raises(ValueError, match="trees: tree 1: node 0: .*top n tokens"):
        T.tree_values([tree, bad], {"iid": "rrs", "topk": "topk"})
    with pytest.raises(ValueError, match="name: expected a new"):
        T.register_tree_value("rrs", lambda tree: T.tree_value(tree, "rrs"))


def test_tree_is_frozen() -> None:
    tree = T.DraftTree(**_chain())
    with pytest.raises(ValueError):
        tree.p[0, 0] = 1.0
    with pytest.raises(AttributeError):
        tree.parent = np.array([-1])  # type: ignore[misc]
