"""mdsd_fast: exact optimal acceptance (alpha*) and verifiers for multi-draft speculative decoding.

Public API
----------
optimal_acceptance(p, q, n, scheme="iid", *, method="auto", return_certificate=False)
    alpha*: the best acceptance any lossless verifier reaches for a draft scheme.
solve_lp(p, q, n, scheme, *, max_sets=...)
    the flow LP over draft sets, solved by HiGHS, with its cut certificate and optimal flow.
"""

from __future__ import annotations

from ._core import __version__ as _core_version
from .bound import DEFAULT_MAX_SETS, LPResult, SolverError, TooLargeError, optimal_acceptance, solve_lp

__version__ = _core_version

__all__ = [
    "__version__",
    "optimal_acceptance",
    "solve_lp",
    "LPResult",
    "SolverError",
    "TooLargeError",
    "DEFAULT_MAX_SETS",
]
