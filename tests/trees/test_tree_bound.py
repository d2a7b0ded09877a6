"""The tree bound: the polymatroid greedy equals the brute-force LP, the bound is never below a
per-node verifier, the LP plan's verifier attains it and is lossless (exact enumeration), and the
comparison with traversal verification; negative controls for the greedy order and the verifier."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mdsd_fast.trees.bound as bound_mod
from mdsd_fast import optimal_acceptance
from mdsd_fast.trees import chain_values, traversal_expected_accepted
from mdsd_fast.trees.bound import bound_output_law, kseq_bound, node_greedy, node_lp, per_node_ot_value, tree_bound
from tree_enum import branching_trees, completed, max_deviation, target_law, to_arrays, toy_oracle

ORDER = ("parent", "token", "p", "q", "draw_ptr", "draw_child", "scheme")
SHAPES = [
    [(2, "iid"), (1, "iid")],
    [(3, "wor"), (1, "iid")],
    [(2, "greedy"), (1, "iid")],
    [(3, "top1+iid"), (1, "iid")],
    [(2, "topk"), (2, "wor")],
    [(3, "iid")],
]


def _args(arrays):
    return [arrays[k] for k in ORDER]


@pytest.mark.parametrize("v", [3, 4, 5])
@pytest.mark.parametrize("shape", SHAPES)
def test_greedy_equals_the_lp_and_beats_per_node_ot(v, shape):
    widest = max(n for n, _ in shape)
    for seed in range(3):
        oracle = toy_oracle(v, 50 + seed, zeros=widest < v - 1)  # zeros only where the tuple fits
        greedy = tree_bound(oracle, shape).value
        lp = tree_bound(oracle, shape, method="lp").value
        assert greedy == pytest.approx(lp, abs=1e-9)
        assert per_node_ot_value(oracle, shape) <= lp + 1e-10


def test_value_weighting_strictly_helps_somewhere():
    gaps = [
        tree_bound(toy_oracle(4, 50 + s), [(2, "iid"), (1, "iid")]).value
        - per_node_ot_value(toy_oracle(4, 50 + s), [(2, "iid"), (1, "iid")])
        for s in range(6)
    ]
    assert max(gaps) > 1e-3  # seed 50: +0.0118 over the alpha*-optimal plan of solve_lp


def test_greedy_in_the_wrong_order_is_caught():
    # Negative control: increasing weight order is a feasible but not optimal base.
    rng = np.random.default_rng(3)
    worse = 0
    for _ in range(30):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        u = 1.0 + rng.random(5)
        best, _ = node_greedy(p, q, 2, "iid", u)
        _, a_wrong = node_greedy(p, q, 2, "iid", -u)  # same polymatroid, reversed order
        assert float(u @ a_wrong) <= best + 1e-12
        worse += float(u @ a_wrong) < best - 1e-6
    assert worse >= 10


def test_node_lp_certifies_and_matches_a_hand_case():
    # One token set {0, 1} with probability 1, p = (0.5, 0.3, 0.2): accept both, value 0.5 u0 + 0.3 u1.
    plan = node_lp(np.array([0.5, 0.3, 0.2]), [np.array([0, 1])], [1.0], [np.array([2.0, 3.0])])
    assert plan.value == pytest.approx(0.5 * 2 + 0.3 * 3, abs=1e-12)
    assert plan.accepted == pytest.approx([0.5, 0.3, 0.0], abs=1e-12)


def test_on_a_chain_the_bound_is_token_level_and_below_block():
    for seed in range(5):
        oracle = toy_oracle(3, 70 + seed)
        values = chain_values(oracle, 3)
        bound = tree_bound(oracle, [(1, "iid")] * 3).value
        assert bound == pytest.approx(values.sd, abs=1e-12)  # one draft: a(y) <= min(p, q) is the box
        assert bound <= values.block + 1e-12  # block (not per-node) beats every per-node verifier


def _bound_sequence_law(oracle, shape, bound):
    emitted: dict[tuple[int, ...], float] = {}
    value = 0.0
    for root, prob in branching_trees(oracle, shape):
        law = bound_output_law(bound, *_args(to_arrays(root, oracle)))
        for s, v in law.items():
            emitted[s] = emitted.get(s, 0.0) + prob * v
            value += prob * v * (len(s) - 1)
    return completed(oracle, emitted, len(shape) + 1), value


@pytest.mark.parametrize(
    ("v", "shape", "seed"), [(4, SHAPES[0], 50), (4, SHAPES[1], 51), (3, SHAPES[4], 52), (4, SHAPES[3], 53)]
)
def test_the_lp_plan_verifier_attains_the_bound_and_is_lossless(v, shape, seed):
    oracle = toy_oracle(v, seed)
    bound = tree_bound(oracle, shape, method="lp")
    law, value = _bound_sequence_law(oracle, shape, bound)
    assert max_deviation(law, target_law(oracle, len(shape) + 1)) < 1e-10
    assert value == pytest.approx(bound.value, abs=1e-9)


def test_a_wrong_correction_is_caught(monkeypatch):
    oracle = toy_oracle(4, 50)
    shape = SHAPES[0]
    bound = tree_bound(oracle, shape, method="lp")
    real = bound_mod._node_output

    def wrong(plan, p, drafted):  # correcting from p instead of the residual (p - a)^+
        return real(dataclasses.replace(plan, accepted=np.zeros_like(plan.accepted)), p, drafted)

    monkeypatch.setattr(bound_mod, "_node_output", wrong)
    law, _ = _bound_sequence_law(oracle, shape, bound)
    assert max_deviation(law, target_law(oracle, 3)) > 1e-3


def _traversal_over_drafting(oracle, trees):
    return sum(prob * traversal_expected_accepted(*_args(to_arrays(root, oracle))) for root, prob in trees)


def test_traversal_against_the_bound_on_small_trees():
    """Traversal is not per-node, so it may beat the bound; the bound may also beat it. Exact
    numbers over drafting on small random trees (docs/guide/trees_verification.md §5 reports them)."""
    wins = losses = 0
    for seed in range(6):
        oracle = toy_oracle(3, 80 + seed)
        for shape in ([(2, "iid"), (1, "iid")], [(2, "wor"), (1, "iid")]):
            trav = _traversal_over_drafting(oracle, branching_trees(oracle, shape))
            bound = tree_bound(oracle, shape).value
            wins += trav > bound + 1e-9
            losses += trav < bound - 1e-9
    assert wins + losses > 0


def test_kseq_bound_reduces_to_known_values():
    # K = 1: one chain, the bound is token level; L = 1: one node, the bound is alpha*_iid(n = K).
    for seed in range(4):
        oracle = toy_oracle(3, 90 + seed)
        assert kseq_bound(oracle, 1, 3) == pytest.approx(chain_values(oracle, 3).sd, abs=1e-10)
        p, q = oracle(())
        assert kseq_bound(oracle, 3, 1) == pytest.approx(optimal_acceptance(p, q, 3, "iid"), abs=1e-10)


def test_bad_arguments_are_named():
    oracle = toy_oracle(3, 0)
    with pytest.raises(ValueError, match="method"):
        tree_bound(oracle, [(2, "iid")], method="simplex")
    with pytest.raises(ValueError, match="shape"):
        tree_bound(oracle, [2, "iid"])
    with pytest.raises(ValueError, match=r"shape\[0\] n"):
        tree_bound(oracle, [(0, "iid")])
    with pytest.raises(ValueError, match="length"):
        kseq_bound(oracle, 2, -1)
    with pytest.raises(ValueError, match="oracle p"):
        tree_bound(lambda _: ([np.nan, 1.0], [0.5, 0.5]), [(1, "iid")])
