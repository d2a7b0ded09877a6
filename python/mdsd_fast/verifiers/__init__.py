"""Lossless multi-draft verifiers: the registry, exact acceptance, simulation and verification.

:data:`verifiers` maps each name to its :class:`Verifier` (the facts of the C++ core's verifier
table: schemes, numbers of drafts, the alpha* that bounds it); :func:`acceptance`, :func:`simulate`
and :func:`verify` run any of them, and :func:`route_report` says what the without-replacement route
of the optimal verifier did with each row.
"""

from __future__ import annotations

from .given_drafts import verify
from .registry import Verifier, verifiers
from .route import route_report
from .run import (
    EXACT_BUDGET,
    MAX_SAMPLES,
    SIMULATE_BUDGET_BYTES,
    WOR_WORK_BUDGET,
    Simulation,
    VerifierName,
    acceptance,
    simulate,
)

__all__ = [
    "Verifier",
    "Simulation",
    "verifiers",
    "acceptance",
    "simulate",
    "verify",
    "EXACT_BUDGET",
    "SIMULATE_BUDGET_BYTES",
    "MAX_SAMPLES",
    "WOR_WORK_BUDGET",
    "VerifierName",
    "route_report",
]
