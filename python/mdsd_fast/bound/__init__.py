"""alpha*: the best acceptance any lossless verifier reaches for a draft scheme.

:func:`optimal_acceptance` computes it by the dual kernels of the C++ core (a sort, docs/theory/sorted_prefix.md §4)
or by the flow LP over draft sets; :func:`solve_lp` solves that LP with HiGHS and returns its cut
certificate and optimal flow.
"""

from __future__ import annotations

from .alpha import optimal_acceptance
from .lp import DEFAULT_MAX_SETS, LPResult, SolverError, TooLargeError, solve_lp

__all__ = ["optimal_acceptance", "solve_lp", "LPResult", "SolverError", "TooLargeError", "DEFAULT_MAX_SETS"]
