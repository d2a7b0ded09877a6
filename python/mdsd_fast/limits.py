"""The package's limits, read from the C++ core's one table (``cpp/include/mdsd/core/limits.hpp``).

``LIMITS`` maps each name to its value; ``describe()`` returns what each one limits. The Python
boundary checks its inputs against these same numbers, so an error names the limit it hit.

``MAX_ALLOC_BYTES`` bounds the memory of one call's arrays that grow with an argument rather than
with the input itself (a ``TopK``'s or a map's declared vocabulary, a tree's drafting width): such
a call is refused, naming the argument and the size it would need, before it allocates. It is read
at call time, so a caller with the memory may raise it (``mdsd_fast.limits.MAX_ALLOC_BYTES = ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import _core

__all__ = [
    "LIMITS",
    "describe",
    "MAX_VOCAB",
    "MAX_DRAFTS",
    "MAX_THREADS",
    "REPORT_MAX_N",
    "WOR_ROUTE_MAX_N",
    "WOR_WORK_BUDGET",
    "MAX_ALLOC_BYTES",
    "WOR_OPTIMAL_WORK_BUDGET",
]

_TABLE: dict[str, tuple[float, str]] = {str(k): (float(v[0]), str(v[1])) for k, v in _core.limits().items()}

#: name -> value (ints where the limit is a count).
LIMITS: Mapping[str, int] = MappingProxyType({k: int(v) for k, (v, _) in _TABLE.items()})

MAX_VOCAB: int = LIMITS["max_vocab"]
MAX_DRAFTS: int = LIMITS["max_drafts"]
MAX_THREADS: int = LIMITS["max_threads"]
REPORT_MAX_N: int = LIMITS["report_max_n"]
WOR_ROUTE_MAX_N: int = LIMITS["wor_route_max_n"]
#: Default work budget per row of the without-replacement route of "sweep", in grid operations (one
#: token factor on the race grid costs n x G of them; bench/README.md says what it is in seconds).
WOR_WORK_BUDGET: float = _TABLE["wor_work_budget"][0]
#: Most bytes of the arrays one call allocates from a declared size (the module docstring).
MAX_ALLOC_BYTES: int = LIMITS["max_alloc_bytes"]
#: The same for "optimal", which refuses the rows it does not certify: 100 x WOR_WORK_BUDGET
#: (kOptimalWorkBudget, verifiers/optimal_wor/budget.hpp; docs/guide/verifiers.md gives the share of
#: held-out rows it certifies and the time per row).
WOR_OPTIMAL_WORK_BUDGET: float = 100.0 * WOR_WORK_BUDGET


def describe() -> dict[str, str]:
    """name -> what it limits."""
    return {k: what for k, (_, what) in _TABLE.items()}
