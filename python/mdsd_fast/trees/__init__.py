"""Draft trees (issue 19): one target call verifies a tree of drafts top down.

- ``DraftTree`` (tree.py): the arrays of the contract (docs/trees.md), engines' layouts.
- drafting (draft.py): ``draft_kseq`` (K i.i.d. sequences), ``draft_branching`` (per-depth
  widths, any scheme), ``draft_static`` (EAGLE choice lists); ``enumerate_*`` for exact
  expectations on tiny cases.
- ``verify_tree`` (verify.py): top-down verification with any registry verifier per node.
- values (value.py): ``tree_value`` (exact expected accepted length and per-depth profile of one
  drafted tree), ``expected_value`` (exact over drafting, by enumeration), ``simulated_value``
  (over drafting, with a standard error).
"""

from __future__ import annotations

from .draft import (
    MAX_ENUMERATED,
    Oracle,
    draft_branching,
    draft_kseq,
    draft_static,
    enumerate_branching,
    enumerate_kseq,
    tuple_law,
)
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
]
