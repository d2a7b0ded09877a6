"""Draft trees (issue 19): block verification of chains and traversal verification of trees,
on the raw contract arrays (docs/trees_verification.md)."""

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
from .traversal import traversal_expected_accepted, traversal_output_law, traversal_verify

__all__ = [
    "ChainValues",
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
