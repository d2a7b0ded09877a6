"""Draft trees (issue 19): block verification of chains, traversal verification of trees and the
tree bound of per-node verifiers, on the raw contract arrays (docs/trees_verification.md); real
trees grown from SmolLM2-135M (``load_trees``, docs/DATA.md)."""

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
from .data import TreeDataset, load_trees
from .traversal import traversal_expected_accepted, traversal_output_law, traversal_verify

__all__ = [
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
]
