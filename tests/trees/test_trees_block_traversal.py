"""Block verification (chains) and traversal verification (trees): exact sequence-level
losslessness by enumeration, exact values two ways, samplers against the exact laws, optimality
of block over token level, and negative controls that the same checks catch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mdsd_fast.trees.block as block_mod
import mdsd_fast.trees.traversal as trav_mod
from mdsd_fast.trees import (
    block_acceptance_law,
    block_expected_accepted,
    block_output_law,
    block_verify,
    chain_values,
    traversal_expected_accepted,
    traversal_output_law,
    traversal_verify,
)
from tree_enum import (
    branching_trees,
    completed,
    kseq_trees,
    max_deviation,
    target_law,
    to_arrays,
    toy_oracle,
)

ORDER = ("parent", "token", "p", "q", "draw_ptr", "draw_child", "scheme")


def _args(arrays: dict[str, object]) -> list[object]:
    return [arrays[k] for k in ORDER]


def _chain_rows(oracle, x):
    p = np.array([oracle(tuple(x[:i]))[0] for i in range(len(x) + 1)])
    q = np.array([oracle(tuple(x[:i]))[1] for i in range(len(x) + 1)])
    return p, q


def _block_sequence_law(oracle, v, gamma):
    """Law of gamma + 1 tokens: draft a chain, block-verify it, complete from the target."""
    emitted: dict[tuple[int, ...], float] = {}
    for x in itertools.product(range(v), repeat=gamma):
        p, q = _chain_rows(oracle, x)
        prob = float(np.prod([q[i, x[i]] for i in range(gamma)]))
        if prob == 0.0:
            continue
        for s, v_ in block_output_law(np.array(x), p, q).items():
            emitted[s] = emitted.get(s, 0.0) + prob * v_
    return completed(oracle, emitted, gamma + 1)


def _tree_sequence_law(oracle, trees, depth):
    emitted: dict[tuple[int, ...], float] = {}
    total = 0.0
    for root, prob in trees:
        total += prob
        for s, v_ in traversal_output_law(*_args(to_arrays(root, oracle))).items():
            emitted[s] = emitted.get(s, 0.0) + prob * v_
    assert abs(total - 1.0) < 1e-12  # the enumeration covers the drafting law
    return completed(oracle, emitted, depth + 1)


# --- block verification ---------------------------------------------------------------------


def test_block_reproduces_the_papers_example():
    # Sun et al.'s binary example: token level 10/9, block 11/9, full-information coupling 12/9.
    values = chain_values(lambda _: ([1 / 3, 2 / 3], [2 / 3, 1 / 3]), 2)
    assert values.sd == pytest.approx(10 / 9, abs=1e-14)
    assert values.block == pytest.approx(11 / 9, abs=1e-14)
    assert values.coupling_bound == pytest.approx(12 / 9, abs=1e-14)


@pytest.mark.parametrize(("v", "gamma", "seed"), [(2, 3, 0), (3, 2, 1), (3, 3, 2), (4, 2, 3), (5, 2, 4), (4, 3, 5)])
def test_block_is_lossless_at_the_sequence_level(v, gamma, seed):
    oracle = toy_oracle(v, seed)
    assert max_deviation(_block_sequence_law(oracle, v, gamma), target_law(oracle, gamma + 1)) < 1e-12


def test_block_negative_control_is_caught(monkeypatch):
    # Correcting from the scaled target instead of the residual (w p - q)^+ breaks losslessness.
    def wrong(w, mb, ms):
        big = w * mb
        return big, float(big.sum()), float(np.maximum(ms - w * mb, 0.0).sum())

    oracle = toy_oracle(3, 7)
    monkeypatch.setattr(block_mod, "residual", wrong)
    assert max_deviation(_block_sequence_law(oracle, 3, 2), target_law(oracle, 3)) > 1e-2


@pytest.mark.parametrize("seed", range(40))
def test_block_beats_token_level_and_respects_the_coupling_bound(seed):
    rng = np.random.default_rng(seed)
    v, gamma = int(rng.integers(2, 5)), int(rng.integers(1, 5))
    oracle = toy_oracle(v, 100 + seed, zeros=bool(seed % 2))
    values = chain_values(oracle, gamma)
    assert values.sd <= values.block + 1e-12
    assert values.block <= values.coupling_bound + 1e-12
    # Second way: average E[tau | chain] over every drafted chain.
    direct = 0.0
    for x in itertools.product(range(v), repeat=gamma):
        p, q = _chain_rows(oracle, x)
        prob = float(np.prod([q[i, x[i]] for i in range(gamma)]))
        if prob > 0.0:
            direct += prob * block_expected_accepted(np.array(x), p, q)
    assert direct == pytest.approx(values.block, abs=1e-12)


def test_block_strictly_beats_token_level_somewhere():
    gains = [chain_values(toy_oracle(3, s), 3) for s in range(10)]
    assert sum(g.block > g.sd + 1e-6 for g in gains) >= 5


def test_block_sampler_matches_its_exact_law():
    oracle = toy_oracle(4, 11, zeros=False)
    x = np.array([0, 2, 1])
    p, q = _chain_rows(oracle, x)
    exact = block_output_law(x, p, q)
    rng = np.random.default_rng(5)
    n = 20_000
    counts: dict[tuple[int, ...], int] = {}
    taus, finals = block_verify(x, p, q, uniforms=rng.random((n, 4)))
    for tau, y in zip(taus, finals, strict=True):
        s = tuple(int(t) for t in x[:tau]) + (int(y),)
        counts[s] = counts.get(s, 0) + 1
    # Every cell within 4.5 standard errors (Bonferroni over <= 20 cells); a 0.02 shift of a 0.2
    # cell is ~7 standard errors, so such a bug is caught with power > 0.99.
    for s in set(exact) | set(counts):
        pr = exact.get(s, 0.0)
        se = max(np.sqrt(pr * (1 - pr) / n), 1e-9)
        assert abs(counts.get(s, 0) / n - pr) <= 4.5 * se + 1e-12, s
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-12)
    assert block_acceptance_law(x, p, q).sum() == pytest.approx(1.0, abs=1e-12)


def test_block_refuses_bad_input():
    p = np.full((3, 2), 0.5)
    with pytest.raises(ValueError, match="p must have gamma"):
        block_expected_accepted(np.array([0]), p, p)
    with pytest.raises(ValueError, match="probability 0"):
        block_expected_accepted(np.array([1, 1]), p, np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="uniforms"):
        block_verify(np.array([0, 1]), p, p, uniforms=[0.1, 0.2])
    with pytest.raises(ValueError, match="samples"):
        block_verify(np.array([0, 1]), p, p, samples=-1)
    with pytest.raises(ValueError, match="gamma"):
        chain_values(lambda _: ([0.5, 0.5], [0.5, 0.5]), -1)


# --- traversal verification -----------------------------------------------------------------


def test_traversal_on_a_chain_is_block_verification():
    for seed in range(6):
        oracle = toy_oracle(4, 200 + seed)
        for root, _ in itertools.islice(branching_trees(oracle, [(1, "iid")] * 3), 12):
            arrays = to_arrays(root, oracle)
            x = arrays["token"][1:]
            law_t = traversal_output_law(*_args(arrays))
            law_b = block_output_law(x, arrays["p"], arrays["q"])
            assert max_deviation(law_t, law_b) < 1e-13


SHAPES = [
    (3, [(2, "iid"), (1, "iid")], 0),
    (3, [(2, "wor"), (2, "iid")], 1),
    (4, [(2, "iid"), (1, "wor")], 2),
    (3, [(3, "iid")], 3),
    (4, [(2, "topk"), (1, "iid")], 4),
    (4, [(2, "greedy"), (1, "iid")], 5),
    (4, [(3, "top1+wor")], 6),
    (4, [(3, "top1+iid")], 7),
    (3, [(1, "iid"), (2, "wor"), (1, "iid")], 8),
]


@pytest.mark.parametrize(("v", "shape", "seed"), SHAPES)
def test_traversal_is_lossless_on_branching_trees(v, shape, seed):
    oracle = toy_oracle(v, 300 + seed)
    got = _tree_sequence_law(oracle, branching_trees(oracle, shape), len(shape))
    assert max_deviation(got, target_law(oracle, len(shape) + 1)) < 1e-12


@pytest.mark.parametrize(("v", "k", "length", "seed"), [(3, 2, 2, 0), (2, 3, 2, 1), (3, 3, 1, 2), (2, 2, 3, 3)])
def test_traversal_is_lossless_on_kseq_trees(v, k, length, seed):
    oracle = toy_oracle(v, 400 + seed)
    got = _tree_sequence_law(oracle, kseq_trees(oracle, k, length), length)
    assert max_deviation(got, target_law(oracle, length + 1)) < 1e-12


def test_traversal_negative_controls_are_caught(monkeypatch):
    oracle = toy_oracle(3, 500)
    shape = [(2, "wor"), (1, "iid")]
    truth = target_law(oracle, 3)
    # (a) treating without-replacement siblings as i.i.d. (no renormalisation of the step law)
    monkeypatch.setattr(trav_mod, "step_law", lambda scheme, j, q, tokens: q)
    assert max_deviation(_tree_sequence_law(oracle, branching_trees(oracle, shape), 2), truth) > 1e-3
    monkeypatch.undo()
    # (b) keeping the parent's weight after a failed child (no residual update)
    real = trav_mod.residual
    monkeypatch.setattr(
        trav_mod, "residual", lambda w, mb, ms: (w * mb, w, 1.0) if real(w, mb, ms)[2] > 0 else real(w, mb, ms)
    )
    assert max_deviation(_tree_sequence_law(oracle, branching_trees(oracle, [(2, "iid"), (1, "iid")]), 2), truth) > 1e-3


def test_traversal_exact_value_two_ways_and_sampler():
    oracle = toy_oracle(4, 600, zeros=False)
    trees = list(itertools.islice(branching_trees(oracle, [(2, "iid"), (2, "iid")]), 40))
    root = max(trees, key=lambda t: len(to_arrays(t[0], oracle)["parent"]))[0]
    arrays = to_arrays(root, oracle)
    args = _args(arrays)
    law = traversal_output_law(*args)
    exact = traversal_expected_accepted(*args)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    assert exact == pytest.approx(sum((len(s) - 1) * pr for s, pr in law.items()), abs=1e-12)
    rng = np.random.default_rng(9)
    n = 8000
    lengths = np.empty(n)
    tokens = arrays["token"]
    counts: dict[tuple[int, ...], int] = {}
    for k, (path, final) in enumerate(traversal_verify(*args, samples=n, rng=rng)):
        assert all(arrays["parent"][b] == a for a, b in zip((0, *path), path, strict=False))
        assert 0 <= final < 4
        lengths[k] = len(path)
        s = (*(int(tokens[c]) for c in path), final)
        counts[s] = counts.get(s, 0) + 1
    # Each emitted sequence's frequency within 4.5 standard errors of its exact probability.
    for s in set(law) | set(counts):
        pr = law.get(s, 0.0)
        assert abs(counts.get(s, 0) / n - pr) <= 4.5 * max(np.sqrt(pr * (1 - pr) / n), 1e-9) + 1e-12, s
    se = lengths.std() / np.sqrt(n)
    assert abs(lengths.mean() - exact) < 4 * se


def test_traversal_refuses_bad_trees():
    base = {
        "parent": np.array([-1, 0, 0]),
        "token": np.array([-1, 1, 1]),
        "p": np.full((3, 3), 1 / 3),
        "q": np.full((3, 3), 1 / 3),
        "draw_ptr": np.array([0, 2, 2, 2]),
        "draw_child": np.array([1, 2]),
        "scheme": ["iid", "", ""],
    }
    with pytest.raises(ValueError, match="distinct tokens"):
        traversal_expected_accepted(*_args(base))
    with pytest.raises(ValueError, match="spechub"):
        traversal_expected_accepted(*_args({**base, "token": np.array([-1, 1, 2]), "scheme": ["spechub", "", ""]}))
    with pytest.raises(ValueError, match="topological"):
        traversal_expected_accepted(*_args({**base, "parent": np.array([-1, 2, 0])}))
    with pytest.raises(TypeError, match="draw_child"):
        traversal_expected_accepted(*_args({**base, "draw_child": np.array([1.0, 2.0])}))
