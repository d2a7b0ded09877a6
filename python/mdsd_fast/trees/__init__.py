"""Draft trees: one target call verifies a tree of drafts.

- ``DraftTree`` (tree.py): the arrays of the contract (docs/guide/trees.md), engines' layouts.
- drafting (draft.py): ``draft_kseq`` (K i.i.d. sequences), ``draft_branching`` (per-depth
  widths, any scheme), ``draft_static`` (EAGLE choice lists); ``enumerate_*`` for exact
  expectations on tiny cases.
- ``verify_tree`` (verify.py): top-down verification with any registry verifier per node.
- values (value.py): ``tree_value`` / ``tree_values`` (exact expected accepted length and
  per-depth profile of drafted trees), ``expected_value`` (exact over drafting, by enumeration),
  ``simulated_value`` (over drafting, with a standard error).
- block verification of chains, traversal verification of trees and the tree bound of per-node
  verifiers, on the raw contract arrays (docs/guide/trees_verification.md); real trees grown from
  SmolLM2-135M (``load_trees``, docs/guide/data.md).
- "block" and "traversal" are ``tree_value`` names too (registered.py); ``drafted_bound`` brackets the
  tree bound at a drafted tree's root context; ``tree_report`` (``mdsd-fast trees``) values every
  verifier on a tree file (docs/guide/trees_report.md).
"""

from __future__ import annotations

from .block import (
    ChainValues,
    block_acceptance_law,
    block_expected_accepted,
    block_output_law,
    block_verify,
    block_weights,
    chain_values,
)
from .bound import TreeBound, bound_output_law, kseq_bound, per_node_ot_value, tree_bound
from .bound_drafted import BoundInterval, drafted_bound
from .data import TreeDataset, load_trees
from .draft import (
    MAX_ENUMERATED,
    MAX_TREE_NODES,
    Oracle,
    draft_branching,
    draft_kseq,
    draft_static,
    enumerate_branching,
    enumerate_kseq,
    tuple_law,
)
from .registered import block_value, chain_nodes, traversal_value
from .report import TreeReport, tree_report
from .traversal import traversal_expected_accepted, traversal_output_law, traversal_verify
from .tree import TREE_SCHEMES, DraftTree, choices_to_parent, q_ranks
from .value import (
    DraftedValue,
    TreeValue,
    expected_value,
    node_laws,
    register_tree_value,
    simulated_value,
    tree_value,
    tree_values,
    tree_verifiers,
)
from .verify import TreeVerdict, verify_tree

__all__ = [
    "DraftTree",
    "TREE_SCHEMES",
    "choices_to_parent",
    "q_ranks",
    "Oracle",
    "MAX_ENUMERATED",
    "MAX_TREE_NODES",
    "tuple_law",
    "draft_kseq",
    "draft_branching",
    "draft_static",
    "enumerate_kseq",
    "enumerate_branching",
    "TreeVerdict",
    "verify_tree",
    "TreeValue",
    "DraftedValue",
    "node_laws",
    "tree_value",
    "tree_values",
    "register_tree_value",
    "tree_verifiers",
    "expected_value",
    "simulated_value",
    "ChainValues",
    "TreeBound",
    "TreeDataset",
    "load_trees",
    "bound_output_law",
    "kseq_bound",
    "per_node_ot_value",
    "tree_bound",
    "block_acceptance_law",
    "block_expected_accepted",
    "block_output_law",
    "block_verify",
    "block_weights",
    "chain_values",
    "traversal_expected_accepted",
    "traversal_output_law",
    "traversal_verify",
    "traversal_value",
    "block_value",
    "chain_nodes",
    "BoundInterval",
    "drafted_bound",
    "TreeReport",
    "tree_report",
]
