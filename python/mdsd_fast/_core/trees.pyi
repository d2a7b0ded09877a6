# Typed stubs of mdsd_fast._core.trees, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
Exact values of drafted trees.
"""
from __future__ import annotations
import collections.abc
import typing
__all__: list[str] = ['values']
def values(names: collections.abc.Sequence[str], schemes: collections.abc.Sequence[str], trees: list, budget: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, naive_residual: bool = False) -> tuple:
    """
    Exact expected accepted length of each tree, (parent, token, p, q, draw_ptr, draw_child), and
    every node's reach probability: (accepted (T,), reach (sum of N,)). names and schemes run over
    the nodes of all trees in order; names[i] is the node's registry verifier, '' for p.
    """
