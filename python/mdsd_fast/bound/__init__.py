"""alpha*: the best acceptance any lossless verifier reaches for a draft scheme.

:func:`optimal_acceptance` computes it by the dual kernels of the C++ core (a sort, docs/theory/sorted_prefix.md §4)
or by the flow LP over draft sets; :func:`solve_lp` solves that LP with HiGHS and returns its cut
certificate and optimal flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .alpha import optimal_acceptance

# The LP module and its names load on first use (PEP 562): alpha* by the dual kernels does not need it.
_LP = ("solve_lp", "LPResult", "SolverError", "TooLargeError", "DEFAULT_MAX_SETS")


def __getattr__(name: str) -> Any:
    if name not in (*_LP, "lp"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    lp = importlib.import_module(f"{__name__}.lp")
    value = lp if name == "lp" else getattr(lp, name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LP) | {"lp"})


if TYPE_CHECKING:
    from .lp import DEFAULT_MAX_SETS, LPResult, SolverError, TooLargeError, solve_lp

__all__ = ["optimal_acceptance", "solve_lp", "LPResult", "SolverError", "TooLargeError", "DEFAULT_MAX_SETS"]
